"""Attestations are standard: the in-toto project's own validator accepts the Statements, openssl
checks the signatures over the DSSE bytes we rebuild, and the same run gives the same bytes."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

from tests.evidence.attesting import envelopes, invoke, keypair, make_run, statements
from worldforge.core.digests import digest_bytes
from worldforge.evidence.dsse import INTOTO_PAYLOAD_TYPE, pae
from worldforge.evidence.statement import PROVENANCE_TYPE, TEST_RESULT_TYPE
from worldforge.workspace.layout import ATTESTATION_NAME

REPO = Path(__file__).resolve().parents[2]


def _bundle(ws: Path, run_dir: Path, out: Path, *extra: str) -> None:
    code, output = invoke("runs", "bundle", run_dir.name, "-w", str(ws), "-o", str(out), "--attest", *extra)
    assert code == 0, output


def test_statements_validate_with_the_in_toto_library_and_predicate_protos(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_dir = make_run(ws, failed=True)
    _bundle(ws, run_dir, tmp_path / "bundle")
    found = statements(tmp_path / "bundle")
    assert [s["predicateType"] for s in found] == [TEST_RESULT_TYPE, PROVENANCE_TYPE]
    for body in found:
        proto = json_format.ParseDict(body, statement_pb2.Statement())
        Statement.copy_from_pb(proto).validate()  # raises on a malformed Statement
        predicate = test_result_pb2.TestResult() if body["predicateType"] == TEST_RESULT_TYPE else None
        json_format.ParseDict(body["predicate"], predicate or provenance_pb2.Provenance())
    result = found[0]["predicate"]
    # one failed scenario, run completed, no gate: WARNED, with the tests named
    assert result["result"] == "WARNED"
    assert result["passedTests"] == ["mock/a"] and result["failedTests"] == ["mock/b"]
    assert "url" not in result
    names = {s["name"] for s in found[0]["subject"]}
    bundled = {
        p.relative_to(tmp_path / "bundle").as_posix()
        for p in (tmp_path / "bundle").rglob("*")
        if p.is_file() and p.name != ATTESTATION_NAME
    }
    assert names == bundled  # every bundled file, evidence manifest included, and nothing else
    assert all(
        env["payloadType"] == INTOTO_PAYLOAD_TYPE and env["signatures"] == []
        for env in envelopes(tmp_path / "bundle")
    )


def test_a_failed_run_is_failed_and_a_clean_one_passed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    _bundle(ws, run_dir, tmp_path / "bundle")
    assert statements(tmp_path / "bundle")[0]["predicate"]["result"] == "PASSED"


def _openssl_supports_rawin() -> bool:
    if shutil.which("openssl") is None:
        return False
    done = subprocess.run(["openssl", "pkeyutl", "-help"], capture_output=True, text=True)
    return "-rawin" in done.stdout + done.stderr


@pytest.mark.skipif(not _openssl_supports_rawin(), reason="openssl with pkeyutl -rawin (OpenSSL 3) needed")
@pytest.mark.parametrize("key_type", ["ed25519", "ecdsa-p256"])
def test_openssl_verifies_the_signature_over_the_rebuilt_pae(tmp_path: Path, key_type: str) -> None:
    private, public = keypair(tmp_path / "keys", key_type)
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    _bundle(ws, run_dir, tmp_path / "bundle", "--sign-key", str(private))
    envelope = envelopes(tmp_path / "bundle")[0]
    payload = base64.b64decode(envelope["payload"])
    (tmp_path / "pae.bin").write_bytes(pae(envelope["payloadType"], payload))
    (tmp_path / "sig.bin").write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
    if key_type == "ed25519":
        command = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(public), "-rawin"]
        command += ["-in", str(tmp_path / "pae.bin"), "-sigfile", str(tmp_path / "sig.bin")]
    else:
        command = [
            "openssl",
            "dgst",
            "-sha256",
            "-verify",
            str(public),
            "-signature",
            str(tmp_path / "sig.bin"),
        ]
        command += [str(tmp_path / "pae.bin")]
    done = subprocess.run(command, capture_output=True, text=True)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and ("Verified OK" in said or "Verified Successfully" in said), said
    # and a PAE over one changed byte is refused by the same tool
    (tmp_path / "pae.bin").write_bytes(pae(envelope["payloadType"], payload.replace(b"PASSED", b"FAILED")))
    assert subprocess.run(command, capture_output=True, text=True).returncode != 0


def test_pae_is_the_dsse_v1_encoding() -> None:
    # the example of the DSSE protocol document
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_the_same_run_bundled_twice_in_two_processes_gives_the_same_bytes(tmp_path: Path) -> None:
    private, _ = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    outputs = []
    for name in ("one", "two"):
        out = tmp_path / name
        command = [sys.executable, "-m", "worldforge", "runs", "bundle", run_dir.name, "-w", str(ws)]
        command += ["-o", str(out), "--attest", "--sign-key", str(private), "--format", "json"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 0, done.stderr
        outputs.append((out / ATTESTATION_NAME).read_bytes())
    # Ed25519 signatures are deterministic: the whole file, envelopes and all, is reproducible
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0].splitlines()[0])["signatures"][0]["sig"]


def test_a_zip_carries_the_attestation_and_verifies_with_the_key(tmp_path: Path) -> None:
    private, public = keypair(tmp_path / "keys", "ecdsa-p256")
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    _bundle(ws, run_dir, tmp_path / "bundle", "--sign-key", str(private), "--zip")
    code, out = invoke("runs", "verify", str(tmp_path / "bundle.zip"), "--key", str(public))
    assert code == 0, out
    assert "signature verified" in out
    subject = statements(tmp_path / "bundle")[0]["subject"][0]
    data = (tmp_path / "bundle" / subject["name"]).read_bytes()
    assert digest_bytes(data) == "sha256:" + subject["digest"]["sha256"]


def test_keys_generate_writes_a_private_key_only_its_owner_reads(tmp_path: Path) -> None:
    code, out = invoke("keys", "generate", str(tmp_path / "keys"))
    assert code == 0, out
    private = tmp_path / "keys" / "worldforge-attest.key"
    assert private.stat().st_mode & 0o777 == 0o600
    assert "BEGIN PUBLIC KEY" in (tmp_path / "keys" / "worldforge-attest.pub").read_text()
    before = private.read_bytes()
    code, out = invoke("keys", "generate", str(tmp_path / "keys"))
    assert code == 2 and "already exists" in out and private.read_bytes() == before
