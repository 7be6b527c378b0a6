"""Suite options by key: ``worldforge eval --suite-option KEY=VALUE`` for any suite.

A suite declares its options as a dataclass (one field per key, typed) by handing its factory to
:class:`SuiteBuilder`. The framework reads that declaration *before* the suite is built, so an
unknown key or a value of the wrong type stops in one line naming the key, before any provider is
called or any run is created. The field types say how a ``VALUE`` is read:

* ``int``, ``bool`` (``true``/``false``), ``str`` (never empty), ``Path`` (made absolute, as the
  trials may run in another directory);
* ``list[T]``: repeat the key to give several values (always a list);
* ``T | list[T]``: one value stays a value, a repeated key becomes a list (a server option where
  one server keeps the options a one-server run always had).

The suite's own named flags (``--trials``) are aliases of the same keys and build the same options,
so both spellings give the same run.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.suite import EvaluationSuite

_INT_RE = re.compile(r"^[+-]?\d+$")
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_SCALARS: tuple[type, ...] = (int, bool, str, Path)


@dataclass(frozen=True, slots=True)
class SuiteBuilder:
    """A suite factory that declares its options (a dataclass type, see the module docstring).

    It is called like any suite factory (``builder(options)``), so it goes wherever a factory
    goes: the built-in table, :meth:`EvaluationSuite.register`, entry points, ``module:attr``.
    """

    build: Callable[[dict[str, Any]], EvaluationSuite]
    options: type

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.options):
            raise WorldForgeError(f"SuiteBuilder: options must be a dataclass type, got {self.options!r}.")
        for name, hint in typing.get_type_hints(self.options).items():
            _shape(hint, name)  # an option type the command line cannot read is the author's bug

    def __call__(self, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        return self.build(dict(options or {}))


def declared_options(ref: str) -> type | None:
    """The option dataclass the suite named by ``ref`` declares (``None``: it declares none)."""
    factory = EvaluationSuite.factory_of(ref)
    return factory.options if isinstance(factory, SuiteBuilder) else None


def _shape(hint: object, key: str) -> tuple[type, str]:
    """``(scalar type, "one" | "list" | "one_or_many")`` for a field's type hint (``None`` allowed)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        lists = [a for a in args if typing.get_origin(a) is list]
        scalars = [a for a in args if a in _SCALARS]
        if len(args) == 1 and scalars:
            return scalars[0], "one"
        if len(args) == 1 and lists:
            return _shape(lists[0], key)
        if len(lists) == 1 and len(scalars) == 1 and typing.get_args(lists[0]) == (scalars[0],):
            return scalars[0], "one_or_many"
    elif origin is list and len(args) == 1 and args[0] in _SCALARS:
        return args[0], "list"
    elif hint in _SCALARS:
        return hint, "one"
    raise WorldForgeError(f"option {key!r}: type {hint!r} cannot be given as --suite-option KEY=VALUE.")


def _value(key: str, kind: type, raw: str) -> bool | int | str:
    where = f"--suite-option {key}"
    text = raw.strip()
    if not text:
        raise WorldForgeError(f"{where}: must not be empty.")
    if kind is bool:
        if text.lower() not in _BOOLS:
            raise WorldForgeError(f"{where}: expected true or false, got {raw!r}.")
        return _BOOLS[text.lower()]
    if kind is int:
        if not _INT_RE.match(text):
            raise WorldForgeError(f"{where}: expected an integer, got {raw!r}.")
        return int(text)
    if kind is Path:
        return str(Path(text).expanduser().resolve())
    return raw


def parse_suite_options(option_type: type | None, pairs: Sequence[str], *, suite: str) -> dict[str, object]:
    """``KEY=VALUE`` pairs read against ``option_type``: the options they give, by key.

    An unknown key, a pair without ``=``, a value of the wrong type or a single-valued key given
    twice is a :class:`WorldForgeError` naming the key.
    """
    if not pairs:
        return {}
    if option_type is None:
        raise WorldForgeError(f"--suite-option: {suite!r} declares no options to set.")
    hints = typing.get_type_hints(option_type)
    out: dict[str, object] = {}
    lists: dict[str, list[bool | int | str]] = {}  # the values of list options, in ``out`` too
    many: set[str] = set()
    for pair in pairs:
        key, sep, raw = str(pair).partition("=")
        key = key.strip()
        if not sep or not key:
            raise WorldForgeError(f"--suite-option {pair!r}: expected KEY=VALUE.")
        if key not in hints:
            known = ", ".join(sorted(hints))
            raise WorldForgeError(f"--suite-option {key}: not an option of {suite!r} (options: {known}).")
        kind, count = _shape(hints[key], key)
        value = _value(key, kind, raw)
        if count == "one":
            if key in out:
                raise WorldForgeError(f"--suite-option {key}: given twice.")
            out[key] = value
        else:
            if key not in lists:
                out[key] = lists[key] = []
            lists[key].append(value)
            if count == "one_or_many":
                many.add(key)
    for key in many:
        if len(lists[key]) == 1:
            out[key] = lists[key][0]
    return out


def merge_suite_options(options: Mapping[str, object], extra: Mapping[str, object]) -> dict[str, object]:
    """The options of the named flags plus those of ``--suite-option``; one key given both ways is
    refused (the two spellings are aliases, so it is the same option twice)."""
    for key in extra:
        if key in options:
            raise WorldForgeError(f"--suite-option {key}: also given by its named flag; give it once.")
    return {**options, **extra}


__all__ = ["SuiteBuilder", "declared_options", "merge_suite_options", "parse_suite_options"]
