#!/usr/bin/env python3
"""Benchmark the recording model gateway: its cost per exchange and on the 780-item mock suite.

1. **Per exchange.** The mock answers letter requests (26 letters per round, a fresh trial seed per
   request, the zero-shot prompt); each request is timed as a direct ``forge.generate`` call and
   as a chat completion through the gateway (loopback HTTP, validation, policy, digests, sanitized
   recording), interleaved, both with the letter program already computed. Reported: the
   median added milliseconds, without a run and with a run's event log receiving every exchange.
   Goal: < 2 ms.
2. **Suite.** ``scripts/bench_suite.py``'s setup (3 mock models x 26 letters x 10 trials, the
   multi-turn baseline, bundled classifier, fresh stage caches) run directly (suite option
   ``gateway: False``) and through the gateway, alternating, after one untimed warm-up run;
   the medians are compared. Goal: within 10 %. About three minutes on 2 cores.

    python scripts/bench_gateway.py [--output docs/bench_gateway.json] [--rounds 40]
                                    [--suite-repeat 2] [--skip-suite] [--workers N]
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

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _exchange_overhead(rounds: int, run: Any = None) -> dict[str, Any]:
    from worldforge.forge import WorldForge
    from worldforge.gateway import Gateway
    from worldforge.pcg.programs.prompt import builtin_program

    program = builtin_program("zero-shot")
    forge = WorldForge()
    messages = {letter: [{"role": "user", "content": program.prompts_for(letter)[0]}] for letter in LETTERS}
    direct: list[float] = []
    through: list[float] = []
    with Gateway(forge, models=["mock"], run=run) as gateway:
        for index in range(rounds + 1):  # round 0 warms the connection and the prompts' sanitizing
            for letter in LETTERS:
                # A fresh trial seed per request: every reply is new to the gateway's recorder, as
                # in a real run; the letter program is computed once beforehand for both paths.
                seed = 1000 * index + LETTERS.index(letter)
                options = {"target_character": letter, "trial_seed": seed}
                forge.generate("mock", messages[letter], options)
                with gateway.trial(f"mock__bench__{letter}__{seed}", "mock", options=options, seed=seed) as s:
                    t0 = time.perf_counter()
                    forge.generate("mock", messages[letter], options)
                    t1 = time.perf_counter()
                    s.generate(messages[letter])
                    t2 = time.perf_counter()
                if index:
                    direct.append((t1 - t0) * 1000.0)
                    through.append((t2 - t1) * 1000.0)
    added = [b - a for a, b in zip(direct, through, strict=True)]
    return {
        "exchanges": len(direct),
        "direct_median_ms": round(statistics.median(direct), 4),
        "gateway_median_ms": round(statistics.median(through), 4),
        "added_median_ms": round(statistics.median(added), 4),
        "added_p90_ms": round(statistics.quantiles(added, n=10)[-1], 4),
        "goal_ms": 2.0,
        "meets_goal": statistics.median(added) < 2.0,
    }


def _suite_once(gateway: bool, workers: int, classifier: Any) -> tuple[float, str, dict[str, float]]:
    from worldforge.forge import WorldForge
    from worldforge.suites.science_birds.run import RunState
    from worldforge.suites.science_birds.suite import evaluate

    state = RunState()
    with tempfile.TemporaryDirectory() as cache:
        options = {
            "programs": ["zero-shot-multi-turn"],
            "characters": "A-Z",
            "trials": 10,
            "workers": workers,
            "progress": False,
            "cache_dir": cache,
            "gateway": gateway,
        }
        started = time.perf_counter()
        report = evaluate(
            ["mock:qwen", "mock:gemma", "mock:phi"],
            forge=WorldForge(),
            options=options,
            classifier=classifier,
            state=state,
        )
        wall = time.perf_counter() - started
    digest = report.provenance.result_digest if report.provenance else None
    return wall, str(digest), dict(state.timings)


def _suite(repeat: int, workers: int) -> dict[str, Any]:
    from worldforge.suites.science_birds.config import Classifier

    classifier = Classifier(None)
    classifier.identity()  # load the weights outside the timings
    walls: dict[str, list[float]] = {"direct": [], "gateway": []}
    generate: dict[str, list[float]] = {"direct": [], "gateway": []}
    digests: dict[str, set[str]] = {"direct": set(), "gateway": set()}
    order = ["direct", "gateway"]
    _suite_once(True, workers, classifier)  # untimed: the first run in a process pays warm-up costs
    for index in range(repeat):
        for mode in order if index % 2 == 0 else order[::-1]:
            wall, digest, timings = _suite_once(mode == "gateway", workers, classifier)
            walls[mode].append(wall)
            generate[mode].append(timings.get("generate", 0.0))
            digests[mode].add(digest)
    direct, through = statistics.median(walls["direct"]), statistics.median(walls["gateway"])
    ratio = through / direct
    return {
        "items": 780,
        "runs_per_mode": repeat,
        "workers": workers,
        "direct_wall_seconds": [round(w, 3) for w in walls["direct"]],
        "gateway_wall_seconds": [round(w, 3) for w in walls["gateway"]],
        "direct_generate_seconds": [round(w, 3) for w in generate["direct"]],
        "gateway_generate_seconds": [round(w, 3) for w in generate["gateway"]],
        "gateway_over_direct": round(ratio, 4),
        "goal_ratio": 1.10,
        "meets_goal": ratio <= 1.10,
        "same_result_digest": len(digests["direct"] | digests["gateway"]) == 1,
        "result_digest": sorted(digests["gateway"])[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "bench_gateway.json")
    parser.add_argument("--rounds", type=int, default=40, help="timed rounds of 26 requests")
    parser.add_argument("--suite-repeat", type=int, default=2, help="suite runs per mode")
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    workers = args.workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)

    from worldforge.workspace import start_run

    payload: dict[str, Any] = {"benchmark": "recording model gateway (mock behind it)"}
    payload["exchange"] = _exchange_overhead(args.rounds)
    with tempfile.TemporaryDirectory() as workspace:
        with start_run(workspace, kind="benchmark", argv=["bench_gateway"], config={}) as run:
            payload["exchange_with_event_log"] = _exchange_overhead(args.rounds, run)
            run.complete({"results": []})
    if not args.skip_suite:
        payload["suite"] = _suite(max(1, args.suite_repeat), max(1, workers))
    payload["machine"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    payload["notes"] = (
        "added_median_ms: median over interleaved requests of (gateway call - direct forge.generate call) "
        "for the same letter request; with_event_log: the gateway also appends each exchange to a run's "
        "events.jsonl. suite: wall seconds from the first reply to the report, stage caches fresh; "
        "direct = suite option gateway False (no exchanges recorded)."
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
