"""No digest the bundle withholds comes back through an attestation, of a bundle or of a run in place:
such a digest next to the redacted rest of its file is a password oracle."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.evidence.attesting import invoke, keypair, make_run, statements
from worldforge.core.digests import digest_bytes
from worldforge.evidence.attest import attest_bundle, attest_run
from worldforge.evidence.bundle import build_bundle
from worldforge.evidence.keys import load_signing_key
from worldforge.evidence.withhold import WITHHELD, preimage_digests
from worldforge.workspace.layout import ATTESTATION_NAME

PASSWORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=6, max_size=12)


def _oracles(run_dir: Path, bundle: Path, manifest: dict[str, object]) -> set[str]:
    """Every digest whose preimage the bundle holds only redacted, computed from the run itself."""
    found: set[str] = set()
    prefix = f"runs/{run_dir.name}/"
    for record in manifest["files"]:  # type: ignore[union-attr]
        if record["source_sha256"] != WITHHELD or not record["path"].startswith(prefix):
            continue
        rel = record["path"][len(prefix) :]
        found |= preimage_digests(rel, (run_dir / rel).read_bytes(), (bundle / record["path"]).read_bytes())
    return found


def _attested_text(folder: Path) -> str:
    raw = (folder / ATTESTATION_NAME).read_text(encoding="utf-8")
    return raw + "".join(json.dumps(s) for s in statements(folder))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    password=PASSWORDS,
    in_log=st.booleans(),
    in_record=st.booleans(),
    clean_lines=st.integers(min_value=0, max_value=3),
)
def test_no_withheld_digest_ever_appears_in_a_statement(
    password: str, in_log: bool, in_record: bool, clean_lines: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log = "".join(f"line {i}\n" for i in range(clean_lines))
        log += f"password: {password}\n" if in_log else "nothing here\n"
        reply = f"the admin password: {password}" if in_record else "nothing secret"
        run_dir = make_run(root / "ws", log=log, reply=reply)
        result = build_bundle(
            root / "ws", [run_dir.name], root / "bundle", attest=lambda d, m, w: attest_bundle(d, m, None, w)
        )
        oracles = _oracles(run_dir, result.output_dir, result.manifest)
        assert bool(oracles) == (in_log or in_record)  # the generator really made redactions
        in_bundle = _attested_text(result.output_dir)
        attest_run(run_dir, None)
        in_run = _attested_text(run_dir)
        for digest in oracles:
            hex_digest = digest.removeprefix("sha256:")
            assert hex_digest not in in_bundle and hex_digest not in in_run
        blob = base64.b64encode(password.encode()).decode()
        assert password not in in_bundle and password not in in_run and blob not in in_run


def test_a_run_attested_in_place_verifies_and_leaves_out_what_the_bundle_would_redact(tmp_path: Path) -> None:
    private, public = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    run_dir = make_run(ws, log="password: hunter2\n")
    attest_run(run_dir, load_signing_key(private))
    subjects = {s["name"] for s in statements(run_dir)[0]["subject"]}
    assert "logs/provider.log" not in subjects  # its digest would confirm a guessed password
    assert "run_manifest.json" not in subjects  # it lists that digest among the artifacts
    assert "results/result.json" in subjects and ATTESTATION_NAME not in subjects
    assert digest_bytes(b"password: hunter2\n").removeprefix("sha256:") not in _attested_text(run_dir)
    code, out = invoke("runs", "verify", str(run_dir), "--key", str(public))
    assert code == 0 and "signature verified" in out, out
    (run_dir / "results" / "result.json").write_text("{}\n")
    code, out = invoke("runs", "verify", str(run_dir), "--key", str(public))
    assert code == 1 and "result" in out


def test_eval_attest_writes_beside_the_artifacts_and_runs_verify_knows_it(tmp_path: Path) -> None:
    private, public = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    code, out = invoke(
        "eval",
        "--suite",
        "planning",
        "--provider",
        "mock",
        "-w",
        str(ws),
        "--attest",
        "--sign-key",
        str(private),
    )
    assert code == 0, out
    (run_dir,) = (ws / "runs").iterdir()
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert ATTESTATION_NAME not in {a["path"] for a in manifest["artifacts"]}
    predicate = statements(run_dir)[0]["predicate"]
    assert predicate["result"] == "PASSED" and len(predicate["passedTests"]) == 4
    code, out = invoke(
        "runs", "verify", run_dir.name, "-w", str(ws), "--key", str(public), "--format", "json"
    )
    report = json.loads(out)
    assert code == 0 and report["signature"] == "verified" and report["problems"] == []
    # the run bundles as before, the run's own attestation travelling as one of its files
    code, out = invoke("runs", "bundle", run_dir.name, "-w", str(ws), "-o", str(tmp_path / "b"), "--attest")
    assert code == 0, out
    code, out = invoke("runs", "verify", str(tmp_path / "b"))
    assert code == 0, out
