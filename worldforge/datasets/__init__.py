"""Dataset manifests: cite data (with digests, license, provenance, privacy and safety review) without
storing or downloading it. The implementation lives in :mod:`worldforge.datasets.manifests`; the
JSON Schema ships in ``schemas/``."""

from worldforge.datasets.manifests import (
    DATASET_MANIFEST_SCHEMA_VERSION,
    MAX_LOCAL_FIXTURE_BYTES,
    dataset_references,
    find_repo_root,
    load_manifest,
    manifest_reference,
    manifest_schema,
    validate_manifest,
)

__all__ = [
    "DATASET_MANIFEST_SCHEMA_VERSION",
    "MAX_LOCAL_FIXTURE_BYTES",
    "dataset_references",
    "find_repo_root",
    "load_manifest",
    "manifest_reference",
    "manifest_schema",
    "validate_manifest",
]
