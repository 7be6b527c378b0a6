"""scripts/bench_workspace.py writes the documented JSON (small sizes here; the full-size numbers are
produced by running the script itself)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_workspace_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "bench_workspace.py"),
            "--repeats",
            "1",
            "--files",
            "60",
            "--output",
            str(out),
            "--dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    payload = json.loads(out.read_text())
    assert payload == json.loads(done.stdout)
    assert payload["schema_version"] == 1
    checks = {c["name"]: c for c in payload["checks"]}
    assert set(checks) == {
        "run_workspace_overhead_planning",
        "bundle_5000_file_run",
        "verify_5000_file_bundle",
        "attest_5000_file_bundle",
    }
    overhead = checks["run_workspace_overhead_planning"]
    assert overhead["budget"] == 10.0 and overhead["detail"]["estimator"].startswith("median of paired")
    assert overhead["detail"]["repeats"] == 1 and "best_of_n_overhead_percent" in overhead["detail"]
    assert payload["machine"]["workspace_location"] in ("system-temp", "other")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".wf-bench")]  # cleaned up
    assert (
        checks["bundle_5000_file_run"]["budget"] == 5.0 and checks["verify_5000_file_bundle"]["budget"] == 2.0
    )
    assert (
        checks["bundle_5000_file_run"]["detail"]["files"] == 60 + 6
    )  # items + manifest/events/result/.lock/.local
    assert checks["bundle_5000_file_run"]["passed"] and checks["verify_5000_file_bundle"]["passed"]
    attest = checks["attest_5000_file_bundle"]
    assert attest["budget"] == 1.0 and attest["passed"] and attest["detail"]["attest_run_in_place_s"] > 0
    assert payload["passed"] == all(c["passed"] for c in payload["checks"])
    assert done.returncode == (0 if payload["passed"] else 1)
