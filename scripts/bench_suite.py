#!/usr/bin/env python3
"""Benchmark the science-birds suite: 3 mock models x 26 letters x 10 trials x 1 program = 780 items.

Measures wall time from the first reply to the final report (generation, extraction, conversion,
Box2D simulation, rendering, classification with the bundled classifier, records, scoring and
report sections) and writes JSON with the stage breakdown. Goal: < 15 s on a 2-core machine.

    python scripts/bench_suite.py [--output bench-results/bench_suite.json] [--workers N]
                                  [--run-workspace DIR] [--letters A-Z] [--trials 10]

``--uncertainty-resamples N`` sets the ranking's letter bootstrap (0: off; the suite's default
otherwise). The suite's one program leaves the intervals uncomputed (a ranking needs two), so the
JSON also times the bootstrap alone on a 10-program x 26-letter cohort at the default 10,000 draws
(``ranking_uncertainty``), the cost a full competition cohort adds to the report.

Stage caches are disabled (a fresh temporary cache directory) so every level is computed. The
directory is made under ``--dir`` (default: the current directory), as the suite's own cache lives
in the project's ``.worldforge``: on some machines the system's ``/tmp`` is a slower file system
than the rest of the disk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _uncertainty_cost(programs: int = 10, letters: int = 26) -> dict[str, object]:
    """Seconds the ranking's letter bootstrap takes for a full cohort (seeded character scores)."""
    import numpy as np

    from worldforge.pcg.scoring.uncertainty import DEFAULT_RESAMPLES, LetterScores, ranking_uncertainty

    scores = np.random.default_rng(2029).random((programs, letters))
    cohort = LetterScores(
        tuple(f"program-{k}" for k in range(programs)),
        tuple(chr(ord("A") + j) for j in range(letters)),
        tuple(tuple(float(v) for v in row) for row in scores),
    )
    started, cpu = time.perf_counter(), time.process_time()
    ranking_uncertainty(cohort, resamples=DEFAULT_RESAMPLES)
    return {
        "programs": programs,
        "letters": letters,
        "resamples": DEFAULT_RESAMPLES,
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "bench-results" / "bench_suite.json")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--models", default="mock:qwen,mock:gemma,mock:phi")
    parser.add_argument("--program", default="zero-shot-multi-turn")
    parser.add_argument("--letters", default="A-Z")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--classifier", default=None, help="classifier id or folder (default: bundled)")
    parser.add_argument(
        "--run-workspace", type=Path, default=None, help="also record the run (slower: fsyncs)"
    )
    parser.add_argument(
        "--uncertainty-resamples", type=int, default=None, help="ranking bootstrap draws (0: off)"
    )
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="where the temporary stage cache is made (default: .)"
    )
    args = parser.parse_args(argv)

    from worldforge.forge import WorldForge
    from worldforge.suites.science_birds.config import Classifier, parse_characters
    from worldforge.suites.science_birds.run import RunState
    from worldforge.suites.science_birds.suite import evaluate

    models = [m for m in args.models.split(",") if m]
    workers = args.workers or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    state = RunState()
    classifier = Classifier(args.classifier)
    t_load = time.perf_counter()
    classifier_identity = classifier.identity()  # loads the weights (reported separately)
    load_s = time.perf_counter() - t_load
    cache_parent = args.dir.resolve()
    in_system_temp = cache_parent.is_relative_to(Path(tempfile.gettempdir()).resolve())
    with tempfile.TemporaryDirectory(prefix=".wf-bench-cache-", dir=cache_parent) as cache:
        options = {
            "programs": [args.program],
            "characters": args.letters,
            "trials": args.trials,
            "workers": workers,
            "progress": False,
            "cache_dir": cache,
        }
        if args.uncertainty_resamples is not None:
            options["uncertainty_resamples"] = args.uncertainty_resamples
        forge = WorldForge()
        load_before = os.getloadavg()
        cpu_self, cpu_children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        if args.run_workspace is not None:
            from worldforge.evaluation.suite import result_payload
            from worldforge.workspace import start_run

            with start_run(args.run_workspace, kind="benchmark", argv=sys.argv, config=options) as run:
                forge.add_event_sink(run.event_sink)
                report = evaluate(
                    models, forge=forge, options=options, run=run, classifier=classifier, state=state
                )
                run.complete(result_payload(report), claim_boundary=report.claim_boundary)
        else:
            report = evaluate(models, forge=forge, options=options, classifier=classifier, state=state)
        html_started = time.perf_counter()
        html = report.to_html()
        html_s = time.perf_counter() - html_started
        wall = time.perf_counter() - started
        cpu_driver = _cpu(resource.RUSAGE_SELF) - cpu_self
        cpu_workers = _cpu(resource.RUSAGE_CHILDREN) - cpu_children
    items = len(models) * len(parse_characters(args.letters)) * args.trials
    payload = {
        "benchmark": "science-birds suite (mock models, bundled classifier)",
        "items": items,
        "models": models,
        "program": args.program,
        "uncertainty_resamples": args.uncertainty_resamples,
        "letters": args.letters,
        "trials": args.trials,
        "workers": workers,
        "wall_seconds": round(wall, 3),
        "items_per_second": round(items / wall, 2) if wall else None,
        "goal_seconds": 15,
        "meets_goal": wall < 15,
        "stages_seconds": {k: round(v, 3) for k, v in sorted(state.timings.items())},
        # CPU time is what a shared machine does not inflate the way it inflates wall time:
        # (driver + workers) / cores is the wall time the run needs on free cores.
        "cpu_seconds": {
            "driver": round(cpu_driver, 3),
            "workers": round(cpu_workers, 3),
            "total": round(cpu_driver + cpu_workers, 3),
            "per_core_wall_estimate": round((cpu_driver + cpu_workers) / max(1, workers), 3),
        },
        "load_average_before": [round(v, 2) for v in load_before],
        "html_render_seconds": round(html_s, 3),
        "html_bytes": len(html.encode("utf-8")),
        "ranking_uncertainty": _uncertainty_cost(),
        "classifier_load_seconds": round(load_s, 3),
        "classifier": classifier_identity,
        "failed_trials": sum(
            n for n in (r.metrics.get("failed_trials") for r in report.results) if isinstance(n, int)
        ),
        "result_digest": report.provenance.result_digest if report.provenance else None,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "cache_location": "system-temp" if in_system_temp else "other",
        },
        "notes": "level_stages = extract+convert+simulate+render in the process pool; items_total covers "
        "generation to records; score_and_report covers diversity, weights, scores, ranking and sections.",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
