"""A tiny evaluator for the Go expressions gitleaks' rule tests use: literals, concatenation,
``fmt.Sprintf``, ``append``, slice and map literals and the sample generator; anything else is an
:class:`Unknown` and counted as skipped, never guessed.
"""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from worldforge.evidence.corpus.golex import Token
from worldforge.evidence.corpus.sampler import RegexSampler
from worldforge.evidence.corpus.source import PLAUSIBLE_ATTEMPTS


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

    true_positives: GoValue
    false_positives: GoValue


#: A value an expression evaluates to: Go strings, integers, slices and maps, plus the sample
#: generator's results and what could not be computed. Byte slices are kept as text.
GoValue: TypeAlias = "str | int | Generated | Validated | Unknown | list[GoValue] | dict[str, GoValue]"
#: A builtin: the evaluator, the call's arguments and whether the last one was spread (``xs...``).
Builtin: TypeAlias = "Callable[[Evaluator, list[GoValue], bool], GoValue]"


@dataclass
class GoFunction:
    params: list[str]
    tokens: list[Token]  # the function body, without its braces


@dataclass
class Scope:
    """Names visible to an evaluation, and the seed for the random values it draws."""

    variables: dict[str, GoValue]
    package: dict[str, GoValue]
    functions: dict[str, GoFunction]
    seed: str
    draws: int = 0
    stop_words: tuple[str, ...] = ()

    def rng(self) -> random.Random:
        self.draws += 1
        return random.Random(f"{self.seed}#{self.draws}")


class ParseError(Exception):
    pass


def as_str(value: GoValue | None) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Generated):
        return value.text
    return None


def _sprintf(fmt: str, args: list[GoValue]) -> GoValue:
    out: list[str] = []
    arg, i = 0, 0
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
        text = str(value) if isinstance(value, int) else as_str(value)
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

    def parse_expr(self) -> GoValue:
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
    def _add(left: GoValue, right: GoValue) -> GoValue:
        if isinstance(left, int) and isinstance(right, int):
            return left + right
        a, b = as_str(left), as_str(right)
        if a is not None and b is not None:
            return a + b
        for side in (left, right):
            if isinstance(side, Unknown):
                return side
        return Unknown("+ of non-strings")

    def parse_unary(self) -> GoValue:
        tok = self.peek()
        if tok is not None and tok.kind == "op" and tok.value in ("&", "*", "-", "!", "^", "<-"):
            self.pos += 1
            value = self.parse_unary()
            return value if tok.value == "&" else Unknown(f"unary {tok.value}")
        return self.parse_primary()

    def parse_primary(self) -> GoValue:
        tok = self.peek()
        if tok is None:
            raise ParseError("unexpected end of input")
        name: str | None = None
        value: GoValue
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
                index: GoValue | None = self.parse_expr() if not self.is_op(":") else None
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
    def _index(value: GoValue, index: GoValue | None) -> GoValue:
        if isinstance(value, list) and isinstance(index, int) and 0 <= index < len(value):
            return value[index]
        if isinstance(value, dict) and isinstance(index, str) and index in value:
            return value[index]
        return Unknown("index")

    def lookup(self, name: str) -> GoValue:
        if name in self.scope.variables:
            return self.scope.variables[name]
        if name in self.scope.package:
            return self.scope.package[name]
        if name == "nil":
            return []
        return Unknown(f"name {name}")

    def parse_composite(self) -> GoValue:
        """``{ elem, key: elem, ... }``; a list when unkeyed, else a dict."""
        self.expect_op("{")
        items: list[GoValue] = []
        keyed: dict[str, GoValue] = {}
        while not self.is_op("}"):
            key: GoValue | None = None
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

    def parse_call(self, name: str | None, callee: GoValue | None) -> GoValue:
        self.expect_op("(")
        args: list[GoValue] = []
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

    def call(self, name: str, args: list[GoValue], spread: bool) -> GoValue:
        handler = _BUILTINS.get(name)
        if handler is not None:
            return handler(self, args, spread)
        function = self.scope.functions.get(name)
        if function is not None and len(function.params) == len(args):
            return self.call_function(function, args)
        return Unknown(f"call {name}")

    def call_function(self, function: GoFunction, args: list[GoValue]) -> GoValue:
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

    def new_secret(self, pattern: GoValue | None) -> GoValue:
        if not isinstance(pattern, str):
            return Unknown("secret pattern")
        try:
            sampler = RegexSampler(pattern)
        except (ValueError, IndexError):
            return Unknown(f"pattern {pattern}")
        return sampler.sample(self.scope.rng())

    def plausible_secret(self, pattern: GoValue | None) -> GoValue:
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


def _sample_secrets(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
    one = _sample_secret(ev, args, spread)
    return [one]


def _sample_secret(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
    if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str):
        return Generated(args[0], args[1])
    return Unknown("sample secret argument")


def _append(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
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


def _validate(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
    if len(args) != 3:
        return Unknown("validate arguments")
    return Validated(args[1], args[2])


def _str_function(fn: Callable[..., str], arity: int) -> Builtin:
    def handler(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
        if len(args) != arity or any(isinstance(a, Unknown) or isinstance(a, dict) for a in args):
            return Unknown("string function arguments")
        try:
            return fn(*args)
        except (TypeError, ValueError):
            return Unknown("string function arguments")

    return handler


def _base64(encode: Callable[[bytes], bytes], padded: bool) -> Builtin:
    def handler(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
        if len(args) != 1 or not isinstance(args[0], str):
            return Unknown("base64 of an unknown value")
        encoded = encode(args[0].encode("utf-8")).decode("ascii")
        return encoded if padded else encoded.rstrip("=")

    return handler


def _identity(ev: Evaluator, args: list[GoValue], spread: bool) -> GoValue:
    return args[0] if len(args) == 1 and isinstance(args[0], str) else Unknown("conversion")


_BUILTINS: dict[str, Builtin] = {
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
