"""The detector's rule for a credential with no prefix and no name: a bare AWS secret access key.

Part of the second detector (:mod:`worldforge.evidence.detect`), written apart from the redactor's
shape rule and sharing none of its code. A secret access key is 40 characters of the base64
alphabet; the detector reports a run of exactly that many when

* nothing that extends a base64 or identifier run touches it (``_``, ``-``, an escape such as
  ``\\/`` or ``%2B``, ``=`` padding after it): a slice of a base64 image, a longer blob or a
  URL-safe token is never a finding, and neither is the last line of base64 wrapped at 60 or more
  characters. URL-decoded views are not scanned by this rule (``bare_keys=False``): they read
  every ``+`` as a space and would cut an image into pieces;
* it holds upper case, lower case and a digit and is not hexadecimal (commit hashes, digests);
* it reads as random: Shannon entropy of at least :data:`MIN_ENTROPY` bits per character (random
  keys measure about 4.8) and at least :data:`MIN_WORDS` word starts (a capital, a lower-case
  letter after a non-letter, a number, ``/`` or ``+``; an identifier such as
  ``getAttributeValueFromElementByName2Times`` has 9, a random key about 22), and is not a path of
  plain lower-case names.

The caller passes its entropy measure, so this module and the keyword rule cannot drift apart.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator

Finding = tuple[str, str, int, int]  # rule, family, start, end

#: Entropy floor: about three random keys in 100,000 measure less.
MIN_ENTROPY = 4.2
#: Word starts floor: about one random key in 10,000 has fewer.
MIN_WORDS = 13
_KEY_LENGTH = 40
_WRAP_WIDTH = 60

_STANDARD = string.ascii_letters + string.digits + "+/"
_STANDARD_SET = frozenset(_STANDARD)
_LINE_SET = _STANDARD_SET | {" "}
_HEX_DIGITS = frozenset(string.hexdigits)
# Every byte: ``k`` for the key alphabet, ``x`` for characters that extend a run without belonging
# to a key (URL-safe base64, identifiers, ``\/`` and ``%2B`` escapes), a space for the rest (``=``
# too: it may assign the key; as padding after it, it is checked apart); non-ASCII is replaced by
# ``?`` before translating, so offsets in the mapped bytes are offsets in the text.
_MAP = bytes(
    ord("k") if chr(b) in _STANDARD_SET else ord("x") if chr(b) in "_-\\%" else ord(" ") for b in range(256)
)
_FORTY = b"k" * _KEY_LENGTH
# A line break at the end of a text, as written or as HTML entities (newlines inside attributes).
_LINE_BREAK = re.compile(r"(?:\r|&#0*13;|&#x0*d;)?(?:\n|&#0*10;|&#x0*a;|&newline;)\Z", re.IGNORECASE)


def _word_starts(value: str) -> int:
    """How many words ``value`` splits into: ``AWSKeyId7`` is ``AWS``, ``Key``, ``Id``, ``7``."""
    starts = 0
    for i, char in enumerate(value):
        before = value[i - 1] if i else ""
        if char.isupper():
            after = value[i + 1] if i + 1 < len(value) else ""
            starts += not before.isupper() or after.islower()
        elif char.islower():
            starts += not (before.isupper() or before.islower())
        elif char.isdigit():
            starts += not before.isdigit()
        else:
            starts += 1
    return starts


def _plain_path(value: str) -> bool:
    """``src/app/core/Module1/x``: three or more names, each lower case after its first letter."""
    parts = value.split("/")
    return len(parts) >= 3 and all(not any(c.isupper() for c in part[1:]) for part in parts)


def _wrapped_tail(text: str, start: int) -> bool:
    """The run starts a line whose previous line is full of base64: wrapped base64's last line."""
    head = text[max(0, start - 120) : start].rstrip(" \t")
    brk = _LINE_BREAK.search(head)
    if brk is None:
        return False
    tail = head[: brk.start()].rstrip(" \t")[-_WRAP_WIDTH:]
    # A URL-decoded view turns each ``+`` into a space: a few single spaces are still base64.
    spaces = tail.count(" ")
    return len(tail) == _WRAP_WIDTH and _LINE_SET.issuperset(tail) and spaces <= 6 and "  " not in tail


def secret_key_shaped(value: str, entropy: Callable[[str], float]) -> bool:
    """Whether 40 base64 characters read like a generated AWS secret access key."""
    kinds = {c.isupper() for c in value if c.isalpha()}
    if len(value) != _KEY_LENGTH or not _STANDARD_SET.issuperset(value) or kinds != {True, False}:
        return False
    if not any(c.isdigit() for c in value) or _HEX_DIGITS.issuperset(value):
        return False
    return entropy(value) >= MIN_ENTROPY and _word_starts(value) >= MIN_WORDS and not _plain_path(value)


def bare_key_findings(text: str, entropy: Callable[[str], float]) -> Iterator[Finding]:
    """``provider-token/aws-secret-key`` findings: bounded 40-character runs shaped like a key."""
    if len(text) < _KEY_LENGTH:
        return
    mapped = text.encode("ascii", "replace").translate(_MAP)
    at = mapped.find(_FORTY)
    while at >= 0:
        start = mapped.rfind(b" ", 0, at) + 1
        end = mapped.find(b" ", at)
        end = len(mapped) if end < 0 else end
        padded = text.startswith("=", end)  # base64 padding: the run is encoded data, not a key
        if end - start == _KEY_LENGTH and not padded and not _wrapped_tail(text, start):
            if secret_key_shaped(text[start:end], entropy):
                yield "provider-token/aws-secret-key", "provider-token", start, end
        at = mapped.find(_FORTY, end)


__all__ = ["MIN_ENTROPY", "MIN_WORDS", "bare_key_findings", "secret_key_shaped"]
