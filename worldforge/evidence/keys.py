"""Signing and verification keys for attestations: Ed25519 or ECDSA P-256, PEM files, never copied.

A key is read from the path the user names and lives only in this process: nothing here writes a
key, its path or its bytes into a run, a bundle, an event or a log. What an attestation carries is
the *key id*: the SHA-256 of the public key's DER ``SubjectPublicKeyInfo`` (the bytes ``openssl pkey
-pubin -outform DER`` prints), so a reviewer can tell which key signed without trusting our code.

Ed25519 signatures are deterministic (the same envelope signed twice is the same bytes); ECDSA
signatures are randomized, so an ECDSA-signed attestation differs from run to run while its
Statement does not. Encrypted private keys are refused (one line, exit 2) rather than prompted
for: attestation runs in CI, where a prompt would hang.

The ``cryptography`` library is the optional extra ``attest``; a missing library is a one-line
error naming it (:mod:`worldforge.heavy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from worldforge import heavy
from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_bytes

if TYPE_CHECKING:  # the library loads lazily, through worldforge.heavy, when a key is first used
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey, EllipticCurvePublicKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

#: The private and public key objects an attestation is signed and checked with.
PrivateKey: TypeAlias = "Ed25519PrivateKey | EllipticCurvePrivateKey"
PublicKey: TypeAlias = "Ed25519PublicKey | EllipticCurvePublicKey"

#: The key types an attestation may be signed with, by the name the key records carry.
KEY_TYPES = ("ed25519", "ecdsa-p256")
PRIVATE_KEY_NAME = "worldforge-attest.key"
PUBLIC_KEY_NAME = "worldforge-attest.pub"


def _serialization() -> ModuleType:
    return heavy.load("cryptography.hazmat.primitives.serialization")


def _asymmetric(name: str) -> ModuleType:
    return heavy.load(f"cryptography.hazmat.primitives.asymmetric.{name}")


def _private_classes() -> tuple[type[Ed25519PrivateKey], type[EllipticCurvePrivateKey]]:
    """The library's private key classes (loaded on first use), typed so a check narrows a key."""
    ed25519: type[Ed25519PrivateKey] = _asymmetric("ed25519").Ed25519PrivateKey
    ec: type[EllipticCurvePrivateKey] = _asymmetric("ec").EllipticCurvePrivateKey
    return ed25519, ec


def _public_classes() -> tuple[type[Ed25519PublicKey], type[EllipticCurvePublicKey]]:
    """The library's public key classes (loaded on first use), typed so a check narrows a key."""
    ed25519: type[Ed25519PublicKey] = _asymmetric("ed25519").Ed25519PublicKey
    ec: type[EllipticCurvePublicKey] = _asymmetric("ec").EllipticCurvePublicKey
    return ed25519, ec


def _key_type(key: object, where: str) -> str:
    """``ed25519`` or ``ecdsa-p256`` for a supported key object; bad input otherwise."""
    ed25519, ec = _asymmetric("ed25519"), _asymmetric("ec")
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "ed25519"
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        if isinstance(key.curve, ec.SECP256R1):
            return "ecdsa-p256"
        raise WorldForgeError(f"{where}: ECDSA key on curve {key.curve.name}; only P-256 is supported.")
    raise WorldForgeError(f"{where}: {type(key).__name__.lstrip('_')} key; expected Ed25519 or ECDSA P-256.")


def _public_der(public_key: PublicKey) -> bytes:
    serialization = _serialization()
    der: bytes = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return der


def key_id(public_key: PublicKey) -> str:
    """Hex SHA-256 of the public key's DER SubjectPublicKeyInfo (what ``keyid`` holds)."""
    return digest_bytes(_public_der(public_key)).removeprefix("sha256:")


@dataclass(frozen=True)
class SigningKey:
    """A private key read from a PEM file; ``keyid`` and ``key_type`` are all that is ever recorded."""

    key: PrivateKey
    key_type: str
    keyid: str

    def sign(self, message: bytes) -> bytes:
        """Ed25519 over the message; ECDSA P-256 with SHA-256, DER-encoded (as DSSE and cosign use)."""
        key, (ed25519, ecdsa) = self.key, _private_classes()
        if isinstance(key, ed25519):
            return key.sign(message)
        if not isinstance(key, ecdsa):  # load_signing_key admits no other kind
            raise WorldForgeError(f"signing key {self.keyid}: {type(key).__name__} is not Ed25519 or ECDSA.")
        ec, hashes = _asymmetric("ec"), heavy.load("cryptography.hazmat.primitives.hashes")
        return key.sign(message, ec.ECDSA(hashes.SHA256()))


@dataclass(frozen=True)
class VerifyKey:
    """A public key a signature is checked against; ``source`` names where it came from."""

    key: PublicKey
    key_type: str
    keyid: str
    source: str

    def verifies(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` over ``message`` is this key's (never raises on a bad signature)."""
        exceptions = heavy.load("cryptography.exceptions")
        key, (ed25519, ecdsa) = self.key, _public_classes()
        try:
            if isinstance(key, ed25519):
                key.verify(signature, message)
            elif isinstance(key, ecdsa):
                ec, hashes = _asymmetric("ec"), heavy.load("cryptography.hazmat.primitives.hashes")
                key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
            else:  # load_verify_key admits no other kind
                return False
        except (exceptions.InvalidSignature, ValueError):
            return False
        return True


def _read_pem(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise WorldForgeError(f"{path}: is a directory, expected a {what} PEM file.") from None
    except OSError as exc:
        raise WorldForgeError(f"{path}: cannot read the {what} ({exc.strerror}).") from None
    if b"-----BEGIN" not in data:
        raise WorldForgeError(f"{path}: not a PEM file (expected a {what}).")
    return data


def load_signing_key(path: str | Path) -> SigningKey:
    """The private key in ``path``; one-line ``WorldForgeError`` when it is unreadable, encrypted,
    a public key, or of another type."""
    where = Path(path)
    data = _read_pem(where, "private key")
    if b"ENCRYPTED" in data:
        raise WorldForgeError(f"{where}: the private key is encrypted; give an unencrypted PEM key.")
    if b"PUBLIC KEY-----" in data and b"PRIVATE KEY-----" not in data:
        raise WorldForgeError(f"{where}: holds a public key; signing needs the private key.")
    serialization = _serialization()
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:  # a password-protected key in a form the marker test missed
        raise WorldForgeError(
            f"{where}: the private key is encrypted; give an unencrypted PEM key."
        ) from None
    except (ValueError, heavy.load("cryptography.exceptions").UnsupportedAlgorithm):
        raise WorldForgeError(f"{where}: not a readable PEM private key.") from None
    key_type = _key_type(key, str(where))
    return SigningKey(key, key_type, key_id(key.public_key()))


def load_verify_key(path: str | Path) -> VerifyKey:
    """The public key in ``path`` (a private key's PEM is accepted too: its public half is used)."""
    where = Path(path)
    data = _read_pem(where, "public key")
    serialization = _serialization()
    unsupported = heavy.load("cryptography.exceptions").UnsupportedAlgorithm
    try:
        if b"PRIVATE KEY-----" in data:
            if b"ENCRYPTED" in data:
                raise WorldForgeError(f"{where}: an encrypted private key; give the public key PEM.")
            key = serialization.load_pem_private_key(data, password=None).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except (TypeError, ValueError, unsupported) as exc:
        if isinstance(exc, WorldForgeError):
            raise
        raise WorldForgeError(f"{where}: not a readable PEM public key.") from None
    key_type = _key_type(key, str(where))
    return VerifyKey(key, key_type, key_id(key), where.name)


def generate_keypair(directory: str | Path, key_type: str = "ed25519") -> tuple[Path, Path, str]:
    """Write a new key pair into ``directory`` (private key mode 0600); returns both paths and the key id.

    Refuses to overwrite an existing key: replacing a signing key silently would strand every
    attestation signed with the old one.
    """
    if key_type not in KEY_TYPES:
        raise WorldForgeError(f"--type: {key_type!r} is not one of {', '.join(KEY_TYPES)}.")
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise WorldForgeError(f"{folder}: exists and is not a directory.")
    private_path, public_path = folder / PRIVATE_KEY_NAME, folder / PUBLIC_KEY_NAME
    for path in (private_path, public_path):
        if path.exists():
            raise WorldForgeError(f"{path}: already exists; keys are never overwritten.")
    serialization = _serialization()
    if key_type == "ed25519":
        key: PrivateKey = _asymmetric("ed25519").Ed25519PrivateKey.generate()
    else:
        ec = _asymmetric("ec")
        key = ec.generate_private_key(ec.SECP256R1())
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(private_path, private_pem, mode=0o600)
    atomic_write_bytes(public_path, public_pem)
    return private_path, public_path, key_id(key.public_key())


__all__ = [
    "KEY_TYPES",
    "PRIVATE_KEY_NAME",
    "PUBLIC_KEY_NAME",
    "SigningKey",
    "VerifyKey",
    "generate_keypair",
    "key_id",
    "load_signing_key",
    "load_verify_key",
]
