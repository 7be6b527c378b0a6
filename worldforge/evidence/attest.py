"""Signed in-toto attestations of bundles and of finished runs: ``attestations.intoto.jsonl``.

One DSSE envelope per line (:mod:`worldforge.evidence.dsse`), each holding an in-toto Statement v1
(:mod:`worldforge.evidence.statement`): for every run, a test-result Statement and a SLSA Provenance
Statement. A signature binds the Statement to a key; the Statement binds every subject's bytes.

* **A bundle** (``runs bundle --attest``): the subjects are the files *as bundled* (sanitized), by
  the digests the evidence manifest lists, plus the manifest itself. A run's Statements cover its
  own ``runs/<id>/`` files and the files the bundle shares (manifest, summary, inputs, dataset
  manifests); the documents they read are the bundled ones, so a digest the bundle withholds
  (:mod:`worldforge.evidence.withhold`) cannot come back through them.
* **A run in place** (``eval --attest``): the subjects are the run's files the bundle would carry
  unchanged. The file is put through the bundle's own cleaning (:func:`clean_file`, re-rendered
  reports, the run's input fixtures) and the bundle's withholding rule: a file the sanitizer would
  change, or one holding the digest of such a file, is no subject, and its digest appears nowhere
  (it is a password oracle). The attestation sits beside the run's artifacts, is not one of them,
  and ``runs verify`` checks it.

Nothing is attested that is unfinished or already broken: a run still running, or one whose own
digests no longer verify, is bad input (exit 2) before anything is written. The signing key is used
in memory only; the file carries its key id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path, PurePosixPath

from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_bytes
from worldforge.core.redact import sanitize_text
from worldforge.core.run_events import RunStatus
from worldforge.evidence.dsse import seal
from worldforge.evidence.files import clean_file, exclusion, rerender_reports, stays_local
from worldforge.evidence.inputs import run_inputs
from worldforge.evidence.keys import SigningKey
from worldforge.evidence.manifest import EVIDENCE_MANIFEST, EvidenceManifest
from worldforge.evidence.statement import run_docs, run_statements
from worldforge.evidence.withhold import withhold
from worldforge.workspace.layout import ATTESTATION_NAME, read_invocation
from worldforge.workspace.records import RunManifest, read_run_manifest
from worldforge.workspace.store import list_runs, resolve_run_dir
from worldforge.workspace.verify import verify_run


def check_attestable(run_dir: Path) -> RunManifest:
    """The run's manifest when it may be attested; ``WorldForgeError`` (exit 2) when it is still
    running or its own digests fail verification: a signature must not bless what is unfinished or
    already altered."""
    manifest = read_run_manifest(run_dir)
    if manifest.status == RunStatus.RUNNING:
        raise WorldForgeError(f"run {run_dir.name}: still running; attest it once it has finished.")
    report = verify_run(run_dir)
    if not report.ok:
        first = report.problems[0]
        raise WorldForgeError(
            f"run {run_dir.name}: fails verification ({first.code}: {first.path}); "
            "nothing is attested (see `worldforge runs verify`)."
        )
    return manifest


def check_runs(workspace_dir: str | Path, refs: list[str]) -> None:
    """:func:`check_attestable` for every run a bundle of ``refs`` (all runs when empty) would hold,
    before anything is written."""
    refs = list(refs) or [row["run_id"] for row in list_runs(workspace_dir)]
    for ref in refs:
        check_attestable(resolve_run_dir(workspace_dir, ref))


def _lines(statements: list[bytes], key: SigningKey | None) -> bytes:
    return "".join(seal(payload, key).to_line() for payload in statements).encode("utf-8")


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


# ----------------------------------------------------------------------------------- bundles


def _under(read: Callable[[str], bytes | None], prefix: str, rel: str) -> bytes | None:
    return read(prefix + rel)


def attest_bundle(
    bundle_dir: Path,
    manifest: EvidenceManifest,
    key: SigningKey | None,
    written: Mapping[str, bytes] | None = None,
) -> Path:
    """Write ``attestations.intoto.jsonl`` at the root of a bundle whose manifest is ``manifest``.

    The bundle builder calls this on its staging directory once the gate passed
    (``build_bundle(..., attest=...)``), so the file is part of the zip; ``written`` is what it
    wrote by bundle path (read from the directory when not given).
    """
    included = {f["path"]: _hex(str(f["sha256"])) for f in manifest["files"] if f["included"]}
    included[EVIDENCE_MANIFEST] = _hex(digest_bytes((bundle_dir / EVIDENCE_MANIFEST).read_bytes()))
    shared = {p: d for p, d in included.items() if not p.startswith("runs/")}

    def bundled(path: str) -> bytes | None:
        if path not in included:
            return None
        return written[path] if written is not None and path in written else (bundle_dir / path).read_bytes()

    statements: list[bytes] = []
    for run in manifest["runs"]:
        run_id = run["run_id"]
        prefix = f"runs/{run_id}/"
        subjects = {**shared, **{p: d for p, d in included.items() if p.startswith(prefix)}}
        items = (
            bundled(p) or b""
            for p in sorted(included)
            if p.startswith(prefix + "items/") and p.endswith(".json")
        )
        docs = run_docs(run_id, prefix, partial(_under, bundled, prefix), items, subjects)
        statements += run_statements(docs, subjects)
    target = bundle_dir / ATTESTATION_NAME
    atomic_write_bytes(target, _lines(statements, key))
    return target


# -------------------------------------------------------------------------------------- runs


def released_files(run_dir: Path, manifest: RunManifest) -> tuple[dict[str, bytes], dict[str, str]]:
    """What a bundle of this run would hold: ``(run-relative path -> bundled bytes, subjects)``.

    ``subjects`` maps the run files the bundle would carry unchanged (under an unchanged name) to
    their hex SHA-256; every other file, and every file that holds a withheld digest, is left out.
    """
    prefix = f"runs/{run_dir.name}/"
    paths = {
        rel: p
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
        and not stays_local(rel := p.relative_to(run_dir).as_posix(), p.is_symlink())
        and rel != ATTESTATION_NAME  # it cannot attest itself
    }
    contents = {rel: p.read_bytes() for rel, p in paths.items()}
    rendered = rerender_reports(manifest.kind, contents)
    sources: dict[str, bytes] = {}
    written: dict[str, bytes] = {}
    memo: dict[str, str] = {}
    for rel, data in contents.items():
        written[prefix + rel] = data
        if exclusion(data) is None:
            sources[prefix + rel] = data
            written[prefix + rel] = clean_file(
                prefix + rel, data.decode("utf-8"), rendered.get(rel), memo
            ).data
    invocation = read_invocation(run_dir)
    _, copies = run_inputs(manifest, {}, invocation[1] if invocation is not None else None)
    for copy in copies:  # the input fixtures the bundle would carry: their digests are in the manifest
        if copy.reason is None and exclusion(copy.data) is None:
            sources[copy.bundle_path] = copy.data
            written[copy.bundle_path] = clean_file(
                copy.bundle_path, copy.data.decode("utf-8"), None, memo
            ).data
    changes, withheld = withhold(sources, written)
    written.update(changes)
    released: dict[str, bytes] = {}
    subjects: dict[str, str] = {}
    for rel, data in contents.items():
        released[rel] = written[prefix + rel]
        digest = digest_bytes(data)
        if released[rel] == data and digest not in withheld and sanitize_text(rel) == rel:
            subjects[rel] = _hex(digest)
    return released, subjects


def attest_run(run_dir: Path, key: SigningKey | None, manifest: RunManifest | None = None) -> Path:
    """Write ``attestations.intoto.jsonl`` into a finished run (checked by :func:`check_attestable`
    unless the caller already did and passes ``manifest``)."""
    manifest = manifest if manifest is not None else check_attestable(run_dir)
    released, subjects = released_files(run_dir, manifest)
    if not subjects:
        raise WorldForgeError(
            f"run {run_dir.name}: no file can be attested without disclosing a redacted one."
        )
    items = (
        data
        for rel, data in sorted(released.items())
        if PurePosixPath(rel).parts[0] == "items" and rel.endswith(".json")
    )
    docs = run_docs(run_dir.name, "", released.get, items, subjects)
    target = run_dir / ATTESTATION_NAME
    atomic_write_bytes(target, _lines(run_statements(docs, subjects), key))
    return target


__all__ = ["attest_bundle", "attest_run", "check_attestable", "check_runs", "released_files"]
