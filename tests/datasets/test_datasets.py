"""Dataset manifests: shipped schema, validation with field paths, compact references, the real
manifests in the repository and the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.core.digests import digest_bytes, digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.datasets import manifest_reference, manifest_schema, validate_manifest

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "dataset-manifests" / "mock-evaluation-fixtures.json"
EXAMPLE = REPO / "examples" / "dataset-manifests" / "mock-evaluation-fixtures.json"
runner = CliRunner()


def base_manifest(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "data").mkdir(exist_ok=True)
    fixtures = {
        "data/levels.csv": b"id,score\n1,0.5\n",
        "data/weights.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ",
        "data/level.xml": b"<Level/>\n",
        "data/snap.png": b"\x89PNG\r\n\x1a\n",
    }
    for rel, data in fixtures.items():
        (tmp_path / rel).write_bytes(data)
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    return {
        "schema_version": 1,
        "id": "science-birds-eval",
        "name": "Science Birds evaluation set",
        "description": "Levels, a classifier checkpoint and reference snapshots.",
        "license": "CC-BY-4.0",
        "provenance": {"owner": "team", "source": "competition", "version": "2024"},
        "privacy": {"classification": "public", "contains_personal_data": False},
        "safety": {
            "reviewed": True,
            "contains_sensitive_capability_data": False,
            "contains_model_weights": True,
        },
        "host_acquisition_steps": ["Download the competition archive and unpack it under $DATA."],
        "entries": [
            *(
                {
                    "id": rel.split("/")[-1],
                    "kind": "local-fixture",
                    "description": "fixture",
                    "path": rel,
                    "sha256": digest_bytes(data),
                    "size": len(data),
                }
                for rel, data in fixtures.items()
            ),
            {
                "id": "upstream",
                "kind": "remote-reference",
                "description": "upstream repository",
                "uri": "https://example.org/chatgpt4pcg/archive/v1.tar.gz",
                "sha256": "sha256:" + "a" * 64,
            },
            {
                "id": "full-set",
                "kind": "host-asset",
                "description": "the full level set",
                "asset_id": "sb-levels-2024",
            },
        ],
    }


def write(tmp_path: Path, manifest: dict[str, Any]) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    return path


def test_schema_is_shipped_and_valid() -> None:
    import jsonschema

    schema = manifest_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"] == {"const": 1}
    code = runner.invoke(app, ["datasets", "schema"])
    assert code.exit_code == 0 and json.loads(code.output) == schema


def test_any_file_type_fixture_and_reference(tmp_path: Path) -> None:
    path = write(tmp_path, base_manifest(tmp_path))
    ref = manifest_reference(path)
    assert ref == {
        "schema_version": 1,
        "id": "science-birds-eval",
        "name": "Science Birds evaluation set",
        "sha256": digest_file(path),
        "entry_count": 6,
        "entry_kinds": {"host-asset": 1, "local-fixture": 4, "remote-reference": 1},
        "license": "CC-BY-4.0",
        "privacy": {"classification": "public", "contains_personal_data": False},
        "safety": {
            "reviewed": True,
            "contains_sensitive_capability_data": False,
            "contains_robot_logs": False,
        },
        "provenance": {"owner": "team", "source": "competition", "version": "2024"},
        "path": "manifest.json",
    }
    assert "entries" not in ref


def _mutate(manifest: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(manifest)
    target: Any = out
    parts = dotted.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    if value is KeyError:
        del target[last]
    elif last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return out


@pytest.mark.parametrize(
    ("dotted", "value", "message"),
    [
        ("schema_version", 2, r"\$\.schema_version: 1 was expected"),
        ("license", "", r"\$\.license: '' must be a non-empty string"),
        ("privacy.classification", "secret", r"\$\.privacy\.classification: 'secret' is not one of"),
        ("safety.reviewed", KeyError, r"\$\.safety: 'reviewed' is a required property"),
        ("provenance.owner", KeyError, r"\$\.provenance: 'owner' is a required property"),
        ("entries.0.sha256", "sha256:abc", r"\$\.entries\[0\]\.sha256: 'sha256:abc' does not match"),
        (
            "entries.0.path",
            "/etc/passwd",
            r"\$\.entries\[0\]\.path: '/etc/passwd' must be a repository-relative",
        ),
        ("entries.0.path", "data/../../x.csv", r"\$\.entries\[0\]\.path: .* must be a repository-relative"),
        ("entries.0.path", "C:/data/x.csv", r"must be a repository-relative"),
        ("entries.0.path", "data/missing.csv", r"\$\.entries\[0\]\.path: 'data/missing.csv' does not exist"),
        (
            "entries.0.sha256",
            "sha256:" + "b" * 64,
            r"\$\.entries\[0\]\.sha256: .* does not match local fixture",
        ),
        ("entries.0.size", 3, r"\$\.entries\[0\]\.size: declared 3"),
        ("entries.4.uri", "https://bucket.s3.amazonaws.com/x?X-Amz-Signature=abc", r"\$\.entries\[4\]\.uri"),
        ("entries.4.uri", "http://example.org/x", r"\$\.entries\[4\]\.uri"),
        ("entries.4.uri", "https://user:pw@example.org/x", r"\$\.entries\[4\]\.uri"),
        ("entries.5.path", "data/x", r"\$\.entries\[5\]: Unevaluated properties are not allowed \('path'"),
        ("entries.1.id", "levels.csv", r"\$\.entries\[1\]\.id: duplicate entry id"),
        ("host_acquisition_steps", KeyError, r"\$\.entries\[5\]: host-asset needs acquisition_steps"),
        ("extra", 1, r"\$: Additional properties are not allowed \('extra'"),
        (
            "entries.5.asset_id",
            "C:/Users/me/ckpt.bin",
            r"\$\.entries\[5\]\.asset_id: must not contain host paths",
        ),
        (
            "host_acquisition_steps.0",
            "copy it from /home/alice/levels.zip",
            r"\$\.host_acquisition_steps\[0\]: must not contain host paths or secrets \(host-path-home\)",
        ),
    ],
)
def test_invalid_manifests_name_the_field(tmp_path: Path, dotted: str, value: Any, message: str) -> None:
    manifest = _mutate(base_manifest(tmp_path), dotted, value)
    path = write(tmp_path, manifest)
    with pytest.raises(WorldForgeError, match=message):
        manifest_reference(path)
    result = runner.invoke(app, ["datasets", "validate", str(path)])
    assert result.exit_code == 2


def test_fixture_outside_root_rejected(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    manifest = base_manifest(root)
    (tmp_path / "outside.csv").write_bytes(b"x")
    (root / "data" / "link.csv").symlink_to(tmp_path / "outside.csv")
    manifest["entries"][0].update(path="data/link.csv", sha256=digest_bytes(b"x"), size=1)
    with pytest.raises(WorldForgeError, match="resolves outside the repository"):
        validate_manifest(manifest, source="m.json", root=root)


def test_manifest_outside_repo_is_local_only(tmp_path: Path) -> None:
    manifest = base_manifest(tmp_path)
    manifest["entries"] = [e for e in manifest["entries"] if e["kind"] != "local-fixture"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = write(elsewhere, manifest)
    (tmp_path / "repo").mkdir()
    ref = manifest_reference(path, root=tmp_path / "repo")
    assert ref["local_only"] is True and "path" not in ref and ref["entry_count"] == 2


def test_real_manifests_validate_and_cite_real_fixtures() -> None:
    for path in (REAL, EXAMPLE):
        ref = manifest_reference(path)
        assert ref["id"] == "mock-evaluation-fixtures" and ref["entry_count"] == 2
        assert ref["path"] == path.relative_to(REPO).as_posix()
    scene = json.loads((REPO / "dataset-manifests/fixtures/mock-evaluation/cube-on-table.json").read_text())
    assert [o["name"] for o in scene["objects"]] == ["cube", "mug"]
    scenarios = json.loads(
        (REPO / "dataset-manifests/fixtures/mock-evaluation/suite-scenarios.json").read_text()
    )
    try:
        from worldforge.suites.contract import build_physics_suite, build_planning_suite
    except ImportError:  # pragma: no cover - evaluation layer not installed
        return
    for name, build in (("physics", build_physics_suite), ("planning", build_planning_suite)):
        assert [s["scenario"] for s in scenarios["suites"][name]] == [s.name for s in build().scenarios]


def test_cli_validate_and_ref() -> None:
    result = runner.invoke(app, ["datasets", "validate", str(REAL), str(EXAMPLE)])
    assert result.exit_code == 0 and result.output.count("ok: ") == 2
    result = runner.invoke(app, ["datasets", "ref", str(REAL)])
    assert result.exit_code == 0 and json.loads(result.output)["sha256"] == digest_file(REAL)
    result = runner.invoke(app, ["datasets", "validate", "nope.json"])
    assert result.exit_code == 2


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_property_local_paths_never_escape(raw: str) -> None:
    from worldforge.datasets.manifests import _check_local_path

    try:
        pure = _check_local_path(raw, "$")
    except WorldForgeError:
        return
    assert not pure.is_absolute() and ".." not in pure.parts and "\\" not in raw and not raw.startswith("~")
