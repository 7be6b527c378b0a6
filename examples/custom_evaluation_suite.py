"""Custom evaluation suite walkthrough (runnable from a checkout).

    python examples/custom_evaluation_suite.py [OUTPUT_DIR]
    worldforge eval --suite examples/custom_evaluation_suite.py:build_suite --provider mock

The suite has the documented ``empty-world-readable`` scenario plus one *controlled* failure, so
the failure gallery can be inspected: its metrics contain a host-local path, a secret-shaped value
and a tensor-like array, and the gallery preview shows them sanitized and summarised.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from worldforge import WorldForge, WorldForgeError
from worldforge.core.canonical import pretty_json
from worldforge.core.io import atomic_write_text
from worldforge.evaluation import EvaluationContext, EvaluationScenario, EvaluationSuite

SUITE_ID = "custom-empty-world"
#: How the CLI reaches this suite (also used by the failure gallery's rerun command).
CLI_REF = "examples/custom_evaluation_suite.py:build_suite"


def check_empty_world(context: EvaluationContext) -> Any:
    object_count = context.world.object_count
    return context.outcome(
        score=1.0,
        passed=object_count == 0,
        metrics={"object_count": object_count, "scenario": context.scenario.name},
    )


def controlled_failure(context: EvaluationContext) -> Any:
    """Always fails on purpose; the metrics exercise the gallery sanitizer."""
    return context.outcome(
        score=0.25,
        passed=False,
        metrics={
            "object_count": context.world.object_count,
            "local_path": "/home/example/worldforge/cache/run.json",
            "api_key": "sk-example-not-a-real-key-000000000000",
            "artifact_url": "https://storage.example.com/a.bin?X-Amz-Signature=abc123&X-Amz-Expires=60",
            "tensor_values": [[1.0, 2.0], [3.0, 4.0]],
        },
    )


def build_suite(options: dict[str, Any] | None = None) -> EvaluationSuite:
    if options:
        raise WorldForgeError(f"suite {SUITE_ID!r} takes no options; got {sorted(options)[0]!r}.")
    return EvaluationSuite.custom(
        suite_id=SUITE_ID,
        name="Custom Empty World Evaluation",
        suite_version="custom-empty-world:1",
        claim_boundary="This custom suite is a deterministic checkout example, not a model-quality claim.",
        scenarios=[
            EvaluationScenario.from_callable(
                name="empty-world-readable",
                description="Checks that a new world can be inspected.",
                evaluator=check_empty_world,
            ),
            EvaluationScenario.from_callable(
                name="controlled-failure-gallery",
                description="Fails on purpose so the failure gallery can be reviewed.",
                evaluator=controlled_failure,
            ),
        ],
        expected_notes={
            "controlled-failure-gallery": "This case fails by design; its preview must show redacted, "
            "path-free, summarised metrics.",
        },
        cli_ref=CLI_REF,
    )


FILE_NAMES = {
    "json": "report.json",
    "markdown": "report.md",
    "csv": "report.csv",
    "html": "report.html",
    "failure_gallery.json": "failure_gallery.json",
    "failure_gallery.md": "failure_gallery.md",
}


def run_walkthrough(output_dir: Path) -> dict[str, Any]:
    """Run the suite on ``mock`` and write every artifact plus a walkthrough summary."""
    forge = WorldForge()
    EvaluationSuite.register(SUITE_ID, build_suite, replace=True)
    report = EvaluationSuite.from_registered(SUITE_ID).run_report("mock", forge=forge)
    paths: dict[str, str] = {}
    for key, text in report.artifacts().items():
        target = output_dir / FILE_NAMES[key]
        atomic_write_text(target, text)
        paths[key] = target.name
    gallery = report.failure_gallery()
    summary = {
        "schema_version": 1,
        "suite_id": report.suite_id,
        "suite_version": report.suite_version,
        "provider": "mock",
        "result_count": len(report.results),
        "passed_count": sum(1 for r in report.results if r.passed),
        "failed_count": len(report.failed_results),
        "failure_gallery_cases": gallery["case_count"],
        "input_digest": report.provenance.input_digest if report.provenance else None,
        "result_digest": report.provenance.result_digest if report.provenance else None,
        "artifact_paths": paths,
        "claim_boundary": report.claim_boundary,
    }
    atomic_write_text(output_dir / "walkthrough-summary.json", pretty_json(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    output_dir = Path(args[0]) if args else Path(".worldforge") / "custom-eval-artifacts"
    summary = run_walkthrough(output_dir)
    print((output_dir / "report.md").read_text(encoding="utf-8"))
    print(
        f"artifacts written to {output_dir} ({summary['failed_count']} controlled failure)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
