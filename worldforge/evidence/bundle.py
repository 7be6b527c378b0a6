"""Evidence and issue bundles: sanitized, digest-listed copies of runs that are safe to attach.

A bundle is a directory (optionally also a zip) with:

* ``runs/<run-id>/…`` — every file of each run, *redacted in place* by the one sanitizer (a secret
  in one log line no longer costs the whole log); binaries, oversize files and local-only files
  (``.lock``, ``.local/``) are excluded with a reason and still listed with their digest;
* ``dataset-manifests/…`` — copies of repository dataset manifests the runs cite, located from each
  run's own record (never from the bundling process's current directory);
* ``inputs/…`` and ``budgets/…`` — the input fixtures the runs read (when unchanged since the run)
  and each benchmark run's preset and budget (see :mod:`worldforge.evidence.inputs`);
* ``summary.md`` (and ``issue.md`` for a single-run issue bundle), which state the bundle gate's
  verdict: they are written once the gate has scanned everything else, then scanned themselves;
* ``evidence_manifest.json`` — every file with source and bundled sha256 (the source digest is
  withheld for a file the bundle holds redacted: see :mod:`worldforge.evidence.withhold`), size, included,
  safe_to_attach and reason, the redaction ledger (rule, file, line, count — never the secret),
  ``fixture_digests`` (every recorded input file of every run: name, path, sha256, size, and where
  the bundle holds it), and a ``bundle_digest`` over the included files.

Bundles contain no wall-clock time: the only date is the newest run's ``updated_at``, which is also
the zip member mtime, so bundling the same runs twice yields byte-identical zips.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from worldforge.core.canonical import pretty_json
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_bytes
from worldforge.core.redact import SANITIZER_VERSION, sanitize_text, sanitize_value, sanitize_with_ledger
from worldforge.evidence.detect import KnownValues
from worldforge.evidence.files import clean_file, exclusion, rerender_reports, stays_local
from worldforge.evidence.gate import (
    GateFinding,
    flag_files,
    gate_record,
    scan_bundle_dir,
    scan_files,
    scan_zip,
)
from worldforge.evidence.inputs import run_inputs
from worldforge.evidence.manifest import (
    EVIDENCE_MANIFEST,
    EVIDENCE_SCHEMA_VERSION,
    EvidenceManifest,
    FileRecord,
    FindingRecord,
    FixtureDigest,
    RedactionRecord,
    RunStory,
    mark_included,
    not_included,
    parse_evidence_manifest,
    redaction_record,
)
from worldforge.evidence.story import issue_md, run_story, summary_md
from worldforge.evidence.withhold import WITHHELD, strip_digests, withhold
from worldforge.workspace.layout import ATTESTATION_NAME, MANIFEST_NAME, read_invocation
from worldforge.workspace.records import RunManifest, read_run_manifest
from worldforge.workspace.store import list_runs, resolve_run_dir
from worldforge.workspace.verify import VerifyReport, verify_run

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
_NOT_FOUND = "excluded: not found where the run read it (digest as the run recorded it)"


@dataclass
class BundleResult:
    """A written bundle: where it is, its manifest (as written, with the gate's final verdict) and
    its zip, if one was kept."""

    output_dir: Path
    manifest: EvidenceManifest
    zip_path: Path | None = None

    @property
    def safe_to_attach(self) -> bool:
        return self.manifest["safe_to_attach"]

    @property
    def gate_findings(self) -> list[FindingRecord]:
        """What the bundle gate found: file, line and rule (never the text)."""
        gate = self.manifest.get("gate")
        return list(gate["findings"]) if gate is not None else []

    def gate_lines(self) -> list[str]:
        """One printable line per gate finding (``[zip:]file:line: rule``), for exit-1 messages."""
        lines = []
        for f in self.gate_findings:
            where = f"{f['container']}:" if f.get("container") else ""
            lines.append(f"{where}{f['file']}:{f['line']}: {f['rule']}")
        return lines


class _Builder:
    def __init__(self, output_dir: Path) -> None:
        self.output_dir = output_dir
        self.files: list[FileRecord] = []
        self.redactions: list[RedactionRecord] = []
        self.paths: set[str] = set()
        self.memo: dict[str, str] = {}  # sanitized strings shared by every file of this bundle
        self.written: dict[str, bytes] = {}  # what was written, by bundle path, for the gate
        self.sources: dict[str, bytes] = {}  # the original bytes of every file the bundle holds

    def add_bytes(
        self,
        bundle_path: str,
        source: str,
        kind: str,
        data: bytes,
        *,
        local_only: bool = False,
        rendered: str | None = None,
    ) -> bytes | None:
        record = not_included(*_clean_names(bundle_path, source), kind, data, reason="")
        bundle_path, out = record["path"], None
        if bundle_path in self.paths:
            record["reason"] = "excluded: its sanitized name collides with another file's"
        elif local_only:
            record["reason"] = "local-only: host invocation details and locks stay on this machine"
        elif (why := exclusion(data)) is not None:
            record["reason"] = why
        else:
            cleaned = clean_file(bundle_path, data.decode("utf-8"), rendered, self.memo)
            out, ledger = cleaned.data, cleaned.ledger
            count = sum(entry.count for entry in ledger)
            self.redactions.extend(redaction_record(entry) for entry in ledger)
            how = (
                "re-rendered from the sanitized report payload"
                if cleaned.method == "re-rendered"
                else (
                    "redacted in place" if cleaned.method == "text" else f"sanitized as {cleaned.method} data"
                )
            )
            reason = f"{how} ({count} redactions)" if count else "copied unchanged"
            record["method"] = cleaned.method
            mark_included(record, out)
            record["redaction_count"], record["reason"] = count, reason
            target = self.output_dir / bundle_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(out)  # the staging directory is renamed into place as a whole
            self.written[bundle_path] = out
            self.sources[bundle_path] = data
        self.files.append(record)
        self.paths.add(bundle_path)
        return out

    def withhold_oracles(self) -> set[str]:
        """Take out every digest of an original the bundle holds only redacted (see ``withhold``).

        Rewrites the affected files and records, and marks each file whose bundled bytes differ
        from its source with a withheld source digest and size (the size would give a secret's
        length). Returns the withheld digests, for the files generated afterwards.
        """
        changes, withheld = withhold(self.sources, self.written)
        for path, data in changes.items():
            (self.output_dir / path).write_bytes(data)
            self.written[path] = data
        for record in self.files:
            path = record["path"]
            if path in changes:
                record["sha256"], record["size"] = digest_bytes(self.written[path]), len(self.written[path])
            if path in self.sources and self.written[path] != self.sources[path]:
                record["source_sha256"], record["source_size"] = WITHHELD, None
        return withheld

    def add_excluded(self, bundle_path: str, source: str, kind: str, data: bytes, reason: str) -> None:
        """List a file the bundle must not carry (e.g. changed since the run) with its source digest."""
        record = not_included(*_clean_names(bundle_path, source), kind, data, reason=reason)
        self.files.append(record)
        self.paths.add(record["path"])


def _clean_names(bundle_path: str, source: str) -> tuple[str, str]:
    """Names leave the machine too (item ids carry provider specs): sanitized like contents.

    A run file's bundle path and source are the same string, so it is sanitized once.
    """
    clean = sanitize_text(bundle_path)
    return clean, clean if source == bundle_path else sanitize_text(source)


def _source_date(manifests: list[RunManifest]) -> str | None:
    stamps = [m.updated_at or m.created_at or "" for m in manifests]
    stamps = [s for s in stamps if s]
    return max(stamps) if stamps else None


def _cited_manifest_file(
    invocation: tuple[list[str], Path] | None, manifest: RunManifest, rel_path: str
) -> Path | None:
    """The file a run cited by its repository-relative ``rel_path``, located from the run's record.

    The run's invocation record (argv and cwd, as ``runs resume`` uses them) and config
    give the ``--dataset-manifest`` arguments; the one resolving to a path ending in ``rel_path`` is
    the file read, else ``rel_path`` under the run's start directory or a parent. Never the bundling
    process's directory: a bundle must not depend on where ``runs bundle`` is typed.
    """
    pure = PurePosixPath(rel_path)
    if invocation is None or not pure.parts or pure.is_absolute() or ".." in pure.parts:
        return None
    argv, cwd = invocation
    config = manifest.config.get("dataset_manifests")
    args = [b for a, b in zip(argv, argv[1:], strict=False) if a == "--dataset-manifest"]
    args += [a.partition("=")[2] for a in argv if a.startswith("--dataset-manifest=")]
    for arg in args + ([str(a) for a in config] if isinstance(config, list) else []):
        candidate = (cwd / arg).resolve()
        if candidate.parts[-len(pure.parts) :] == pure.parts and candidate.is_file():
            return candidate
    return next((base / pure for base in (cwd, *cwd.parents) if (base / pure).is_file()), None)


def _add_dataset_manifests(
    builder: _Builder,
    invocation: tuple[list[str], Path] | None,
    manifest: RunManifest,
    claimed: dict[str, str],
) -> None:
    """Copy the repository dataset manifests a run cites to ``dataset-manifests/<path>``.

    ``<path>`` is the recorded repository path less its own leading ``dataset-manifests/`` (no
    doubled prefix). A manifest that cannot be located from the run's record, or whose bytes no
    longer match the recorded digest, is listed as excluded with that digest and the reason.
    ``claimed`` maps bundle paths to their repository path, so a shared manifest is listed once.
    """
    for ref in manifest.dataset_manifests:
        rel_path = ref.get("path")
        if not isinstance(rel_path, str):
            continue  # local-only: the run cited a manifest outside the repository
        bundle_path = "dataset-manifests/" + rel_path.removeprefix("dataset-manifests/")
        if claimed.get(bundle_path, rel_path) != rel_path:
            bundle_path = f"dataset-manifests/{rel_path}"  # two repository paths, one short name
        if bundle_path in claimed:
            continue
        claimed[bundle_path] = rel_path
        recorded, found = ref.get("sha256"), _cited_manifest_file(invocation, manifest, rel_path)
        data = found.read_bytes() if found is not None else None
        if data is None:  # listed by the digest the run recorded: the bytes are not at hand
            missing = not_included(bundle_path, rel_path, "dataset-manifest", b"", reason=_NOT_FOUND)
            missing["source_sha256"] = recorded if isinstance(recorded, str) else None
            missing["source_size"] = None
            builder.files.append(missing)
        elif recorded not in (None, digest_bytes(data)):
            reason = f"excluded: the manifest changed since the run cited {recorded}"
            builder.add_excluded(bundle_path, rel_path, "dataset-manifest", data, reason)
        else:
            builder.add_bytes(bundle_path, rel_path, "dataset-manifest", data)


def build_bundle(
    workspace_dir: str | Path,
    run_refs: list[str],
    output_dir: str | Path,
    *,
    overwrite: bool = False,
    make_zip: bool = False,
    issue: bool = False,
    attest: Callable[[Path, EvidenceManifest, dict[str, bytes]], object] | None = None,
) -> BundleResult:
    """Bundle the given runs (all when ``run_refs`` is empty); ``attest`` signs a bundle the gate passed."""

    refs = list(run_refs) or [row["run_id"] for row in list_runs(workspace_dir)]
    if not refs:
        raise WorldForgeError(f"{workspace_dir}: no run workspaces found to bundle.")
    run_dirs = sorted({resolve_run_dir(workspace_dir, ref) for ref in refs}, key=lambda p: p.name)
    final = Path(output_dir)
    if final.exists() and any(final.iterdir()) and not overwrite:
        raise WorldForgeError(f"{final}: output directory is not empty (pass --overwrite to replace it).")
    # Build in a sibling staging directory and rename it into place at the end, so a reader never
    # sees a half-written bundle (and per-file fsyncs are not needed).
    final.parent.mkdir(parents=True, exist_ok=True)
    out = final.with_name(f".{final.name}.partial-{os.getpid()}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    builder = _Builder(out)
    manifests: list[RunManifest] = []
    stories: list[RunStory] = []
    copied_datasets: dict[str, str] = {}
    claimed_inputs: dict[str, str | None] = {}
    fixture_digests: list[FixtureDigest] = []
    for run_dir in run_dirs:
        manifest = read_run_manifest(run_dir)
        manifests.append(manifest)
        stories.append(run_story(run_dir, manifest))
        run_files = {
            path.relative_to(run_dir).as_posix(): path
            for path in sorted(p for p in run_dir.rglob("*") if p.is_file())
        }
        contents = {rel: path.read_bytes() for rel, path in run_files.items()}
        rendered = rerender_reports(manifest.kind, contents)
        for rel, path in run_files.items():
            local = stays_local(rel, path.is_symlink())
            builder.add_bytes(
                f"runs/{run_dir.name}/{rel}",
                f"runs/{run_dir.name}/{rel}",
                "run-file",
                contents[rel],
                local_only=local,
                rendered=rendered.get(rel),
            )
        invocation = read_invocation(run_dir)  # where the run started: the files it read are there
        _add_dataset_manifests(builder, invocation, manifest, copied_datasets)
        start = invocation[1] if invocation is not None else None
        digests, copies = run_inputs(manifest, claimed_inputs, start)
        fixture_digests.extend(digests)
        for copy in copies:
            if copy.reason is None:
                builder.add_bytes(copy.bundle_path, copy.source, copy.kind, copy.data)
            else:
                builder.add_excluded(copy.bundle_path, copy.source, copy.kind, copy.data, copy.reason)
    withheld = builder.withhold_oracles()
    texts = _Texts(stories, fixture_digests, _source_date(manifests), issue, withheld)
    known = KnownValues.from_environment()
    # The gate first scans what was copied, so that summary.md, issue.md and the manifest can state
    # its verdict; they are then scanned in turn (``_settle``).
    manifest_payload, findings = _settle(
        out, builder, texts, scan_bundle_dir(out, known, builder.written), known
    )
    if attest is not None and manifest_payload["safe_to_attach"]:
        attest(out, manifest_payload, builder.written)
    if final.exists():
        shutil.rmtree(final)
    os.replace(out, final)
    zip_path = None
    if make_zip and manifest_payload["safe_to_attach"]:
        zip_path = write_zip(final, texts.source_date)
        zip_findings = scan_zip(zip_path, known)
        if zip_findings:  # fail closed: no zip that the detector objects to is left behind
            zip_path.unlink()
            zip_path = None
            (final / ATTESTATION_NAME).unlink(missing_ok=True)  # it attests the verdict being withdrawn
            refused = sorted(set(findings) | set(zip_findings))
            manifest_payload, findings = _settle(final, builder, texts, refused, known)
    return BundleResult(final, manifest_payload, zip_path)


@dataclass(frozen=True)
class _Texts:
    """What the generated texts and the manifest say besides the gate's verdict."""

    stories: list[RunStory]
    fixture_digests: list[FixtureDigest]
    source_date: str | None
    issue: bool
    withheld: set[str]


#: Rounds of writing the texts and scanning them before the findings so far are taken as final.
_SETTLE_ROUNDS = 3


def _settle(
    out: Path, builder: _Builder, texts: _Texts, findings: list[GateFinding], known: KnownValues
) -> tuple[EvidenceManifest, list[GateFinding]]:
    """Write summary.md, issue.md and the manifest stating the verdict the gate reaches on all of them.

    ``findings`` are the gate's findings on everything else. The texts are scanned after they are
    written, and a finding in them (a flagged file's name, say) is a finding of the bundle: they are
    written again stating it. Findings only accumulate, so a refused bundle never reads as safe; if
    a text still changes what is found after the last round, the manifest lists every finding and
    the texts, which already say the bundle is refused, point to it.
    """
    for _ in range(_SETTLE_ROUNDS):
        payload, written = _write_verdict(out, builder, texts, findings)
        settled = sorted(set(findings) | set(scan_files(written, known)))
        if settled == findings:
            break
        findings = settled
    else:
        payload["files"], payload["safe_to_attach"] = flag_files(payload["files"], findings), False
        payload["gate"] = gate_record(findings, payload["gate"]["scanned_files"])
    atomic_write_bytes(out / EVIDENCE_MANIFEST, pretty_json(payload).encode("utf-8"))
    return payload, findings


def _write_verdict(
    out: Path, builder: _Builder, texts: _Texts, findings: list[GateFinding]
) -> tuple[EvidenceManifest, dict[str, bytes]]:
    """Write summary.md (and issue.md) and the manifest as the verdict ``findings`` give.

    Returns the manifest, with its ``gate`` record added after the manifest was written without it
    (the detector scans that written form), and the bytes written, which the gate has not scanned.
    """
    files = flag_files(builder.files, findings)
    names = ["summary.md", "issue.md"] if texts.issue else ["summary.md"]
    gate = gate_record(findings, sum(1 for f in files if f["included"]) + len(names) + 1)
    raw_texts = [
        summary_md(
            texts.stories, files, builder.redactions, texts.source_date, texts.fixture_digests, gate=gate
        )
    ]
    if texts.issue:
        raw_texts.append(issue_md(texts.stories[0], files, builder.redactions, gate=gate))
    redactions = list(builder.redactions)
    written: dict[str, bytes] = {}
    generated = []
    for name, raw_text in zip(names, raw_texts, strict=True):
        text, ledger = sanitize_with_ledger(raw_text, name)
        redactions.extend(redaction_record(entry) for entry in ledger)
        data = strip_digests(text.encode("utf-8"), texts.withheld)
        (out / name).write_bytes(data)
        written[name] = data
        reason = "generated from sanitized run metadata"
        record = not_included(name, "generated", "summary", data, reason=reason)
        mark_included(record, data)
        generated.append(record)
    files = sorted(files + flag_files(generated, findings), key=lambda r: r["path"])
    included = [f for f in files if f["included"]]
    payload: EvidenceManifest = {
        "schema_version": EVIDENCE_SCHEMA_VERSION,
        "bundle_kind": "issue-run" if texts.issue else "evidence",
        "source_date": texts.source_date,
        "sanitizer": SANITIZER_VERSION,
        "run_count": len(texts.stories),
        "runs": texts.stories,
        "files": files,
        "redactions": sorted(redactions, key=lambda r: (r["file"], r["line"], r["rule"])),
        "fixture_digests": texts.fixture_digests,
        "included_count": len(included),
        "excluded_count": len(files) - len(included),
        "redaction_count": sum(r["count"] for r in redactions),
        "safe_to_attach": not findings and all(f["safe_to_attach"] for f in included),
        "bundle_digest": digest_payload([[f["path"], f["sha256"]] for f in included]),
    }
    if texts.issue:
        payload["issue_template"] = "issue.md"
        payload["first_triage_step"] = texts.stories[0]["first_triage_step"]
    # The manifest leaves the machine too. Sanitizing changes strings only, and taking the withheld
    # digests out of the fixture list (which names input files by digest, redacted copies
    # included) replaces digest strings: both keep the model's shape.
    payload = sanitize_value(payload)
    if texts.withheld:
        payload = json.loads(strip_digests(pretty_json(payload).encode("utf-8"), texts.withheld))
    data = pretty_json(payload).encode("utf-8")
    atomic_write_bytes(out / EVIDENCE_MANIFEST, data)
    written[EVIDENCE_MANIFEST] = data
    payload["gate"] = gate
    return payload, written


def _zip_date(source_date: str | None) -> tuple[int, int, int, int, int, int]:
    try:
        moment = datetime.strptime(source_date or "", "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return _ZIP_EPOCH
    year, month, day, hour, minute, second = moment.timetuple()[:6]
    return _ZIP_EPOCH if year < 1980 else (year, month, day, hour, minute, second - second % 2)


def write_zip(bundle_dir: Path, source_date: str | None = None) -> Path:
    """Zip a bundle reproducibly: sorted members, fixed mtime, mode 0644, fixed compression level."""
    stamp = _zip_date(source_date)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(
            (p for p in bundle_dir.rglob("*") if p.is_file()),
            key=lambda p: p.relative_to(bundle_dir).as_posix(),
        ):
            info = zipfile.ZipInfo(path.relative_to(bundle_dir).as_posix(), date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = (0o100644 & 0xFFFF) << 16
            archive.writestr(info, path.read_bytes(), compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    target = bundle_dir.with_name(bundle_dir.name + ".zip")
    atomic_write_bytes(target, buffer.getvalue())
    return target


# ---------------------------------------------------------------------- verification


def verify_bundle_dir(bundle_dir: Path, target: str | None = None) -> VerifyReport:
    """Recompute every bundled file's digest, the bundle digest, and each bundled run's own checks.

    A structurally broken evidence manifest is reported as a problem, never raised.
    """
    report = VerifyReport(target=target or bundle_dir.name, kind="bundle")
    try:
        _verify_bundle(report, bundle_dir)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        report.add(
            "manifest-malformed", EVIDENCE_MANIFEST, f"unexpected structure ({type(exc).__name__}: {exc})"
        )
    report.status = "verified" if report.ok else "mismatch"
    return report


def _verify_bundle(report: VerifyReport, bundle_dir: Path) -> None:
    try:
        raw = json.loads((bundle_dir / EVIDENCE_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        report.add("manifest-unreadable", EVIDENCE_MANIFEST, f"cannot read evidence manifest ({exc})")
        return
    try:
        manifest = parse_evidence_manifest(raw)
    except WorldForgeError as exc:
        report.add("manifest-malformed", EVIDENCE_MANIFEST, str(exc))
        return
    files = {f["path"]: f for f in manifest["files"]}
    for listed, record in sorted(files.items()):
        if not record["included"]:
            continue
        on_disk = bundle_dir / listed
        if not on_disk.is_file():
            report.add("file-missing", listed, "listed as included but missing from the bundle")
            continue
        data = on_disk.read_bytes()
        if digest_bytes(data) != record["sha256"] or len(data) != record["size"]:
            report.add("file-digest-mismatch", listed, "sha256/size differ from evidence_manifest.json")
    included = [files[p] for p in sorted(files) if files[p]["included"]]
    if digest_payload([[f["path"], f["sha256"]] for f in included]) != manifest["bundle_digest"]:
        report.add("bundle-digest-mismatch", EVIDENCE_MANIFEST, "bundle_digest does not match the file list")
    for path in sorted(p for p in bundle_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(bundle_dir).as_posix()
        if rel not in (EVIDENCE_MANIFEST, ATTESTATION_NAME) and rel not in files:
            report.add("unlisted-file", rel, "file is not listed in evidence_manifest.json")
    report.checked["files"] = len(included)
    runs_root = bundle_dir / "runs"
    for run in manifest["runs"]:
        run_id = run["run_id"]
        run_dir = runs_root / run_id
        prefix = f"runs/{run_id}/"
        changed = frozenset(
            p[len(prefix) :]
            for p, f in files.items()
            if p.startswith(prefix) and (not f["included"] or f["sha256"] != f["source_sha256"])
        )
        sub = verify_run(run_dir, prefix=prefix, skip_paths=changed)
        if MANIFEST_NAME not in changed:
            try:
                artifacts = read_run_manifest(run_dir).artifacts or []
            except WorldForgeError:
                artifacts = []
            recorded = {a["path"]: a["sha256"] for a in artifacts}
            for rel in sorted(changed):
                source_digest = files[prefix + rel]["source_sha256"]
                if rel in recorded and source_digest not in (WITHHELD, recorded[rel]):
                    report.add(
                        "source-digest-mismatch",
                        prefix + rel,
                        "source sha256 of a redacted file differs from the run manifest",
                    )
        report.problems.extend(sub.problems)
        report.runs.append(
            {"run_id": run_id, "status": sub.status, "ok": sub.ok, "redacted_files": sorted(changed)}
        )


def verify_bundle_zip(zip_path: Path) -> VerifyReport:
    """Extract a bundle zip into a temporary directory (rejecting unsafe member names) and verify it."""
    with tempfile.TemporaryDirectory(prefix="wf-bundle-") as tmp, zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            pure = PurePosixPath(info.filename)
            if pure.is_absolute() or ".." in pure.parts or "\\" in info.filename:
                raise WorldForgeError(f"{zip_path.name}: unsafe member name {info.filename!r}.")
            if info.is_dir():
                continue
            target = Path(tmp) / pure
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))
        return verify_bundle_dir(Path(tmp), target=zip_path.name)


def verify_target(workspace_dir: str | Path, target: str) -> VerifyReport:
    """``runs verify`` dispatch: a bundle zip, a bundle directory, or a run id / run directory."""
    path = Path(target)
    if path.is_file() and zipfile.is_zipfile(path):
        return verify_bundle_zip(path)
    if (path / EVIDENCE_MANIFEST).is_file():
        return verify_bundle_dir(path, target=path.name)
    run_dir = resolve_run_dir(workspace_dir, target)
    return verify_run(run_dir)


__all__ = [
    "BundleResult",
    "build_bundle",
    "verify_bundle_dir",
    "verify_bundle_zip",
    "verify_target",
    "write_zip",
]
