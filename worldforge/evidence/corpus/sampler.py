"""Draws one concrete secret for a regex (the small subset gitleaks' samples use), from a
generator seeded by the rule id, so the fixture is byte-stable across runs.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass

from worldforge.evidence.corpus.golex import SIMPLE_ESCAPES
from worldforge.evidence.corpus.source import UNBOUNDED_EXTRA


@dataclass(frozen=True)
class _Lit:
    text: str


@dataclass(frozen=True)
class _Set:
    chars: str


@dataclass(frozen=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Alt:
    branches: tuple[_Node, ...]


@dataclass(frozen=True)
class _Repeat:
    node: _Node
    low: int
    high: int


_Node = _Lit | _Set | _Seq | _Alt | _Repeat
_WORD = string.ascii_letters + string.digits + "_"
_CLASS_SHORTHANDS = {"w": _WORD, "d": string.digits, "s": " "}
_ZERO_WIDTH_ESCAPES = "bBAzZ"


class RegexSampler:
    """Parses literals, classes, groups, alternation and counted repeats; draws one match."""

    def __init__(self, pattern: str) -> None:
        self.p, self.i = pattern, 0
        self.root = self._alternation()
        if self.i != len(self.p):
            raise ValueError(f"unsupported regex syntax at {self.i} in {pattern!r}")

    def sample(self, rng: random.Random) -> str:
        return self._draw(self.root, rng)

    def _draw(self, node: _Node, rng: random.Random) -> str:
        if isinstance(node, _Lit):
            return node.text
        if isinstance(node, _Set):
            return rng.choice(node.chars)
        if isinstance(node, _Seq):
            return "".join(self._draw(item, rng) for item in node.items)
        if isinstance(node, _Alt):
            return self._draw(rng.choice(node.branches), rng)
        return "".join(self._draw(node.node, rng) for _ in range(rng.randint(node.low, node.high)))

    def _peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def _alternation(self) -> _Node:
        branches = [self._sequence()]
        while self._peek() == "|":
            self.i += 1
            branches.append(self._sequence())
        return branches[0] if len(branches) == 1 else _Alt(tuple(branches))

    def _sequence(self) -> _Node:
        items: list[_Node] = []
        while self._peek() not in ("", "|", ")"):
            items.append(self._quantified(self._atom()))
        return _Seq(tuple(items))

    def _atom(self) -> _Node:
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            if self._peek() == "?":
                self.i += 1
                if self.p.startswith("P<", self.i) or self._peek() == "<":
                    self.i = self.p.index(">", self.i) + 1
                else:
                    while self._peek() and self._peek() in string.ascii_letters + "-":
                        self.i += 1
                    if self._peek() == ")":  # flag setting such as (?i): no text
                        self.i += 1
                        return _Seq(())
                    if self._peek() != ":":
                        raise ValueError(f"unsupported group in {self.p!r}")
                    self.i += 1
            node = self._alternation()
            if self._peek() != ")":
                raise ValueError(f"unbalanced group in {self.p!r}")
            self.i += 1
            return node
        if c == "[":
            return self._char_class()
        if c == "\\":
            return self._escape(in_class=False)
        if c == ".":
            return _Set(string.ascii_letters + string.digits)
        if c in "^$":
            return _Seq(())
        return _Lit(c)

    def _escape(self, in_class: bool) -> _Node:
        e = self.p[self.i]
        self.i += 1
        if e in _CLASS_SHORTHANDS:
            return _Set(_CLASS_SHORTHANDS[e])
        if e in _ZERO_WIDTH_ESCAPES and not in_class:
            return _Seq(())
        if e == "x":
            if self._peek() == "{":
                end = self.p.index("}", self.i)
                code, self.i = self.p[self.i + 1 : end], end + 1
            else:
                code, self.i = self.p[self.i : self.i + 2], self.i + 2
            return _Lit(chr(int(code, 16)))
        if e in "nrtfv":
            return _Lit(SIMPLE_ESCAPES[e])
        if e.isalnum():
            raise ValueError(f"unsupported escape \\{e} in {self.p!r}")
        return _Lit(e)

    def _class_item(self) -> _Node:
        c = self.p[self.i]
        self.i += 1
        if c == "\\":
            return self._escape(in_class=True)
        if c == "[" and self._peek() == ":":
            raise ValueError(f"unsupported POSIX class in {self.p!r}")
        return _Lit(c)

    def _char_class(self) -> _Node:
        if self._peek() == "^":
            raise ValueError(f"unsupported negated class in {self.p!r}")
        chars: set[str] = set()
        first = True
        while first or self._peek() != "]":
            if not self._peek():
                raise ValueError(f"unterminated class in {self.p!r}")
            first = False
            item = self._class_item()
            if isinstance(item, _Set):
                chars.update(item.chars)
                continue
            assert isinstance(item, _Lit)
            if self._peek() == "-" and self.p[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                upper = self._class_item()
                if not isinstance(upper, _Lit):
                    raise ValueError(f"bad range in {self.p!r}")
                chars.update(chr(o) for o in range(ord(item.text), ord(upper.text) + 1))
            else:
                chars.add(item.text)
        self.i += 1
        return _Set("".join(sorted(chars)))

    def _quantified(self, node: _Node) -> _Node:
        c = self._peek()
        if c in ("*", "+", "?"):
            self.i += 1
            low = 1 if c == "+" else 0
            high = 1 if c == "?" else low + UNBOUNDED_EXTRA
        elif c == "{" and (m := re.match(r"\{(\d+)(,(\d*))?\}", self.p[self.i :])):
            self.i += m.end()
            low = int(m.group(1))
            if m.group(2) is None:
                high = low
            else:
                high = int(m.group(3)) if m.group(3) else low + UNBOUNDED_EXTRA
        else:
            return node
        if self._peek() == "?":  # lazy: irrelevant for generation
            self.i += 1
        return _Repeat(node, low, high)
