"""Qualification: which teams' programs may be run, by the competition's written rules.

The rules say the organisers "manually inspect each submitted program for a potential violation of
the rules. Qualified programs will be run". This module is the mechanical half of that inspection,
done before any trial and without running a line of the team's code (every file is read through the
safe walker, Python is parsed with :mod:`ast`). A team qualifies when:

* it loads as a submission (:func:`~worldforge.pcg.programs.submission.load_submission`);
* its code reaches the model only through the package's chat function: no import of a module in
  :data:`NETWORK_MODULES` or :data:`PROCESS_MODULES`, no ``os.system``-style call, no use of the
  package's own ``OpenAI`` client;
* it targets the supported package versions (:data:`SUPPORTED_VERSIONS`): a pin or constraint on
  ``chatgpt4pcg``/``llms4pcg`` in ``requirements.txt`` must admit them;
* ``requirements.txt`` has only plain requirements (what the installer accepts; pip is not run);
* it ships no copy of :data:`VENDORED_PACKAGES` (a vendored copy could replace the chat function and
  the counters it keeps);
* it hard-codes no per-letter answers: ``drop_block`` recipes tied to :data:`HARDCODED_LETTERS` or
  more target letters (:func:`tied_letters`). Few-shot examples for a few letters qualify (the
  organisers' own few-shot example shows three).

Static checks are evidence, not proof. Imports are read from ``import`` statements and from
``importlib.import_module("...")``/``__import__("...")`` with a literal name; a computed name
(``import_module("op" + "enai")``), ``exec`` of decoded text or recipes stored encoded are not seen.
The sandbox (no network but the trial's gateway route, no process creation) and the gateway (token
budget, served-reply check) stay the enforcement; qualification tells an organiser, before a run,
which teams break a rule in plain sight and why, one line each.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TypedDict

from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.execution.environments import SUPPORTED_PACKAGES, plain_requirements
from worldforge.execution.files import TreeFile, read_file, walk_tree
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.programs.submission import (
    CHAT_FUNCTIONS,
    EXCLUDED_NAMES,
    EXCLUDED_SUFFIXES,
    LIMITS,
    PACKAGES,
    SubmissionProgram,
    load_submission,
    macos_metadata,
)

#: Module paths that talk to a network or to a model other than through the package's chat
#: function: LLM clients and frameworks, HTTP and socket libraries. ``name*`` covers every top-level
#: package starting with ``name`` (``langchain_openai``); an entry also covers its submodules.
NETWORK_MODULES: tuple[str, ...] = (
    "openai", "anthropic", "google.generativeai", "google.genai", "vertexai", "ollama", "litellm",
    "langchain*", "llama_index", "cohere", "mistralai", "groq", "together", "replicate",
    "huggingface_hub", "dashscope", "zhipuai", "g4f", "dspy", "instructor", "guidance", "autogen",
    "semantic_kernel", "boto3", "botocore", "requests", "httpx", "httpcore", "aiohttp", "urllib.request",
    "urllib3", "http.client", "xmlrpc.client", "ftplib", "smtplib", "telnetlib", "socket", "websocket",
    "websockets", "pycurl", "grpc",
)  # fmt: skip
#: Modules that start other processes (outside the trial's accounting; the sandbox refuses them).
PROCESS_MODULES: tuple[str, ...] = ("subprocess", "pty", "multiprocessing")
#: ``os`` functions that start a process (``exec*``/``spawn*`` by prefix).
PROCESS_CALLS = ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp")
PROCESS_PREFIXES = ("exec", "spawn")
#: Names of a model client reached through another module (``llms4pcg.competition.OpenAI``).
CLIENT_NAMES = frozenset({"OpenAI", "AsyncOpenAI", "AzureOpenAI", "AsyncAzureOpenAI"})
#: Packages a team must not ship: a folder or module of that name anywhere in its folder.
VENDORED_PACKAGES = ("chatgpt4pcg", "llms4pcg", "openai", "httpx")
#: The package versions the evaluation runs (each in an environment of its own).
SUPPORTED_VERSIONS = SUPPORTED_PACKAGES
#: Recipes tied to this many distinct target letters disqualify (the top 2023 prompt had all 26).
HARDCODED_LETTERS = 5
#: A recipe: at least this many ``drop_block(`` calls with no label between them.
MIN_RECIPE_CALLS = 3
#: Calls at most this many lines apart belong to one recipe.
RECIPE_GAP_LINES = 4
#: A recipe's label is looked for at most this many lines above its first call.
LABEL_LOOKBACK_LINES = 5

_DOTTED_NETWORK = tuple(entry for entry in NETWORK_MODULES if "." in entry)
#: A call's name starts a word, also right after an escaped newline or tab in a string literal.
_CALL = re.compile(r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))(?:drop_block|ab_drop)\s*\(")
_BLOCK_TYPES = frozenset({"b11", "b13", "b31"})
_LETTER = "[\"'\u201c\u2018`(<\\[]?([A-Z])[\"'\u201d\u2019`)>\\]]?(?![A-Za-z0-9_])"
_QUOTED = r"[\"']([A-Z])[\"']"
#: Labels that say what the letter is: a keyword before it, a comparison or key in code, "T-shape".
_STRONG = (
    re.compile(
        r"(?<![A-Za-z])(?i:letter|character|char|alphabet|glyph|target|input|object|shape\s+of)"
        r"[ \t_:=#-]*" + _LETTER
    ),
    re.compile(r"==\s*" + _QUOTED),
    re.compile(_QUOTED + r"\s*=="),
    re.compile(r"\bcase\s+" + _QUOTED),
    re.compile(r"\bin\s*[(\[{]\s*" + _QUOTED + r"\s*,?\s*[)\]}]"),
    re.compile(_QUOTED + r"\s*:"),
    re.compile(r"(?<![A-Za-z0-9])([A-Z])-(?i:shaped?)(?![a-z])"),
)
#: Labels by position only: the letter alone at a line start (``A:``, ``# A``, ``1. A =``), ``<A>``.
_BARE = (
    re.compile(
        r"^[ \t]*(?:[-*>]+|\d+(?:\.\d+)*[.)]?|#+|//+)?[ \t]*"
        + _LETTER
        + r"[ \t]*(?::|=(?![ \t]*[0-9])|->|=>|\u2192|\r?$)",
        re.M,
    ),
    re.compile(r"<([A-Z])>"),
)
_PLURAL = re.compile(r"(?<![A-Za-z])(?i:letters|characters|chars|glyphs)(?![a-z])")


class QualificationRecord(TypedDict):
    """:meth:`Qualification.to_dict`: one team's verdict as JSON."""

    team: str
    qualified: bool
    reasons: list[str]
    notes: list[str]
    package: str | None
    entry: str | None


@dataclass(frozen=True)
class Qualification:
    """Whether one team's program may be run, and why not."""

    team: str
    qualified: bool
    reasons: tuple[str, ...]  # one line each: why not (empty when qualified)
    notes: tuple[str, ...] = ()  # evidence that does not disqualify
    package: str | None = None  # chatgpt4pcg | llms4pcg
    entry: str | None = None  # "FILE:Class", the entry file relative to the team folder

    def to_dict(self) -> QualificationRecord:
        return {
            "team": self.team,
            "qualified": self.qualified,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "package": self.package,
            "entry": self.entry,
        }


# --- the letter-label detector ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Label:
    start: int
    line: int
    letter: str
    strong: bool


def _labels(text: str, starts: list[int]) -> list[_Label]:
    """Every letter label in ``text``, in order."""
    found = {
        (match.start(1), strong): _Label(
            match.start(1), bisect.bisect_right(starts, match.start(1)) - 1, match.group(1), strong
        )
        for strong, patterns in ((True, _STRONG), (False, _BARE))
        for pattern in patterns
        for match in pattern.finditer(text)
    }
    return sorted(found.values(), key=lambda label: label.start)


def _tie(text: str, starts: list[int], window: list[_Label], low: int, end: int) -> str | None:
    """The one letter the nearest label of ``window`` names (keyword labels first), ``None`` when
    there is none or its line names several letters or says "letters"."""
    chosen = [label for label in window if label.strong] or window
    if not chosen:
        return None
    line = chosen[-1].line
    letters = {label.letter for label in chosen if label.line == line}
    line_end = starts[line + 1] if line + 1 < len(starts) else len(text)
    if len(letters) != 1 or _PLURAL.search(text, max(starts[line], low), min(line_end, end)):
        return None
    return letters.pop()


def _recipes(text: str) -> Iterator[tuple[int, int, str | None]]:
    """``(first call offset, calls, tied letter or None)`` of every recipe in ``text``."""
    calls = [m.start() for m in _CALL.finditer(text)]
    if len(calls) < MIN_RECIPE_CALLS:
        return
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    line_of = [bisect.bisect_right(starts, c) - 1 for c in calls]
    labels = _labels(text, starts)
    label_starts = [label.start for label in labels]

    def labelled_between(a: int, b: int) -> bool:
        return bisect.bisect_left(label_starts, b) > bisect.bisect_right(label_starts, a)

    groups: list[list[int]] = [[0]]
    for i in range(1, len(calls)):
        j = groups[-1][-1]
        if line_of[i] - line_of[j] <= RECIPE_GAP_LINES and not labelled_between(calls[j], calls[i]):
            groups[-1].append(i)
        else:
            groups.append([i])
    for group in groups:
        first = group[0]
        if len(group) < MIN_RECIPE_CALLS:
            continue
        low = max(calls[first - 1] + 1 if first else 0, starts[max(line_of[first] - LABEL_LOOKBACK_LINES, 0)])
        window = labels[
            bisect.bisect_left(label_starts, low) : bisect.bisect_left(label_starts, calls[first])
        ]
        yield calls[first], len(group), _tie(text, starts, window, low, calls[first])


def _letter_of(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in LETTERS:
        return node.value
    return None


def _test_letter(test: ast.expr) -> str | None:
    """The letter an ``if`` test singles out: ``x == "A"``, ``"A" == x``, ``x in ("A",)``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    sides = (test.left, test.comparators[0])
    if isinstance(test.ops[0], ast.Eq | ast.Is):
        return _letter_of(sides[0]) or _letter_of(sides[1])
    if isinstance(test.ops[0], ast.In) and isinstance(sides[1], ast.Tuple | ast.List | ast.Set):
        elts = sides[1].elts
        return _letter_of(elts[0]) if len(elts) == 1 else None
    return None


def _keyed_letters(tree: ast.AST) -> set[str]:
    """Letters keying a branch or dict value of code that holds a recipe: ``drop_block`` calls in
    its strings and block-type literals (``("b31", 10)`` tuples) counted together."""
    counts: dict[str, int] = {}
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while stack:
        node, letter = stack.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if letter is not None:
                found = len(_CALL.findall(node.value)) or int(node.value in _BLOCK_TYPES)
                counts[letter] = counts.get(letter, 0) + found
        elif isinstance(node, ast.If | ast.IfExp):
            key = _test_letter(node.test) or letter
            body = node.body if isinstance(node.body, list) else [node.body]
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            stack += [(node.test, letter), *((n, key) for n in body), *((n, letter) for n in orelse)]
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                stack += [(v, _letter_of(k) or letter)] + ([(k, letter)] if k is not None else [])
        elif isinstance(node, ast.match_case):
            pattern = node.pattern
            key = _letter_of(pattern.value) if isinstance(pattern, ast.MatchValue) else None
            stack += [(n, key or letter) for n in node.body]
        else:
            stack += [(child, letter) for child in ast.iter_child_nodes(node)]
    return {letter for letter, n in counts.items() if n >= MIN_RECIPE_CALLS}


def tied_letters(text: str, tree: ast.AST | None = None) -> set[str]:
    """The target letters ``drop_block`` recipes in ``text`` are tied to.

    A recipe is a run of at least :data:`MIN_RECIPE_CALLS` ``drop_block(`` (or 2023's ``ab_drop(``)
    calls, at most :data:`RECIPE_GAP_LINES` lines apart, with no label between them. It is tied to a
    letter when the nearest label within :data:`LABEL_LOOKBACK_LINES` lines above its first call
    (and after the previous call) names exactly one letter. A label is a line naming letters: after
    a keyword (``letter A``, ``character "A"``, ``Input: "G"``, ``shape of A``, ``T-shape``), in code
    (``== "A"``, ``"A":``, ``case "A"``) or alone at the line start (``A:``, ``# A``, ``1. A =``,
    ``<A>``); labels with a keyword win over bare ones (a ``Q:``/``A:`` exchange about the letter T
    is about T), and a line that names several letters or says "letters" ties nothing. With
    ``tree`` (the file's parsed code) a recipe in an ``if``/``elif``/``match`` branch or dict value
    keyed by a letter literal is tied to it however far the key is.
    """
    letters = {letter for _, _, letter in _recipes(text) if letter is not None}
    return letters | (_keyed_letters(tree) if tree is not None else set())


# --- the code scan ------------------------------------------------------------------------------------


def _matches(name: str, entries: tuple[str, ...]) -> str | None:
    top = name.split(".")[0]
    for entry in entries:
        if entry.endswith("*"):
            if top.startswith(entry[:-1]):
                return entry[:-1] + "..."
        elif name == entry or name.startswith(entry + "."):
            return entry
    return None


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _imported(node: ast.AST) -> list[str]:
    """Module paths an import statement or a literal dynamic import names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level or not node.module:
            return []
        return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    if isinstance(node, ast.Call) and node.args:
        name = _dotted(node.func) or ""
        arg = node.args[0]
        if name.split(".")[-1] in ("import_module", "__import__") and isinstance(arg, ast.Constant):
            if isinstance(arg.value, str) and not arg.value.startswith("."):
                return [arg.value]
    return []


def _starts_process(attr: str) -> bool:
    return attr in PROCESS_CALLS or attr.startswith(PROCESS_PREFIXES)


def _code_reasons(tree: ast.AST, rel: str, package: str | None) -> list[str]:
    """One line per way the file reaches past the chat function (first use of each name)."""
    chat = CHAT_FUNCTIONS.get(package or "", "the package's chat function")
    network = f"a network client; submissions reach the model only through {chat}"
    process = "submissions may not start processes"
    first: dict[str, tuple[int, str]] = {}

    def add(key: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 0)
        if key not in first or line < first[key][0]:
            first[key] = (line, message)

    for node in ast.walk(tree):
        for name in _imported(node):
            if hit := _matches(name, NETWORK_MODULES):
                add(hit, node, f"imports {name}, {network}")
            elif hit := _matches(name, PROCESS_MODULES):
                add(hit, node, f"imports {name}; {process}")
        for alias in node.names if isinstance(node, ast.ImportFrom) and node.module else []:
            module = str(getattr(node, "module", ""))
            if module == "os" and _starts_process(alias.name):
                add(f"os.{alias.name}", node, f"imports os.{alias.name}; {process}")
            elif module.split(".")[0] in PACKAGES and alias.name in CLIENT_NAMES:
                add(alias.name, node, f"imports {alias.name} from {module}; call {chat} instead")
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node) or ""
            if dotted.startswith("os.") and _starts_process(node.attr):
                add(dotted, node, f"uses {dotted}; {process}")
            elif "." in dotted and (hit := _matches(dotted, _DOTTED_NETWORK)):
                add(hit, node, f"uses {hit}, {network}")
            elif node.attr in CLIENT_NAMES and not _matches(dotted, NETWORK_MODULES):
                add(node.attr, node, f"uses {dotted or node.attr}, a model client; call {chat} instead")
    return [f"{rel}:{line}: {message}" for line, message in sorted(first.values())]


def _uses_chat(tree: ast.AST, package: str) -> bool:
    """Whether the code names the chat function (a call, an attribute, an import under an alias)."""
    chat = CHAT_FUNCTIONS[package]
    return any(
        (isinstance(n, ast.Name) and n.id == chat)
        or (isinstance(n, ast.Attribute) and n.attr == chat)
        or (isinstance(n, ast.alias) and n.name == chat)
        for n in ast.walk(tree)
    )


# --- files, requirements, vendored copies ---------------------------------------------------------------


def _vendored(paths: list[str]) -> list[str]:
    out: dict[str, str] = {}
    for rel in paths:
        parts = PurePosixPath(rel).parts
        names = [*parts[:-1]]
        if PurePosixPath(rel).suffix in (".py", ".pyi", ".so", ".pyd"):
            names.append(parts[-1].split(".")[0])
        for name in names:
            if name in VENDORED_PACKAGES and name not in out:
                out[name] = (
                    f"{rel}: ships its own {name}; a vendored copy could replace the chat function "
                    "and its counters (the evaluation provides the package)"
                )
    return list(out.values())


def _requirement_line(text: str, name: str) -> str:
    from packaging.utils import canonicalize_name

    for number, raw in enumerate(text.splitlines(), 1):
        token = re.match(r"\s*([A-Za-z0-9._-]+)", raw)
        if token and canonicalize_name(token.group(1)) == name:
            return f" line {number}"
    return ""


def _requirements_reasons(text: str, where: str) -> list[str]:
    """Why ``requirements.txt`` cannot be installed, or pins a package version the evaluation lacks."""
    try:
        lines = plain_requirements(text, where)
    except WorldForgeError as exc:
        return [str(exc)]
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    out = []
    for line in lines:
        req = Requirement(line.split(" --hash=")[0])
        name = canonicalize_name(req.name)
        supported = SUPPORTED_VERSIONS.get(name)
        if supported is None or (req.marker is not None and not req.marker.evaluate()):
            continue
        if not req.specifier.contains(supported, prereleases=True):
            out.append(
                f"requirements.txt{_requirement_line(text, name)}: {line} excludes {name} {supported}, "
                "the version the evaluation runs"
            )
    return out


def _excluded_recorder(ignored: list[str]) -> Callable[[str], bool]:
    def excluded(name: str) -> bool:
        skip = name in EXCLUDED_NAMES or name.endswith(EXCLUDED_SUFFIXES)
        if skip and name not in ignored:
            ignored.append(name)
        return skip

    return excluded


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


@dataclass
class _Findings:
    reasons: list[str]
    letters: dict[str, list[str]]  # tied letter -> files
    trees: list[ast.AST]


def _scan_files(folder: Path, walked: list[TreeFile], package: str | None) -> _Findings:
    """Read every file once: code checks on Python, the requirements, recipes in every text."""
    found = _Findings(_vendored([f.path for f in walked]), {}, [])
    for file in walked:
        text = _text(read_file(folder, file, limits=LIMITS))
        if text is None:
            continue
        tree = None
        if file.path.endswith(".py"):
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None  # the loader names the syntax error
            if tree is not None:
                found.trees.append(tree)
                found.reasons += _code_reasons(tree, file.path, package)
        elif file.path == "requirements.txt":
            found.reasons += _requirements_reasons(text, str(folder))
        for letter in tied_letters(text, tree):
            found.letters.setdefault(letter, []).append(file.path)
    return found


def qualify_team(folder: Path, *, name: str | None = None) -> Qualification:
    """Qualify the team folder ``folder`` (module docstring); ``name`` defaults to the folder's.

    Reasons and notes name files relative to the folder (the folder's own path is left out of the
    walker's and the loader's messages) and pass the project's sanitizer."""
    team = name or Path(os.path.abspath(folder)).name
    prefix = f"{folder}: "

    def done(
        reasons: list[str], notes: Sequence[str] = (), program: SubmissionProgram | None = None
    ) -> Qualification:
        clean = [sanitize_text(r[len(prefix) :] if r.startswith(prefix) else r) for r in reasons]
        return Qualification(
            team, not clean, tuple(clean), tuple(sanitize_text(n) for n in notes),
            program.package if program else None,
            f"{program.module}:{program.class_name}" if program else None,
        )  # fmt: skip

    skipped: list[str] = []
    try:
        walked = walk_tree(folder, limits=LIMITS, excluded=_excluded_recorder(skipped))
    except WorldForgeError as exc:
        return done([str(exc)])
    reasons: list[str] = []
    program: SubmissionProgram | None = None
    try:
        program = load_submission(folder, name=team)
    except WorldForgeError as exc:
        reasons.append(str(exc))
    walked = [f for f in walked if macos_metadata(f.path) is None]
    try:
        found = _scan_files(folder, walked, program.package if program else None)
    except WorldForgeError as exc:  # a file changed while it was read
        return done([*reasons, str(exc)], program=program)
    reasons += found.reasons
    notes = list(program.ignored) if program is not None else []
    if found.letters:
        letters = sorted(found.letters)
        files = ", ".join(dict.fromkeys(f for letter in letters for f in found.letters[letter]))
        count = f"{len(letters)} target letter{'s' if len(letters) > 1 else ''}"
        line = f"drop_block recipes tied to {count} ({', '.join(letters)}) in {files}"
        if len(letters) >= HARDCODED_LETTERS:
            reasons.append(f"{line}: hard-coded per-letter answers (the limit is {HARDCODED_LETTERS - 1})")
        else:
            notes.append(f"{line}: few-shot examples, fewer than {HARDCODED_LETTERS} letters")
    if program is not None and not any(_uses_chat(tree, program.package) for tree in found.trees):
        chat = CHAT_FUNCTIONS[program.package]
        notes.append(f"{chat} is never named: replies the model did not serve score 0")
    if skipped:
        notes.append("not part of the submission (never read nor copied): " + ", ".join(sorted(skipped)))
    return done(reasons, notes, program)


# --- a field of teams ------------------------------------------------------------------------------------


def is_team_folder(path: Path) -> bool:
    """Whether ``path`` is one team's folder rather than a folder of teams: a Python file, a
    ``requirements.txt`` or a ``prompts/`` folder at its top (a field's top level holds team
    folders). Only names are looked at: the team's walk refuses what must be refused."""
    try:
        if not stat.S_ISDIR(path.lstat().st_mode):
            return False
        with os.scandir(path) as entries:
            return any(
                e.name.endswith(".py") or e.name == "requirements.txt"
                or (e.name == "prompts" and e.is_dir(follow_symlinks=False))
                for e in entries
            )  # fmt: skip
    except OSError:
        return False


def _field(source: str | Path, extract_to: Path) -> tuple[list[Qualification], list[str]]:
    from worldforge.pcg.programs.field import team_folders

    teams, ignored = team_folders(source, extract_to=extract_to)
    if not teams:
        raise WorldForgeError(f"{source}: no team folders found.")
    return [qualify_team(team.path, name=team.name) for team in teams], list(ignored)


def qualify_field(source: str | Path, *, extract_to: Path | None = None) -> list[Qualification]:
    """Qualify every team of a competition folder or ``.zip`` (teams as
    :func:`~worldforge.pcg.programs.field.team_folders` finds them). A zip is extracted into
    ``extract_to``, else into a temporary folder removed before returning."""
    return qualify_source(source, extract_to=extract_to, single=False)[0]


def qualify_source(
    source: str | Path, *, extract_to: Path | None = None, single: bool = True
) -> tuple[list[Qualification], list[str]]:
    """``(qualifications, ignored entries)`` of ``source``: one team's folder (``single`` and
    :func:`is_team_folder`), else every team of a folder or ``.zip`` of teams."""
    path = Path(source)
    try:
        path.lstat()
    except OSError:
        raise WorldForgeError(f"{source}: not found.") from None
    if single and is_team_folder(path):
        return [qualify_team(path)], []
    if extract_to is not None:
        return _field(source, extract_to)
    with tempfile.TemporaryDirectory(prefix="worldforge-qualify-") as tmp:
        return _field(source, Path(tmp))


__all__ = [
    "HARDCODED_LETTERS", "NETWORK_MODULES", "PROCESS_MODULES", "SUPPORTED_VERSIONS", "VENDORED_PACKAGES",
    "Qualification", "QualificationRecord", "is_team_folder", "qualify_field", "qualify_source",
    "qualify_team", "tied_letters",
]  # fmt: skip
