#!/usr/bin/env python3
"""Benchmark submission trials: process start cost with and without the sandbox, and one submission
end to end (26 letters x 10 trials, the mock behind the gateway, the bundled classifier).

Two figures per isolation (``process``: no sandbox; ``bubblewrap``, when usable):

* ``host_start_seconds``: starting one trial host (interpreter, ``openai`` and the competition
  package imported, the relay up) until it is ready: what a trial would cost if every trial were
  a cold process;
* ``trial_seconds``: one trial forked from a warm host (private copy of the folder, fork, the
  submission imported, its ``TrialLoop`` run to a package ``ValueError``, files and processes
  cleaned up), median and p90 of ``--samples`` trials. No model call: this is pure overhead.

Then ``examples/submissions/llms4pcg-zero-shot`` x 26 letters x 10 trials through
``evaluate`` (goal < 60 s on a 2-core machine), with the stage breakdown; and the whole field of
``examples/field`` (``--programs``: qualification first, then every qualified team) over
``--field-letters`` x ``--trials``.

Hosts run in the package's own environment (built once per machine, then cached), fetched before
any clock starts: building it is a one-off cost, not a trial's.

    python scripts/bench_submissions.py [--output docs/bench_submissions.json] [--samples 20]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUICK = """
from llms4pcg.models.trial_loop import TrialLoop


class Quick(TrialLoop):
    @staticmethod
    def run(ctx, target_character):
        raise ValueError("no model call: measuring the trial overhead")
"""


def _start_costs(isolation: str, samples: int, gateway_port: int, python: str) -> dict[str, Any]:
    from worldforge.execution.sandbox import HostSpec, TrialHost, TrialLimits

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "quick"
        folder.mkdir()
        (folder / "main.py").write_text(QUICK, encoding="utf-8")
        folder.chmod(0o755)  # read by the sandbox's unprivileged uid
        spec = HostSpec(python, "llms4pcg", folder, "main.py", "Quick", TrialLimits(wall_seconds=30),
                        isolation, gateway_port)  # fmt: skip
        starts, trials = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            host = TrialHost(spec)
            starts.append(time.perf_counter() - t0)
            host.close()
        host = TrialHost(spec)
        try:
            for i in range(samples):
                t0 = time.perf_counter()
                request = {"token": "t", "team": "quick", "letter": "A", "trial": i + 1, "model": "m"}
                answer = host.run(request)
                trials.append(time.perf_counter() - t0)
                assert answer.get("outcome") == "no_output", answer
        finally:
            host.close()
    trials.sort()
    return {
        "host_start_seconds": round(statistics.median(starts), 4),
        "trial_seconds_median": round(statistics.median(trials), 4),
        "trial_seconds_p90": round(trials[int(0.9 * (len(trials) - 1))], 4),
        "samples": samples,
    }


def _run_options(cache: str, usable: bool) -> dict[str, Any]:
    """What both timed runs share: no progress bar, a fresh stage cache, the package environment."""
    return {"progress": False, "cache_dir": cache, "no_install": True,
            "sandbox": "bubblewrap" if usable else "process"}  # fmt: skip


def _field(args: argparse.Namespace, workers: int, usable: bool, classifier: Any) -> dict[str, Any]:
    """The whole field as the organisers run it: ``--programs examples/field`` (qualification,
    every qualified team, the not-qualified one reported), ``--field-letters`` x ``--trials``."""
    from worldforge.forge import WorldForge
    from worldforge.suites.science_birds.config import parse_characters
    from worldforge.suites.science_birds.run import RunState
    from worldforge.suites.science_birds.suite import evaluate

    state = RunState()
    with tempfile.TemporaryDirectory() as cache:
        options = {
            "field": [str(ROOT / "examples" / "field")],
            "characters": args.field_letters,
            "trials": args.trials,
            "workers": workers,
            **_run_options(cache, usable),
        }
        started = time.perf_counter()
        report = evaluate(["mock"], forge=WorldForge(), options=options, classifier=classifier, state=state)
        wall = time.perf_counter() - started
    section = report.sections.get("qualification")
    table = section.get("rows") if isinstance(section, dict) else None
    if not isinstance(table, list):
        raise SystemExit("the field run wrote no qualification table.")
    return {
        "source": "examples/field",
        "teams": len(table),
        "qualified": sum(1 for row in table if isinstance(row, dict) and row.get("qualified")),
        "letters": args.field_letters,
        "trials": args.trials,
        "items": len(report.results) * len(parse_characters(args.field_letters)) * args.trials,
        "wall_seconds": round(wall, 3),
        "failed_trials": sum(r.metrics["failed_trials"] for r in report.results),
        "stages_seconds": {k: round(v, 3) for k, v in sorted(state.timings.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "bench_submissions.json")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--letters", default="A-Z")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--field-letters", default="A-Z", help="the field run's letters ('' skips it)")
    parser.add_argument("--program", default=str(ROOT / "examples" / "submissions" / "llms4pcg-zero-shot"))
    args = parser.parse_args(argv)

    from worldforge.execution.confine import bubblewrap_status
    from worldforge.execution.environments import package_environment
    from worldforge.forge import WorldForge
    from worldforge.gateway import Gateway
    from worldforge.pcg.programs.submission import load_submission
    from worldforge.suites.science_birds.config import Classifier, parse_characters
    from worldforge.suites.science_birds.run import RunState
    from worldforge.suites.science_birds.suite import evaluate

    usable, detail = bubblewrap_status()
    isolations = ["process", *(["bubblewrap"] if usable else [])]
    # Built (first run on this machine) or fetched from the shared cache before any clock starts.
    python = package_environment("llms4pcg").python
    package_environment(load_submission(Path(args.program)).package)
    with Gateway(WorldForge(), models=["mock"]) as gateway:
        start = {iso: _start_costs(iso, args.samples, gateway.port, python) for iso in isolations}

    workers = args.workers or max(1, len(os.sched_getaffinity(0)))
    state = RunState()
    classifier = Classifier(None)
    classifier.identity()  # load the weights before the clock starts (bench_suite does the same)
    with tempfile.TemporaryDirectory() as cache:
        options = {
            "programs": [args.program],
            "characters": args.letters,
            "trials": args.trials,
            "workers": workers,
            **_run_options(cache, usable),
        }
        started = time.perf_counter()
        report = evaluate(["mock"], forge=WorldForge(), options=options, classifier=classifier, state=state)
        wall = time.perf_counter() - started
    items = len(parse_characters(args.letters)) * args.trials
    field = _field(args, workers, usable, classifier) if args.field_letters else None
    payload = {
        "benchmark": "submission trials (mock behind the gateway, bundled classifier)",
        "sandbox": detail if usable else f"unavailable: {detail}",
        "start_cost": start,
        "end_to_end": {
            "program": Path(args.program).name,
            "isolation": "bubblewrap" if usable else "process",
            "items": items,
            "workers": workers,
            "wall_seconds": round(wall, 3),
            "goal_seconds": 60,
            "meets_goal": wall < 60,
            "failed_trials": sum(
                n for n in (r.metrics.get("failed_trials") for r in report.results) if isinstance(n, int)
            ),
            "stages_seconds": {k: round(v, 3) for k, v in sorted(state.timings.items())},
            "result_digest": report.provenance.result_digest if report.provenance else None,
        },
        **({"field": field} if field is not None else {}),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": len(os.sched_getaffinity(0)),
        },  # fmt: skip
        "notes": "trial_seconds is the per-trial overhead of a warm host (copy, fork, import, clean-up); "
        "host_start_seconds is what a cold process per trial would cost instead.",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
