#!/usr/bin/env python3
"""Demo showcases: runnable walkthroughs that leave a preserved, verifiable run behind.

    python scripts/demo_showcases.py list [--format markdown|json]
    python scripts/demo_showcases.py run custom-evaluation-suite [--workspace-dir DIR] [--overwrite]
        [--format markdown|json]

``custom-evaluation-suite`` runs ``examples/custom_evaluation_suite.py`` (one passing scenario and one
controlled failure) against the mock provider and writes report JSON/Markdown/CSV/HTML,
``failure_gallery.json``/``.md`` and ``walkthrough-summary.json`` to ``DIR/custom-evaluation-suite/``.
The same files are recorded in a run workspace under ``DIR/runs/<run-id>/`` (kind ``demo``), so
``worldforge runs verify|bundle -w DIR`` work on it. The walkthrough passes when the controlled
failure shows up in the gallery with its secret, signed URL and host path sanitized.
Exit codes: 0 passed, 1 a workflow failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLAIM_BOUNDARY = (
    "Deterministic contract-signal evidence from the mock provider; not model-quality, leaderboard, "
    "physical-fidelity, safety or robot-performance evidence."
)
WORKFLOWS = {
    "custom-evaluation-suite": "Custom suite walkthrough with one controlled failure (reports, gallery).",
}
# Substrings from the controlled failure's metrics that must never reach the gallery.
_FORBIDDEN = ("/home/example", "sk-example-not-a-real-key", "abc123")


def _load_example() -> Any:
    path = REPO / "examples" / "custom_evaluation_suite.py"
    spec = importlib.util.spec_from_file_location("worldforge_example_custom_suite", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_custom_evaluation_suite(workspace: Path, overwrite: bool) -> dict[str, Any]:
    from worldforge.core.canonical import pretty_json
    from worldforge.core.errors import WorldForgeError
    from worldforge.workspace import start_run

    workflow_id = "custom-evaluation-suite"
    out_dir = workspace / workflow_id
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise WorldForgeError(f"{out_dir}: not empty (pass --overwrite to replace the walkthrough).")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    example = _load_example()
    argv = ["python", "scripts/demo_showcases.py", "run", workflow_id]
    with start_run(workspace, "demo", argv, {"workflow": workflow_id}) as run:
        run.add_input_file(
            "example:custom_evaluation_suite.py", REPO / "examples" / "custom_evaluation_suite.py"
        )
        summary = example.run_walkthrough(out_dir)
        media = {
            ".json": "application/json",
            ".md": "text/markdown",
            ".csv": "text/csv",
            ".html": "text/html",
        }
        for path in sorted(out_dir.iterdir()):
            folder = "results" if path.name == "walkthrough-summary.json" else "reports"
            run.write_artifact(
                f"{folder}/{path.name}", path.read_bytes(), media.get(path.suffix, "text/plain")
            )
        gallery_text = (out_dir / "failure_gallery.json").read_text(encoding="utf-8")
        leaked = [s for s in _FORBIDDEN if s in gallery_text]
        checks = {
            "controlled_failure_in_gallery": summary["failure_gallery_cases"] == 1
            and summary["failed_count"] == 1,
            "gallery_sanitized": not leaked,
            "all_artifacts_written": all(
                (out_dir / name).is_file() for name in summary["artifact_paths"].values()
            ),
        }
        status = "passed" if all(checks.values()) else "failed"
        result = {
            "workflow": workflow_id,
            "status": status,
            "checks": checks,
            "suite_id": summary["suite_id"],
            "result_count": summary["result_count"],
            "passed_count": summary["passed_count"],
            "failed_count": summary["failed_count"],
            "report_result_digest": summary["result_digest"],
        }
        run.emit("demo.checked", {"checks": checks, "status": status})
        run.complete(result, claim_boundary=CLAIM_BOUNDARY)
    result["run_id"] = run.run_id
    result["artifacts"] = sorted(p.name for p in out_dir.iterdir())
    (out_dir / "workflow-result.json").write_text(pretty_json(result), encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="WorldForge demo showcases.")
    sub = parser.add_subparsers(dest="command", required=True)
    list_parser = sub.add_parser("list", help="list workflows")
    list_parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    run_parser = sub.add_parser("run", help="run a workflow (or 'all')")
    run_parser.add_argument("workflow", choices=(*WORKFLOWS, "all"))
    run_parser.add_argument("--workspace-dir", type=Path, default=Path(".worldforge") / "demo-showcases")
    run_parser.add_argument("--overwrite", action="store_true")
    run_parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    args = parser.parse_args(argv)

    from worldforge.core.canonical import pretty_json
    from worldforge.core.errors import WorldForgeError
    from worldforge.core.redact import sanitize_text

    if args.command == "list":
        if args.format == "json":
            sys.stdout.write(
                pretty_json({"workflows": [{"id": k, "description": v} for k, v in WORKFLOWS.items()]})
            )
        else:
            for key, description in WORKFLOWS.items():
                print(f"- `{key}`: {description}")
        return 0
    selected = list(WORKFLOWS) if args.workflow == "all" else [args.workflow]
    results = []
    try:
        runners = {"custom-evaluation-suite": run_custom_evaluation_suite}
        for workflow in selected:
            results.append(runners[workflow](args.workspace_dir, args.overwrite))
    except WorldForgeError as exc:
        print(f"error: {sanitize_text(str(exc))}", file=sys.stderr)
        return 2
    overall = "passed" if all(r["status"] == "passed" for r in results) else "failed"
    payload = {"schema_version": 1, "status": overall, "results": results, "claim_boundary": CLAIM_BOUNDARY}
    if args.format == "json":
        sys.stdout.write(pretty_json(payload))
    else:
        print(f"# WorldForge demo showcases: {overall}\n")
        for r in results:
            print(f"## {r['workflow']}: {r['status']}\n")
            print(
                f"- run: `{r['run_id']}` (verify with `worldforge runs verify {r['run_id']} -w <workspace>`)"
            )
            print(f"- results: {r['passed_count']} passed, {r['failed_count']} failed (controlled)")
            for name, ok in r["checks"].items():
                print(f"- {name}: {'ok' if ok else 'FAILED'}")
            print(f"- artifacts: {', '.join(r['artifacts'])}\n")
        print(f"Claim boundary: {CLAIM_BOUNDARY}")
    return 0 if overall == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
