"""Credentials recognised by their shape alone: no vendor prefix and no name beside them.

An AWS secret access key is 40 characters of the base64 alphabet with nothing that says what it is;
a key copied on its own line, after an unsuspicious name (``x = …``) or into printed output slips
past every prefix and key-name rule. It is still recognisable, because a generated key is shaped
unlike anything this project writes:

* **Bounded.** The 40 characters are a whole run: no base64 or identifier character (``_``, ``-``,
  ``=`` padding) and no escape (``\\/``, ``%2B``) touches either end. Base64 images, long base64
  blobs and URL-safe tokens are runs far longer than 40, so no slice of them qualifies; neither
  does the last line of base64 wrapped at 60 or more characters (the previous line is a full
  base64 line). The rule skips URL-decoded views, which read every ``+`` as a space and so would
  cut an image into pieces; a key written percent-encoded (``%2F`` for ``/``) is therefore not
  recognised by shape.
* **Mixed.** Upper case, lower case and a digit, and not hexadecimal in either case: commit hashes
  (40 hex), ``sha256:`` digests (64 hex, also a longer run), run ids (cut by ``-`` and ``.``) and
  UUIDs never qualify.
* **Random.** At least 20 different characters and at least 13 word pieces (a capitalised or
  lower-case word, an upper-case run, a number, ``/`` or ``+``): ``getAttributeValueFromElement…``
  is 9 pieces, a random key about 22 and almost never under 13 (one in ten thousand). A path of
  plain names (``src/app/core/Module1/x``) is not a key either.

Measured on 200,000 random keys, these rules miss about one in 800 (almost all without a digit);
the project's own outputs (a whole Science Birds run, its HTML report with inline images and its
bundle) and this repository's sources hold no run they accept.
"""

from __future__ import annotations

import bisect
import functools
import re

from worldforge.core.redact.keys import REDACTED, Rule, unless_placeholder

_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_CANDIDATE_RE = re.compile(r"(?<![A-Za-z0-9+/_\-\\%])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=_\-\\%])")
_HEX_RE = re.compile(r"[0-9A-Fa-f]+")
_PIECE_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|[+/]")
_NAME_SEGMENT_RE = re.compile(r"[A-Za-z0-9]?[a-z0-9]*")
# The end of a full line of base64, then the line break before the candidate, as written or as an
# HTML entity (an attribute's newlines). A single space may stand for a ``+`` that a URL-decoded
# view turned into one (at most :data:`_PLUS_SPACES` of them).
_WRAPPED_TAIL_RE = re.compile(
    r"(?P<line>(?:[A-Za-z0-9+/]|(?<! ) (?! )){60})[ \t]*"
    r"(?:\r|&#0*13;|&#[xX]0*[dD];)?(?:\n|&#0*10;|&#[xX]0*[aA];|&NewLine;)[ \t]*\Z"
)
_PLUS_SPACES = 6
# The key alphabet as ``a`` and everything else as a space (non-ASCII first becomes ``?``, one byte
# a character, so offsets carry over): a run of 40 is then a plain substring search.
_RUN_TABLE = bytes(ord("a") if chr(b) in _ALPHABET else ord(" ") for b in range(256))
_RUN_NEEDLE = b"a" * 40
_RUN_END_RE = re.compile(rb"a+")

#: At least this many different characters: a random 40-character key has about 30, never under 21
#: in 200,000 draws.
MIN_DISTINCT = 20
#: At least this many word pieces (see the module docstring): random keys have about 22.
MIN_PIECES = 13


def aws_secret_shaped(value: str) -> bool:
    """Whether a bounded 40-character base64 run is shaped like a generated AWS secret access key."""
    if len(value) != 40 or not _ALPHABET.issuperset(value) or _HEX_RE.fullmatch(value):
        return False
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if not any(c.isdigit() for c in value) or len(set(value)) < MIN_DISTINCT:
        return False
    if len(_PIECE_RE.findall(value)) < MIN_PIECES:
        return False  # words: a camel-case identifier, not a generated key
    segments = value.split("/")
    return not (len(segments) >= 3 and all(_NAME_SEGMENT_RE.fullmatch(s) for s in segments))


@functools.lru_cache(maxsize=16)
def _candidates(text: str) -> tuple[int, ...]:
    """Start offsets of every bounded 40-character base64 run in ``text`` (found once per text).

    Mapping the text to a two-letter alphabet and searching for 40 in a row runs at C speed; the
    regex alone costs about 0.1 s per megabyte, and the engine runs every rule on every decoded view.
    """
    mapped = text.encode("ascii", "replace").translate(_RUN_TABLE)
    starts: list[int] = []
    at = mapped.find(_RUN_NEEDLE)
    while at >= 0:  # ``at`` starts a run of 40 or more: the previous search ended at a run's end
        end = _RUN_END_RE.match(mapped, at)
        stop = end.end() if end is not None else at + 40
        if stop - at == 40 and _CANDIDATE_RE.match(text, at) is not None:  # nothing else touches it
            starts.append(at)
        at = mapped.find(_RUN_NEEDLE, stop)
    return tuple(starts)


class _BareRuns:
    """Matcher for bounded 40-character base64 runs: each match is one candidate key."""

    def search(self, text: str, pos: int = 0, /) -> re.Match[str] | None:
        if len(text) < 40:
            return None
        starts = _candidates(text)
        at = bisect.bisect_left(starts, pos)
        return _CANDIDATE_RE.match(text, starts[at]) if at < len(starts) else None


def _bare_aws_secret(match: re.Match[str]) -> str | None:
    if not aws_secret_shaped(match.group(0)):
        return None
    before = match.string[max(0, match.start() - 80) : match.start()]
    wrapped = _WRAPPED_TAIL_RE.search(before) if "\n" in before or "&" in before else None
    if wrapped is not None and wrapped.group("line").count(" ") <= _PLUS_SPACES:
        return None  # the last line of wrapped base64 (MIME, PEM bodies), not a key on its own
    return REDACTED


SHAPE_RULES: tuple[Rule, ...] = (
    Rule(
        "aws-secret-key",
        "AWS secret access keys on their own (a bounded, generated-looking 40-character base64 run)",
        (),
        _BareRuns(),
        unless_placeholder(_bare_aws_secret),
        url_view=False,
    ),
)

__all__ = ["MIN_DISTINCT", "MIN_PIECES", "SHAPE_RULES", "aws_secret_shaped"]
