"""Benchmark the level pipeline: simulate + render on a fixed corpus of 300 valid programs.

The corpus is generated from a fixed seed so every machine measures the same levels: programs of 5
to 60 ``drop_block`` calls, like real replies: two thirds are letter-shaped programs A-Z (from
:mod:`worldforge.pcg.levels.glyphs` with its built-in bitmap font; mostly stable, like the published top
entries whose mean stability is 0.84-0.88), one third random drops over a column window (many
overhang and collapse, the expensive case: bodies stay awake for many steps). Every program
converts without an official error. The corpus digest is in the output.

Output: JSON with levels/s per core for ``simulate + render`` (image in memory) and for
``simulate + render + PNG encode`` (what the ``images`` stage writes), plus the corpus digest, the
stability distribution and the time split, so figures from different machines are comparable.
Per-core figures are levels per second of this process's CPU time (``time.process_time``), which
other load on a shared machine does not distort; ``--workers N`` adds a wall-clock pool figure.

    python scripts/bench_pcg.py --out bench_pcg.json [--levels 300] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SEED = 20240422
# Digest of the corpus the figures in docs/performance.md were measured on. The letter programs come
# from worldforge.pcg.levels.glyphs; if that algorithm changes, the corpus (and this flag) change too.
REFERENCE_CORPUS_DIGEST = "sha256:92cf22db8e62456374d121b1a79343a441d7b2595e7b30ef19e16cd2b7b4455f"
N_LEVELS = 300


def _letter(rng: random.Random, letter: str) -> list[tuple[str, int]]:
    """A letter-shaped program (built-in 5x7 bitmap font, so the corpus is the same everywhere)."""
    from worldforge.pcg.levels.glyphs import letter_program

    program = letter_program(letter, rng.randint(0, 10_000), "bitmap-5x7")
    calls = []
    for line in program.splitlines():
        token, slot = line[len("drop_block(") : -1].split(",")
        calls.append((token.strip("'\""), int(slot)))
    return calls


def _random_drops(rng: random.Random, n: int) -> list[tuple[str, int]]:
    lo = rng.randint(1, 6)
    hi = lo + rng.randint(max(3, n // 6), max(4, min(17, n // 3)))
    calls = []
    for _ in range(n):
        t = rng.choices(["b11", "b31", "b13"], weights=[3, 4, 3])[0]
        calls.append((t, rng.randint(max(lo, 1 if t == "b31" else 0), min(hi, 18 if t == "b31" else 19))))
    return calls


def build_corpus(n_levels: int = N_LEVELS, seed: int = SEED) -> list[str]:
    """Fixed corpus of valid programs (each converts; 5-60 blocks)."""
    from worldforge.core.errors import StageError
    from worldforge.pcg.levels.convert import convert

    rng = random.Random(seed)
    corpus: list[str] = []
    while len(corpus) < n_levels:
        if len(corpus) % 3 != 2:  # two thirds letters, one third random drops
            calls = _letter(rng, chr(65 + len(corpus) % 26))
            if not 5 <= len(calls) <= 60:
                continue
        else:
            calls = _random_drops(rng, rng.randint(5, 60))
        program = "".join(f"drop_block('{t}', {x})\n" for t, x in calls)
        try:
            convert(program)
        except StageError:
            continue
        corpus.append(program)
    return corpus


def _time_serial(xmls: list[str], png: bool) -> tuple[float, list[Any], float, float]:
    from worldforge.pcg.sim.physics import simulate
    from worldforge.pcg.sim.render import encode_png, render_array

    sim_s = render_s = 0.0
    results = []
    start = time.process_time()
    for xml in xmls:
        t0 = time.process_time()
        result = simulate(xml)
        t1 = time.process_time()
        arr = render_array(result)
        if png:
            encode_png(arr)
        t2 = time.process_time()
        sim_s += t1 - t0
        render_s += t2 - t1
        results.append(result)
    return time.process_time() - start, results, sim_s, render_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench_pcg.json"))
    parser.add_argument("--levels", type=int, default=N_LEVELS)
    parser.add_argument("--workers", type=int, default=0, help="also time the process pool (0 = skip)")
    args = parser.parse_args(argv)

    from worldforge.core.digests import digest_payload
    from worldforge.core.io import atomic_write_text
    from worldforge.pcg.levels.convert import convert
    from worldforge.pcg.sim.pipeline import run_batch

    corpus = build_corpus(args.levels)
    xmls = [convert(p) for p in corpus]
    blocks = [p.count("\n") for p in corpus]
    _time_serial(xmls[:5], png=True)  # warm-up: imports, allocator

    wall, results, sim_s, render_s = _time_serial(xmls, png=False)
    wall_png, _, _, render_png_s = _time_serial(xmls, png=True)
    stabilities = [r.stability for r in results]
    settled = sum(1 for r in results if r.settled_step is not None)
    payload: dict[str, Any] = {
        "benchmark": "pcg simulate+render",
        "corpus": {
            "levels": len(corpus),
            "seed": SEED,
            "digest": digest_payload(corpus),
            "matches_reference_corpus": digest_payload(corpus) == REFERENCE_CORPUS_DIGEST,
            "blocks_min": min(blocks),
            "blocks_max": max(blocks),
            "blocks_mean": round(statistics.fmean(blocks), 2),
            "settled_levels": settled,
            "mean_stability": round(statistics.fmean(stabilities), 4),
            "fully_stable_levels": sum(1 for s in stabilities if s == 1.0),
        },
        "per_core": {
            "levels_per_s_simulate_render": round(len(xmls) / wall, 1),
            "levels_per_s_simulate_render_png": round(len(xmls) / wall_png, 1),
            "ms_per_level_simulate": round(1000 * sim_s / len(xmls), 3),
            "ms_per_level_render": round(1000 * render_s / len(xmls), 3),
            "ms_per_level_render_png": round(1000 * render_png_s / len(xmls), 3),
        },
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "processor": platform.machine(),
        },
    }
    if args.workers > 0:
        t0 = time.perf_counter()  # wall clock: the work happens in child processes
        run_batch(corpus, kind="program", workers=args.workers)
        pool_wall = time.perf_counter() - t0
        payload["pool"] = {
            "workers": args.workers,
            "levels_per_s_wall_convert_simulate_render_png": round(len(corpus) / pool_wall, 1),
        }
    atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")
    print(json.dumps(payload["per_core"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
