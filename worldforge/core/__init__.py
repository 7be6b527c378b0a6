"""Foundation shared by every layer: errors, canonical JSON, digests, atomic IO."""

from worldforge.core.canonical import canonical_json, canonical_json_text, ensure_json_native, pretty_json
from worldforge.core.digests import digest_bytes, digest_file, digest_payload, digest_text, is_digest
from worldforge.core.errors import (
    GateFailure,
    ProviderError,
    StageError,
    WorldForgeError,
    WorldForgeException,
    WorldStateError,
)
from worldforge.core.io import atomic_write_bytes, atomic_write_json, atomic_write_text

__all__ = [
    "GateFailure",
    "ProviderError",
    "StageError",
    "WorldForgeError",
    "WorldForgeException",
    "WorldStateError",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "canonical_json",
    "canonical_json_text",
    "digest_bytes",
    "digest_file",
    "digest_payload",
    "digest_text",
    "ensure_json_native",
    "is_digest",
    "pretty_json",
]
