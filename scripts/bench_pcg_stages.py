"""Benchmark the competition folder's physics stages through the CLI: ``pcg stage stability`` then
``pcg stage images`` on the 300-level corpus of ``scripts/bench_pcg.py``.

Each repeat lays the corpus out as a fresh competition folder (one team, letters A-Z as character
folders), then runs the two commands as separate processes, exactly as a user would. Per-core
figures divide the levels by the CPU time (user + system) of the command processes and all their
workers (``RUSAGE_CHILDREN``), which other load on a shared machine does not inflate the way it
inflates wall time; wall-clock figures are reported beside them. The digest of every output file is
compared across repeats (and, with ``--check-uncached``, with a run that simulates and renders in
one pass without the sidecar), so a speed-up can never change the official outputs.

The score stage's ranking uncertainty is timed on its own (``ranking_uncertainty`` in the JSON): 10
programs x 26 letters x 3 models scored from synthetic trials, then 10,000 letter draws with the
adjacent sign-flip tests; its goal is under 1 second. ``--uncertainty-only`` measures just that.

    python scripts/bench_pcg_stages.py --out docs/bench_pcg_stages.json [--levels 300]
        [--workers 2] [--repeats 3] [--uncertainty-only]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _bench_pcg() -> Any:
    spec = importlib.util.spec_from_file_location("bench_pcg", ROOT / "scripts" / "bench_pcg.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lay_out(folder: Path, xmls: list[str]) -> None:
    """``<folder>/bench/levels/<C>/<n>.xml`` with letters A-Z in turn (the official layout)."""
    for i, xml in enumerate(xmls):
        target = folder / "bench" / "levels" / chr(65 + i % 26) / f"{i // 26 + 1}.xml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(xml, encoding="utf-8")


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_stage(stage: str, folder: Path, workers: int, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its workers)."""
    cmd = [sys.executable, "-m", "worldforge", "pcg", "stage", stage, "--source", str(folder)]
    cmd += ["--workers", str(workers), *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cpu0, t0 = _cpu_children(), time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, _cpu_children() - cpu0


def outputs_digest(folder: Path) -> str:
    """Digest of every official output (stability JSON, images), by relative path."""
    from worldforge.core.digests import digest_file, digest_payload

    files = {
        p.relative_to(folder).as_posix(): digest_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ("/stability/" in p.as_posix() or "/images/" in p.as_posix())
    }
    return digest_payload(files)


def time_uncertainty(
    programs: int = 10, letters: int = 26, models: int = 3, resamples: int = 10_000, repeats: int = 5
) -> dict[str, Any]:
    """Seconds to compute the ranking uncertainty of a scored run (median of ``repeats``)."""
    import random

    from worldforge.pcg.letters import LETTERS
    from worldforge.pcg.scoring.scores import ProgramData, ranking_for, score_competition
    from worldforge.pcg.scoring.uncertainty import uncertainty_for

    rand = random.Random(0)
    chars = LETTERS[:letters]
    per_model = {}
    for m in range(models):
        data = []
        for k in range(programs):
            p = ProgramData(name=f"program{k}")
            for c in chars:
                p.stability[c] = [(f"{c}_{t}", rand.random()) for t in range(1, 11)]
                p.similarity[c] = [(f"{c}_{t}", rand.random() ** (k + 1)) for t in range(1, 11)]
                p.diversity[c] = rand.random()
            data.append(p)
        per_model[f"model{m}"] = score_competition(data, trials=10, characters=chars)
    ranking = ranking_for(per_model["model0"])
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        uncertainty_for(per_model, ranking, resamples=resamples)
        seconds.append(time.perf_counter() - t0)
    return {
        "programs": programs,
        "letters": letters,
        "models": models,
        "resamples": resamples,
        "seconds_median": round(statistics.median(seconds), 4),
        "goal_seconds": 1.0,
    }


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench_pcg_stages.json"))
    parser.add_argument("--levels", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check-uncached", action="store_true", help="also compare with a one-pass run")
    parser.add_argument("--uncertainty-only", action="store_true", help="time only the ranking uncertainty")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    from worldforge.core.io import atomic_write_text

    uncertainty = time_uncertainty()
    print(json.dumps({"ranking_uncertainty": uncertainty}), file=sys.stderr)
    if args.uncertainty_only:
        atomic_write_text(args.out, json.dumps({"ranking_uncertainty": uncertainty}, indent=2) + "\n")
        return 0

    from worldforge.pcg.levels.convert import convert

    bench = _bench_pcg()
    xmls = [convert(p) for p in bench.build_corpus(args.levels)]
    runs: list[dict[str, Any]] = []
    digests: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="wf-bench-stages-") as tmp:
        for _ in range(args.repeats):
            folder = Path(tmp) / "competition"
            shutil.rmtree(folder, ignore_errors=True)
            lay_out(folder, xmls)
            load = _load()
            s_wall, s_cpu = run_stage("stability", folder, args.workers, [])
            i_wall, i_cpu = run_stage("images", folder, args.workers, [])
            digests.add(outputs_digest(folder))
            runs.append(
                {
                    "load_before": load,
                    "stability_wall_s": round(s_wall, 3),
                    "stability_cpu_s": round(s_cpu, 3),
                    "images_wall_s": round(i_wall, 3),
                    "images_cpu_s": round(i_cpu, 3),
                    "levels_per_cpu_s": round(len(xmls) / (s_cpu + i_cpu), 1),
                    "levels_per_s_wall": round(len(xmls) / (s_wall + i_wall), 1),
                }
            )
            print(json.dumps(runs[-1]), file=sys.stderr)
        uncached = None
        if args.check_uncached:
            folder = Path(tmp) / "one-pass" / "competition"  # same name: tags carry the folder name
            lay_out(folder, xmls)
            run_stage("stability", folder, args.workers, [])
            shutil.rmtree(folder / ".worldforge-cache")  # images must simulate again, as before
            run_stage("images", folder, args.workers, [])
            uncached = outputs_digest(folder)
    per_core = statistics.median(r["levels_per_cpu_s"] for r in runs)
    payload = {
        "benchmark": "pcg stage stability + pcg stage images through the CLI",
        "levels": len(xmls),
        "workers": args.workers,
        "repeats": args.repeats,
        "levels_per_s_per_core_median": per_core,
        "levels_per_s_wall_median": statistics.median(r["levels_per_s_wall"] for r in runs),
        "goal_levels_per_s_per_core": 40,
        "outputs_digest": sorted(digests)[0] if len(digests) == 1 else sorted(digests),
        "outputs_identical_across_repeats": len(digests) == 1,
        "outputs_identical_to_simulating_twice": None if uncached is None else digests == {uncached},
        "runs": runs,
        "ranking_uncertainty": uncertainty,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "notes": "per core = levels / CPU seconds of both commands and their workers (start-up "
        "included); load_before = 1/5/15-minute load averages before each repeat.",
    }
    atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")
    print(json.dumps({k: payload[k] for k in ("levels_per_s_per_core_median", "outputs_digest")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
