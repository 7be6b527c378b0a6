"""Locating the secret in a literal true positive with the rule's final regex from gitleaks'
configuration, its Go-only syntax rewritten to Python's (mid-pattern flag groups, ``\\z``, POSIX
classes).
"""

from __future__ import annotations

import re
import tomllib
import warnings
from dataclasses import dataclass

_FLAG_GROUP = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)\)")
_GROUP_OPEN = re.compile(r"\((?:\?(?:P?<[A-Za-z_]\w*>|[imsU]*(?:-[imsU]*)?:))?")
#: POSIX bracket classes (ASCII, as in Go) that Python's ``re`` does not know.
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "space": "\\t\\n\\v\\f\\r ",
    "word": "\\w",
}


def go_regex_to_python(pattern: str) -> str:
    r"""Rewrite the Go-only syntax of an RE2 pattern into Python's equivalent.

    Go allows a flag group such as ``(?i)`` anywhere, applying to the rest of the enclosing group
    (its later alternatives included); Python only at the start. Such a group becomes a scoped
    ``(?i:...)`` around the rest of its branch and around each later branch. Also: ``\z`` is
    ``\Z``, POSIX classes like ``[[:alnum:]]`` are spelled out, and a literal ``[`` inside a
    class is escaped. Anything else is passed through; Python rejects what it does not support.
    """
    out, i = _rx_alternation(pattern, 0)
    if i != len(pattern):
        raise ValueError(f"unbalanced ')' at {i}")
    return out


def _rx_alternation(p: str, i: int) -> tuple[str, int]:
    branches: list[str] = []
    carried = ""
    while True:
        branch, i, carried = _rx_branch(p, i, carried)
        branches.append(branch)
        if i < len(p) and p[i] == "|":
            i += 1
            continue
        return "|".join(branches), i


def _merge_flags(old: str, new: str) -> str:
    def split(flags: str) -> tuple[set[str], set[str]]:
        on, _, off = flags.partition("-")
        return set(on), set(off)

    on, off = split(old)
    new_on, new_off = split(new)
    on, off = (on - new_off) | new_on, (off - new_on) | new_off
    return "".join(sorted(on)) + ("-" + "".join(sorted(off)) if off else "")


def _rx_branch(p: str, i: int, carried: str) -> tuple[str, int, str]:
    outer = carried
    pieces: list[str] = []
    while i < len(p) and p[i] not in "|)":
        flag = _FLAG_GROUP.match(p, i)
        if flag is not None:
            if i == 0:  # leading flags cover the whole pattern in both dialects
                pieces.append(flag.group(0))
                i = flag.end()
                continue
            rest, i, _ = _rx_branch(p, flag.end(), "")
            pieces.append(f"(?{flag.group(1)}:{rest})")
            carried = _merge_flags(carried, flag.group(1))
            break
        c = p[i]
        if c == "\\":
            pieces.append("\\Z" if p[i + 1 : i + 2] == "z" else p[i : i + 2])
            i += 2
        elif c == "[":
            text, i = _rx_class(p, i)
            pieces.append(text)
        elif c == "(":
            opener = _GROUP_OPEN.match(p, i)
            assert opener is not None
            inner, i = _rx_alternation(p, opener.end())
            if i >= len(p) or p[i] != ")":
                raise ValueError("unbalanced '('")
            pieces.append(opener.group(0) + inner + ")")
            i += 1
        else:
            pieces.append(c)
            i += 1
    body = "".join(pieces)
    return (f"(?{outer}:{body})" if outer else body), i, carried


def _rx_class(p: str, i: int) -> tuple[str, int]:
    out = ["["]
    i += 1
    if p[i : i + 1] == "^":
        out.append("^")
        i += 1
    if p[i : i + 1] == "]":
        out.append("\\]")
        i += 1
    while i < len(p) and p[i] != "]":
        if p[i] == "\\":
            out.append(p[i : i + 2])
            i += 2
        elif p[i] == "[" and p[i + 1 : i + 2] == ":":
            end = p.index(":]", i + 2)
            name = p[i + 2 : end]
            if name not in _POSIX_CLASSES:
                raise ValueError(f"POSIX class {name}")
            out.append(_POSIX_CLASSES[name])
            i = end + 2
        elif p[i] == "[":
            out.append("\\[")
            i += 1
        else:
            out.append(p[i])
            i += 1
    if i >= len(p):
        raise ValueError("unterminated class")
    out.append("]")
    return "".join(out), i + 1


@dataclass(frozen=True)
class RuleRegex:
    pattern: re.Pattern[str] | None
    secret_group: int


def load_rule_regexes(config_text: str) -> dict[str, RuleRegex]:
    """Final regex and ``secretGroup`` per rule id from gitleaks.toml (None if Python rejects it)."""
    config = tomllib.loads(config_text)
    out: dict[str, RuleRegex] = {}
    for rule in config.get("rules", []):
        source = rule.get("regex")
        compiled: re.Pattern[str] | None = None
        if source:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)  # "possible nested set"
                    compiled = re.compile(go_regex_to_python(source), re.ASCII)
            except (re.error, ValueError):
                compiled = None
        out[rule["id"]] = RuleRegex(compiled, int(rule.get("secretGroup", 0)))
    return out


def locate_secret(rule: RuleRegex, text: str) -> str | None:
    """The secret gitleaks would report for the first match of the rule in ``text``."""
    if rule.pattern is None:
        return None
    m = rule.pattern.search(text)
    if m is None:
        return None
    match = m.group(0).strip("\n")
    sub = rule.pattern.search(match)
    secret = match
    if sub is not None and sub.re.groups >= 1:
        if rule.secret_group > 0:
            secret = sub.group(rule.secret_group) or ""
        else:
            secret = next((g for g in sub.groups() if g), secret)
    return secret or None
