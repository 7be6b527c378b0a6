"""DSSE envelopes: the signature wrapper in-toto attestations travel in.

The Dead Simple Signing Envelope (https://github.com/secure-systems-lab/dsse, protocol v1) signs
not the payload but its *pre-authentication encoding*::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

with ``LEN`` the byte length in ASCII decimal, so a signature over one payload type can never be
replayed as another. The envelope is JSON: ``payloadType``, ``payload`` (standard base64) and
``signatures`` (``keyid``, ``sig`` in base64). The encoding is small enough to own (this module)
and is checked against an independent implementation in the tests (``openssl pkeyutl`` over the
rebuilt PAE bytes).

An envelope with no signature is still an envelope: it says so (``signatures: []``), and a verifier
reports it as unsigned rather than as broken.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import TypedDict

from worldforge.evidence.keys import SigningKey, VerifyKey

#: The payload type of an in-toto Statement (in-toto attestation framework, envelope layer).
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """The DSSE v1 pre-authentication encoding of ``payload`` under ``payload_type``."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


class EnvelopeError(ValueError):
    """An envelope line that is not a well-formed DSSE envelope (the message says which part)."""


class SignatureRecord(TypedDict):
    """One signature of an envelope as JSON: the key id and the base64 signature."""

    keyid: str
    sig: str


class EnvelopeRecord(TypedDict):
    """A DSSE envelope as JSON (one line of ``attestations.intoto.jsonl``)."""

    payload: str
    payloadType: str
    signatures: list[SignatureRecord]


@dataclass(frozen=True)
class Envelope:
    """One DSSE envelope: its payload bytes, payload type and ``(keyid, signature bytes)`` pairs."""

    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...] = field(default_factory=tuple)

    def to_dict(self) -> EnvelopeRecord:
        return {
            "payload": base64.b64encode(self.payload).decode("ascii"),
            "payloadType": self.payload_type,
            "signatures": [
                {"keyid": keyid, "sig": base64.b64encode(sig).decode("ascii")}
                for keyid, sig in self.signatures
            ],
        }

    def to_line(self) -> str:
        """One compact JSON line with sorted keys: the same envelope always gives the same bytes."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")) + "\n"

    def signed_by(self, keys: list[VerifyKey]) -> VerifyKey | None:
        """The first of ``keys`` that produced one of this envelope's signatures, or ``None``."""
        message = pae(self.payload_type, self.payload)
        for keyid, signature in self.signatures:
            for key in keys:
                if keyid in ("", key.keyid) and key.verifies(message, signature):
                    return key
        return None


def seal(payload: bytes, signing_key: SigningKey | None, payload_type: str = INTOTO_PAYLOAD_TYPE) -> Envelope:
    """Wrap ``payload``, signed over its PAE when a key is given, unsigned (and saying so) otherwise."""
    if signing_key is None:
        return Envelope(payload_type, payload)
    signature = signing_key.sign(pae(payload_type, payload))
    return Envelope(payload_type, payload, ((signing_key.keyid, signature),))


def _b64(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise EnvelopeError(f"{what} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeError(f"{what} is not valid base64") from None


def parse_envelope(line: str) -> Envelope:
    """The envelope on one JSONL line; :class:`EnvelopeError` naming what is malformed."""
    try:
        data = json.loads(line)
    except ValueError:
        raise EnvelopeError("not JSON") from None
    if not isinstance(data, dict):
        raise EnvelopeError("not a JSON object")
    payload_type = data.get("payloadType")
    if not isinstance(payload_type, str) or not payload_type:
        raise EnvelopeError("payloadType is missing")
    payload = _b64(data.get("payload"), "payload")
    raw_signatures = data.get("signatures")
    if not isinstance(raw_signatures, list):
        raise EnvelopeError("signatures is not a list")
    signatures: list[tuple[str, bytes]] = []
    for number, entry in enumerate(raw_signatures, start=1):
        if not isinstance(entry, dict):
            raise EnvelopeError(f"signature {number} is not an object")
        keyid = entry.get("keyid", "")
        if not isinstance(keyid, str):
            raise EnvelopeError(f"signature {number}: keyid is not a string")
        signatures.append((keyid, _b64(entry.get("sig"), f"signature {number}")))
    return Envelope(payload_type, payload, tuple(signatures))


__all__ = [
    "INTOTO_PAYLOAD_TYPE",
    "Envelope",
    "EnvelopeError",
    "EnvelopeRecord",
    "SignatureRecord",
    "pae",
    "parse_envelope",
    "seal",
]
