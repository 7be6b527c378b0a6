"""``runs diff``: what changed between two runs, and why it matters.

Every change carries a reason code so a release reviewer can tell nondeterminism from an expected
consequence of a changed input:

* ``same-inputs-different-results`` — identical input digests (and code), different results;
* ``provider-changed``, ``dataset-changed``, ``config-changed``, ``cohort-changed``,
  ``code-version-changed``, ``model-changed``, ``input-changed`` — the cause of a difference;
* ``upstream-stage-changed`` — a pipeline stage differs because an earlier stage of the item did;
* ``item-added`` / ``item-removed`` — the item set differs;
* ``provider-events-differ`` — informational, never a cause: the runs made a different number of
  provider calls (a rerun that reuses cached stage results makes none). Provider *identity* —
  the provider names in the config and the ``providers`` / ``models`` / ``runtime_manifests`` of a
  recorded input value — is what ``provider-changed`` is derived from, because how often a provider
  was called says nothing about which provider produced the results.

Per-item records may hold ``stages: {name: {"digest": ..., "input_digest"?, "version"?,
"model_digest"?}}``; stages are compared in pipeline order so the first differing stage is named
as the cause and the later ones as ``upstream-stage-changed``. Records are stored with sorted keys,
so their order says nothing: a record may list ``stage_order`` explicitly; otherwise the stages of
the level pipeline run in :data:`PIPELINE_ORDER` and any other stage names follow alphabetically.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.digests import digest_payload
from worldforge.workspace.eventlog import read_chain
from worldforge.workspace.layout import EVENTS_NAME
from worldforge.workspace.records import ItemFile, RunManifest, read_item_files, read_run_manifest
from worldforge.workspace.store import effective_status

DIFF_SCHEMA_VERSION = 1
#: The order the level pipeline runs its stages in (generation first, classification last).
PIPELINE_ORDER = ("generate", "extract", "convert", "simulate", "render", "classify")
CAUSE_PRIORITY = (
    "provider-changed",
    "dataset-changed",
    "cohort-changed",
    "model-changed",
    "config-changed",
    "code-version-changed",
    "input-changed",
)


class Change(TypedDict):
    """One line of the diff: where (``section``, ``path``), what (``change``: ``added``, ``removed``,
    ``modified`` or ``unchanged``), both sides' values and the reason code (``None`` when unchanged)."""

    section: str
    path: str
    change: str
    a: JSON
    b: JSON
    reason: str | None


class DiffSide(TypedDict):
    """One compared run, as the diff names it."""

    run_id: str
    kind: str
    status: str
    input_digest: str | None
    result_digest: str | None


class RunDiffReport(TypedDict):
    """What :func:`diff_runs` returns (and ``runs diff --format json`` prints)."""

    schema_version: int
    a: DiffSide
    b: DiffSide
    identical_results: bool
    causes: list[str]
    reasons: list[str]
    change_count: int
    changes: list[Change]


def _classify_name(name: str, default: str) -> str:
    low = name.lower()
    if "provider" in low:
        return "provider-changed"
    if "dataset" in low:
        return "dataset-changed"
    if "cohort" in low:
        return "cohort-changed"
    if any(word in low for word in ("model", "checkpoint", "classifier", "weights")):
        return "model-changed"
    return default


#: Keys of a recorded input value that identify the providers (names, versions, model identities
#: and digests, runtime manifests); a difference under one of them is ``provider-changed``.
PROVIDER_IDENTITY_KEYS = ("providers", "models", "runtime_manifests")
#: Reason for a difference in provider call counts: reported, but not a cause of anything.
PROVIDER_EVENTS_REASON = "provider-events-differ"


def _provider_identity(manifest: RunManifest) -> JSONObject:
    """Provider identity recorded in the run's input values, by ``<input>.<key>``.

    Inputs are what the input digest covers, so they are the run's own statement of which
    providers (and which model versions) it evaluated; a value too large to be kept in the
    manifest contributes nothing here, and its digest still shows up as an input change.
    """
    identity: JSONObject = {}
    for entry in manifest.inputs:
        value = entry.get("value")
        if isinstance(value, dict):
            for key in PROVIDER_IDENTITY_KEYS:
                if key in value:
                    identity[f"{entry['name']}.{key}"] = value[key]
    return identity


def _provider_event_counts(run_dir: Path) -> JSONObject:
    """Provider events per provider name (informational: cache reuse makes these differ)."""
    counts: dict[str, int] = {}
    for event in read_chain(run_dir / EVENTS_NAME).events:
        if event.get("type") == "provider.event":
            name = str((event.get("payload") or {}).get("provider"))
            counts[name] = counts.get(name, 0) + 1
    return {name: count for name, count in sorted(counts.items())}


def _git(manifest: RunManifest, key: str) -> JSON:
    git = manifest.environment["git"]
    return None if git is None else git["commit"] if key == "commit" else git["dirty"]


class _Collector:
    def __init__(self, include_all: bool) -> None:
        self.include_all = include_all
        self.changes: list[Change] = []

    def compare(self, section: str, path: str, a: JSON, b: JSON, reason: str) -> bool:
        if a == b:
            if self.include_all:
                self.changes.append(
                    {"section": section, "path": path, "change": "unchanged", "a": a, "b": b, "reason": None}
                )
            return False
        change = "added" if a is None else "removed" if b is None else "modified"
        self.changes.append(
            {"section": section, "path": path, "change": change, "a": a, "b": b, "reason": reason}
        )
        return True


def _stage_order(record: JSONObject, names: set[str]) -> list[str]:
    """Stages in the order they ran (see the module docstring)."""
    explicit = record.get("stage_order")
    ranked = [str(n) for n in explicit] if isinstance(explicit, list) else list(PIPELINE_ORDER)
    known = [n for n in ranked if n in names]
    return known + sorted(names - set(known))


def _stage_reason(sa: JSONObject, sb: JSONObject, upstream: bool, item_inputs_equal: bool) -> str:
    for key in ("version", "impl_version", "code_version"):
        if sa.get(key) != sb.get(key):
            return "code-version-changed"
    for key in ("model_digest", "weights_digest", "checkpoint_digest"):
        if sa.get(key) != sb.get(key):
            return "model-changed"
    if sa.get("cohort_digest") != sb.get("cohort_digest"):
        return "cohort-changed"
    if upstream:
        return "upstream-stage-changed"
    if sa.get("input_digest") != sb.get("input_digest") or not item_inputs_equal:
        return "input-changed"
    return "same-inputs-different-results"


def _diff_items(
    c: _Collector, a: dict[str, ItemFile], b: dict[str, ItemFile], run_inputs_equal: bool
) -> None:
    for item_id in sorted(set(a) | set(b)):
        ia, ib = a.get(item_id), b.get(item_id)
        base = f"items/{item_id}"
        if ia is None or ib is None:
            c.compare(
                "items",
                base,
                ia.record_digest if ia is not None else None,
                ib.record_digest if ib is not None else None,
                "item-added" if ia is None else "item-removed",
            )
            continue
        inputs_equal = ia.input_digest == ib.input_digest
        c.compare(
            "items",
            base + "#input_digest",
            ia.input_digest,
            ib.input_digest,
            "input-changed" if not run_inputs_equal else "same-inputs-different-results",
        )
        ra, rb = ia.record or {}, ib.record or {}
        if isinstance(ra, dict) and isinstance(rb, dict) and isinstance(ra.get("cohort_digest"), str):
            c.compare(
                "items",
                base + "#cohort_digest",
                ra.get("cohort_digest"),
                rb.get("cohort_digest"),
                "cohort-changed",
            )
        stages_a = ra.get("stages") if isinstance(ra, dict) else None
        stages_b = rb.get("stages") if isinstance(rb, dict) else None
        if isinstance(ra, dict) and isinstance(stages_a, dict) and isinstance(stages_b, dict):
            upstream = False
            order = _stage_order(ra, set(stages_a) | set(stages_b))
            for stage in order:
                sa, sb = stages_a.get(stage), stages_b.get(stage)
                if not isinstance(sa, dict) or not isinstance(sb, dict):
                    c.compare(
                        "stages",
                        f"{base}/stages/{stage}",
                        sa.get("digest") if isinstance(sa, dict) and sa else sa,
                        sb.get("digest") if isinstance(sb, dict) and sb else sb,
                        "code-version-changed",
                    )
                    upstream = True
                    continue
                reason = _stage_reason(sa, sb, upstream, inputs_equal and run_inputs_equal)
                if c.compare("stages", f"{base}/stages/{stage}", sa.get("digest"), sb.get("digest"), reason):
                    upstream = True
        reason = "same-inputs-different-results" if inputs_equal and run_inputs_equal else "input-changed"
        c.compare("items", base + "#record_digest", ia.record_digest, ib.record_digest, reason)


def diff_runs(dir_a: Path, dir_b: Path, include_all: bool = False) -> RunDiffReport:
    """Compare two run directories; see the module docstring for the reason codes."""
    ma, mb = read_run_manifest(dir_a), read_run_manifest(dir_b)
    c = _Collector(include_all)
    c.compare("manifest", "kind", ma.kind, mb.kind, "config-changed")
    c.compare(
        "code", "worldforge_version", ma.worldforge_version, mb.worldforge_version, "code-version-changed"
    )
    c.compare("code", "git.commit", _git(ma, "commit"), _git(mb, "commit"), "code-version-changed")
    c.compare("code", "git.dirty", _git(ma, "dirty"), _git(mb, "dirty"), "code-version-changed")
    ca, cb = ma.config, mb.config
    for key in sorted(set(ca) | set(cb)):
        c.compare("config", f"config.{key}", ca.get(key), cb.get(key), _classify_name(key, "config-changed"))
    ia = {e["name"]: e for e in ma.inputs}
    ib = {e["name"]: e for e in mb.inputs}
    for name in sorted(set(ia) | set(ib)):
        c.compare(
            "inputs",
            f"inputs.{name}",
            ia[name]["digest"] if name in ia else None,
            ib[name]["digest"] if name in ib else None,
            _classify_name(name, "input-changed"),
        )
    da = {str(r.get("id")): r for r in ma.dataset_manifests}
    db = {str(r.get("id")): r for r in mb.dataset_manifests}
    for ref_id in sorted(set(da) | set(db)):
        c.compare(
            "datasets",
            f"dataset_manifests.{ref_id}",
            da[ref_id] and digest_payload(da[ref_id]) if ref_id in da else None,
            digest_payload(db[ref_id]) if ref_id in db else None,
            "dataset-changed",
        )
    pa, pb = _provider_identity(ma), _provider_identity(mb)
    for key in sorted(set(pa) | set(pb)):
        c.compare(
            "providers", f"provider identity: inputs.{key}", pa.get(key), pb.get(key), "provider-changed"
        )
    c.compare(
        "providers",
        "provider events",
        _provider_event_counts(dir_a),
        _provider_event_counts(dir_b),
        PROVIDER_EVENTS_REASON,
    )
    inputs_equal = ma.input_digest == mb.input_digest
    upstream = [
        ch["reason"] for ch in c.changes if ch["reason"] in CAUSE_PRIORITY and ch["section"] != "code"
    ]
    first = min(upstream, key=CAUSE_PRIORITY.index) if upstream else "input-changed"
    c.compare("inputs", "input_digest", ma.input_digest, mb.input_digest, first)
    _diff_items(c, read_item_files(dir_a), read_item_files(dir_b), inputs_equal)

    causes = sorted(
        {ch["reason"] for ch in c.changes if ch["reason"] in CAUSE_PRIORITY}, key=CAUSE_PRIORITY.index
    )
    ra, rb = ma.result_digest, mb.result_digest
    identical = ra is not None and ra == rb
    if not identical:
        if ra is None or rb is None:
            reason = "result-missing"
        elif inputs_equal and "code-version-changed" not in causes:
            reason = "same-inputs-different-results"
        else:
            reason = causes[0] if causes else "input-changed"
        c.changes.append(
            {
                "section": "results",
                "path": "result_digest",
                "change": "modified",
                "a": ra,
                "b": rb,
                "reason": reason,
            }
        )
    elif include_all:
        c.changes.append(
            {
                "section": "results",
                "path": "result_digest",
                "change": "unchanged",
                "a": ra,
                "b": rb,
                "reason": None,
            }
        )
    reasons = sorted({ch["reason"] for ch in c.changes if ch["reason"]})

    def side(run_dir: Path, m: RunManifest) -> DiffSide:
        return {
            "run_id": m.run_id,
            "kind": m.kind,
            "status": effective_status(run_dir, m).value,
            "input_digest": m.input_digest,
            "result_digest": m.result_digest,
        }

    return {
        "schema_version": DIFF_SCHEMA_VERSION,
        "a": side(dir_a, ma),
        "b": side(dir_b, mb),
        "identical_results": identical,
        "causes": causes,
        "reasons": reasons,
        "change_count": sum(1 for ch in c.changes if ch["change"] != "unchanged"),
        "changes": c.changes,
    }


__all__ = [
    "CAUSE_PRIORITY",
    "DIFF_SCHEMA_VERSION",
    "Change",
    "DiffSide",
    "RunDiffReport",
    "PROVIDER_EVENTS_REASON",
    "PROVIDER_IDENTITY_KEYS",
    "diff_runs",
]
