"""Failure gallery: compact, sanitized cases for issue triage.

One gallery per report (the report JSON and ``failure_gallery.json`` carry the same cases). Each
case's metrics preview goes through the project's sanitizer (``metrics_preview``): secret-shaped
values are redacted, signed URL queries stripped, host-local paths replaced and tensor-like arrays
summarised. Raw metrics never enter the gallery, and rerun commands are sanitized the same way
(relative to the directory the evaluation ran in).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping

from worldforge.core.redact import metrics_preview, sanitize_argv
from worldforge.evaluation.types import EvaluationResult
from worldforge.reports.payload import FailureGallery, GalleryCase

FAILURE_GALLERY_SCHEMA_VERSION = 1

#: Short names of the CLI flags that carry suite options (``options`` key -> flag).
OPTION_FLAGS: dict[str, str] = {
    "programs": "--program",
    "field": "--programs",
    "trials": "--trials",
    "characters": "--characters",
    "classifier": "--classifier",
    "workers": "--workers",
    "diversity_vector": "--diversity-vector",
    "ollama_host": "--ollama-host",
    "openai_base_url": "--openai-base-url",
    "max_connections": "--max-connections",
    "seed": "--seed",
}


def options_to_cli_args(options: Mapping[str, object]) -> list[str]:
    """Suite options back to the ``worldforge eval`` flags that produce them (sorted by flag)."""
    args: list[str] = []
    for key in sorted(options, key=lambda k: OPTION_FLAGS.get(k, k)):
        flag = OPTION_FLAGS.get(key, "--" + key.replace("_", "-"))
        value = options[key]
        if isinstance(value, bool):  # a switch such as --no-install
            args.extend([flag] if value else [])
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            args.extend([flag, str(item)])
    return args


def rerun_command(
    cli_ref: str | None, provider: str, options: Mapping[str, object] | None = None
) -> str | None:
    """A shell-quoted ``worldforge eval`` command that reruns one provider, or None when the suite
    is only reachable in-process.

    The suite reference and option values (``--classifier DIR``, ``--program DIR``, a ``path.py:attr``
    suite) go through the sanitizer like the run manifest's argv: paths under the directory the
    evaluation ran in become relative, so the command still works from there, and no host path
    reaches the gallery.
    """
    if not cli_ref:
        return None
    argv = ["worldforge", "eval", "--suite", cli_ref, "--provider", provider]
    argv += options_to_cli_args(options or {})
    argv += ["--format", "json"]
    return shlex.join(sanitize_argv(argv))


def _observed(result: EvaluationResult) -> str:
    keys = ", ".join(sorted(result.metrics)) or "none"
    return f"score={result.score:.4f}; passed=false; metric keys: {keys}"


def build_cases(
    results: Iterable[EvaluationResult],
    *,
    expected_notes: Mapping[str, str] | None = None,
    cli_ref: str | None = None,
    options: Mapping[str, object] | None = None,
) -> list[GalleryCase]:
    """Every failed result as a gallery case: providers by name, then (score, scenario)."""
    notes = expected_notes or {}
    failed = sorted((r for r in results if not r.passed), key=lambda r: (r.provider, r.score, r.scenario))
    cases: list[GalleryCase] = []
    for result in failed:
        command = rerun_command(cli_ref, result.provider, options)
        if command:
            rerun = (
                f"Rerun `{command}` from the directory the evaluation ran in (its paths are relative "
                "to it) and compare the digests."
            )
        else:
            rerun = (
                f"Suite '{result.suite_id}' is registered in-process only: rerun the Python code that "
                "builds it, or expose its factory as `module:attr` and run "
                f"`worldforge eval --suite module:attr --provider {result.provider} --format json`."
            )
        cases.append(
            {
                "fixture_id": f"evaluation:{result.suite_id}:{result.scenario}",
                "suite_id": result.suite_id,
                "suite": result.suite,
                "scenario": result.scenario,
                "provider": result.provider,
                "score": result.score,
                "passed": False,
                "expected_contract_notes": notes.get(result.scenario)
                or f"`{result.suite_id}/{result.scenario}` should meet its scenario contract.",
                "observed_result": _observed(result),
                "metrics_preview": metrics_preview(result.metrics),
                "rerun_command": command,
                "triage_steps": [
                    "Open the preserved report JSON and confirm the provenance input_digest and "
                    "result_digest before citing this case.",
                    rerun,
                    "Compare the metrics preview with the expected contract note; treat it as contract "
                    "triage, not as physical-fidelity or model-quality evidence.",
                ],
            }
        )
    return cases


def gallery_payload(
    *,
    suite_id: str,
    suite: str,
    suite_version: str | None,
    claim_boundary: str,
    metric_semantics: str,
    cases: list[GalleryCase],
    input_digest: str | None,
    result_digest: str | None,
) -> FailureGallery:
    return {
        "schema_version": FAILURE_GALLERY_SCHEMA_VERSION,
        "suite_id": suite_id,
        "suite": suite,
        "suite_version": suite_version,
        "case_count": len(cases),
        "claim_boundary": claim_boundary,
        "metric_semantics": metric_semantics,
        "source_input_digest": input_digest,
        "source_result_digest": result_digest,
        "cases": [case.copy() for case in cases],
    }


__all__ = [
    "FAILURE_GALLERY_SCHEMA_VERSION",
    "OPTION_FLAGS",
    "build_cases",
    "gallery_payload",
    "options_to_cli_args",
    "rerun_command",
]
