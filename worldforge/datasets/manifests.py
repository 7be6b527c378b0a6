"""Dataset manifests: cite data (with digests, license, provenance, privacy and safety review) without
storing or downloading it.

The JSON Schema (``schemas/dataset-manifest.schema.json``, ``schema_version: 1``) is enforced with
``jsonschema``; these checks follow because a schema cannot express them:

* local fixtures are *repository-relative* safe paths (no absolute path, ``~``, ``\\``, drive letter,
  ``.``/``..`` segment) that resolve inside the repository root, exist, stay under
  :data:`MAX_LOCAL_FIXTURE_BYTES`, and whose raw-bytes sha256 matches — any file type is allowed
  (``.json``, ``.csv``, ``.xml``, ``.png``, ``.safetensors`` …);
* remote references are ``https`` URIs with a host and no userinfo, query string or fragment (a
  signed URL expires and leaks a credential);
* host-owned assets carry an ``asset_id`` and acquisition steps (on the entry or the manifest);
* entry ids are unique.

The repository root defaults to the nearest ancestor of the manifest holding ``.git`` or
``pyproject.toml``, so validation does not depend on the current directory. The manifest's own
digest is the sha256 of its raw bytes, the same digest an evidence bundle records for the file.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Literal, NotRequired, TypedDict, cast
from urllib.parse import urlsplit

import jsonschema

from worldforge.core.canonical import JSON, JSONObject, json_object, to_json_native
from worldforge.core.digests import digest_bytes, digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_with_ledger

DATASET_MANIFEST_SCHEMA_VERSION = 1
MAX_LOCAL_FIXTURE_BYTES = 256 * 1024 * 1024
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


class DatasetEntry(TypedDict):
    """One entry of a dataset manifest (``kind`` decides which of the optional fields the schema
    requires: ``path`` and ``sha256`` for a local fixture, ``uri`` and ``sha256`` for a remote
    reference, ``asset_id`` for a host asset)."""

    id: str
    kind: Literal["local-fixture", "remote-reference", "host-asset"]
    description: str
    license: NotRequired[str]
    media_type: NotRequired[str]
    metadata: NotRequired[JSONObject]
    path: NotRequired[str]
    uri: NotRequired[str]
    asset_id: NotRequired[str]
    sha256: NotRequired[str]
    size: NotRequired[int]
    acquisition_steps: NotRequired[list[str]]


class Provenance(TypedDict):
    """Who owns the data, where it comes from and which version (further keys are open JSON)."""

    owner: str
    source: str
    version: str


class Privacy(TypedDict):
    """The manifest's privacy classification."""

    classification: Literal["public", "restricted", "sensitive"]
    contains_personal_data: bool
    notes: NotRequired[str]


class Safety(TypedDict):
    """The manifest's safety review."""

    reviewed: bool
    contains_sensitive_capability_data: bool
    reviewer: NotRequired[str]
    contains_robot_logs: NotRequired[bool]
    contains_model_weights: NotRequired[bool]
    contains_generated_content: NotRequired[bool]
    notes: NotRequired[str]


class DatasetManifest(TypedDict):
    """A dataset manifest as the shipped JSON Schema admits it (``schema_version`` 1)."""

    schema_version: int
    id: str
    name: str
    description: str
    license: str
    provenance: Provenance
    privacy: Privacy
    safety: Safety
    entries: list[DatasetEntry]
    host_acquisition_steps: NotRequired[list[str]]
    metadata: NotRequired[JSONObject]


class ReferenceSafety(TypedDict):
    """The safety review as a compact reference repeats it."""

    reviewed: bool
    contains_sensitive_capability_data: bool
    contains_robot_logs: bool


class ReferencePrivacy(TypedDict):
    """The privacy classification as a compact reference repeats it."""

    classification: str
    contains_personal_data: bool


class DatasetReference(TypedDict):
    """A compact reference to a dataset manifest: what runs, provenance and bundles cite."""

    schema_version: int
    id: str
    name: str
    sha256: str
    entry_count: int
    entry_kinds: dict[str, int]
    license: str
    privacy: ReferencePrivacy
    safety: ReferenceSafety
    provenance: dict[str, str]
    path: NotRequired[str]
    local_only: NotRequired[bool]


@functools.lru_cache(maxsize=1)
def manifest_schema() -> JSONObject:
    """The shipped JSON Schema (``worldforge datasets schema`` prints it)."""
    text = (
        resources.files("worldforge.datasets")
        .joinpath("schemas/dataset-manifest.schema.json")
        .read_text("utf-8")
    )
    return json_object(json.loads(text), "dataset-manifest.schema.json")


def _json_path(parts: Iterable[str | int]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def find_repo_root(start: Path) -> Path:
    """Nearest ancestor holding ``.git`` or ``pyproject.toml`` (else ``start`` itself)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").is_file():
            return candidate
    return start


def _check_local_path(raw: str, where: str) -> PurePosixPath:
    pure = PurePosixPath(raw)
    if (
        raw.startswith(("/", "~"))
        or "\\" in raw
        or _DRIVE_RE.match(raw)
        or any(part in ("", ".", "..") for part in raw.split("/"))
    ):
        raise WorldForgeError(
            f"{where}.path: {raw!r} must be a repository-relative path without '.', '..', '~' or '\\'."
        )
    return pure


def _check_uri(uri: str, where: str) -> None:
    parts = urlsplit(uri)
    if parts.scheme != "https" or not parts.hostname:
        raise WorldForgeError(f"{where}.uri: must be an https URI with a host.")
    if parts.username or parts.password:
        raise WorldForgeError(f"{where}.uri: must not carry user credentials.")
    if parts.query or parts.fragment or "?" in uri or "#" in uri:
        raise WorldForgeError(
            f"{where}.uri: must be stable (no query string or fragment; signed URLs expire)."
        )


def _check_portable_text(text: str, where: str) -> None:
    """Manifests travel in evidence bundles: host paths and secrets must not be written into them.

    The project's sanitizer decides what counts (one set of rules everywhere); a field it would
    redact is rejected here, naming the field and the rule.
    """
    _, found = sanitize_with_ledger(text, where)
    if found:
        rules = ", ".join(sorted({r.rule for r in found}))
        raise WorldForgeError(
            f"{where}: must not contain host paths or secrets ({rules}); describe where to get the "
            "asset instead."
        )


def validate_manifest(data: JSON, *, source: str = "<manifest>", root: Path | None = None) -> DatasetManifest:
    """Validate a parsed manifest; raise :class:`WorldForgeError` naming ``source`` and the field path."""

    validator = jsonschema.Draft202012Validator(manifest_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        # The most specific error names the field: prefer real violations over the "unevaluated
        # properties" echo a failed kind-branch leaves behind, then the deepest path.
        primary = [e for e in errors if e.validator != "unevaluatedProperties"] or errors
        error = max(primary, key=lambda e: len(e.absolute_path))
        message = error.message
        if error.validator in ("pattern", "minLength") and error.schema.get("pattern") == "\\S":
            message = f"{error.instance!r} must be a non-empty string"
        raise WorldForgeError(f"{source}: {_json_path(error.absolute_path)}: {message}")
    # Safe: the schema just admitted ``data``, and DatasetManifest is that schema's shape.
    manifest = cast(DatasetManifest, data)
    for i, step in enumerate(manifest.get("host_acquisition_steps") or []):
        _check_portable_text(step, f"{source}: $.host_acquisition_steps[{i}]")
    seen: set[str] = set()
    for index, entry in enumerate(manifest["entries"]):
        where = f"{source}: $.entries[{index}]"
        if entry["id"] in seen:
            raise WorldForgeError(f"{where}.id: duplicate entry id {entry['id']!r}.")
        seen.add(entry["id"])
        kind = entry["kind"]
        if kind == "local-fixture":
            pure = _check_local_path(entry["path"], where)
            if root is not None:
                base = root.resolve()
                target = (base / pure).resolve()
                if not target.is_relative_to(base):
                    raise WorldForgeError(f"{where}.path: {entry['path']!r} resolves outside the repository.")
                if not target.is_file():
                    raise WorldForgeError(
                        f"{where}.path: {entry['path']!r} does not exist under the repository root."
                    )
                size = target.stat().st_size
                if size > MAX_LOCAL_FIXTURE_BYTES:
                    raise WorldForgeError(
                        f"{where}.path: {size} bytes exceeds the {MAX_LOCAL_FIXTURE_BYTES}-byte cap."
                    )
                if "size" in entry and entry["size"] != size:
                    raise WorldForgeError(f"{where}.size: declared {entry['size']}, file has {size} bytes.")
                actual = digest_file(target)
                if actual != entry["sha256"]:
                    raise WorldForgeError(
                        f"{where}.sha256: {entry['sha256']} does not match local fixture "
                        f"{entry['path']!r} ({actual})."
                    )
        elif kind == "remote-reference":
            _check_uri(entry["uri"], where)
        elif kind == "host-asset":
            if not (entry.get("acquisition_steps") or manifest.get("host_acquisition_steps")):
                raise WorldForgeError(
                    f"{where}: host-asset needs acquisition_steps (or manifest host_acquisition_steps)."
                )
            _check_portable_text(entry["asset_id"], f"{where}.asset_id")
            for i, step in enumerate(entry.get("acquisition_steps") or []):
                _check_portable_text(step, f"{where}.acquisition_steps[{i}]")
    return manifest


def load_manifest(path: str | Path, *, root: str | Path | None = None) -> tuple[DatasetManifest, bytes]:
    """Read and validate a manifest file; returns ``(manifest, raw_bytes)``."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise WorldForgeError(f"{path}: dataset manifest not found.") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WorldForgeError(f"{path}: not valid UTF-8 JSON ({exc}).") from None
    base = Path(root) if root is not None else find_repo_root(file.parent)
    return validate_manifest(data, source=str(path), root=base), raw


def manifest_reference(path: str | Path, *, root: str | Path | None = None) -> DatasetReference:
    """Compact reference for provenance and run manifests (never the entries themselves).

    ``{schema_version, id, name, sha256 (raw bytes of the manifest file), entry_count, entry_kinds,
    license, privacy, safety, path | local_only}`` — ``path`` is the repository-relative POSIX path
    when the manifest lies inside the repository, else ``local_only: true``.
    """
    file = Path(path)
    base = Path(root).resolve() if root is not None else find_repo_root(file.parent)
    data, raw = load_manifest(file, root=base)
    kinds: dict[str, int] = {}
    for entry in data["entries"]:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    safety = data["safety"]
    ref: DatasetReference = {
        "schema_version": DATASET_MANIFEST_SCHEMA_VERSION,
        "id": data["id"],
        "name": data["name"],
        "sha256": digest_bytes(raw),
        "entry_count": len(data["entries"]),
        "entry_kinds": dict(sorted(kinds.items())),
        "license": data["license"],
        "privacy": {
            "classification": data["privacy"]["classification"],
            "contains_personal_data": data["privacy"]["contains_personal_data"],
        },
        "safety": {
            "reviewed": safety["reviewed"],
            "contains_sensitive_capability_data": safety["contains_sensitive_capability_data"],
            "contains_robot_logs": bool(safety.get("contains_robot_logs", False)),
        },
        "provenance": {k: data["provenance"][k] for k in ("owner", "source", "version")},
    }
    resolved = file.resolve()
    if resolved.is_relative_to(base):
        ref["path"] = resolved.relative_to(base).as_posix()
    else:
        ref["local_only"] = True
    return ref


def dataset_references(manifests: Iterable[object] | None) -> list[JSONObject]:
    """Compact references for the dataset manifests an evaluation cites, in the order given.

    Every evaluation suite records its cited datasets the same way, so run inputs, provenance and
    evidence bundles agree on what a run used: a manifest path is validated and turned into its
    :func:`manifest_reference` (a bad manifest fails the run before any work starts), and an
    already-compact reference (a mapping, e.g. from a resumed run) is copied as is. Anything else
    raises :class:`WorldForgeError` naming its position in ``manifests``.
    """
    refs: list[JSONObject] = []
    for index, item in enumerate(manifests or []):
        if isinstance(item, dict):
            refs.append(dict(item))
        elif isinstance(item, (str, Path)):  # a typed reference becomes the open JSON a run records
            refs.append(json_object(to_json_native(manifest_reference(item)), f"dataset_manifests[{index}]"))
        else:
            raise WorldForgeError(f"dataset_manifests[{index}]: expected a compact reference or a path.")
    return refs


__all__ = [
    "DATASET_MANIFEST_SCHEMA_VERSION",
    "DatasetEntry",
    "DatasetManifest",
    "DatasetReference",
    "Privacy",
    "Provenance",
    "ReferencePrivacy",
    "ReferenceSafety",
    "Safety",
    "MAX_LOCAL_FIXTURE_BYTES",
    "dataset_references",
    "find_repo_root",
    "load_manifest",
    "manifest_reference",
    "manifest_schema",
    "validate_manifest",
]
