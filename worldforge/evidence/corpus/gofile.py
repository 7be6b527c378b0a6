"""Go files: functions, package variables and statements of a gitleaks rule file, run through
:mod:`.goeval` to the samples a rule's test declares.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from worldforge.evidence.corpus.goeval import (
    Evaluator,
    GoFunction,
    GoValue,
    ParseError,
    Scope,
    Unknown,
    Validated,
)
from worldforge.evidence.corpus.golex import Token, tokenize


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


def evaluate_variable(tokens: list[Token], start: int, scope: Scope) -> GoValue:
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


def rule_id(function: GoFunction, scope: Scope) -> str | None:
    body = function.tokens
    for k, tok in enumerate(body[:-2]):
        if tok.kind == "ident" and tok.value == "RuleID" and body[k + 1].value == ":":
            value = Evaluator(body, k + 2, scope).parse_expr()
            return value if isinstance(value, str) else None
    return None
