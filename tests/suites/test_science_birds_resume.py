"""Kill a science-birds run mid-way (SIGKILL), resume it, and get the uninterrupted result digest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    from tests.suites.test_science_birds import PixelClassifier
    from worldforge.suites.science_birds.run import Classifier, RunState
    from worldforge.suites.science_birds import suite as science_birds
    from worldforge.evaluation.suite import result_payload
    from worldforge.forge import WorldForge
    from worldforge.providers.mock import MockProvider
    from worldforge.workspace import start_run

    fake = PixelClassifier()
    Classifier.identity = lambda self: fake.identity()
    Classifier.classify = lambda self, pngs, embedding=True: fake.classify(pngs, embedding)

    class SlowMock(MockProvider):
        def generate(self, messages, *, options=None):
            if os.environ.get("SLOW"):
                time.sleep(0.15)
            return super().generate(messages, options=options)

    workspace, resume = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
    options = {"characters": "A-C", "trials": 3, "progress": False, "workers": 1, "chunk_size": 1}
    state = RunState()
    with start_run(workspace, kind="evaluation", argv=["worldforge", "eval"], config=options,
                   resume_run_id=resume) as run:
        forge = WorldForge(event_sinks=[run.event_sink])
        forge.register_provider("slowmock", lambda arg=None: SlowMock(""))
        report = science_birds.make_suite(options, state=state).run_report(
            ["slowmock"], forge=forge, run=run)
        digest = run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    print(json.dumps({"run_id": run.run_id, "result_digest": digest, "reused": state.reused,
                      "processed": state.processed}))
    """
)


def _python(script: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_kill_and_resume_gives_the_uninterrupted_digest(tmp_path: Path) -> None:
    script = tmp_path / "run_suite.py"
    script.write_text(SCRIPT, encoding="utf-8")

    reference = _finish(_python(script, str(tmp_path / "ws-ref")))
    assert reference["processed"] == 18 and reference["reused"] == 0

    killed_ws = tmp_path / "ws-kill"
    proc = _python(script, str(killed_ws), env={"SLOW": "1"})
    deadline = time.monotonic() + 120
    items: list[Path] = []
    while time.monotonic() < deadline:
        items = list(killed_ws.glob("runs/*/items/*.json"))
        if len(items) >= 5:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert 5 <= len(items) < 18, "the run was not killed mid-way"
    (run_dir,) = list((killed_ws / "runs").iterdir())
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "running" and manifest.get("result_digest") in (None, "")

    resumed = _finish(_python(script, str(killed_ws), run_dir.name))
    assert resumed["run_id"] == run_dir.name
    done_before = len(list((run_dir / "items").glob("*.json")))
    assert resumed["reused"] >= 5 and resumed["reused"] + resumed["processed"] == 18
    assert done_before == 18
    assert resumed["result_digest"] == reference["result_digest"]
    final = json.loads((run_dir / "run_manifest.json").read_text())
    assert final["status"] == "completed" and final["result_digest"] == reference["result_digest"]
