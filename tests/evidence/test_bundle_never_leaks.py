"""A real run with every planted form in every place a run keeps text; its bundles leak none of them.

The forms (``tests/leakforms.py``: the project's own, and one sample per rule of the adopted
gitleaks corpus) go into a custom suite's inputs (the suite file itself, which the
run records as an input), its metrics (so into item records, ``results/``, and the reports in all
four formats plus the failure gallery), an error raised by a scenario (event messages and error
lines), and an environment variable named like a secret (whose value is also planted). Both bundle
paths (``worldforge runs bundle`` and ``scripts/generate_evidence_bundle.py``) must then hold no
survivor in any file, file name, zip member or printed line, and still verify.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import urllib.parse
import zipfile
from pathlib import Path

import pytest

from tests.leakforms import CORPUS_FORMS, FORMS

PLANTED = FORMS + CORPUS_FORMS

ROOT = Path(__file__).resolve().parents[2]
ENV_SECRET = "envsecret-Zq81Lk27Wx93"
HOME_USER = "qa-homeowner"

SUITE = """
from worldforge.core.errors import ProviderError
from worldforge.evaluation import EvaluationScenario, EvaluationSuite

PLANTED = {planted!r}


def passing(context):
    return context.outcome(score=1.0, passed=True, metrics={{"planted": PLANTED, "note": PLANTED["f000"]}})


def failing(context):
    return context.outcome(score=0.0, passed=False, metrics=dict(PLANTED))


def raising(context):
    raise ProviderError("upstream said: " + " | ".join(PLANTED.values()))


def build_suite(options=None):
    return EvaluationSuite.custom(
        suite_id="planted-forms",
        name="Planted forms",
        suite_version="planted-forms:1",
        claim_boundary="A leak test, not a quality claim.",
        scenarios=[
            EvaluationScenario.from_callable(name="passing", description="d", evaluator=passing),
            EvaluationScenario.from_callable(name="failing", description="d", evaluator=failing),
            EvaluationScenario.from_callable(name="raising", description="d", evaluator=raising),
        ],
    )
"""


def _secrets() -> list[str]:
    found = [s for form in PLANTED for s in form.secrets] + [ENV_SECRET, HOME_USER]
    return sorted(set(found))


def _encodings(secret: str) -> set[str]:
    return {
        secret,
        html.escape(secret),
        json.dumps(secret)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
    }


def _survivors(blob: str, where: str) -> list[str]:
    return [f"{where}: {s!r}" for s in _secrets() if any(enc in blob for enc in _encodings(s))]


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    base = tmp_path_factory.mktemp("planted")
    home = base / "home" / HOME_USER
    home.mkdir(parents=True)
    work = base / "work"
    work.mkdir()
    planted = {f"f{i:03d}": form.text for i, form in enumerate(PLANTED)}
    planted["env"] = f"key in use: {ENV_SECRET}"
    planted["home"] = f"{home}/.cache/wf/state.json"
    (work / "planted_suite.py").write_text(SUITE.format(planted=planted), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{work}",
        "HOME": str(home),
        "WORLDFORGE_TEST_API_KEY": ENV_SECRET,
    }
    env.pop("WORLDFORGE_CONFIG", None)
    proc = _run(
        [
            sys.executable,
            "-m",
            "worldforge",
            "eval",
            "--suite",
            "planted_suite.py:build_suite",
            "--provider",
            "mock",
            "--run-workspace",
            "ws",
            "--format",
            "json",
        ],
        work,
        env,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    run_id = sorted((work / "ws" / "runs").iterdir())[-1].name
    return work, run_id, env


def _all_text(root: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        out.append((rel, rel))  # the name itself leaves the machine too
        out.append((rel, path.read_bytes().decode("utf-8", "replace")))
    return out


def test_planted_forms_reach_the_run(planted_run: tuple[Path, str, dict[str, str]]) -> None:
    """The test plants for real: the raw run holds the forms in reports, records and events."""
    work, run_id, _ = planted_run
    run_dir = work / "ws" / "runs" / run_id
    blob = "\n".join(text for _, text in _all_text(run_dir))
    reached = [form.id for form in PLANTED if any(enc in blob for s in form.secrets for enc in _encodings(s))]
    assert len(reached) >= len(PLANTED) // 2, "the planted suite did not reach the run's files"
    assert sum(form.id.startswith("gitleaks-") for form in PLANTED if form.id in reached) >= 200
    report_html = (run_dir / "reports" / "report.html").read_text(encoding="utf-8")
    assert html.escape(FORMS[1].secrets[0]) in report_html or FORMS[1].secrets[0] in report_html


def test_runs_bundle_leaks_nothing(planted_run: tuple[Path, str, dict[str, str]]) -> None:
    work, run_id, env = planted_run
    proc = _run(
        [
            sys.executable,
            "-m",
            "worldforge",
            "runs",
            "bundle",
            run_id,
            "-w",
            "ws",
            "--zip",
            "-o",
            "bundle",
            "--format",
            "json",
        ],
        work,
        env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    survivors = _survivors(proc.stdout, "stdout") + _survivors(proc.stderr, "stderr")
    for rel, text in _all_text(work / "bundle"):
        survivors += _survivors(text, rel)
    with zipfile.ZipFile(work / "bundle.zip") as archive:
        for name in archive.namelist():
            survivors += _survivors(name, f"zip name {name}")
            survivors += _survivors(archive.read(name).decode("utf-8", "replace"), f"zip {name}")
    assert not survivors, "\n".join(survivors[:20])
    manifest = json.loads((work / "bundle" / "evidence_manifest.json").read_text(encoding="utf-8"))
    assert manifest["safe_to_attach"] is True
    assert manifest["redaction_count"] > len(FORMS)
    # Reports were re-rendered from the sanitized payload, not scanned as rendered text.
    methods = {f["path"].rsplit("/", 1)[-1]: f.get("method") for f in manifest["files"]}
    assert methods["report.html"] == "re-rendered" and methods["report.csv"] == "re-rendered"
    verify = _run([sys.executable, "-m", "worldforge", "runs", "verify", "bundle.zip"], work, env)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]


def test_evidence_bundle_script_leaks_nothing(planted_run: tuple[Path, str, dict[str, str]]) -> None:
    work, _, env = planted_run
    proc = _run(
        [
            sys.executable,
            str(ROOT / "scripts" / "generate_evidence_bundle.py"),
            "--workspace-dir",
            "ws",
            "--output",
            "evidence",
            "--zip",
        ],
        work,
        env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    survivors = _survivors(proc.stdout, "stdout") + _survivors(proc.stderr, "stderr")
    for rel, text in _all_text(work / "evidence"):
        survivors += _survivors(text, rel)
    assert not survivors, "\n".join(survivors[:20])
