"""Benchmark cold ``worldforge --help`` start-up and check heavy libraries stay out of it.

    python scripts/bench_cli.py [--runs N] [--output FILE]

Each run is a fresh interpreter process (``python -m worldforge --help``), so import time is
included. The goal is a median under 0.4 s. A second pass with ``-X importtime`` lists every
imported module and fails the check if torch, transformers or Box2D appear. Writes JSON (stdout or
``--output``); exit 1 when the goal or the import check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 0.4
FORBIDDEN = ("torch", "transformers", "Box2D", "ollama", "openai", "numpy", "PIL")
HEAVY_HARD = ("torch", "transformers", "Box2D")


def time_help(runs: int) -> list[float]:
    command = [sys.executable, "-m", "worldforge", "--help"]
    samples: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return samples


def imported_modules() -> list[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "worldforge", "--help"],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPROFILEIMPORTTIME="1"),
    )
    modules = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                modules.append(name)
    return modules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    time_help(1)  # warm the OS file cache; every measured run is still a fresh interpreter
    samples = time_help(args.runs)
    modules = imported_modules()
    roots = sorted({m.split(".")[0] for m in modules})
    heavy = [m for m in FORBIDDEN if m in roots]
    median = statistics.median(samples)
    payload = {
        "schema_version": 1,
        "command": "python -m worldforge --help",
        "runs": args.runs,
        "samples_s": [round(s, 4) for s in samples],
        "median_s": round(median, 4),
        "min_s": round(min(samples), 4),
        "max_s": round(max(samples), 4),
        "goal_s": GOAL_S,
        "module_count": len(modules),
        "heavy_modules_imported": heavy,
        "passed": median < GOAL_S and not any(m in heavy for m in HEAVY_HARD),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "claim_boundary": "Local start-up timing on this machine only; not a cross-machine claim.",
    }
    text = json.dumps(payload, indent=2, sort_keys=True) + "\n"
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0 if payload["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
