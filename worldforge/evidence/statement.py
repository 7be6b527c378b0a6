"""in-toto Statements v1 about one run: a test-result predicate and a SLSA Provenance v1 predicate.

Both are built from a run's documents *as they leave the machine* (:class:`RunDocs`: sanitized, with
every withheld digest already taken out, see :mod:`worldforge.evidence.withhold`), never from the
raw run, so a Statement says nothing a bundle would not. The subjects are given by the caller: the
files as bundled, or the run files the sanitizer leaves unchanged.

* ``https://in-toto.io/attestation/test-result/v0.1``: ``result`` is ``PASSED`` (the run completed,
  no gate failed, no result or item failed), ``WARNED`` (completed, some result or item failed, no
  gate failed) or ``FAILED`` (a gate failed, or the run did not complete). Tests are the suite's
  results (``provider/scenario``; for science-birds one per program and model), a benchmark's
  ``provider/operation`` rows, and the gates: a benchmark's budget gate and, for a field run, each
  team's qualification. ``configuration`` names what the result depends on: the run manifest, its
  recorded inputs (program files, suite values), the run-level digests, the dataset manifests, the
  classifier weights and the qualification table. ``url`` is omitted: it would be a host path.
* ``https://slsa.dev/provenance/v1``: the run as a build: its recorded command and options as
  ``externalParameters``, the package versions, models and programs it resolved as
  ``resolvedDependencies``, the run id and its recorded times as run details.

Statements are serialized as RFC 8785 canonical JSON, so the same run gives the same bytes
wherever and whenever it is attested.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSON, JSONObject, canonical_json
from worldforge.core.digests import is_digest

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TEST_RESULT_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
PROVENANCE_TYPE = "https://slsa.dev/provenance/v1"
#: SLSA ``buildType`` of a WorldForge run (a URN: the project publishes no web page for it).
BUILD_TYPE = "urn:worldforge:run:v1"
BUILDER_ID = "urn:worldforge:builder"
PASSED, WARNED, FAILED = "PASSED", "WARNED", "FAILED"
QUALIFICATION_PATH = "science-birds/qualification.json"


class ResourceDescriptor(TypedDict):
    """An in-toto ResourceDescriptor as these Statements use it: a name, its digest (``sha256`` hex,
    or ``gitCommit``) when it may be disclosed, and annotations."""

    name: str
    digest: NotRequired[dict[str, str]]
    annotations: NotRequired[JSONObject]


class TestResultPredicate(TypedDict):
    """The ``test-result/v0.1`` predicate."""

    result: str
    configuration: list[ResourceDescriptor]
    passedTests: list[str]
    warnedTests: list[str]
    failedTests: list[str]


class BuildDefinition(TypedDict):
    """SLSA ``buildDefinition``: the run as a build and what it resolved."""

    buildType: str
    externalParameters: JSONObject
    internalParameters: JSONObject
    resolvedDependencies: list[ResourceDescriptor]


class Builder(TypedDict):
    """SLSA ``runDetails.builder``."""

    id: str
    version: JSONObject


class RunDetails(TypedDict):
    """SLSA ``runDetails``: who built, the run id and its recorded times."""

    builder: Builder
    metadata: dict[str, str]


class ProvenancePredicate(TypedDict):
    """The SLSA ``provenance/v1`` predicate."""

    buildDefinition: BuildDefinition
    runDetails: RunDetails


def _load(data: bytes | None) -> JSON:
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


@dataclass(frozen=True)
class RunDocs:
    """What a Statement about one run reads, in the form that leaves the machine.

    ``prefix`` is where the run's files sit among the subjects (``runs/<id>/`` in a bundle, empty
    for a run attested in place); ``subjects`` maps subject names to hex SHA-256.
    """

    run_id: str
    prefix: str
    manifest: JSONObject
    result: JSONObject | None
    report: JSONObject | None
    qualification: list[JSON] | None
    failed_items: int
    subjects: Mapping[str, str]


def item_failed(data: bytes) -> bool:
    """Whether an item file records a unit of work that did not succeed (``status`` other than ok)."""
    if b'"status"' not in data:  # most records carry none: no need to parse them
        return False
    body = _load(data)
    record = body.get("record") if isinstance(body, dict) else None
    status = record.get("status") if isinstance(record, dict) else None
    return isinstance(status, str) and status not in ("ok", "passed", "completed")


def run_docs(
    run_id: str,
    prefix: str,
    read: Callable[[str], bytes | None],
    item_files: Iterable[bytes],
    subjects: Mapping[str, str],
) -> RunDocs:
    """Read a run's documents through ``read`` (run-relative path -> sanitized bytes or ``None``)."""
    manifest = _load(read("run_manifest.json"))
    result, report = _load(read("results/result.json")), _load(read("reports/report.json"))
    qualification = _load(read(QUALIFICATION_PATH))
    return RunDocs(
        run_id=run_id,
        prefix=prefix,
        manifest=manifest if isinstance(manifest, dict) else {},
        result=result if isinstance(result, dict) else None,
        report=report if isinstance(report, dict) else None,
        qualification=qualification if isinstance(qualification, list) else None,
        failed_items=sum(1 for data in item_files if item_failed(data)),
        subjects=subjects,
    )


# ----------------------------------------------------------------------------- descriptors


def descriptor(name: str, digest: JSON, **annotations: JSON) -> ResourceDescriptor:
    """A ResourceDescriptor; a digest that is not ``sha256:<hex>`` (withheld) is left out, not copied."""
    out: ResourceDescriptor = {"name": name}
    if is_digest(digest):
        out["digest"] = {"sha256": str(digest).removeprefix("sha256:")}
    elif isinstance(digest, str) and digest.startswith("withheld:"):
        annotations = {**annotations, "digest": "withheld"}
    kept: JSONObject = {k: v for k, v in annotations.items() if v is not None}
    if kept:
        out["annotations"] = kept
    return out


def _file_descriptor(docs: RunDocs, rel: str) -> ResourceDescriptor:
    name = docs.prefix + rel
    hex_digest = docs.subjects.get(name)
    return descriptor(name, f"sha256:{hex_digest}" if hex_digest else "withheld:")


def _find_values(value: JSON, key: str) -> list[JSON]:
    """Every value stored under ``key`` anywhere in a JSON document, in document order."""
    found: list[JSON] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                found.append(v)
            found.extend(_find_values(v, key))
    elif isinstance(value, list):
        for v in value:
            found.extend(_find_values(v, key))
    return found


def _inputs(docs: RunDocs) -> list[tuple[str, JSONObject]]:
    """The recorded inputs with a name, as ``(name, entry)``: the manifest as bundled is read
    as the JSON it is, not trusted to have the run writer's shape."""
    entries = docs.manifest.get("inputs")
    named: list[tuple[str, JSONObject]] = []
    for entry in entries if isinstance(entries, list) else []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and isinstance(name, str):
            named.append((name, entry))
    return named


def configuration(docs: RunDocs) -> list[ResourceDescriptor]:
    """What the run's result depends on, as ResourceDescriptors (see the module docstring)."""
    m = docs.manifest
    out = [_file_descriptor(docs, "run_manifest.json")]
    for key in ("config_digest", "input_digest", "result_digest"):
        if m.get(key) is not None:
            out.append(descriptor(f"run:{key.removesuffix('_digest')}", m.get(key)))
    for name, entry in _inputs(docs):
        out.append(descriptor(f"input:{name}", entry.get("digest"), kind=entry.get("kind")))
    refs = m.get("dataset_manifests")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict):
            label = ref.get("path") or ref.get("id") or "dataset-manifest"
            out.append(descriptor(f"dataset-manifest:{label}", ref.get("sha256") or ref.get("digest")))
    weights = sorted({w for w in _find_values(docs.report, "weights_digest") if isinstance(w, str)})
    out += [descriptor("classifier-weights", w) for w in weights]
    if docs.qualification is not None:
        out.append(_file_descriptor(docs, QUALIFICATION_PATH))
    return out


# ----------------------------------------------------------------------------------- tests


def outcomes(docs: RunDocs) -> tuple[list[str], list[str], list[str]]:
    """``(passed tests, failed tests, failed gates)``: results, benchmark rows and gates, by name."""
    passed: list[str] = []
    failed: list[str] = []
    gates: list[str] = []
    rows = (docs.result or {}).get("results")
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        if "scenario" in row:
            name, ok = f"{row.get('provider')}/{row.get('scenario')}", bool(row.get("passed"))
        elif "operation" in row:
            name, ok = f"{row.get('provider')}/{row.get('operation')}", not row.get("error_count")
        else:
            continue
        (passed if ok else failed).append(name)
    gate = (docs.report or {}).get("gate")
    if isinstance(gate, dict) and "passed" in gate:
        (passed if gate["passed"] else gates).append("gate:budget")
    for row in docs.qualification or []:
        if isinstance(row, dict) and "team" in row:
            (passed if row.get("qualified") else gates).append(f"gate:qualification/{row['team']}")
    return sorted(passed), sorted(failed), sorted(gates)


def verdict(docs: RunDocs, failed: list[str], failed_gates: list[str]) -> str:
    """PASSED, WARNED or FAILED, as the module docstring defines them."""
    if docs.manifest.get("status") != "completed" or failed_gates:
        return FAILED
    return WARNED if failed or docs.failed_items else PASSED


def result_predicate(docs: RunDocs) -> TestResultPredicate:
    passed, failed, gates = outcomes(docs)
    return {
        "result": verdict(docs, failed, gates),
        "configuration": configuration(docs),
        "passedTests": passed,
        "warnedTests": [],
        "failedTests": sorted(failed + gates),
    }


def provenance_predicate(docs: RunDocs) -> ProvenancePredicate:
    """SLSA Provenance v1 of the run (recorded command, options, versions, models, programs)."""
    m = docs.manifest
    raw_environment = m.get("environment")
    environment: JSONObject = raw_environment if isinstance(raw_environment, dict) else {}
    dependencies = [
        descriptor(f"pkg:pypi/worldforge@{m.get('worldforge_version')}", None),
        descriptor(
            f"python@{environment.get('python')}", None, implementation=environment.get("implementation")
        ),
    ]
    git = environment.get("git")
    commit = git.get("commit") if isinstance(git, dict) else None
    if isinstance(commit, str) and commit:
        dependencies.append({"name": "worldforge-source", "digest": {"gitCommit": commit}})
    provenance = (docs.report or {}).get("provenance")
    runtime = provenance.get("runtime_manifests") if isinstance(provenance, dict) else None
    for provider, info in sorted((runtime or {}).items()) if isinstance(runtime, dict) else []:
        model = info.get("model") if isinstance(info, dict) else None
        dependencies.append(descriptor(f"model:{provider}", None, model=model))
    dependencies += [
        descriptor(f"input:{name}", entry.get("digest"))
        for name, entry in _inputs(docs)
        if name.startswith("program:")
    ]
    details: dict[str, str] = {"invocationId": docs.run_id}
    for key, field in (("created_at", "startedOn"), ("finished_at", "finishedOn")):
        stamp = m.get(key)
        if isinstance(stamp, str):
            details[field] = stamp
    return {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {
                "kind": m.get("kind"),
                "command": m.get("argv"),
                "config": m.get("config"),
            },
            "internalParameters": {"digestRecipe": m.get("digest_recipe")},
            "resolvedDependencies": dependencies,
        },
        "runDetails": {
            "builder": {"id": BUILDER_ID, "version": {"worldforge": m.get("worldforge_version")}},
            "metadata": details,
        },
    }


def statement(subjects: Mapping[str, str], predicate_type: str, predicate: Mapping[str, object]) -> bytes:
    """An in-toto Statement v1 as canonical JSON bytes; subjects sorted by name."""
    return canonical_json(
        {
            "_type": STATEMENT_TYPE,
            "subject": [{"name": n, "digest": {"sha256": subjects[n]}} for n in sorted(subjects)],
            "predicateType": predicate_type,
            "predicate": dict(predicate),
        }
    )


def run_statements(docs: RunDocs, subjects: Mapping[str, str], provenance: bool = True) -> list[bytes]:
    """The Statements about one run over ``subjects``: test result, then (optionally) provenance."""
    out = [statement(subjects, TEST_RESULT_TYPE, result_predicate(docs))]
    if provenance:
        out.append(statement(subjects, PROVENANCE_TYPE, provenance_predicate(docs)))
    return out


__all__ = [
    "BUILDER_ID",
    "BUILD_TYPE",
    "FAILED",
    "PASSED",
    "PROVENANCE_TYPE",
    "QUALIFICATION_PATH",
    "STATEMENT_TYPE",
    "TEST_RESULT_TYPE",
    "WARNED",
    "BuildDefinition",
    "Builder",
    "ProvenancePredicate",
    "ResourceDescriptor",
    "RunDetails",
    "RunDocs",
    "TestResultPredicate",
    "configuration",
    "descriptor",
    "item_failed",
    "outcomes",
    "provenance_predicate",
    "result_predicate",
    "run_docs",
    "run_statements",
    "statement",
    "verdict",
]
