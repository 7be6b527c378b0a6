"""Competition submissions as programs: Python ``TrialLoop`` classes for ``chatgpt4pcg``/``llms4pcg``.

In the 2024 and 2025 editions a submission is a folder (or one ``.py`` file) whose code subclasses
the package's ``TrialLoop`` and reaches the model only through ``chat_with_chatgpt`` /
``chat_with_llm``. Finding the class is *static*: every Python file is parsed with :mod:`ast`,
never imported or executed in the evaluator's process (a submission is untrusted code; it runs
only inside the trial sandbox, :mod:`worldforge.execution.sandbox`).

Discovery rule: the class passed to ``run_evaluation(...)`` under ``if __name__ == "__main__":``,
else the only ``TrialLoop`` subclass. None, several, or a folder that talks to ``openai`` directly
is an error naming the program and what was found.

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
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

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
    stat_file,
    walk_tree,
)

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
    module: str  # the entry file, relative ("main.py")
    class_name: str
    files: tuple[SubmissionFile, ...]
    team_name: str
    requirements: str | None = None  # the text of requirements.txt, if any
    #: The resolved environment's identity (package versions), attached before a run starts.
    environment: dict[str, Any] | None = None
    #: Why this program cannot run (set only when it is one of several programs: its trials fail).
    error: str | None = None
    builtin: bool = False
    #: Submissions have no prompt turns: the program decides what to send.
    turns: tuple[()] = ()

    @property
    def digest(self) -> str:
        return digest_payload(self.identity())

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


def invalid_submission(path: str | Path, reason: str) -> SubmissionProgram:
    """A program that could not be loaded, kept so that its trials are recorded as failed."""
    given = Path(path)
    name = given.stem if _mode(given) is not None and not _is_folder(given) else given.name
    return SubmissionProgram(name, given, "", "", "", (), name, error=reason)


def _excluded(name: str) -> bool:
    return name in EXCLUDED_NAMES or name.endswith(EXCLUDED_SUFFIXES)


def _not_python(name: str) -> bool:
    return PurePosixPath(name).suffix != ".py"


def _walk(root: Path, label: str) -> list[TreeFile]:
    return walk_tree(root, limits=LIMITS, excluded=_excluded, label=label)


def list_files(root: Path) -> list[Path]:
    """Every file of the submission folder that belongs to it, caches excluded, in walk order
    (:func:`~worldforge.execution.files.walk_tree`: links and other non-files are refused)."""
    return [root / f.path for f in _walk(root, str(root))]


@dataclass
class _Scan:
    """What the static scan of one Python file found."""

    packages: set[str] = field(default_factory=set)
    openai: bool = False
    trial_loops: list[str] = field(default_factory=list)
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


def _run_evaluation_args(call: ast.Call) -> tuple[str | None, str | None]:
    """``(class name, team literal)`` of a ``run_evaluation(team, fn, ...)`` call."""
    args = {i: a for i, a in enumerate(call.args)}
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    fn = kw.get("fn", args.get(1))
    team = kw.get("team_name", args.get(0))
    cls = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
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
    scan = _Scan()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top in PACKAGES:
                    scan.packages.add(top)
                elif top == "openai":
                    scan.openai = True
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(
                    base, ast.Attribute) else None  # fmt: skip
                if base_name == "TrialLoop":
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


def looks_like_submission(path: str | Path) -> bool:
    """Whether ``--program PATH`` names a submission rather than a prompt folder.

    A ``.py`` file is one; so is a folder whose top-level Python files define a ``TrialLoop``
    subclass, import a competition package or ``openai`` (then loading it says why it is not
    valid), or a folder with Python files and no ``prompts/`` folder. A folder with ``prompts/``
    and unrelated helper scripts stays a prompt program.
    """
    p = Path(path)
    mode = _mode(p)
    if mode is None:
        return False
    if not stat.S_ISDIR(mode):
        return p.suffix == ".py"  # a link is loaded as a submission, which refuses it
    try:
        sources = walk_tree(p, limits=LIMITS, excluded=_not_python, recursive=False)
    except WorldForgeError:
        return True  # a .py that is a link or a FIFO: loading the submission says so
    if not sources:
        return False
    if not _is_folder(p / "prompts"):
        return True
    for source in sources:
        where = str(p / source.path)
        try:
            scan = scan_source(_decode_python(read_file(p, source, limits=LIMITS), where), where)
        except WorldForgeError:
            return True  # a broken program is still a program: loading it reports the error
        if scan.trial_loops or scan.packages or scan.openai:
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


def load_submission(path: str | Path, *, name: str | None = None) -> SubmissionProgram:
    """Validate the submission at ``path`` (folder or ``.py`` file) without running any of it."""
    given = Path(path)
    label = str(given)
    if _mode(given) is None:
        raise WorldForgeError(f"{given}: submission not found.")
    only = None if _is_folder(given) else given.name
    root = given if only is None else given.parent
    if only is None:
        walked = _walk(root, label)
    else:
        single = stat_file(root, only, limits=LIMITS, label=label)
        walked = [single] if single is not None else []
    entries: list[SubmissionFile] = []
    scans: dict[str, _Scan] = {}
    for file in walked:
        rel = file.path
        data = read_file(root, file, limits=LIMITS, label=label)
        entries.append(SubmissionFile(rel, digest_bytes(data), len(data)))
        if rel.endswith(".py"):
            scans[rel] = scan_source(_decode_python(data, f"{given}:{rel}" if only is None else label), rel)
    loops = [(rel, cls) for rel, s in scans.items() for cls in s.trial_loops]
    packages = set().union(*(s.packages for s in scans.values())) if scans else set()
    if not loops:
        direct = any(s.openai for s in scans.values())
        raise WorldForgeError(
            f"{label}: not a valid submission: no TrialLoop subclass"
            + (" (it calls openai directly; submissions must use chatgpt4pcg or llms4pcg)" if direct else "")
            + "."
        )
    if not packages:
        raise WorldForgeError(
            f"{label}: not a valid submission: TrialLoop {loops[0][1]} imports neither "
            "chatgpt4pcg nor llms4pcg."
        )
    if len(packages) > 1:
        raise WorldForgeError(f"{label}: imports both chatgpt4pcg and llms4pcg; a submission targets one.")
    package = next(iter(packages))
    declared = [(rel, cls, team) for rel, s in scans.items() for cls, team in s.entry]
    chosen: tuple[str, str] | None = None
    team: str | None = None
    if declared:
        found = {(rel, cls) for rel, cls in loops}
        matches = [(r, c, t) for r, c, t in declared if any(c == cls for _, cls in found)]
        names = sorted({c for _, c, _ in matches})
        if len(names) == 1:
            cls_name = names[0]
            candidates = [(r, c) for r, c in loops if c == cls_name]
            entry_files = [r for r, c, _ in matches if c == cls_name]
            same_file = [(r, c) for r, c in candidates if r in entry_files]
            chosen = (same_file or candidates)[0]
            team = next((t for _, c, t in matches if c == cls_name and t), None)
    if chosen is None:
        if len(loops) != 1:
            listed = ", ".join(f"{cls} ({rel})" for rel, cls in loops)
            raise WorldForgeError(
                f"{label}: {len(loops)} TrialLoop subclasses ({listed}) and no run_evaluation(...) "
                "under __main__ choosing one."
            )
        chosen = loops[0]
    module, class_name = chosen
    prog_name = name or (root.name if only is None else given.stem)
    team_name = team if team and team != "logs" and "/" not in team else prog_name
    requirements = _requirements(root, walked, only is None, label)
    return SubmissionProgram(
        name=prog_name,
        source=root,
        package=package,
        module=module,
        class_name=class_name,
        files=tuple(entries),
        team_name=team_name,
        requirements=requirements,
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
    "scan_source",
]
