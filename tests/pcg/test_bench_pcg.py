"""scripts/bench_pcg.py: the corpus the documented figures were measured on, and the JSON it writes.

The figures in docs/performance.md are only comparable across commits while the corpus stays the
same; the corpus comes from :mod:`worldforge.pcg.levels.glyphs`, so a change there must show up here (and
the documented figures be re-measured) rather than silently shifting the benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import bench_pcg  # noqa: E402

from worldforge.core.digests import digest_payload  # noqa: E402
from worldforge.pcg.levels.convert import convert  # noqa: E402


def test_corpus_is_the_documented_reference_corpus() -> None:
    corpus = bench_pcg.build_corpus()
    assert len(corpus) == 300
    assert digest_payload(corpus) == bench_pcg.REFERENCE_CORPUS_DIGEST
    documented = json.loads((REPO / "docs" / "bench_pcg.json").read_text())
    assert documented["corpus"]["digest"] == bench_pcg.REFERENCE_CORPUS_DIGEST
    assert bench_pcg.REFERENCE_CORPUS_DIGEST in (REPO / "docs" / "performance.md").read_text()
    sizes = [p.count("\n") for p in corpus]
    assert min(sizes) >= 5 and max(sizes) <= 60
    assert all(convert(p) for p in corpus[:30])  # every program converts without an official error


def test_bench_pcg_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_pcg.py"), "--levels", "6", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(out.read_text())
    assert payload["corpus"]["levels"] == 6 and payload["corpus"]["matches_reference_corpus"] is False
    assert payload["corpus"]["settled_levels"] == 6
    per_core = payload["per_core"]
    assert per_core["levels_per_s_simulate_render"] > 0
    assert per_core["ms_per_level_simulate"] > 0 and per_core["ms_per_level_render"] > 0
    # the corpus prefix is deterministic: the same six levels every run
    assert payload["corpus"]["digest"] == digest_payload(bench_pcg.build_corpus(6))


def test_bench_pcg_stages_times_the_ranking_uncertainty(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    script = REPO / "scripts" / "bench_pcg_stages.py"
    done = subprocess.run(
        [sys.executable, str(script), "--uncertainty-only", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    timing = json.loads(out.read_text())["ranking_uncertainty"]
    shape = (timing["programs"], timing["letters"], timing["models"], timing["resamples"])
    assert shape == (10, 26, 3, 10_000)
    # The goal is 1 s; a shared test machine gets five times that before this flags a regression.
    assert 0 < timing["seconds_median"] < 5.0
