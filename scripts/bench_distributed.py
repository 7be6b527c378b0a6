"""Benchmark the Ray executor on this machine: the CPU stages of the level pipeline (simulate,
render, PNG) on one and on two Ray nodes, the scheduling overhead per item, and a projection to N
nodes from the measured serial fraction.

A real cluster is started on the loopback interface (``ray start --head`` and, for the second
measurement, a second node process; one CPU each), exactly as the tests do, and stopped at the
end. Work units are the folder stages' units (:func:`worldforge.pcg.sim.cache.run_physics_job`),
sent through :func:`worldforge.execution.ordered_map` in chunks, as ``pcg stage --executor ray``
sends them. Every configuration is warmed up (workers import Box2D and numpy once) and measured
``--repeats`` times; medians are reported, with the load average before each run, since other work
on a shared machine takes CPU from the nodes.

* ``serial_s``: the same units in this process, no Ray (the work itself);
* ``scheduling_overhead_ms_per_item``: wall time per no-op unit sent as its own task (submission,
  scheduling, serialization, result transfer: Ray's whole cost per task); with ``--chunk`` items
  per task it is shared by that many items (``..._chunked``);
* ``wall_difference_ms_per_item``: (one node's wall time - the serial time in this process) /
  items, for reference only: on a loaded machine the two runs do not get the same CPU share, so it
  can even be negative;
* ``serial_fraction``: Amdahl's ``s`` from the two-node speed-up ``S2 = T1/T2``: ``s = 2/S2 - 1``;
  ``projection`` gives ``1 / (s + (1 - s)/N)`` for more nodes of the same kind.

    python scripts/bench_distributed.py --out docs/bench_distributed.json [--levels 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _corpus(levels: int) -> list[str]:
    from worldforge.pcg.levels.convert import convert

    spec = importlib.util.spec_from_file_location("bench_pcg", ROOT / "scripts" / "bench_pcg.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [convert(p) for p in module.build_corpus(levels)]


def _noop(value: int) -> int:
    return value


def _timed(executor: Any, jobs: list[Any], chunk: int) -> tuple[float, list[Any]]:
    from worldforge.execution import ordered_map
    from worldforge.pcg.sim.cache import run_physics_job

    t0 = time.perf_counter()
    results = list(ordered_map(executor, run_physics_job, jobs, chunk=chunk))
    return time.perf_counter() - t0, results


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench_distributed.json"))
    parser.add_argument("--levels", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=8, help="items per Ray task")
    args = parser.parse_args(argv)

    import ray

    from tests.ray_cluster import LocalRayCluster
    from worldforge.core.digests import digest_payload
    from worldforge.core.io import atomic_write_text
    from worldforge.execution import auto_chunk, create_executor, ordered_map
    from worldforge.pcg.sim.cache import PhysicsJob, run_physics_job

    jobs = [PhysicsJob(xml, 1, render=True) for xml in _corpus(args.levels)]
    n = len(jobs)
    run_physics_job(jobs[0])  # warm this process
    serial: list[float] = []
    expected: str | None = None
    for _ in range(args.repeats):
        t, results = _timed(None, jobs, 1)
        serial.append(t)
        expected = digest_payload([[r.entry, (r.png or b"").hex()[:64]] for r in results])

    cluster = LocalRayCluster().start(workers=False)
    measured: dict[str, Any] = {}
    try:
        for nodes in (1, 2):
            if nodes == 2:
                cluster.add_worker()
            executor = create_executor("ray", nodes, address=cluster.address)
            try:
                cluster.wait_cpus(ray, nodes)
                chunk = args.chunk or auto_chunk(n, nodes)
                _timed(executor, jobs[: 8 * chunk * nodes], chunk)  # warm-up: workers import once
                walls: list[float] = []
                loads: list[list[float]] = []
                same = True
                for _ in range(args.repeats):
                    loads.append(_load())
                    wall, results = _timed(executor, jobs, chunk)
                    walls.append(wall)
                    digest = digest_payload([[r.entry, (r.png or b"").hex()[:64]] for r in results])
                    same = same and digest == expected
                tasks = 400
                list(ordered_map(executor, _noop, list(range(50)), chunk=1))
                t0 = time.perf_counter()
                list(ordered_map(executor, _noop, list(range(tasks)), chunk=1))
                per_task = (time.perf_counter() - t0) / tasks
                measured[str(nodes)] = {
                    "wall_s": [round(w, 3) for w in walls],
                    "wall_s_median": round(statistics.median(walls), 3),
                    "levels_per_s": round(n / statistics.median(walls), 1),
                    "load_before": loads,
                    "chunk": chunk,
                    "noop_task_ms": round(1000 * per_task, 3),
                    "results_identical_to_serial": same,
                    "units_per_node": dict(sorted(executor.nodes.items()))
                    if hasattr(executor, "nodes")
                    else {},
                }
            finally:
                executor.shutdown()
    finally:
        cluster.stop()
    t_serial = statistics.median(serial)
    t1 = measured["1"]["wall_s_median"]
    t2 = measured["2"]["wall_s_median"]
    speedup = t1 / t2
    fraction = min(1.0, max(0.0, 2.0 / speedup - 1.0))
    payload = {
        "benchmark": "Ray executor: level CPU stages (simulate + render + PNG) on 1 and 2 loopback nodes",
        "levels": n,
        "repeats": args.repeats,
        "serial_s": [round(s, 3) for s in serial],
        "serial_s_median": round(t_serial, 3),
        "serial_levels_per_s": round(n / t_serial, 1),
        "nodes": measured,
        "speedup_2_nodes": round(speedup, 3),
        "goal_speedup_2_nodes": 1.6,
        "scheduling_overhead_ms_per_item": measured["1"]["noop_task_ms"],
        "scheduling_overhead_ms_per_item_chunked": round(
            measured["1"]["noop_task_ms"] / measured["1"]["chunk"], 3
        ),
        "goal_overhead_ms_per_item": 5.0,
        "wall_difference_ms_per_item": round(1000 * (t1 - t_serial) / n, 3),
        "serial_fraction": round(fraction, 4),
        "projection": {
            str(k): round(1.0 / (fraction + (1.0 - fraction) / k), 2) for k in (1, 2, 4, 8, 16, 32, 64)
        },
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "ray": getattr(ray, "__version__", "?"),
        },
        "notes": "wall-clock medians; one CPU per node; nodes share this machine's cores with any other "
        "load (load_before: 1/5/15-minute load averages before each run).",
    }
    atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")
    keys = ("speedup_2_nodes", "scheduling_overhead_ms_per_item", "serial_fraction")
    print(json.dumps({k: payload[k] for k in keys}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
