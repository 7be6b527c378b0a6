"""Evidence bundles: in-place redaction with a ledger, exclusions with reasons, offline verification
of directories and zips, byte-reproducible zips, and no secret surviving a bundle (property test)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.evidence.bundle import (
    build_bundle,
    verify_bundle_dir,
    verify_bundle_zip,
    verify_target,
)
from worldforge.evidence.files import MAX_ATTACH_BYTES
from worldforge.evidence.withhold import WITHHELD
from worldforge.workspace import start_run

REPO = Path(__file__).resolve().parents[2]
ZERO = "sha256:" + "0" * 64
SECRET_LOG = (
    "provider call failed: Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c\n"
    "fetched https://bucket.s3.amazonaws.com/x.png?X-Amz-Signature=abc123def456&X-Amz-Credential=AKIAXYZ\n"
    "cache at /home/alice/.cache/worldforge/levels\n"
    "api_key: sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x\n"
)
SECRETS = ("9f8e7d6c5b4a3f2e1d0c", "abc123def456", "AKIAXYZ", "alice", "sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x")


def make_run(
    ws: Path, log: str = SECRET_LOG, status: str = "completed", extra: dict[str, bytes] | None = None
) -> str:
    try:
        with start_run(
            ws, "evaluation", ["worldforge", "eval", "--suite", "planning"], {"suite": "planning"}
        ) as run:
            run.add_input_value("suite", {"id": "planning"})
            run.record_item("planning/a", ZERO, {"score": 1.0, "note": "ran under /home/alice/work"})
            run.write_artifact("logs/provider.log", log, "text/plain")
            run.write_artifact(
                "reports/report.json", json.dumps({"passed": 1, "failed": 1}), "application/json"
            )
            for rel, data in (extra or {}).items():
                run.write_artifact(rel, data)
            if status == "failed":
                raise RuntimeError("scenario crashed reading /home/alice/data.json with token=abcdef123456")
            run.complete({"passed": 1, "failed_count": 1}, claim_boundary="contract check only")
    except RuntimeError:
        pass
    return run.run_id


def all_bytes(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_bundle_redacts_in_place_with_ledger_and_verifies(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = make_run(ws)
    result = build_bundle(ws, [run_id], tmp_path / "bundle", issue=True)
    out = result.output_dir
    blob = all_bytes(out)
    for secret in SECRETS:
        assert secret.encode() not in blob, secret
    log = (out / "runs" / run_id / "logs" / "provider.log").read_text()
    assert log.splitlines() == [
        "provider call failed: Authorization: Bearer [redacted]",
        "fetched https://bucket.s3.amazonaws.com/x.png?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]",
        "cache at <home>/.cache/worldforge/levels",
        "api_key: [redacted]",
    ]
    manifest = json.loads((out / "evidence_manifest.json").read_text())
    records = {f["path"]: f for f in manifest["files"]}
    log_record = records[f"runs/{run_id}/logs/provider.log"]
    assert log_record["included"] and log_record["safe_to_attach"]
    # The digest of the original would let anyone test guesses for the redacted spans: withheld.
    assert log_record["source_sha256"] == WITHHELD and log_record["source_size"] is None
    assert log_record["sha256"] == digest_bytes(log.encode()) and log_record["redaction_count"] == 5
    ledger = [r for r in manifest["redactions"] if r["file"] == f"runs/{run_id}/logs/provider.log"]
    assert {(r["rule"], r["line"]) for r in ledger} == {
        ("auth-header", 1),
        ("signed-url-param", 2),
        ("host-path-home", 3),
        ("openai-key", 4),
    }
    assert records[f"runs/{run_id}/.local/invocation.json"]["included"] is False
    assert records[f"runs/{run_id}/.lock"]["reason"].startswith("local-only")
    assert manifest["safe_to_attach"] is True and manifest["bundle_kind"] == "issue-run"
    issue = (out / "issue.md").read_text()
    for heading in (
        "### Command",
        "### Expected signal",
        "### Observed failure",
        "### Safe-to-attach notes",
        "### First triage step",
    ):
        assert heading in issue
    assert "1 item(s) or scenario(s) failed" in issue
    report = verify_bundle_dir(out)
    assert report.ok, report.to_dict()
    assert "logs/provider.log" in report.runs[0]["redacted_files"]
    assert ".lock" in report.runs[0]["redacted_files"]  # excluded files are skipped by the run check


def test_flipped_byte_fails_dir_and_zip(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = make_run(ws)
    result = build_bundle(ws, [run_id], tmp_path / "b", make_zip=True)
    assert result.zip_path is not None and verify_bundle_zip(result.zip_path).ok
    target = result.output_dir / "runs" / run_id / "reports" / "report.json"
    data = bytearray(target.read_bytes())
    data[3] ^= 1
    target.write_bytes(bytes(data))
    report = verify_bundle_dir(result.output_dir)
    assert not report.ok
    assert {p.code for p in report.problems} >= {"file-digest-mismatch", "artifact-digest-mismatch"}
    # Flip one byte inside the zip's stored member and the zip no longer verifies either.
    raw = bytearray(result.zip_path.read_bytes())
    with zipfile.ZipFile(result.zip_path) as archive:
        info = archive.getinfo("summary.md")
    stored = tmp_path / "stored.zip"
    with zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as out, zipfile.ZipFile(result.zip_path) as src:
        for member in src.infolist():
            body = src.read(member)
            if member.filename == info.filename:
                body = body.replace(b"WorldForge", b"WorldForgf", 1)
            out.writestr(member.filename, body)
    assert raw  # original untouched
    assert "file-digest-mismatch" in {p.code for p in verify_bundle_zip(stored).problems}


def test_zip_is_byte_reproducible(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ids = [make_run(ws), make_run(ws, status="failed")]
    one = build_bundle(ws, ids, tmp_path / "one", make_zip=True)
    two = build_bundle(ws, list(reversed(ids)), tmp_path / "two", make_zip=True)
    assert one.zip_path is not None and two.zip_path is not None
    assert one.zip_path.read_bytes() == two.zip_path.read_bytes()
    with zipfile.ZipFile(one.zip_path) as archive:
        names = archive.namelist()
        assert names == sorted(names)
        assert {i.date_time for i in archive.infolist()} == {archive.infolist()[0].date_time}
        assert {i.external_attr >> 16 for i in archive.infolist()} == {0o100644}
    assert verify_target(ws, str(one.zip_path)).ok
    assert verify_target(ws, str(one.output_dir)).ok


def test_failed_run_story_and_exclusions(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = make_run(
        ws,
        status="failed",
        extra={
            "artifacts/blob.bin": b"\x00\x01\x02binary",
            "artifacts/big.txt": b"x" * (MAX_ATTACH_BYTES + 1),
        },
    )
    result = build_bundle(ws, [run_id], tmp_path / "b", issue=True)
    records = {f["path"]: f for f in result.manifest["files"]}
    assert records[f"runs/{run_id}/artifacts/blob.bin"]["reason"].startswith("excluded: binary")
    assert records[f"runs/{run_id}/artifacts/big.txt"]["reason"].startswith("excluded: file exceeds")
    assert records[f"runs/{run_id}/artifacts/big.txt"]["source_sha256"] == digest_bytes(
        b"x" * (MAX_ATTACH_BYTES + 1)
    )
    assert not (result.output_dir / "runs" / run_id / "artifacts" / "big.txt").exists()
    story = result.manifest["runs"][0]
    assert story["status"] == "failed"
    assert story["observed_failure"].startswith(
        "Run failed: RuntimeError: scenario crashed reading <home>/data.json"
    )
    assert "abcdef123456" not in json.dumps(result.manifest)
    report = verify_bundle_dir(result.output_dir)
    assert report.ok, report.to_dict()


def test_output_dir_must_be_empty_without_overwrite(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = make_run(ws)
    build_bundle(ws, [run_id], tmp_path / "b")
    with pytest.raises(WorldForgeError, match="not empty"):
        build_bundle(ws, [run_id], tmp_path / "b")
    assert build_bundle(ws, [run_id], tmp_path / "b", overwrite=True).manifest["run_count"] == 1
    with pytest.raises(WorldForgeError, match="no run workspaces"):
        build_bundle(tmp_path / "empty", [], tmp_path / "c")


def test_generate_evidence_bundle_script(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_run(ws)
    make_run(ws)
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "generate_evidence_bundle.py"),
            "--workspace-dir",
            str(ws),
            "--zip",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "runs: 2" in out.stdout and "safe_to_attach: true" in out.stdout
    bundles = list((ws / "evidence-bundles").iterdir())
    zips = [p for p in bundles if p.suffix == ".zip"]
    assert len(zips) == 1 and verify_bundle_zip(zips[0]).ok


def _bundle_cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from worldforge.cli.app import app

    result = CliRunner().invoke(app, ["runs", "bundle", *args])
    return result.exit_code, result.stdout, result.stderr


def test_runs_bundle_several_ids_or_all(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a, b, c = make_run(ws), make_run(ws), make_run(ws)
    code, out, _ = _bundle_cli(a, b, "-w", str(ws), "-o", str(tmp_path / "two"), "--zip", "--format", "json")
    two = json.loads(out)
    assert code == 0 and two["bundle_kind"] == "evidence" and two["run_count"] == 2
    assert sorted(two["run_ids"]) == sorted([a, b]) and two["safe_to_attach"] is True
    assert not (tmp_path / "two" / "issue.md").exists() and verify_bundle_zip(tmp_path / "two.zip").ok
    code, out, _ = _bundle_cli("--all", "-w", str(ws))
    assert code == 0 and "runs: 3" in out and "safe_to_attach: true" in out
    (made,) = (ws / "evidence-bundles").iterdir()
    assert json.loads((made / "evidence_manifest.json").read_text())["run_count"] == 3
    # one id stays the issue bundle, under issue-bundles/<id>
    code, out, _ = _bundle_cli(c, "-w", str(ws))
    assert code == 0 and out.startswith("## WorldForge run issue")
    assert (ws / "issue-bundles" / c / "issue.md").is_file()


def test_runs_bundle_needs_ids_or_all_not_both(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a = make_run(ws)
    code, _, err = _bundle_cli("-w", str(ws))
    assert code == 2 and "give a run id, several run ids, or --all" in err
    code, _, err = _bundle_cli(a, "--all", "-w", str(ws))
    assert code == 2 and "not both" in err
    code, _, err = _bundle_cli(a, "nope", "-w", str(ws))
    assert code == 2 and "'nope': not found" in err and not (ws / "evidence-bundles").exists()


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
SECRET_ST = st.one_of(
    st.text(_ALNUM, min_size=36, max_size=36).map(lambda s: "ghp_" + s),
    st.text(_ALNUM, min_size=34, max_size=34).map(lambda s: "hf_" + s),
    st.text(_ALNUM, min_size=24, max_size=24).map(lambda s: "glpat-" + s),
).filter(lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s[4:]))
FILLER = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
DOC = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), FILLER),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(FILLER, c, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=DOC, secret=SECRET_ST, key=FILLER, words=FILLER)
def test_property_no_secret_survives_a_bundle(doc: object, secret: str, key: str, words: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        with start_run(ws, "evaluation", ["worldforge", "eval", f"--token={secret}"], {"note": words}) as run:
            run.write_artifact(
                "reports/data.json", json.dumps({"doc": doc, key or "k": f"{words} {secret} x"})
            )
            run.write_artifact("logs/text.log", f"{words}\nAuthorization: Bearer {secret}\n{words}")
            run.emit("note", {"message": f"using {secret}", "doc": doc})
            run.complete({"doc": doc})
        result = build_bundle(ws, [run.run_id], Path(tmp) / "bundle", make_zip=True)
        assert secret.encode() not in all_bytes(result.output_dir)
        assert result.zip_path is not None
        with zipfile.ZipFile(result.zip_path) as archive:
            assert all(secret.encode() not in archive.read(name) for name in archive.namelist())
        assert verify_bundle_dir(result.output_dir).ok


def test_cited_dataset_manifest_is_copied_when_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldforge.datasets import manifest_reference

    monkeypatch.chdir(REPO / "dataset-manifests")  # a sub-directory: the path is repository-relative
    ref = manifest_reference(REPO / "dataset-manifests" / "mock-evaluation-fixtures.json")
    ws = tmp_path / "ws"
    with start_run(ws, "evaluation", ["worldforge", "eval"], {}) as run:
        run.add_dataset_refs([ref])
        run.complete({})
    monkeypatch.chdir(tmp_path)  # bundled from elsewhere: found from the run's start directory
    result = build_bundle(ws, [run.run_id], tmp_path / "b")
    copied = result.output_dir / "dataset-manifests" / "mock-evaluation-fixtures.json"  # no doubled prefix
    assert copied.read_bytes() == (REPO / "dataset-manifests" / "mock-evaluation-fixtures.json").read_bytes()
    assert not (result.output_dir / "dataset-manifests" / "dataset-manifests").exists()
    stale = dict(ref, sha256="sha256:" + "1" * 64)
    monkeypatch.chdir(REPO / "dataset-manifests")
    with start_run(ws, "evaluation", ["worldforge", "eval"], {}) as run2:
        run2.add_dataset_refs([stale])
        run2.complete({})
    records = {f["path"]: f for f in build_bundle(ws, [run2.run_id], tmp_path / "c").manifest["files"]}
    record = records["dataset-manifests/mock-evaluation-fixtures.json"]
    assert record["included"] is False and "changed since the run" in record["reason"]


def _cite_manifest(ws: Path, repo: Path, start: Path, arg: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run started in ``start`` that cites ``repo/dataset-manifests/levels.json`` as ``arg``."""
    data = (repo / "dataset-manifests" / "levels.json").read_bytes()
    ref = {"id": "levels", "sha256": digest_bytes(data), "path": "dataset-manifests/levels.json"}
    monkeypatch.chdir(start)
    argv = ["worldforge", "eval", "--suite", "planning", "--dataset-manifest", arg]
    with start_run(ws, "evaluation", argv, {"suite": "planning", "dataset_manifests": [arg]}) as run:
        run.add_dataset_refs([ref])
        run.complete({"passed": 1})
    return run.run_id


def test_bundle_of_a_cited_manifest_does_not_depend_on_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, elsewhere, ws = tmp_path / "repo", tmp_path / "elsewhere", tmp_path / "ws"
    (repo / ".git").mkdir(parents=True)
    (repo / "dataset-manifests").mkdir()
    (repo / "dataset-manifests" / "levels.json").write_text('{"id": "levels"}\n', encoding="utf-8")
    elsewhere.mkdir()
    run_id = _cite_manifest(ws, repo, repo, "dataset-manifests/levels.json", monkeypatch)
    zips = []
    for cwd, name in ((repo, "from-repo"), (elsewhere, "from-elsewhere"), (Path("/"), "from-root")):
        monkeypatch.chdir(cwd)
        result = build_bundle(ws, [run_id], tmp_path / "out" / name, make_zip=True)
        assert result.zip_path is not None
        zips.append(result.zip_path.read_bytes())
    assert zips[0] == zips[1] == zips[2]
    with zipfile.ZipFile(io.BytesIO(zips[0])) as archive:
        assert "dataset-manifests/levels.json" in archive.namelist()
        assert archive.read("dataset-manifests/levels.json") == b'{"id": "levels"}\n'
        assert not any(n.startswith("dataset-manifests/dataset-manifests/") for n in archive.namelist())

    # An absolute argument given outside the repository resolves through the recorded argv too.
    outside = _cite_manifest(
        ws, repo, elsewhere, str(repo / "dataset-manifests" / "levels.json"), monkeypatch
    )
    monkeypatch.chdir(tmp_path)
    paths = {f["path"]: f for f in build_bundle(ws, [outside], tmp_path / "out" / "abs").manifest["files"]}
    assert paths["dataset-manifests/levels.json"]["included"] is True


def test_a_cited_manifest_that_is_gone_is_listed_with_its_recorded_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, ws = tmp_path / "repo", tmp_path / "ws"
    (repo / ".git").mkdir(parents=True)
    (repo / "dataset-manifests").mkdir()
    manifest_file = repo / "dataset-manifests" / "levels.json"
    manifest_file.write_text('{"id": "levels"}\n', encoding="utf-8")
    recorded = digest_bytes(manifest_file.read_bytes())
    run_id = _cite_manifest(ws, repo, repo, "dataset-manifests/levels.json", monkeypatch)
    manifest_file.unlink()
    result = build_bundle(ws, [run_id], tmp_path / "gone")
    record = {f["path"]: f for f in result.manifest["files"]}["dataset-manifests/levels.json"]
    assert record["included"] is False and record["safe_to_attach"] is False
    assert record["source_sha256"] == recorded and record["sha256"] is None
    assert record["reason"].startswith("excluded: not found where the run read it")
    assert f"`dataset-manifests/levels.json` | false | false | `{recorded}`" in (
        result.output_dir / "summary.md"
    ).read_text(encoding="utf-8")
    assert verify_bundle_dir(result.output_dir).ok


_SHARED: dict[str, Path] = {}


def _shared_bundle() -> tuple[Path, Path]:
    if "bundle" not in _SHARED:
        root = Path(tempfile.mkdtemp(prefix="wf-shared-bundle-"))
        run_id = make_run(root / "ws")
        _SHARED["run"] = root / "ws" / "runs" / run_id
        _SHARED["bundle"] = build_bundle(root / "ws", [run_id], root / "bundle").output_dir
    return _SHARED["run"], _SHARED["bundle"]


@settings(max_examples=40, deadline=None)
@given(
    which=st.sampled_from(["run", "bundle"]),
    position=st.floats(0, 1, exclude_max=True),
    bit=st.integers(0, 7),
)
def test_property_corrupted_manifests_never_crash_verify(which: str, position: float, bit: int) -> None:
    import shutil

    from worldforge.workspace import verify_run

    run_source, bundle_source = _shared_bundle()
    with tempfile.TemporaryDirectory() as tmp:
        if which == "run":
            target = Path(tmp) / run_source.name
            shutil.copytree(run_source, target)
            manifest = target / "run_manifest.json"
        else:
            target = Path(tmp) / "bundle"
            shutil.copytree(bundle_source, target)
            manifest = target / "evidence_manifest.json"
        data = bytearray(manifest.read_bytes())
        data[int(position * len(data))] ^= 1 << bit
        manifest.write_bytes(bytes(data))
        report = verify_run(target) if which == "run" else verify_bundle_dir(target)
        assert isinstance(report.ok, bool)  # reported, never raised
        assert all(p.code and p.message for p in report.problems)


def test_a_secret_in_a_provider_spec_leaves_no_trace_in_names_or_texts(tmp_path: Path) -> None:
    """Item files are named after item ids, which carry the provider spec: a key typed there must be
    redacted in file names, the zip's member names, issue.md's expected signal and the ledger, and
    the bundle must still verify (the sanitized manifest indexes the sanitized names)."""
    from typer.testing import CliRunner

    from worldforge.cli.app import app

    key = "sk-proj-" + "A" * 28
    ws = tmp_path / "ws"
    runner = CliRunner()
    done = runner.invoke(
        app, ["eval", "--suite", "planning", "--provider", f"mock:{key}", "--run-workspace", str(ws)]
    )
    assert done.exit_code == 0, done.output
    run_id = next((ws / "runs").iterdir()).name
    assert any(key in p.name for p in (ws / "runs" / run_id / "items").iterdir())  # the premise
    out = tmp_path / "bundle"
    done = runner.invoke(app, ["runs", "bundle", run_id, "-w", str(ws), "-o", str(out), "--zip"])
    assert done.exit_code == 0, done.output
    zipped = out.with_suffix(".zip")
    assert key.encode() not in all_bytes(out)
    assert not [p for p in out.rglob("*") if "AAAAAAAAAAAAAAAAAAAA" in str(p)]
    with zipfile.ZipFile(zipped) as archive:
        assert not [n for n in archive.namelist() if "AAAAAAAAAAAAAAAAAAAA" in n]
        assert not [n for n in archive.namelist() if key.encode() in archive.read(n)]
    manifest = json.loads((out / "evidence_manifest.json").read_text())
    assert manifest["safe_to_attach"] and manifest["redactions"]
    assert verify_bundle_dir(out).ok and verify_bundle_zip(zipped).ok


def test_input_fixtures_are_found_from_where_the_run_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mock-smoke scene is found from the run's start directory, so bundling the same run from
    the checkout and from elsewhere gives the same bundle, fixture included."""
    from typer.testing import CliRunner

    from worldforge.cli.app import app

    runner = CliRunner()
    ws = tmp_path / "ws"
    monkeypatch.chdir(REPO)
    done = runner.invoke(app, ["benchmark", "--preset", "mock-smoke", "--run-workspace", str(ws)])
    assert done.exit_code == 0, done.output
    run_id = next((ws / "runs").iterdir()).name
    zips = []
    for where in (REPO, tmp_path):
        monkeypatch.chdir(where)
        out = tmp_path / f"bundle-{len(zips)}"
        done = runner.invoke(app, ["runs", "bundle", run_id, "-w", str(ws), "-o", str(out), "--zip"])
        assert done.exit_code == 0, done.output
        (scene,) = json.loads((out / "evidence_manifest.json").read_text())["fixture_digests"]
        assert scene["bundled_as"] == "inputs/dataset-manifests/fixtures/mock-evaluation/cube-on-table.json"
        zips.append(out.with_suffix(".zip").read_bytes())
    assert zips[0] == zips[1]
