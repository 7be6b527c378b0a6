"""Run inputs that travel with a bundle: input fixtures, benchmark presets and their budgets.

A run manifest records every input by digest, but a reviewer who receives only the bundle also needs
the inputs themselves to rerun the command: the fixture files a run read (e.g. the mock scene of the
``mock-smoke`` preset) and, for benchmark runs, the preset and its budget. This module works out
which of them can travel:

* a recorded input **file** whose repository-relative path still resolves (from the directory the
  run was started in, or one of its parents -- never from where the bundle is made, so a bundle
  does not depend on the directory ``runs bundle`` is typed in) to bytes with the recorded digest
  is copied to
  ``inputs/<path>``; a file that changed since the run is listed as excluded (a changed copy would
  be evidence of something else), and one recorded outside the repository (``<external>/name``)
  is listed by digest only;
* a benchmark run's recorded **preset** is written back as ``inputs/<run-id>/<name>.yaml`` (loadable
  with ``worldforge benchmark --preset``) and its gate as ``budgets/<run-id>/<name>.budget.json``,
  but only when the recorded value still hashes to the recorded digest (a truncated or redacted
  value would not reproduce the run).

Every recorded file input also becomes a ``fixture_digests`` entry of the evidence manifest, so the
digests are visible even when the bytes cannot travel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from worldforge.core.canonical import pretty_json
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.redact import sanitize_text
from worldforge.evidence.manifest import FixtureDigest
from worldforge.workspace.entries import InputEntry
from worldforge.workspace.records import RunManifest

PRESET_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class InputCopy:
    """One file the bundle should contain (``data``) or list as excluded (``reason`` set)."""

    bundle_path: str
    source: str
    kind: str
    data: bytes
    reason: str | None = None


def find_repo_file(rel_path: str, start: Path | None) -> Path | None:
    """A repository-relative path looked up from ``start`` upwards (``None`` if unsafe or unknown)."""
    pure = PurePosixPath(rel_path)
    if not rel_path or rel_path.startswith("<") or pure.is_absolute() or ".." in pure.parts:
        return None
    if "\\" in rel_path or start is None:
        return None
    for base in (start, *start.parents):
        candidate = base / pure
        if candidate.is_file():
            return candidate
    return None


def _preset_files(run_id: str, entry: InputEntry) -> list[InputCopy]:
    """The preset YAML and budget JSON of a benchmark run, when the recorded value is complete."""

    value = entry.get("value")
    recorded_name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(recorded_name, str):
        return []
    if digest_payload(value) != entry["digest"]:
        return []  # truncated or redacted when recorded: it would not reproduce the run
    name = PurePosixPath(recorded_name).name
    if not name or name != recorded_name:
        return []
    preset = {"schema_version": PRESET_SCHEMA_VERSION, **value}
    text = f"# Preset of run {run_id}, as recorded in its run manifest.\n" + yaml.safe_dump(
        preset, sort_keys=True, allow_unicode=True
    )
    budget = {"preset": name, "budget": value.get("budget") or []}
    return [
        InputCopy(
            f"inputs/{run_id}/{name}.yaml", f"runs/{run_id}/run_manifest.json", "preset", text.encode()
        ),
        InputCopy(
            f"budgets/{run_id}/{name}.budget.json",
            f"runs/{run_id}/run_manifest.json",
            "budget",
            pretty_json(budget).encode("utf-8"),
        ),
    ]


def run_inputs(
    manifest: RunManifest, already: dict[str, str | None], start: Path | None
) -> tuple[list[FixtureDigest], list[InputCopy]]:
    """Fixture-digest records and the files to bundle for one run's recorded inputs.

    ``already`` maps the bundle paths claimed by earlier runs to the digest bundled there (``None``
    when listed as excluded); it is updated, so a fixture shared by several runs is copied once and
    a run's ``bundled_as`` is set only when the bundled bytes are the ones it read. ``start`` is the
    run's start directory (:func:`worldforge.workspace.layout.read_invocation`); without it, files
    are listed by digest only.
    """
    run_id = manifest.run_id
    digests: list[FixtureDigest] = []
    copies: list[InputCopy] = []
    for entry in manifest.inputs:
        kind = entry["kind"]
        if kind == "value" and entry["name"] == "preset" and manifest.kind == "benchmark":
            for copy in _preset_files(run_id, entry):
                if copy.bundle_path not in already:
                    already[copy.bundle_path] = digest_bytes(copy.data)
                    copies.append(copy)
            continue
        rel_path = entry.get("path")
        if kind != "file" or rel_path is None:
            continue
        record: FixtureDigest = {
            "run_id": run_id,
            "name": sanitize_text(entry["name"]),
            "path": sanitize_text(rel_path),
            "sha256": entry["digest"],
            "size": entry.get("size"),
            "bundled_as": None,
        }
        digests.append(record)
        found = find_repo_file(rel_path, start)
        if found is None:
            continue
        bundle_path = f"inputs/{PurePosixPath(rel_path).as_posix()}"
        data = found.read_bytes()
        current = digest_bytes(data)
        if bundle_path not in already:
            if current == entry["digest"]:
                already[bundle_path] = current
                copies.append(InputCopy(bundle_path, rel_path, "input-file", data))
            else:
                already[bundle_path] = None
                reason = f"excluded: the input changed since run {run_id} recorded {entry['digest']}"
                copies.append(InputCopy(bundle_path, rel_path, "input-file", data, reason))
        if already[bundle_path] == entry["digest"]:
            record["bundled_as"] = bundle_path
    return digests, copies


__all__ = ["InputCopy", "find_repo_file", "run_inputs"]
