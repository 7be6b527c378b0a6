"""``runs verify`` on attestations: a changed byte, a swapped envelope or a wrong key each fail with
one line naming what failed (exit 1); bad keys and unfit runs are refused before anything is
written (exit 2)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.evidence.attesting import ZERO, envelopes, invoke, keypair, make_run, problem_lines
from worldforge.workspace import start_run
from worldforge.workspace.layout import ATTESTATION_NAME


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A signed bundle of one run: (workspace, bundle, public key)."""
    private, public = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    bundle = tmp_path / "bundle"
    code, out = invoke(
        "runs",
        "bundle",
        run_dir.name,
        "-w",
        str(ws),
        "-o",
        str(bundle),
        "--attest",
        "--sign-key",
        str(private),
    )
    assert code == 0, out
    return ws, bundle, public


def test_verify_with_the_key_passes_and_without_a_key_says_unchecked(signed: tuple[Path, Path, Path]) -> None:
    ws, bundle, public = signed
    code, out = invoke("runs", "verify", str(bundle), "--key", str(public))
    assert code == 0 and "signature verified" in out, out
    code, out = invoke("runs", "verify", str(bundle), "-w", str(ws), "--format", "json")
    assert code == 0 and json.loads(out)["signature"] == "unchecked"
    code, out = invoke("runs", "verify", str(bundle), "-w", str(ws))
    assert code == 0 and "signature not checked" in out


def test_one_changed_byte_with_a_recomputed_manifest_fails_on_one_line(
    signed: tuple[Path, Path, Path],
) -> None:
    _, bundle, public = signed
    target = next(p for p in bundle.rglob("*.log"))
    data = bytearray(target.read_bytes())
    data[0] ^= 1
    target.write_bytes(bytes(data))
    code, out = invoke("runs", "verify", str(bundle), "--key", str(public))
    rel = target.relative_to(bundle).as_posix()
    lines = problem_lines(out)
    # the digest checks name the file; the attestation does not repeat them
    assert code == 1 and lines and all(rel in line for line in lines), out
    assert not any("subject-mismatch" in line for line in lines)
    # an editor who also rewrites evidence_manifest.json (the threat a signature answers)
    manifest_path = bundle / "evidence_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    from worldforge.core.canonical import pretty_json
    from worldforge.core.digests import digest_bytes, digest_payload

    for record in manifest["files"]:
        if record["path"] == rel:
            record.update(sha256=digest_bytes(bytes(data)))
    included = [f for f in sorted(manifest["files"], key=lambda f: f["path"]) if f["included"]]
    manifest["bundle_digest"] = digest_payload([[f["path"], f["sha256"]] for f in included])
    manifest_path.write_text(pretty_json(manifest))
    code, out = invoke("runs", "verify", str(bundle), "--key", str(public))
    # the evidence manifest now agrees with the edit; the signed Statement does not: one line says so
    attested = [line for line in problem_lines(out) if "subject-mismatch" in line]
    assert code == 1 and len(attested) == 1, out
    assert "evidence_manifest.json" in attested[0]
    assert all(rel in line for line in problem_lines(out) if line not in attested)


def test_a_swapped_envelope_fails_on_one_line(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ws, bundle, public = signed
    # a payload swapped under the signature
    first, second = (bundle / ATTESTATION_NAME).read_text().splitlines()
    env = json.loads(first)
    env["payload"] = json.loads(second)["payload"]
    (bundle / ATTESTATION_NAME).write_text(json.dumps(env) + "\n" + second + "\n")
    code, out = invoke("runs", "verify", str(bundle), "--key", str(public))
    lines = problem_lines(out)
    assert code == 1 and len(lines) == 1 and "signature-invalid" in lines[0] and "line 1" in lines[0], out
    # a validly signed envelope of another bundle (another run, same key)
    other_run = make_run(ws, reply="another run")
    private = public.with_name("worldforge-attest.key")
    other = tmp_path / "other"
    code, _ = invoke(
        "runs",
        "bundle",
        other_run.name,
        "-w",
        str(ws),
        "-o",
        str(other),
        "--attest",
        "--sign-key",
        str(private),
    )
    assert code == 0
    shutil.copyfile(other / ATTESTATION_NAME, bundle / ATTESTATION_NAME)
    code, out = invoke("runs", "verify", str(bundle), "--key", str(public))
    lines = problem_lines(out)
    assert code == 1 and len(lines) == 1 and "subject-mismatch" in lines[0], out


def test_a_wrong_key_fails_on_one_line(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, bundle, _ = signed
    _, other_public = keypair(tmp_path / "other-keys")
    code, out = invoke("runs", "verify", str(bundle), "--key", str(other_public))
    lines = problem_lines(out)
    assert code == 1 and len(lines) == 1 and "signature-invalid" in lines[0], out
    assert "signature INVALID" in out


def test_trusted_keys_from_config(
    signed: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, bundle, public = signed
    _, other_public = keypair(tmp_path / "other-keys")
    config = tmp_path / "project" / ".worldforge" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"attest:\n  trusted_keys: [{other_public}]\n")
    monkeypatch.setenv("WORLDFORGE_CONFIG", str(config))
    code, out = invoke("runs", "verify", str(bundle))
    assert code == 1 and "signature-invalid" in out
    config.write_text(f"attest:\n  trusted_keys: [{public}]\n")
    code, out = invoke("runs", "verify", str(bundle), "--format", "json")
    assert code == 0 and json.loads(out)["signature"] == "verified"


def test_a_bundle_without_attestation_given_a_key_says_nothing_is_signed(tmp_path: Path) -> None:
    _, public = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    code, _ = invoke("runs", "bundle", run_dir.name, "-w", str(ws), "-o", str(tmp_path / "b"))
    assert code == 0
    code, out = invoke("runs", "verify", str(tmp_path / "b"), "--key", str(public))
    lines = problem_lines(out)
    assert code == 1 and len(lines) == 1 and "nothing-signed" in lines[0]
    code, out = invoke("runs", "verify", str(tmp_path / "b"))
    assert code == 0 and "attestation" not in out  # unchanged for bundles that never were attested


def test_an_unsigned_attestation_says_so(tmp_path: Path) -> None:
    _, public = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    code, _ = invoke("runs", "bundle", run_dir.name, "-w", str(ws), "-o", str(tmp_path / "b"), "--attest")
    assert code == 0 and all(env["signatures"] == [] for env in envelopes(tmp_path / "b"))
    code, out = invoke("runs", "verify", str(tmp_path / "b"))
    assert code == 0 and "unsigned" in out
    code, out = invoke("runs", "verify", str(tmp_path / "b"), "--key", str(public))
    assert code == 1 and "unsigned" in problem_lines(out)[0]


def _write_pem(path: Path, key: object, password: bytes | None = None) -> Path:
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    path.write_bytes(
        key.private_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
    )
    return path


def _bad_keys(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    _, public = keypair(tmp_path / "keys")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    return {
        "missing": (tmp_path / "nope.pem", "cannot read"),
        "not-pem": (text, "not a PEM file"),
        "garbage": (garbage, "not a readable PEM private key"),
        "encrypted": (
            _write_pem(tmp_path / "enc.pem", ec.generate_private_key(ec.SECP256R1()), b"pw-123456"),
            "encrypted",
        ),
        "rsa": (
            _write_pem(tmp_path / "rsa.pem", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "expected Ed25519 or ECDSA P-256",
        ),
        "p384": (_write_pem(tmp_path / "p384.pem", ec.generate_private_key(ec.SECP384R1())), "only P-256"),
        "public": (public, "holds a public key"),
    }


def test_bad_signing_keys_exit_2_with_one_line_and_write_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for name, (path, words) in _bad_keys(tmp_path / "bad").items():
        out_dir = tmp_path / f"bundle-{name}"
        code, out = invoke(
            "runs",
            "bundle",
            run_dir.name,
            "-w",
            str(ws),
            "-o",
            str(out_dir),
            "--attest",
            "--sign-key",
            str(path),
        )
        errors = [line for line in out.splitlines() if line.startswith("error: ")]
        assert code == 2 and len(errors) == 1 and words in errors[0], (name, out)
        assert "Traceback" not in out and not out_dir.exists(), name
        runs_before = sorted((ws / "runs").iterdir())
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
            str(path),
        )
        assert code == 2 and words in out, (name, out)
        assert sorted((ws / "runs").iterdir()) == runs_before, name  # no run was even started
    after = sorted(
        p.relative_to(tmp_path) for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "bad")
    )
    assert [p for p in after if p not in before and not str(p).startswith("bad")] == []


def test_a_running_or_altered_run_is_not_attested(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with start_run(ws, "evaluation", ["worldforge", "eval"], {"suite": "planning"}) as run:
        run.record_item("mock/a", ZERO, {"score": 1.0})
        code, out = invoke(
            "runs", "bundle", run.run_id, "-w", str(ws), "-o", str(tmp_path / "b1"), "--attest"
        )
        assert code == 2 and "still running" in out and not (tmp_path / "b1").exists()
        run.complete({"results": []})
    run_dir = make_run(ws)
    log = run_dir / "logs" / "provider.log"
    log.write_text("edited after the run\n")
    code, out = invoke("runs", "bundle", run_dir.name, "-w", str(ws), "-o", str(tmp_path / "b2"), "--attest")
    assert code == 2 and "fails verification" in out and not (tmp_path / "b2").exists()
    assert not list(tmp_path.glob(".b2.partial-*"))


def test_sign_key_without_attest_is_a_usage_error(tmp_path: Path) -> None:
    private, _ = keypair(tmp_path / "keys")
    ws = tmp_path / "ws"
    run_dir = make_run(ws)
    code, out = invoke(
        "runs", "bundle", run_dir.name, "-w", str(ws), "-o", str(tmp_path / "b"), "--sign-key", str(private)
    )
    assert code == 2 and "--attest" in out and not (tmp_path / "b").exists()


def test_no_key_material_leaves_the_machine(signed: tuple[Path, Path, Path]) -> None:
    ws, bundle, public = signed
    private = public.with_name("worldforge-attest.key")
    secret = base64.b64encode(private.read_bytes()).decode()
    key_body = "".join(private.read_text().splitlines()[1:-1])
    for folder in (bundle, ws):
        for path in folder.rglob("*"):
            if path.is_file():
                text = path.read_text("utf-8", "replace")
                assert key_body not in text and secret not in text and "worldforge-attest.key" not in text, (
                    path
                )
