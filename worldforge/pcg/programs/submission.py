"""Competition submissions as programs: Python ``TrialLoop`` classes for ``chatgpt4pcg``/``llms4pcg``.

In the 2024 and 2025 editions a submission is a team folder (or one ``.py`` file) whose code
subclasses the package's ``TrialLoop`` and reaches the model only through ``chat_with_chatgpt`` /
``chat_with_llm``. Finding the class is *static*: every Python file of the whole folder is parsed
with :mod:`ast`, never imported or executed in the evaluator's process (a submission is untrusted
code; it runs only inside the trial sandbox, :mod:`worldforge.execution.sandbox`).

Discovery rule (the published programs put their code at the top, in one package sub-folder, or
both, and were run by the organisers from the team folder): the class passed to
``run_evaluation(...)`` under ``if __name__ == "__main__":`` (the shallowest such call), else the
``TrialLoop`` subclass of the shallowest module (a team's own base class, subclassed again, is not
a candidate). Several at the same depth, none, or a folder that talks to ``openai`` directly is a
one-line error. Python files that do not parse (a vendored Python 2 helper, data named ``*.py``)
are listed in :attr:`SubmissionProgram.ignored`, unless one of them may be the entry (it defines the
class ``run_evaluation`` names, or mentions ``TrialLoop`` no deeper than the class found): then the
parse error is the error. ``__MACOSX/`` and AppleDouble ``._*`` files are litter from zips made on
a Mac: skipped (not digested, not copied into a trial) and listed as ignored.

The team is named after its folder; the literal passed to ``run_evaluation`` is recorded as
:attr:`SubmissionProgram.declared_team` (the organisers' runs did not name teams by it).

Identity: the digest of every file (caches such as ``__pycache__`` and the team's ``.env`` with its
API key excluded), the package, the entry module and class. The environment the trials run in
(package version, resolved requirements) is recorded beside it by the runner.

Every byte of a team's folder is read through :mod:`worldforge.execution.files`, never through a
link: a symbolic link, FIFO, socket or device anywhere in the folder (or the folder or ``.py`` file
named on the command line being a link) refuses the submission with one line naming the entry.
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.execution.files import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    SKIPPED_NAMES,
    SKIPPED_SUFFIXES,
    TreeFile,
    TreeLimits,
    read_file,
    shown,
    stat_file,
    walk_tree,
)
from worldforge.execution.trial_setup import dotted

#: The competition packages a submission may be written against, newest first.
PACKAGES = ("llms4pcg", "chatgpt4pcg")
#: The packages' chat functions (what a submission must call instead of ``openai``).
CHAT_FUNCTIONS = {"chatgpt4pcg": "chat_with_chatgpt", "llms4pcg": "chat_with_llm"}
#: Names never copied into a trial nor digested: caches, version control, the team's secrets, and
#: ``logs`` (where the competition packages write a run's logs).
EXCLUDED_NAMES = SKIPPED_NAMES | {"logs"}
EXCLUDED_SUFFIXES = SKIPPED_SUFFIXES
#: Largest submission (all files) accepted; the rules allowed 1 GB, this is per trial copy too.
MAX_SUBMISSION_BYTES = 256 * 1024 * 1024
#: Most files and folders in a submission.
MAX_FILES = 5000
#: The caps a submission folder is walked with (one file at most ``MAX_FILE_BYTES``).
LIMITS = TreeLimits(
    max_files=MAX_FILES,
    max_file_bytes=MAX_FILE_BYTES,
    max_total_bytes=MAX_SUBMISSION_BYTES,
    max_depth=MAX_DEPTH,
)
#: How many unparseable files or candidate classes a one-line error names.
_NAMED = 3
_LISTED = 8
_CLASS_RE = re.compile(rb"\bclass\s+([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class SubmissionFile:
    path: str  # relative, with "/" separators
    digest: str
    size: int


@dataclass(frozen=True)
class SubmissionProgram:
    """A validated submission: where it is, which package it targets, which class to run."""

    name: str
    source: Path
    package: str
    module: str  # the entry file, relative to the team folder ("main.py", "tot/main.py")
    class_name: str
    files: tuple[SubmissionFile, ...]
    team_name: str  # the team folder's name (a single file: its stem)
    requirements: str | None = None  # the text of requirements.txt, if any
    #: The resolved environment's identity (package versions), attached before a run starts.
    environment: JSONObject | None = None
    #: Why this program cannot run (set only when it is one of several programs: its trials fail).
    error: str | None = None
    builtin: bool = False
    #: Submissions have no prompt turns: the program decides what to send.
    turns: tuple[()] = ()
    #: The team name literal of the chosen ``run_evaluation(...)`` call, if any (not the name).
    declared_team: str | None = None
    #: ``"PATH: why"`` for each file discovery skipped (macOS litter) or could not parse.
    ignored: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        return digest_payload(self.identity())

    @property
    def entry_module(self) -> str:
        """The entry's dotted path from the team folder (``tot/main.py`` -> ``tot.main``)."""
        return dotted(self.module) if self.module else ""

    def identity(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": "submission",
            "package": self.package,
            "entry": {"module": self.module, "class": self.class_name},
            "files": [{"path": f.path, "digest": f.digest} for f in self.files],
            "environment": self.environment,
            "error": self.error,
        }

    def prompt_length(self, letter: str = "A") -> int | None:
        """No prompt-length tie-break for a program (its prompts are whatever its code sends)."""
        return None

    def file_path(self, relative: str) -> Path:
        return self.source / relative


def _mode(path: Path) -> int | None:
    """``lstat``'s mode of ``path`` (never following a link), ``None`` if nothing is there."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _is_folder(path: Path) -> bool:
    mode = _mode(path)
    return mode is not None and stat.S_ISDIR(mode)


def _folder_name(path: Path) -> str:
    """The name of the folder ``path`` names (``.`` and ``team/..`` included), links not followed."""
    return Path(os.path.abspath(path)).name


def invalid_submission(path: str | Path, reason: str) -> SubmissionProgram:
    """A program that could not be loaded, kept so that its trials are recorded as failed."""
    given = Path(path)
    name = given.stem if _mode(given) is not None and not _is_folder(given) else _folder_name(given)
    return SubmissionProgram(name, given, "", "", "", (), name, error=reason)


def macos_metadata(path: str) -> str | None:
    """Why ``path`` (relative, ``/``) is litter from a zip made on a Mac, or ``None``: anything in
    ``__MACOSX/`` and AppleDouble ``._*`` files (resource forks, never a team's code)."""
    parts = path.split("/")
    if "__MACOSX" in parts:
        return "macOS archive metadata"
    if parts[-1].startswith("._"):
        return "AppleDouble metadata"
    return None


def _excluded(name: str) -> bool:
    return name in EXCLUDED_NAMES or name.endswith(EXCLUDED_SUFFIXES)


def _not_python(name: str) -> bool:
    return PurePosixPath(name).suffix != ".py"


def _split_litter(walked: list[TreeFile]) -> tuple[list[TreeFile], list[str]]:
    """The team's files, and ``"PATH: why"`` for the macOS litter among them (a ``__MACOSX/``
    folder as one line with its file count)."""
    kept: list[TreeFile] = []
    folders: dict[str, int] = {}
    ignored: list[str] = []
    for file in walked:
        why = macos_metadata(file.path)
        if why is None:
            kept.append(file)
        elif "__MACOSX" in file.path.split("/"):
            parts = file.path.split("/")
            top = "/".join(parts[: parts.index("__MACOSX") + 1]) + "/"
            folders[top] = folders.get(top, 0) + 1
        else:
            ignored.append(f"{shown(file.path)}: {why}")
    macosx = [
        f"{top}: macOS archive metadata ({n} file{'s' if n != 1 else ''})" for top, n in folders.items()
    ]
    return kept, [*macosx, *ignored]


def _walk(root: Path, label: str) -> tuple[list[TreeFile], list[str]]:
    return _split_litter(walk_tree(root, limits=LIMITS, excluded=_excluded, label=label))


def list_files(root: Path) -> list[Path]:
    """Every file of the submission folder that belongs to it, caches and macOS litter excluded, in
    walk order (:func:`~worldforge.execution.files.walk_tree`: links and other non-files are refused)."""
    return [root / f.path for f in _walk(root, str(root))[0]]


@dataclass
class _Scan:
    """What the static scan of one Python file found."""

    packages: set[str] = field(default_factory=set)
    openai: bool = False
    trial_loops: list[str] = field(default_factory=list)  # direct subclasses of TrialLoop
    classes: list[tuple[str, list[str]]] = field(default_factory=list)  # (class, base names)
    loop_names: set[str] = field(default_factory=set)  # what TrialLoop is imported as
    entry: list[tuple[str, str | None]] = field(default_factory=list)  # (class, team literal)


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _name_of(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _run_evaluation_args(call: ast.Call) -> tuple[str | None, str | None]:
    """``(class name, team literal)`` of a ``run_evaluation(team, fn, ...)`` call."""
    args = {i: a for i, a in enumerate(call.args)}
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    fn = kw.get("fn", args.get(1))
    team = kw.get("team_name", args.get(0))
    cls = _name_of(fn) if fn is not None else None
    literal = team.value if isinstance(team, ast.Constant) and isinstance(team.value, str) else None
    return cls, literal


def scan_source(text: str, where: str) -> _Scan:
    """Parse one file (never run it) and collect imports, ``TrialLoop`` subclasses and entries."""
    try:
        tree = ast.parse(text, filename=where)
    except SyntaxError as exc:
        raise WorldForgeError(f"{where}:{exc.lineno}: syntax error: {exc.msg}.") from None
    except ValueError as exc:  # NUL bytes
        raise WorldForgeError(f"{where}: cannot be parsed: {exc}.") from None
    except (RecursionError, MemoryError):
        raise WorldForgeError(f"{where}: too deeply nested to be parsed.") from None
    scan = _Scan()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom):
                scan.loop_names.update(a.asname for a in node.names if a.name == "TrialLoop" and a.asname)
            for name in names:
                top = name.split(".")[0]
                if top in PACKAGES:
                    scan.packages.add(top)
                elif top == "openai":
                    scan.openai = True
        elif isinstance(node, ast.ClassDef):
            bases = [b for b in (_name_of(base) for base in node.bases) if b]
            scan.classes.append((node.name, bases))
            if "TrialLoop" in bases:
                scan.trial_loops.append(node.name)
        elif isinstance(node, ast.If) and _is_main_guard(node):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call) and _call_name(inner) == "run_evaluation":
                    cls, team = _run_evaluation_args(inner)
                    if cls:
                        scan.entry.append((cls, team))
    return scan


def _decode_python(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise WorldForgeError(f"{where}: not UTF-8 Python source.") from None


def _try_scan(data: bytes, rel: str) -> _Scan | str:
    """The scan of one file, or why it does not parse (``"PATH:LINE: syntax error: ..."``)."""
    try:
        return scan_source(_decode_python(data, rel), rel)
    except WorldForgeError as exc:
        return shown(str(exc).rstrip("."))


def _may_be_program(data: bytes) -> bool:
    """Whether an unparseable file could hold the program (it names ``TrialLoop`` or a package)."""
    return b"TrialLoop" in data or any(p.encode() in data for p in PACKAGES)


def _looks_like_submission_at_top(p: Path) -> bool:
    """The top-level check, for a folder the whole-folder walk refused (a link in ``prompts/``:
    reading it as a prompt program then names the link)."""
    try:
        sources = walk_tree(p, limits=LIMITS, excluded=_not_python, recursive=False)
    except WorldForgeError:
        return True  # a .py that is a link or a FIFO: loading the submission says so
    if sources and not _is_folder(p / "prompts"):
        return True
    for source in sources:
        try:
            found = _try_scan(read_file(p, source, limits=LIMITS), source.path)
        except WorldForgeError:
            return True
        if isinstance(found, str) or _subclasses({source.path: found}) or found.packages or found.openai:
            return True
    return False


def looks_like_submission(path: str | Path) -> bool:
    """Whether ``--program PATH`` names a submission rather than a prompt folder.

    A ``.py`` file is one. So is a folder with Python files anywhere in it (bounded walk) and no
    ``prompts/`` folder at its top, and one with ``prompts/`` whose Python files (at any depth)
    define a ``TrialLoop`` subclass or import a competition package or ``openai``: the code of a
    team that keeps its prompts at the top and its program in a package (loading it then says what
    is wrong). A folder with ``prompts/`` and unrelated helper scripts stays a prompt program.
    """
    p = Path(path)
    mode = _mode(p)
    if mode is None:
        return False
    if not stat.S_ISDIR(mode):
        return p.suffix == ".py"  # a link is loaded as a submission, which refuses it
    try:
        files, _ = _walk(p, str(p))
    except WorldForgeError:
        return _looks_like_submission_at_top(p)
    sources = [f for f in files if f.path.endswith(".py")]
    if not sources:
        return False
    if not _is_folder(p / "prompts"):
        return True
    for source in sources:
        try:
            data = read_file(p, source, limits=LIMITS)
        except WorldForgeError:
            return True  # it changed under us: loading it reports what
        found = _try_scan(data, source.path)
        if isinstance(found, str):
            if _may_be_program(data):
                return True
        elif _subclasses({source.path: found}) or found.packages or found.openai:
            return True
    return False


def _requirements(root: Path, walked: list[TreeFile], whole_folder: bool, label: str) -> str | None:
    """The text of ``requirements.txt`` (universal newlines, like ``Path.read_text``), if any."""
    if whole_folder:
        entry = next((f for f in walked if f.path == "requirements.txt"), None)
    elif _is_folder(root / "requirements.txt"):
        entry = None
    else:
        entry = stat_file(root, "requirements.txt", limits=LIMITS, label=label)
    if entry is None:
        return None
    data = read_file(root, entry, limits=LIMITS, label=label)
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()


def _depth(rel: str) -> int:
    return rel.count("/")


def _subclasses(scans: dict[str, _Scan]) -> list[tuple[str, str]]:
    """Every ``(file, class)`` deriving from ``TrialLoop``, through the team's own classes too
    (matched by name: nothing is imported), in walk order."""
    classes = [(rel, name, bases) for rel, s in scans.items() for name, bases in s.classes]
    names = {"TrialLoop", *(n for s in scans.values() for n in s.loop_names)}
    found: set[tuple[str, str]] = set()
    grown = True
    while grown:
        grown = False
        for rel, name, bases in classes:
            if (rel, name) not in found and names.intersection(bases):
                found.add((rel, name))
                names.add(name)
                grown = True
    return [(rel, name) for rel, name, _ in classes if (rel, name) in found]


def _listed(pairs: list[tuple[str, str]]) -> str:
    shown_pairs = [f"{cls} ({shown(rel)})" for rel, cls in pairs[:_LISTED]]
    more = f", and {len(pairs) - _LISTED} more" if len(pairs) > _LISTED else ""
    return ", ".join(shown_pairs) + more


@dataclass
class _Found:
    """The parsed and unparseable Python files of one submission."""

    scans: dict[str, _Scan] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # file -> why it does not parse
    broken_classes: dict[str, set[str]] = field(default_factory=dict)  # class names it seems to define
    suspects: list[str] = field(default_factory=list)  # unparseable files that may hold the program

    def add(self, rel: str, data: bytes) -> None:
        result = _try_scan(data, rel)
        if isinstance(result, _Scan):
            self.scans[rel] = result
            return
        self.broken[rel] = result
        self.broken_classes[rel] = {m.decode() for m in _CLASS_RE.findall(data)}
        if _may_be_program(data):
            self.suspects.append(rel)


def _no_program(label: str, found: _Found, single: bool) -> WorldForgeError:
    where = "file" if single else "folder"
    message = f"{label}: no TrialLoop program in this {where}"
    if any(s.openai for s in found.scans.values()):
        message += " (it calls openai directly; submissions must use chatgpt4pcg or llms4pcg)"
    if found.broken:
        n = len(found.broken)
        named = "; ".join(list(found.broken.values())[:_NAMED]) + ("; ..." if n > _NAMED else "")
        message += f" ({n} .py file{'s' if n != 1 else ''} do{'' if n != 1 else 'es'} not parse: {named})"
    return WorldForgeError(message + ".")


def _declared_entry(
    label: str, found: _Found, loops: list[tuple[str, str]]
) -> tuple[str, str, str | None] | None:
    """``(file, class, team literal)`` named by the shallowest ``run_evaluation`` under ``__main__``
    (the class it names is the program even when its base is spelled in a way no scan follows)."""
    declared = [(rel, cls, team) for rel, s in found.scans.items() for cls, team in s.entry]
    defined = [(rel, name) for rel, s in found.scans.items() for name, _ in s.classes]
    names = {cls for _, cls in defined}
    for cls in dict.fromkeys(c for _, c, _ in declared if c not in names):
        holders = [rel for rel, classes in found.broken_classes.items() if cls in classes]
        if holders:  # the class run_evaluation names is in a file that does not parse
            raise WorldForgeError(f"{label}: {found.broken[holders[0]]} (it defines {cls}, the class run).")
    matches = [(rel, cls, team) for rel, cls, team in declared if cls in names]
    if not matches:
        return None
    top = min(_depth(rel) for rel, _, _ in matches)
    shallow = [m for m in matches if _depth(m[0]) == top]
    chosen = sorted({cls for _, cls, _ in shallow})
    if len(chosen) > 1:
        pairs = list(dict.fromkeys((rel, cls) for rel, cls, _ in shallow))
        raise WorldForgeError(
            f"{label}: run_evaluation(...) under __main__ names {len(chosen)} classes ({_listed(pairs)})."
        )
    cls = chosen[0]
    team = next((t for _, c, t in shallow if c == cls and t), None)
    callers = {rel for rel, c, _ in shallow if c == cls}
    candidates = [pair for pair in defined if pair[1] == cls]
    same_file = [pair for pair in candidates if pair[0] in callers]
    if same_file:
        return same_file[0][0], cls, team
    candidates = [pair for pair in candidates if pair in loops] or candidates
    nearest = min(_depth(rel) for rel, _ in candidates)
    candidates = [pair for pair in candidates if _depth(pair[0]) == nearest]
    if len(candidates) > 1:
        raise WorldForgeError(
            f"{label}: the class run_evaluation(...) names is defined in {len(candidates)} files "
            f"({_listed(candidates)})."
        )
    return candidates[0][0], cls, team


def _leaves(found: _Found, loops: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The loops no other loop as shallow subclasses (a team's own base class is not the program)."""
    bases = {(rel, name): b for rel, s in found.scans.items() for name, b in s.classes}
    return [
        (rel, cls)
        for rel, cls in loops
        if not any(
            cls in bases[other] and _depth(other[0]) <= _depth(rel) for other in loops if other != (rel, cls)
        )
    ]


def _choose(label: str, found: _Found, single: bool) -> tuple[str, str, str | None]:
    """``(entry file, class, declared team)`` by the discovery rule (module docstring)."""
    loops = _subclasses(found.scans)
    declared = _declared_entry(label, found, loops)
    if declared is not None:
        return declared
    if not loops:
        raise _no_program(label, found, single)
    leaves = _leaves(found, loops) or loops
    top = min(_depth(rel) for rel, _ in leaves)
    risky = [rel for rel in found.suspects if _depth(rel) <= top]
    if risky:
        raise WorldForgeError(
            f"{label}: {found.broken[risky[0]]} (it mentions TrialLoop, and a program is not deeper "
            "than it; fix the file or remove it)."
        )
    shallow = [pair for pair in leaves if _depth(pair[0]) == top]
    if len(shallow) != 1:
        raise WorldForgeError(
            f"{label}: {len(shallow)} TrialLoop subclasses ({_listed(shallow)}) and no run_evaluation(...) "
            "under __main__ choosing one."
        )
    return shallow[0][0], shallow[0][1], None


def load_submission(path: str | Path, *, name: str | None = None) -> SubmissionProgram:
    """Validate the submission at ``path`` (folder or ``.py`` file) without running any of it."""
    given = Path(path)
    label = str(given)
    if _mode(given) is None:
        raise WorldForgeError(f"{given}: submission not found.")
    single = not _is_folder(given)
    root = given.parent if single else given
    if single:
        file = stat_file(root, given.name, limits=LIMITS, label=label)
        walked, ignored = ([file] if file is not None else []), list[str]()
    else:
        walked, ignored = _walk(root, label)
    entries: list[SubmissionFile] = []
    found = _Found()
    for file in walked:
        data = read_file(root, file, limits=LIMITS, label=label)
        entries.append(SubmissionFile(file.path, digest_bytes(data), len(data)))
        if file.path.endswith(".py"):
            found.add(file.path, data)
    if single and found.broken:
        raise WorldForgeError(f"{label}: {next(iter(found.broken.values()))}.")
    module, class_name, declared_team = _choose(label, found, single)
    packages = set().union(*(s.packages for s in found.scans.values()))
    if not packages:
        raise WorldForgeError(f"{label}: not a valid submission: TrialLoop {class_name} imports neither "
                              "chatgpt4pcg nor llms4pcg.")  # fmt: skip
    if len(packages) > 1:
        raise WorldForgeError(f"{label}: imports both chatgpt4pcg and llms4pcg; a submission targets one.")
    team = given.stem if single else _folder_name(given)
    return SubmissionProgram(
        name=name or team,
        source=root,
        package=next(iter(packages)),
        module=module,
        class_name=class_name,
        files=tuple(entries),
        team_name=team,
        requirements=_requirements(root, walked, not single, label),
        declared_team=declared_team,
        ignored=(*ignored, *found.broken.values()),
    )


__all__ = [
    "CHAT_FUNCTIONS",
    "EXCLUDED_NAMES",
    "MAX_SUBMISSION_BYTES",
    "PACKAGES",
    "SubmissionFile",
    "SubmissionProgram",
    "invalid_submission",
    "list_files",
    "load_submission",
    "looks_like_submission",
    "macos_metadata",
    "scan_source",
]
