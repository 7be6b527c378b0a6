#!/usr/bin/env python3
"""Regenerate the secret-sample fixture from gitleaks' published rule test data.

    python scripts/build_secret_corpus.py --gitleaks PATH
        [--output tests/fixtures/secrets/gitleaks_samples.json]

Why: the redactor and the bundle gate were first measured on secrets we wrote ourselves, which
grades our own homework: a pattern we never thought of is missing from both the detector and
the test. gitleaks (MIT licence) ships, next to every rule, the true positives the rule must find
and the benign look-alikes it must leave alone. Adopting that corpus, written by people who never
saw our code, keeps the recall and false-positive figures of ``scripts/measure_secret_corpus.py``
honest.

How: PATH is a gitleaks checkout or bare git directory; files are read at ``HEAD`` through
``git show`` so the fixture records the exact commit it came from. The Go rule files under
``cmd/generate/config/rules/`` are tokenised and the few expressions their tests use are evaluated
statically: string literals (interpreted and raw), ``+`` concatenation, ``fmt.Sprintf``,
``append``, slice and map literals, package-level variables, the regex helper functions of
``cmd/generate/config/utils/patterns.go`` (read from the same commit), and
``secrets.NewSecret(regex)``, for which a small generator below draws a concrete value from a
random generator seeded by the rule id, so the output is byte-stable. Anything else is counted as
skipped. Where a true positive is a longer text, the secret span is located with that rule's final
regex from ``config/gitleaks.toml`` (read at build time, never copied here), using the rule's
``secretGroup`` or else the first non-empty capture group, as gitleaks does. Go-only regex syntax
(mid-pattern flag groups, ``\\z``, POSIX classes) is rewritten to Python's; a sample whose rule is
missing, does not compile in Python or does not match is skipped and counted. False positives that
are benign only because of their file path (``ValidateWithPaths``) are skipped too.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import string
import subprocess
import sys
import tomllib
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_samples.json"
RULES_DIR = "cmd/generate/config/rules"
PATTERNS_FILE = "cmd/generate/config/utils/patterns.go"
CONFIG_FILE = "config/gitleaks.toml"
LICENCE = "MIT (Copyright (c) 2019 Zachary Rice); samples are gitleaks' published test data"
MAX_FALSE_POSITIVE_CHARS = 500
#: Upper bound added to the minimum of an unbounded repeat (``+``, ``*``, ``{n,}``).
UNBOUNDED_EXTRA = 8
#: Attempts at a "plausible" secret (one with a digit and no stop word) before giving up.
PLAUSIBLE_ATTEMPTS = 10_000

DEFAULT_FAMILY = "saas-api"
#: Rule family by rule file stem (the provider); anything not listed is ``saas-api``.
PROVIDER_FAMILIES: dict[str, str] = {
    # cloud and infrastructure platforms
    "alibaba": "cloud",
    "aws": "cloud",
    "azure": "cloud",
    "clickhouse": "cloud",
    "cloudflare": "cloud",
    "confluent": "cloud",
    "databricks": "cloud",
    "digitalocean": "cloud",
    "fastly": "cloud",
    "flyio": "cloud",
    "gcp": "cloud",
    "hashicorp": "cloud",
    "hashicorp_vault": "cloud",
    "heroku": "cloud",
    "kubernetes": "cloud",
    "netlify": "cloud",
    "openshift": "cloud",
    "planetscale": "cloud",
    "pulumi": "cloud",
    "scalingo": "cloud",
    "yandex": "cloud",
    # source control, CI/CD and package registries
    "artifactory": "source-control-ci",
    "bitbucket": "source-control-ci",
    "clojars": "source-control-ci",
    "codecov": "source-control-ci",
    "droneci": "source-control-ci",
    "github": "source-control-ci",
    "gitlab": "source-control-ci",
    "harness": "source-control-ci",
    "jfrog": "source-control-ci",
    "npm": "source-control-ci",
    "nuget": "source-control-ci",
    "octopusdeploy": "source-control-ci",
    "pypi": "source-control-ci",
    "rubygems": "source-control-ci",
    "snyk": "source-control-ci",
    "sonar": "source-control-ci",
    "sourcegraph": "source-control-ci",
    "travisci": "source-control-ci",
    # AI and machine-learning APIs
    "anthropic": "ai-ml",
    "cohere": "ai-ml",
    "huggingface": "ai-ml",
    "openai": "ai-ml",
    "perplexity": "ai-ml",
    "privateai": "ai-ml",
    # chat, e-mail and messaging
    "discord": "messaging",
    "gitter": "messaging",
    "intercom": "messaging",
    "mailchimp": "messaging",
    "mailgun": "messaging",
    "mattermost": "messaging",
    "messagebird": "messaging",
    "sendbird": "messaging",
    "sendgrid": "messaging",
    "sendinblue": "messaging",
    "slack": "messaging",
    "teams": "messaging",
    "telegram": "messaging",
    "twilio": "messaging",
    # payments, banking, crypto exchanges and commerce
    "bittrex": "payments-commerce",
    "coinbase": "payments-commerce",
    "easypost": "payments-commerce",
    "etsy": "payments-commerce",
    "finicity": "payments-commerce",
    "flutterwave": "payments-commerce",
    "freemius": "payments-commerce",
    "gocardless": "payments-commerce",
    "kraken": "payments-commerce",
    "kucoin": "payments-commerce",
    "plaid": "payments-commerce",
    "shippo": "payments-commerce",
    "shopify": "payments-commerce",
    "square": "payments-commerce",
    "squarespace": "payments-commerce",
    "stripe": "payments-commerce",
    # rule files that are not one provider
    "curl": "credentials-in-url-or-command",
    "generic": "generic",
    "jwt": "jwt",
    "privatekey": "private-key",
}
#: Rule ids whose family differs from their file's.
RULE_FAMILIES: dict[str, str] = {
    "age-secret-key": "private-key",
    "hashicorp-tf-password": "generic",
    "nuget-config-password": "generic",
    "sidekiq-sensitive-url": "credentials-in-url-or-command",
}


def family_of(provider: str, rule: str) -> str:
    """The rule family of a sample: rule override, else provider table, else ``saas-api``."""
    return RULE_FAMILIES.get(rule, PROVIDER_FAMILIES.get(provider, DEFAULT_FAMILY))


# --------------------------------------------------------------------------------------------
# Reading the gitleaks tree
# --------------------------------------------------------------------------------------------


class GitTree:
    """Files of one commit of a git directory (bare or with a work tree), read via ``git``."""

    def __init__(self, path: Path, revision: str = "HEAD") -> None:
        self.path = path
        self.commit = self._git("rev-parse", "--verify", f"{revision}^{{commit}}").strip()

    def _git(self, *args: str) -> str:
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, text=False
        )
        return result.stdout.decode("utf-8")

    def list_dir(self, directory: str) -> list[str]:
        out = self._git("ls-tree", "--name-only", f"{self.commit}:{directory}")
        return sorted(f"{directory}/{name}" for name in out.splitlines() if name)

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")


# --------------------------------------------------------------------------------------------
# Go tokens
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # "ident", "string", "number", "rune", "op"
    value: str | None  # decoded text for strings (None when it is not valid UTF-8)
    newline_before: bool


_OPERATORS = sorted(
    "... <<= >>= &^= && || <- ++ -- == != <= >= := += -= *= /= %= &= |= ^= << >> &^ "
    "+ - * / % & | ^ < > = ! ( ) [ ] { } , ; . : ~".split(),
    key=len,
    reverse=True,
)
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}


def _decode_interpreted(body: str) -> str | None:
    """The value of a Go interpreted string literal's body, or None if it is not valid UTF-8."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[e].encode("utf-8")
            i += 2
        elif e == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif e in "01234567":
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        elif e in "uU":
            width = 4 if e == "u" else 8
            out += chr(int(body[i + 2 : i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
        else:
            raise ValueError(f"unknown escape \\{e}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def tokenize(src: str) -> list[Token]:
    """Go source to tokens, dropping comments and keeping whether a newline preceded each token."""
    tokens: list[Token] = []
    i, n, newline = 0, len(src), True
    while i < n:
        c, count = src[i], len(tokens)
        if c in " \t\r":
            i += 1
        elif c == "\n":
            newline = True
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.index("*/", i + 2)
            newline = newline or "\n" in src[i:j]
            i = j + 2
        elif c == "`":
            j = src.index("`", i + 1)
            tokens.append(Token("string", src[i + 1 : j].replace("\r", ""), newline))
            i = j + 1
        elif c in "\"'":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            kind = "string" if c == '"' else "rune"
            value = _decode_interpreted(src[i + 1 : j]) if kind == "string" else src[i : j + 1]
            tokens.append(Token(kind, value, newline))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] == "_"):
                j += 1
            tokens.append(Token("ident", src[i:j], newline))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] in "._"):
                j += 1
            tokens.append(Token("number", src[i:j], newline))
            i = j
        else:
            op = next((o for o in _OPERATORS if src.startswith(o, i)), None)
            if op is None:
                raise ValueError(f"unexpected character {c!r}")
            tokens.append(Token("op", op, newline))
            i += len(op)
        if len(tokens) > count:
            newline = False
    return tokens


# --------------------------------------------------------------------------------------------
# Regex-driven sample generator (the small subset gitleaks' samples use)
# --------------------------------------------------------------------------------------------


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
            return _Lit(_SIMPLE_ESCAPES[e])
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


# --------------------------------------------------------------------------------------------
# A tiny evaluator for the Go expressions gitleaks' rule tests use
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unknown:
    """A value that cannot be computed statically."""

    reason: str


@dataclass(frozen=True)
class Generated:
    """``utils.GenerateSampleSecret(s)(identifier, secret)``: one keyed one-line sample."""

    identifier: str
    secret: str

    @property
    def text(self) -> str:
        return f'{self.identifier}_api_token = "{self.secret}"'


@dataclass(frozen=True)
class Validated:
    """The (true positives, false positives) handed to ``utils.Validate`` / ``ValidateWithPaths``."""

    true_positives: Any
    false_positives: Any


@dataclass
class GoFunction:
    params: list[str]
    tokens: list[Token]  # the function body, without its braces


@dataclass
class Scope:
    """Names visible to an evaluation, and the seed for the random values it draws."""

    variables: dict[str, Any]
    package: dict[str, Any]
    functions: dict[str, GoFunction]
    seed: str
    draws: int = 0
    stop_words: tuple[str, ...] = ()

    def rng(self) -> random.Random:
        self.draws += 1
        return random.Random(f"{self.seed}#{self.draws}")


class ParseError(Exception):
    pass


def _as_str(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Generated):
        return value.text
    return None


def _sprintf(fmt: str, args: list[Any]) -> Any:
    out, arg, i = [], 0, 0
    while i < len(fmt):
        if fmt[i] != "%":
            out.append(fmt[i])
            i += 1
            continue
        verb = fmt[i + 1 : i + 2]
        i += 2
        if verb == "%":
            out.append("%")
            continue
        if verb not in ("s", "v", "d") or arg >= len(args):
            return Unknown(f"fmt.Sprintf verb %{verb}")
        value = args[arg]
        arg += 1
        text = str(value) if isinstance(value, int) else _as_str(value)
        if text is None:
            return Unknown("fmt.Sprintf of an unknown value")
        out.append(text)
    return "".join(out)


class Evaluator:
    """Recursive-descent parser over a token list that evaluates as it parses."""

    def __init__(self, tokens: list[Token], pos: int, scope: Scope) -> None:
        self.t, self.pos, self.scope = tokens, pos, scope

    # -- token helpers --------------------------------------------------------------------

    def peek(self, offset: int = 0) -> Token | None:
        k = self.pos + offset
        return self.t[k] if k < len(self.t) else None

    def is_op(self, value: str, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.kind == "op" and tok.value == value

    def is_ident(self, value: str | None = None, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.kind == "ident" and (value is None or tok.value == value)

    def expect_op(self, value: str) -> None:
        if not self.is_op(value):
            raise ParseError(f"expected {value!r} at token {self.pos}")
        self.pos += 1

    def skip_balanced(self) -> None:
        """Skip one bracketed group starting at the current opening bracket."""
        depth = 0
        while True:
            tok = self.peek()
            if tok is None:
                raise ParseError("unbalanced brackets")
            self.pos += 1
            if tok.kind == "op" and tok.value in ("(", "[", "{"):
                depth += 1
            elif tok.kind == "op" and tok.value in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return

    # -- types ----------------------------------------------------------------------------

    def parse_type(self) -> str:
        """Skip a type; return its spelling (``func`` types are abbreviated)."""
        if self.is_op("*"):
            self.pos += 1
            return "*" + self.parse_type()
        if self.is_op("[") and self.is_op("]", 1):
            self.pos += 2
            return "[]" + self.parse_type()
        if self.is_ident("map"):
            self.pos += 1
            self.expect_op("[")
            key = self.parse_type()
            self.expect_op("]")
            return f"map[{key}]{self.parse_type()}"
        if self.is_ident("func"):
            self.pos += 1
            self.skip_balanced()
            if self.is_op("("):
                self.skip_balanced()
            elif not self.is_op("{"):
                self.parse_type()
            return "func"
        if self.is_ident():
            name = self.t[self.pos].value or ""
            self.pos += 1
            if self.is_op(".") and self.is_ident(offset=1):
                name = f"{name}.{self.t[self.pos + 1].value}"
                self.pos += 2
            return name
        raise ParseError(f"expected a type at token {self.pos}")

    # -- expressions ----------------------------------------------------------------------

    def parse_expr(self) -> Any:
        left = self.parse_unary()
        while (tok := self.peek()) is not None and tok.kind == "op" and tok.value in _BINARY:
            self.pos += 1
            right = self.parse_unary()
            if tok.value == "+":
                left = self._add(left, right)
            else:
                left = Unknown(f"operator {tok.value}")
        return left

    @staticmethod
    def _add(left: Any, right: Any) -> Any:
        if isinstance(left, int) and isinstance(right, int):
            return left + right
        a, b = _as_str(left), _as_str(right)
        if a is not None and b is not None:
            return a + b
        for side in (left, right):
            if isinstance(side, Unknown):
                return side
        return Unknown("+ of non-strings")

    def parse_unary(self) -> Any:
        tok = self.peek()
        if tok is not None and tok.kind == "op" and tok.value in ("&", "*", "-", "!", "^", "<-"):
            self.pos += 1
            value = self.parse_unary()
            return value if tok.value == "&" else Unknown(f"unary {tok.value}")
        return self.parse_primary()

    def parse_primary(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise ParseError("unexpected end of input")
        name: str | None = None
        value: Any
        if tok.kind == "string":
            self.pos += 1
            value = tok.value if tok.value is not None else Unknown("string is not UTF-8")
        elif tok.kind == "number":
            self.pos += 1
            value = int(tok.value) if tok.value and tok.value.isdigit() else Unknown("number")
        elif tok.kind == "rune":
            self.pos += 1
            value = Unknown("rune")
        elif tok.kind == "op" and tok.value == "(":
            self.pos += 1
            value = self.parse_expr()
            self.expect_op(")")
        elif (tok.kind == "op" and tok.value == "[") or (tok.kind == "ident" and tok.value == "map"):
            type_name = self.parse_type()
            if self.is_op("{"):
                value = self.parse_composite()
            elif self.is_op("("):  # conversion such as []byte(s): bytes are kept as text
                value = self.parse_call(type_name, None)
            else:
                value = Unknown("type")
        elif tok.kind == "ident" and tok.value == "func":
            self.parse_type()
            if self.is_op("{"):
                self.skip_balanced()
            value = Unknown("function literal")
        elif tok.kind == "ident":
            self.pos += 1
            name = tok.value
            value = self.lookup(name or "")
        else:
            raise ParseError(f"unexpected token {tok.value!r} at {self.pos}")
        while True:
            if self.is_op(".") and self.is_ident(offset=1):
                member = self.t[self.pos + 1].value or ""
                self.pos += 2
                name = f"{name}.{member}" if name is not None else None
                value = value.get(member, Unknown(member)) if isinstance(value, dict) else Unknown(member)
            elif self.is_op("("):
                value = self.parse_call(name, value)
                name = None
            elif self.is_op("["):
                self.pos += 1
                index = self.parse_expr() if not self.is_op(":") else None
                if self.is_op(":"):
                    self.pos += 1
                    if not self.is_op("]"):
                        self.parse_expr()
                    index = Unknown("slice")
                self.expect_op("]")
                value = self._index(value, index)
                name = None
            elif self.is_op("{") and name is not None:
                value = self.parse_composite()
                name = None
            else:
                return value

    @staticmethod
    def _index(value: Any, index: Any) -> Any:
        if isinstance(value, list) and isinstance(index, int) and 0 <= index < len(value):
            return value[index]
        if isinstance(value, dict) and isinstance(index, str) and index in value:
            return value[index]
        return Unknown("index")

    def lookup(self, name: str) -> Any:
        if name in self.scope.variables:
            return self.scope.variables[name]
        if name in self.scope.package:
            return self.scope.package[name]
        if name == "nil":
            return []
        return Unknown(f"name {name}")

    def parse_composite(self) -> Any:
        """``{ elem, key: elem, ... }``; a list when unkeyed, else a dict."""
        self.expect_op("{")
        items: list[Any] = []
        keyed: dict[str, Any] = {}
        while not self.is_op("}"):
            key: Any = None
            if self.is_ident() and self.is_op(":", 1):
                key = self.t[self.pos].value
                self.pos += 2
            else:
                first = self.parse_composite() if self.is_op("{") else self.parse_expr()
                if self.is_op(":"):
                    self.pos += 1
                    key = first
                else:
                    items.append(first)
            if key is not None:
                element = self.parse_composite() if self.is_op("{") else self.parse_expr()
                keyed[key if isinstance(key, str) else f"<unknown key {len(keyed)}>"] = element
            if self.is_op(","):
                self.pos += 1
            elif not self.is_op("}"):
                raise ParseError(f"expected ',' or '}}' at token {self.pos}")
        self.pos += 1
        return keyed if keyed else items

    def parse_call(self, name: str | None, callee: Any) -> Any:
        self.expect_op("(")
        args: list[Any] = []
        spread = False
        while not self.is_op(")"):
            args.append(self.parse_expr())
            if self.is_op("..."):
                self.pos += 1
                spread = True
            if self.is_op(","):
                self.pos += 1
            elif not self.is_op(")"):
                raise ParseError(f"expected ',' or ')' at token {self.pos}")
        self.pos += 1
        if name is None:
            return Unknown("call of an expression")
        return self.call(name, args, spread)

    # -- calls ----------------------------------------------------------------------------

    def call(self, name: str, args: list[Any], spread: bool) -> Any:
        handler = _BUILTINS.get(name)
        if handler is not None:
            return handler(self, args, spread)
        function = self.scope.functions.get(name)
        if function is not None and len(function.params) == len(args):
            return self.call_function(function, args)
        return Unknown(f"call {name}")

    def call_function(self, function: GoFunction, args: list[Any]) -> Any:
        """Evaluate a function whose whole body is ``return <expr>``."""
        body = function.tokens
        if not body or body[0].value != "return":
            return Unknown("function body is not a single return")
        scope = Scope(
            dict(zip(function.params, args, strict=True)),
            self.scope.package,
            self.scope.functions,
            self.scope.seed,
            stop_words=self.scope.stop_words,
        )
        inner = Evaluator(body, 1, scope)
        value = inner.parse_expr()
        if inner.pos != len(body):
            return Unknown("function body is not a single return")
        return value

    def new_secret(self, pattern: Any) -> Any:
        if not isinstance(pattern, str):
            return Unknown("secret pattern")
        try:
            sampler = RegexSampler(pattern)
        except (ValueError, IndexError):
            return Unknown(f"pattern {pattern}")
        return sampler.sample(self.scope.rng())

    def plausible_secret(self, pattern: Any) -> Any:
        """A secret with at least one digit 1-9 and no stop word, as gitleaks' generic tests draw."""
        if not isinstance(pattern, str):
            return Unknown("secret pattern")
        try:
            sampler = RegexSampler(pattern)
        except (ValueError, IndexError):
            return Unknown(f"pattern {pattern}")
        rng = self.scope.rng()
        for _ in range(PLAUSIBLE_ATTEMPTS):
            secret = sampler.sample(rng)
            lowered = secret.lower()
            if re.search("[1-9]", secret) and not any(w in lowered for w in self.scope.stop_words):
                return secret
        return Unknown("no plausible secret drawn")


_BINARY = frozenset("+ - * / % & | ^ << >> &^ && || == != < <= > >=".split())


def _sample_secrets(ev: Evaluator, args: list[Any], spread: bool) -> Any:
    one = _sample_secret(ev, args, spread)
    return [one]


def _sample_secret(ev: Evaluator, args: list[Any], spread: bool) -> Any:
    if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str):
        return Generated(args[0], args[1])
    return Unknown("sample secret argument")


def _append(ev: Evaluator, args: list[Any], spread: bool) -> Any:
    if not args or not isinstance(args[0], list):
        return Unknown("append to an unknown slice")
    items = list(args[0])
    rest = args[1:]
    if spread and rest:
        last = rest.pop()
        items.extend(rest)
        if isinstance(last, list):
            items.extend(last)
        else:
            items.append(Unknown("spread of an unknown slice"))
    else:
        items.extend(rest)
    return items


def _validate(ev: Evaluator, args: list[Any], spread: bool) -> Any:
    if len(args) != 3:
        return Unknown("validate arguments")
    return Validated(args[1], args[2])


def _str_function(fn: Callable[..., str], arity: int) -> Callable[[Evaluator, list[Any], bool], Any]:
    def handler(ev: Evaluator, args: list[Any], spread: bool) -> Any:
        if len(args) != arity or any(isinstance(a, Unknown) or isinstance(a, dict) for a in args):
            return Unknown("string function arguments")
        try:
            return fn(*args)
        except (TypeError, ValueError):
            return Unknown("string function arguments")

    return handler


def _base64(encode: Callable[[bytes], bytes], padded: bool) -> Callable[[Evaluator, list[Any], bool], Any]:
    def handler(ev: Evaluator, args: list[Any], spread: bool) -> Any:
        if len(args) != 1 or not isinstance(args[0], str):
            return Unknown("base64 of an unknown value")
        encoded = encode(args[0].encode("utf-8")).decode("ascii")
        return encoded if padded else encoded.rstrip("=")

    return handler


def _identity(ev: Evaluator, args: list[Any], spread: bool) -> Any:
    return args[0] if len(args) == 1 and isinstance(args[0], str) else Unknown("conversion")


_BUILTINS: dict[str, Callable[[Evaluator, list[Any], bool], Any]] = {
    "append": _append,
    "[]byte": _identity,
    "string": _identity,
    "base64.StdEncoding.EncodeToString": _base64(base64.b64encode, padded=True),
    "base64.RawStdEncoding.EncodeToString": _base64(base64.b64encode, padded=False),
    "base64.URLEncoding.EncodeToString": _base64(base64.urlsafe_b64encode, padded=True),
    "base64.RawURLEncoding.EncodeToString": _base64(base64.urlsafe_b64encode, padded=False),
    "utils.GenerateSampleSecrets": _sample_secrets,
    "utils.GenerateSampleSecret": _sample_secret,
    "utils.Validate": _validate,
    "utils.ValidateWithPaths": _validate,
    "secrets.NewSecret": lambda ev, args, spread: ev.new_secret(args[0] if args else None),
    "newPlausibleSecret": lambda ev, args, spread: ev.plausible_secret(args[0] if args else None),
    "fmt.Sprintf": lambda ev, args, spread: (
        _sprintf(args[0], args[1:]) if args and isinstance(args[0], str) else Unknown("format")
    ),
    "strings.Repeat": _str_function(lambda s, k: s * k, 2),
    "strings.ToUpper": _str_function(lambda s: s.upper(), 1),
    "strings.ToLower": _str_function(lambda s: s.lower(), 1),
    "strings.Join": _str_function(lambda xs, sep: sep.join(xs), 2),
}


# --------------------------------------------------------------------------------------------
# Go files: functions, package variables, statements
# --------------------------------------------------------------------------------------------


@dataclass
class GoFile:
    functions: dict[str, GoFunction] = field(default_factory=dict)
    variables: list[tuple[str, list[Token], int]] = field(default_factory=list)  # name, tokens, start


def _matching_brace(tokens: list[Token], start: int) -> int:
    depth = 0
    for k in range(start, len(tokens)):
        tok = tokens[k]
        if tok.kind == "op" and tok.value in ("(", "[", "{"):
            depth += 1
        elif tok.kind == "op" and tok.value in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return k
    raise ParseError("unbalanced braces")


def parse_go_file(src: str) -> GoFile:
    """Top-level functions (name, parameter names, body) and ``var``/``const`` declarations."""
    tokens = tokenize(src)
    out = GoFile()
    k = 0
    while k < len(tokens):
        tok = tokens[k]
        if tok.kind == "ident" and tok.value == "func" and tok.newline_before:
            j = k + 1
            if tokens[j].value == "(":  # method receiver
                j = _matching_brace(tokens, j) + 1
            name = tokens[j].value or ""
            params_end = _matching_brace(tokens, j + 1)
            params = _param_names(tokens[j + 2 : params_end])
            body_start = params_end + 1
            while not (tokens[body_start].kind == "op" and tokens[body_start].value == "{"):
                body_start = (
                    _matching_brace(tokens, body_start) + 1
                    if tokens[body_start].value in ("(", "[")
                    else body_start + 1
                )
            body_end = _matching_brace(tokens, body_start)
            out.functions[name] = GoFunction(params, tokens[body_start + 1 : body_end])
            k = body_end + 1
        elif tok.kind == "ident" and tok.value in ("var", "const") and tok.newline_before:
            if tokens[k + 1].kind == "op" and tokens[k + 1].value == "(":
                end = _matching_brace(tokens, k + 1)
                group = tokens[k + 2 : end]
                for start in _statement_starts(group):
                    if group[start].kind == "ident":
                        out.variables.append((group[start].value or "", group, start + 1))
                k = end + 1
            else:
                out.variables.append((tokens[k + 1].value or "", tokens, k + 2))
                k += 2
        else:
            k += 1
    return out


def _param_names(tokens: list[Token]) -> list[str]:
    names: list[str] = []
    expect_name = True
    for k, tok in enumerate(tokens):
        if tok.kind == "op" and tok.value == ",":
            expect_name = True
        elif expect_name and tok.kind == "ident":
            names.append(tok.value or "")
            expect_name = False
            # "a, b string": a name directly followed by "," shares the next type.
            if k + 1 < len(tokens) and tokens[k + 1].value == ",":
                expect_name = True
    return names


def _statement_starts(tokens: list[Token]) -> list[int]:
    """Indices of tokens that begin a statement at the outermost level of a block."""
    starts: list[int] = []
    depth = 0
    for k, tok in enumerate(tokens):
        if depth == 0 and (k == 0 or tok.newline_before or tokens[k - 1].value == ";"):
            if not (tok.kind == "op" and tok.value in (")", "]", "}", ".", ",", "+")):
                prev = tokens[k - 1] if k else None
                if prev is None or not (prev.kind == "op" and prev.value in ("+", ",", "(", "{", "[")):
                    starts.append(k)
        if tok.kind == "op" and tok.value in ("(", "[", "{"):
            depth += 1
        elif tok.kind == "op" and tok.value in (")", "]", "}"):
            depth -= 1
    return starts


def evaluate_variable(tokens: list[Token], start: int, scope: Scope) -> Any:
    """The value of ``NAME [TYPE] = EXPR`` whose type or ``=`` begins at ``start``."""
    ev = Evaluator(tokens, start, scope)
    try:
        if not ev.is_op("="):
            ev.parse_type()
        ev.expect_op("=")
        return ev.parse_expr()
    except (ParseError, IndexError):
        return Unknown("declaration")


def run_function(function: GoFunction, scope: Scope) -> Validated | None:
    """Evaluate the simple assignments of a function body; return what it validates."""
    body = function.tokens
    result: Validated | None = None
    for start in _statement_starts(body):
        tok = body[start]
        ev = Evaluator(body, start, scope)
        try:
            if tok.kind == "ident" and tok.value == "return":
                ev.pos += 1
                value = ev.parse_expr()
                if isinstance(value, Validated):
                    result = value
            elif tok.kind == "ident" and tok.value in ("var", "const") and ev.is_op("(", 1):
                end = _matching_brace(body, start + 1)
                group = body[start + 2 : end]
                for k in _statement_starts(group):
                    if group[k].kind == "ident":
                        scope.variables[group[k].value or ""] = evaluate_variable(group, k + 1, scope)
            elif tok.kind == "ident" and tok.value in ("var", "const") and ev.is_ident(offset=1):
                scope.variables[body[start + 1].value or ""] = evaluate_variable(body, start + 2, scope)
            elif tok.kind == "ident" and (ev.is_op(":=", 1) or ev.is_op("=", 1)):
                ev.pos += 2
                scope.variables[tok.value or ""] = ev.parse_expr()
        except (ParseError, IndexError) as exc:
            if tok.kind == "ident" and tok.value not in ("return", "var", "const"):
                scope.variables[tok.value or ""] = Unknown(f"statement: {exc}")
    return result


def _rule_id(function: GoFunction, scope: Scope) -> str | None:
    body = function.tokens
    for k, tok in enumerate(body[:-2]):
        if tok.kind == "ident" and tok.value == "RuleID" and body[k + 1].value == ":":
            value = Evaluator(body, k + 2, scope).parse_expr()
            return value if isinstance(value, str) else None
    return None


# --------------------------------------------------------------------------------------------
# Locating the secret in a literal true positive
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Building the fixture
# --------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    true_positives: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)
    false_positives: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, family)
    unmatched_generated: list[str] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)

    def skip(self, kind: str, family: str, reason: str) -> None:
        self.skipped[(kind, family)] += 1
        self.reasons[f"{kind}: {reason}"] += 1


def _flatten(value: Any) -> Iterable[Any]:
    if isinstance(value, list):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


def add_samples(
    corpus: Corpus,
    provider: str,
    rule: str,
    validated: Validated,
    regex: RuleRegex | None,
    all_regexes: tuple[RuleRegex, ...] = (),
) -> None:
    family = family_of(provider, rule)
    base = {"family": family, "provider": provider, "rule": rule}
    tps = validated.true_positives
    from_paths = isinstance(tps, dict)
    for item in _flatten(list(tps.values()) if isinstance(tps, dict) else tps):
        if isinstance(item, Generated):
            text, secret = item.text, item.secret
            if regex is not None and regex.pattern is not None and not regex.pattern.search(text):
                corpus.unmatched_generated.append(f"{rule}: {secret}")
        elif isinstance(item, str):
            if not item.strip():
                corpus.skip("true_positives", family, "path-only sample" if from_paths else "empty")
                continue
            if regex is None:
                corpus.skip("true_positives", family, "rule not in config/gitleaks.toml")
                continue
            if regex.pattern is None:
                corpus.skip("true_positives", family, "rule regex not Python-compatible")
                continue
            located = locate_secret(regex, item)
            if located is None:
                corpus.skip("true_positives", family, "rule regex does not match")
                continue
            text, secret = item, located
        else:
            reason = item.reason if isinstance(item, Unknown) else type(item).__name__
            corpus.skip("true_positives", family, f"not static: {reason}")
            continue
        corpus.true_positives[(rule, secret, text)] = {**base, "secret": secret, "text": text}
    fps = validated.false_positives
    if isinstance(fps, dict):  # path-dependent look-alikes: the text alone is not benign
        for _ in fps:
            corpus.skip("false_positives", family, "path-dependent false positive")
        return
    for item in _flatten(fps):
        fp_text = _as_str(item)
        if fp_text is None:
            reason = item.reason if isinstance(item, Unknown) else type(item).__name__
            corpus.skip("false_positives", family, f"not static: {reason}")
        elif len(fp_text) > MAX_FALSE_POSITIVE_CHARS:
            corpus.skip("false_positives", family, "longer than 500 characters")
        else:
            # "pattern": some gitleaks rule's regex matches the look-alike and only allowlists,
            # stop words or entropy thresholds exclude it (placeholders such as ghp_xxxx…, known
            # public keys, values under secret names); "benign": no gitleaks pattern matches it.
            shaped = any(r.pattern is not None and r.pattern.search(fp_text) for r in all_regexes)
            corpus.false_positives[(rule, fp_text)] = {
                **base,
                "text": fp_text,
                "kind": "pattern" if shaped else "benign",
            }


def build(tree: GitTree) -> tuple[dict[str, Any], Corpus]:
    regexes = load_rule_regexes(tree.read(CONFIG_FILE))
    helpers = parse_go_file(tree.read(PATTERNS_FILE)).functions
    functions: dict[str, GoFunction] = {f"utils.{name}": fn for name, fn in helpers.items()}
    files: dict[str, GoFile] = {}
    for path in tree.list_dir(RULES_DIR):
        if path.endswith(".go") and not path.endswith("_test.go"):
            files[Path(path).stem] = parse_go_file(tree.read(path))
    for parsed in files.values():
        functions.update(parsed.functions)
    package: dict[str, Any] = {}
    for parsed in files.values():
        for name, tokens, start in parsed.variables:
            scope = Scope({}, package, functions, seed=f"var:{name}")
            package[name] = evaluate_variable(tokens, start, scope)
    stop_words = package.get("DefaultStopWords", [])
    stops = tuple(w.lower() for w in stop_words if isinstance(w, str)) if isinstance(stop_words, list) else ()

    corpus = Corpus()
    all_regexes = tuple(regexes[name] for name in sorted(regexes))
    for provider, parsed in sorted(files.items()):
        for fname, function in sorted(parsed.functions.items()):
            probe = Scope({}, package, functions, seed=fname, stop_words=stops)
            rule = _rule_id(function, probe)
            if rule is None:
                continue
            scope = Scope({}, package, functions, seed=rule, stop_words=stops)
            validated = run_function(function, scope)
            if validated is not None:
                add_samples(corpus, provider, rule, validated, regexes.get(rule), all_regexes)

    def tp_key(s: dict[str, str]) -> tuple[str, ...]:
        return (s["family"], s["provider"], s["rule"], s["secret"], s["text"])

    def fp_key(s: dict[str, str]) -> tuple[str, ...]:
        return (s["family"], s["provider"], s["rule"], s["text"])

    document = {
        "source": {
            "repository": "https://github.com/gitleaks/gitleaks",
            "commit": tree.commit,
            "licence": LICENCE,
            "paths": [f"{RULES_DIR}/*.go", CONFIG_FILE],
            "generated_by": "scripts/build_secret_corpus.py",
        },
        "description": (
            "Secret samples adopted from gitleaks' rule tests: per rule, true positives (the text "
            "and the secret span gitleaks reports in it; generated samples use gitleaks' one-line "
            "form '<id>_api_token = \"<secret>\"') and benign look-alikes the rule must not flag, "
            "grouped into rule families. Input of scripts/measure_secret_corpus.py."
        ),
        "true_positives": sorted(corpus.true_positives.values(), key=tp_key),
        "false_positives": sorted(corpus.false_positives.values(), key=fp_key),
        "skipped": {
            kind: sum(n for (k, _), n in corpus.skipped.items() if k == kind)
            for kind in ("true_positives", "false_positives")
        },
    }
    return document, corpus


def summary(document: dict[str, Any], corpus: Corpus) -> str:
    tps = Counter(s["family"] for s in document["true_positives"])
    fps = Counter(s["family"] for s in document["false_positives"])
    families = sorted(set(tps) | set(fps) | {f for _, f in corpus.skipped})
    lines = [f"{'family':32} {'tps':>6} {'fps':>6} {'skip-tp':>8} {'skip-fp':>8}"]
    for fam in families:
        lines.append(
            f"{fam:32} {tps[fam]:>6} {fps[fam]:>6} "
            f"{corpus.skipped[('true_positives', fam)]:>8} {corpus.skipped[('false_positives', fam)]:>8}"
        )
    lines.append(
        f"{'all':32} {sum(tps.values()):>6} {sum(fps.values()):>6} "
        f"{document['skipped']['true_positives']:>8} {document['skipped']['false_positives']:>8}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--gitleaks", type=Path, required=True, help="gitleaks checkout or bare git dir")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--verbose", action="store_true", help="print why samples were skipped")
    args = parser.parse_args(argv)
    document, corpus = build(GitTree(args.gitleaks))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text.encode('utf-8'))} bytes) from {document['source']['commit']}")
    print(summary(document, corpus))
    if args.verbose:
        for reason, n in sorted(corpus.reasons.items()):
            print(f"  skipped {n:>4}  {reason}")
        for entry in corpus.unmatched_generated:
            print(f"  generated sample not matched by its rule: {entry}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
