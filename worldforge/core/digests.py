"""The project's one digest recipe.

* Structured values: ``sha256:`` + hex of SHA-256 over :func:`~worldforge.core.canonical.canonical_json`.
* Files and blobs: ``sha256:`` + hex of SHA-256 over the raw bytes.

Every digest string in manifests, reports, events and bundles has this exact form, so a reviewer can
recompute any of them with ``sha256sum`` or three lines of Python.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from worldforge.core.canonical import canonical_json
from worldforge.core.errors import WorldForgeError

DIGEST_PREFIX = "sha256:"
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_CHUNK = 1 << 20


def digest_bytes(data: bytes) -> str:
    """Digest of raw bytes."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest_text(text: str) -> str:
    """Digest of a text's UTF-8 bytes."""
    return digest_bytes(text.encode("utf-8"))


def digest_payload(value: object) -> str:
    """Digest of a JSON-native value's canonical encoding."""
    return digest_bytes(canonical_json(value))


def digest_file(path: str | Path) -> str:
    """Digest of a file's raw bytes, streamed so large artifacts do not load into memory."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                h.update(chunk)
    except OSError as exc:
        raise WorldForgeError(f"{path}: cannot read file for digest ({exc.strerror}).") from exc
    return DIGEST_PREFIX + h.hexdigest()


def is_digest(value: object) -> bool:
    """True for a well-formed ``sha256:<64 lowercase hex>`` string."""
    return isinstance(value, str) and bool(DIGEST_RE.match(value))


def require_digest(value: object, field: str) -> str:
    """Validate a digest string, naming ``field`` in the error."""
    if not is_digest(value):
        raise WorldForgeError(f"{field}: expected 'sha256:<64 hex>', got {value!r}.")
    return str(value)


__all__ = [
    "DIGEST_PREFIX",
    "DIGEST_RE",
    "digest_bytes",
    "digest_file",
    "digest_payload",
    "digest_text",
    "is_digest",
    "require_digest",
]
