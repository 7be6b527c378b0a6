"""Executable checks of the two spec pages copied in ``tests/fixtures/seed-docs/``.

* The evaluation documentation page: each of its Python snippets is contained, line by line, in a
  Python block of ``docs/evaluation.md``, and those blocks run and print what the page promises
  (report keys, provenance envelope fields, failure-gallery payload). Each of its ``uv run``
  commands appears in ``docs/evaluation.md`` and runs in a scratch checkout (``uv run`` only picks
  the environment, so the test runs the command with this interpreter) with the stated report
  fields, run-workspace layout, dataset references, failure gallery and bundle contents.
* The competition's evaluation rules: the suite's defaults are the evaluation set (26 letters x 10
  trials), and the scoring policy, restated independently below from the formulas, reproduces the
  suite's per-model prompt scores, totals over models and normalised scores from the run's records.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from worldforge import WorldForge, WorldForgeError
from worldforge.evaluation import EvaluationContext, EvaluationResult, EvaluationScenario, EvaluationSuite

ROOT = Path(__file__).resolve().parents[1]
SEEDS = Path(__file__).parent / "fixtures" / "seed-docs"
EVAL_SEED = SEEDS / "evaluation-docs.txt"
PCG_SEED = SEEDS / "pcg-competition-evaluation.txt"
DOC = ROOT / "docs" / "evaluation.md"

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
UTC_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$")
ENVELOPE_FIELDS = {
    "schema_version",
    "kind",
    "suite_id",
    "suite_version",
    "worldforge_version",
    "created_at",
    "command",
    "providers",
    "capabilities",
    "runtime_manifests",
    "dataset_manifests",
    "input_digest",
    "result_digest",
    "event_count",
    "claim_boundary",
    "metric_semantics",
    "notes",
}
REPORT_KEYS = {"suite_id", "suite", "claim_boundary", "metric_semantics", "provider_summaries", "results"}
PLANNING_SCENARIOS = ["object-relocation", "object-neighbor-placement", "object-swap", "object-spawn"]
# (first line, last line) of each Python snippet on the evaluation page.
SEED_SNIPPETS = [
    ("from worldforge.evaluation import EvaluationSuite", "print(report.to_json())"),
    (
        "from worldforge.evaluation import EvaluationContext, EvaluationScenario, EvaluationSuite",
        'print(report.artifacts()["failure_gallery.json"])',
    ),
]


# ------------------------------------------------------------------------------------- parsing


def _seed_lines(path: Path) -> list[str]:
    """The page's lines without the provenance line the fixture starts with."""
    return path.read_text(encoding="utf-8").splitlines()[1:]


def _seed_snippet(first: str, last: str) -> list[str]:
    lines = [line.strip() for line in _seed_lines(EVAL_SEED)]
    start = lines.index(first)
    end = lines.index(last, start)
    return [line for line in lines[start : end + 1] if line]


def _seed_commands() -> list[str]:
    """Every ``uv run`` command of the page, continuation lines joined, in page order."""
    commands: list[str] = []
    lines = _seed_lines(EVAL_SEED)
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if line.startswith("uv run "):
            while line.endswith("\\"):
                index += 1
                line = line[:-1].rstrip() + " " + lines[index].strip()
            commands.append(line)
        index += 1
    return commands


def _doc_blocks(lang: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S) if m.group(1) == lang]


def _doc_commands() -> list[str]:
    commands: list[str] = []
    for block in _doc_blocks("bash"):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [
            " ".join(line.split()) for line in joined.splitlines() if line.strip().startswith("uv run ")
        ]
    return commands


def _contains_in_order(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(line == other for other in it) for line in needle)


def test_seed_fixtures_are_the_pages() -> None:
    """The copies carry a provenance line and the pages' own headings."""
    assert _seed_lines(EVAL_SEED)[0] == "Evaluation¶"
    assert _seed_lines(PCG_SEED)[0] == "Evaluation"
    assert len(_seed_commands()) == 8


# ------------------------------------------------------------------------------ Python snippets


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run with the current directory in a scratch folder (worlds and workspaces land there)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_docs_contain_every_seed_python_snippet() -> None:
    blocks = [
        [line.strip() for line in block.splitlines() if line.strip()] for block in _doc_blocks("python")
    ]
    for first, last in SEED_SNIPPETS:
        snippet = _seed_snippet(first, last)
        assert any(_contains_in_order(snippet, block) for block in blocks), first


def test_docs_python_blocks_run_and_print_the_promised_values(in_tmp: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "evaluation_docs"}
    outputs: list[str] = []
    for block in _doc_blocks("python"):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the page's own code
        outputs.append(buffer.getvalue())
    assert outputs[0] == ""  # the forge setup block prints nothing

    passed, report_json = outputs[1].split("\n", 1)
    assert passed == "True"
    report = json.loads(report_json)
    assert set(report) == REPORT_KEYS | {"provenance"}  # no failure_gallery: every scenario passed
    assert [r["scenario"] for r in report["results"]] == PLANNING_SCENARIOS
    prov = report["provenance"]
    assert set(prov) == ENVELOPE_FIELDS
    assert prov["schema_version"] == 2 and prov["kind"] == "evaluation"
    assert (prov["suite_id"], prov["suite_version"]) == ("planning", "evaluation:1")
    assert prov["command"] == [] and prov["providers"] == ["mock"] and "score" in prov["capabilities"]
    assert DIGEST.match(prov["input_digest"]) and DIGEST.match(prov["result_digest"])
    assert UTC_ISO.match(prov["created_at"]) and prov["event_count"] > 0
    assert prov["claim_boundary"] == report["claim_boundary"]
    assert prov["metric_semantics"] == report["metric_semantics"]
    assert prov["runtime_manifests"]["mock"]["deterministic"] is True

    version, gallery_json = outputs[2].split("\n", 1)
    assert version == "custom-empty-world:1"
    gallery = json.loads(gallery_json)
    assert gallery["case_count"] == 0 and gallery["cases"] == [] and gallery["schema_version"] == 1
    assert gallery["suite_id"] == "custom-empty-world"
    assert gallery["claim_boundary"] == (
        "This custom suite is a deterministic checkout example, not a model-quality claim."
    )
    custom = namespace["report"]
    assert custom.results[0].metrics == {"object_count": 0} and custom.results[0].passed is True
    assert set(custom.artifacts()) == {
        "json",
        "markdown",
        "csv",
        "html",
        "failure_gallery.json",
        "failure_gallery.md",
    }


def _one_scenario_suite(evaluator: Any) -> EvaluationSuite:
    return EvaluationSuite.custom(
        suite_id="seed-contract",
        name="Seed contract",
        suite_version="seed-contract:1",
        claim_boundary="Test suite; no claim.",
        scenarios=[EvaluationScenario.from_callable(name="s", description="d", evaluator=evaluator)],
    )


def _result(context: EvaluationContext) -> EvaluationResult:
    return EvaluationResult(
        suite_id="seed-contract",
        suite="Seed contract",
        scenario="s",
        provider="mock",
        score=0.7,
        passed=False,
        metrics={"b": 2},
    )


@pytest.mark.parametrize(
    ("evaluator", "expected"),
    [
        (lambda c: {"score": 0.5, "passed": True, "metrics": {"a": 1}}, (0.5, True, {"a": 1})),
        (_result, (0.7, False, {"b": 2})),
    ],
    ids=["json-object", "evaluation-result"],
)
def test_evaluator_may_return_a_json_object_or_a_result(in_tmp: Path, evaluator: Any, expected: Any) -> None:
    result = _one_scenario_suite(evaluator).run_report("mock", forge=WorldForge()).results[0]
    assert (result.score, result.passed, result.metrics) == expected


@pytest.mark.parametrize(
    ("evaluator", "message"),
    [
        (lambda c: c.outcome(score=1.0, passed=True, metrics={"t": (1, 2)}), "tuple"),
        (lambda c: c.outcome(score=1.0, passed=True, metrics={"o": object()}), "object"),
        (lambda c: c.outcome(score=1.0, passed=True, metrics={"n": math.nan}), "non-finite"),
        (lambda c: c.outcome(score=1.0, passed=True, metrics={1: 2}), "must be a string"),
        (lambda c: c.outcome(score=1.5, passed=True, metrics={}), "in [0, 1]"),
        (lambda c: c.outcome(score=1.0, passed=1, metrics={}), "bool"),
        (lambda c: {"score": 0.5, "passed": True, "metrics": {"a": {"b": [(1,)]}}}, "metrics.a.b[0]"),
        (lambda c: (0.5, True, {}), "returned tuple"),
    ],
    ids=["tuple", "object", "nan", "key", "range", "passed", "nested", "tuple-return"],
)
def test_evaluator_values_that_raise_worldforge_error(in_tmp: Path, evaluator: Any, message: str) -> None:
    with pytest.raises(WorldForgeError, match=re.escape(message)):
        _one_scenario_suite(evaluator).run_report("mock", forge=WorldForge())


def test_failed_scenarios_add_a_sanitized_failure_gallery(in_tmp: Path) -> None:
    def failing(context: EvaluationContext) -> Any:
        return context.outcome(
            score=0.25,
            passed=False,
            metrics={
                "api_key": "sk-example-not-a-real-key-000000000000",
                "url": "https://storage.example.com/a.bin?X-Amz-Signature=abc123",
                "path": "/home/someone/cache/run.json",
                "tensor": [[1.0, 2.0], [3.0, 4.0]],
            },
        )

    report = _one_scenario_suite(failing).run_report("mock", forge=WorldForge())
    payload = json.loads(report.to_json())
    assert set(payload) == REPORT_KEYS | {"provenance", "failure_gallery"}
    assert "Failure Gallery" in report.to_markdown()
    artifacts = report.artifacts()
    (case,) = json.loads(artifacts["failure_gallery.json"])["cases"]
    assert case["fixture_id"] == "evaluation:seed-contract:s"
    assert (case["provider"], case["scenario"], case["score"]) == ("mock", "s", 0.25)
    assert case["expected_contract_notes"] and case["observed_result"] and case["triage_steps"]
    preview = json.dumps(case["metrics_preview"])
    for raw in ("sk-example-not-a-real-key", "abc123", "/home/someone"):
        assert raw not in preview and raw not in artifacts["failure_gallery.md"]
    assert case["metrics_preview"]["tensor"]["shape"] == [2, 2]
    assert "evaluation:seed-contract:s" in artifacts["failure_gallery.md"]


def test_historical_reports_without_provenance_still_render(in_tmp: Path) -> None:
    from worldforge.reports import render_report

    report = EvaluationSuite.from_builtin("physics").run_report("mock", forge=WorldForge())
    payload = report.to_dict()
    old = {k: v for k, v in payload.items() if k != "provenance"}
    for fmt in ("markdown", "json", "csv", "html"):
        assert render_report(old, fmt)
    csv_lines = report.to_csv().splitlines()
    assert render_report(old, "csv") == report.to_csv()  # the envelope never reaches the CSV
    assert csv_lines[0] == "suite_id,suite,provider,scenario,score,passed,metrics_json"
    assert len(csv_lines) == 1 + len(report.results)


def test_capability_checks(in_tmp: Path) -> None:
    physics = EvaluationSuite.from_builtin("physics")
    planning = EvaluationSuite.from_builtin("planning")
    assert list(physics.required_capabilities) == ["predict"]
    assert "score" in planning.required_capabilities
    for suite in (physics, planning):
        with pytest.raises(WorldForgeError, match="cannot run evaluation suite"):
            suite.run_report(["ollama:qwen2.5"], forge=WorldForge())


def test_dataset_manifest_rules() -> None:
    from worldforge.datasets import validate_manifest

    base = json.loads((ROOT / "examples/dataset-manifests/mock-evaluation-fixtures.json").read_text())
    assert validate_manifest(base, root=ROOT)["schema_version"] == 1

    def check(mutate: Any, message: str) -> None:
        data = json.loads(json.dumps(base))
        mutate(data)
        with pytest.raises(WorldForgeError, match=re.escape(message)):
            validate_manifest(data, source="m.json", root=ROOT)

    def add(entry: dict[str, Any]) -> Any:
        return lambda d: d["entries"].append({"id": "extra", "description": "x", **entry})

    check(lambda d: d.update(schema_version=2), "$.schema_version")
    check(lambda d: d["entries"][0].update(sha256="sha256:" + "0" * 64), "does not match local fixture")
    check(lambda d: d["entries"][0].update(path="../outside.json"), "repository-relative")
    check(lambda d: d["entries"][0].update(path="/etc/hosts"), "repository-relative")
    signed = "https://example.com/a.bin?X-Amz-Signature=abc"
    check(add({"kind": "remote-reference", "uri": signed, "sha256": "sha256:" + "a" * 64}), "uri")
    plain = "http://example.com/a.bin"
    check(add({"kind": "remote-reference", "uri": plain, "sha256": "sha256:" + "a" * 64}), "uri")
    check(add({"kind": "host-asset", "asset_id": "ckpt-1"}), "acquisition_steps")
    check(
        add({"kind": "host-asset", "asset_id": "/home/me/ckpt.bin", "acquisition_steps": ["a"]}), "asset_id"
    )


# ------------------------------------------------------------------------------------ commands


def test_docs_contain_every_seed_command() -> None:
    documented = _doc_commands()
    for command in _seed_commands():
        assert command in documented, command


def _scratch_checkout(root: Path) -> Path:
    """The files the page's commands read from a checkout (examples, scripts, manifests, presets)."""
    root.mkdir()
    for name in ("examples", "scripts", "dataset-manifests", "presets"):
        if (ROOT / name).is_dir():  # presets may be a link to the packaged presets
            shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A page command without its ``uv run`` prefix, with this interpreter."""
    words = command.split()
    assert words[:2] == ["uv", "run"], command
    words = words[2:]
    argv = [sys.executable, *words[1:]] if words[0] == "python" else [sys.executable, "-m", *words]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("WORLDFORGE_PRESETS", None)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _runs(workspace: Path) -> dict[str, dict[str, Any]]:
    return {
        d.name: json.loads((d / "run_manifest.json").read_text())
        for d in sorted((workspace / "runs").iterdir())
        if (d / "run_manifest.json").is_file()
    }


@pytest.mark.slow
def test_seed_commands_run_in_a_scratch_checkout(tmp_path: Path) -> None:
    checkout = _scratch_checkout(tmp_path / "checkout")
    ws = checkout / ".worldforge"
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    for command in _seed_commands():
        if "<run-id>" in command:
            (eval_id,) = [rid for rid, m in _runs(ws).items() if m["kind"] == "evaluation"]
            command = command.replace("<run-id>", eval_id)
        result = _run(command, checkout)
        assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        done[command] = result

    # Demo walkthrough: every artifact, one controlled failure in a sanitized gallery.
    demo = checkout / ".worldforge" / "demo-showcases" / "custom-evaluation-suite"
    for name in ("report.json", "report.md", "report.csv", "report.html", "failure_gallery.json"):
        assert (demo / name).is_file(), name
    assert (demo / "failure_gallery.md").is_file() and (demo / "walkthrough-summary.json").is_file()
    gallery = json.loads((demo / "failure_gallery.json").read_text())
    assert gallery["case_count"] == 1
    assert "sk-example" not in (demo / "failure_gallery.json").read_text()

    # Physics report in Markdown: provenance, provider summary, scenario table, claim boundary.
    physics = done["uv run worldforge eval --suite physics --provider mock"].stdout
    for heading in ("## Provenance", "## Provider Summary", "## Scenario Results", "Claim boundary:"):
        assert heading in physics
    assert "prediction-determinism" in physics and "action-response" in physics

    # Planning JSON: the documented keys and the envelope with the CLI argv.
    planning = json.loads(
        done["uv run worldforge eval --suite planning --provider mock --format json"].stdout
    )
    assert set(planning) == REPORT_KEYS | {"provenance"}
    assert set(planning["provenance"]) == ENVELOPE_FIELDS
    argv = planning["provenance"]["command"]
    assert argv[1:] == ["eval", "--suite", "planning", "--provider", "mock", "--format", "json"]

    # Dataset manifest: a compact reference with a safe repository path, no entries.
    (cited,) = [c for c in done if "--dataset-manifest" in c]
    (ref,) = json.loads(done[cited].stdout)["provenance"]["dataset_manifests"]
    assert ref["id"] == "mock-evaluation-fixtures" and DIGEST.match(ref["sha256"])
    assert ref["path"] == "examples/dataset-manifests/mock-evaluation-fixtures.json"
    assert ref["entry_count"] == 2 and ref["license"] and ref["privacy"] and ref["safety"]
    assert "entries" not in ref

    # Run workspace layout: manifest, JSON/Markdown/CSV reports and a result summary.
    runs = _runs(ws)
    assert sorted(m["kind"] for m in runs.values()) == ["benchmark", "evaluation"]
    (eval_id,) = [rid for rid, m in runs.items() if m["kind"] == "evaluation"]
    run_dir = ws / "runs" / eval_id
    for rel in ("run_manifest.json", "events.jsonl", "results/summary.json", "results/result.json"):
        assert (run_dir / rel).is_file(), rel
    for ext in ("json", "md", "csv", "html"):
        assert (run_dir / "reports" / f"report.{ext}").is_file(), ext

    # Issue bundle of one run: issue.md beside the manifest and summary; the printed template.
    (bundled,) = [c for c in done if "runs bundle" in c]
    issue = done[bundled].stdout
    for section in ("### Command", "### Expected signal", "### Observed failure"):
        assert section in issue
    assert "### Safe-to-attach notes" in issue and "### First triage step" in issue
    issue_dir = ws / "issue-bundles" / eval_id
    for name in ("issue.md", "evidence_manifest.json", "summary.md"):
        assert (issue_dir / name).is_file(), name

    # Evidence bundle of every run under evidence-bundles/<timestamp>/.
    (bundle_dir,) = list((ws / "evidence-bundles").iterdir())
    assert re.fullmatch(r"\d{8}T\d{6}Z", bundle_dir.name)
    manifest = json.loads((bundle_dir / "evidence_manifest.json").read_text())
    files = {f["path"]: f for f in manifest["files"]}
    (bench_id,) = [rid for rid, m in runs.items() if m["kind"] == "benchmark"]
    for rid in (eval_id, bench_id):
        for rel in ("run_manifest.json", "events.jsonl", "reports/report.json"):
            record = files[f"runs/{rid}/{rel}"]
            assert record["included"] and record["safe_to_attach"] and DIGEST.match(record["sha256"])
        lock = files[f"runs/{rid}/.lock"]
        assert not lock["included"] and not lock["safe_to_attach"] and "local-only" in lock["reason"]
    preset = files[f"inputs/{bench_id}/mock-smoke.yaml"]
    budget = files[f"budgets/{bench_id}/mock-smoke.budget.json"]
    assert (
        preset["included"] and budget["included"] and (preset["kind"], budget["kind"]) == ("preset", "budget")
    )
    budget_payload = json.loads((bundle_dir / budget["path"]).read_text())
    assert budget_payload["budget"] == runs[bench_id]["config"]["preset"]["budget"]
    (scene,) = manifest["fixture_digests"]
    scene_path = "dataset-manifests/fixtures/mock-evaluation/cube-on-table.json"
    assert (scene["run_id"], scene["name"], scene["path"]) == (bench_id, "scene", scene_path)
    assert scene["bundled_as"] == f"inputs/{scene_path}" and files[scene["bundled_as"]]["included"]
    assert scene["sha256"] == files[scene["bundled_as"]]["source_sha256"]

    # The bundled preset reruns the benchmark to the same result digest.
    bundled_preset = bundle_dir / preset["path"]
    rerun = _run(f"uv run worldforge benchmark --preset {bundled_preset} --run-workspace rerun", checkout)
    assert rerun.returncode == 0, rerun.stderr
    (again,) = _runs(checkout / "rerun").values()
    assert again["result_digest"] == runs[bench_id]["result_digest"]


def test_bundle_lists_a_changed_input_fixture_as_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldforge.evidence.bundle import build_bundle, verify_bundle_dir
    from worldforge.workspace import start_run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixture.json").write_text('{"scene": 1}\n')
    with start_run(tmp_path / "ws", kind="evaluation", argv=["test"], config={}) as run:
        run.add_input_file("scene", "fixture.json")
        run.complete({"ok": True}, claim_boundary="test")
    (tmp_path / "fixture.json").write_text('{"scene": 2}\n')
    result = build_bundle(tmp_path / "ws", [run.run_id], tmp_path / "bundle")
    record = {f["path"]: f for f in result.manifest["files"]}["inputs/fixture.json"]
    assert not record["included"] and "changed since run" in record["reason"]
    (fixture,) = result.manifest["fixture_digests"]
    assert fixture["bundled_as"] is None and fixture["path"] == "fixture.json"
    assert verify_bundle_dir(result.output_dir).ok


# --------------------------------------------------------------------- competition evaluation


def test_suite_defaults_are_the_competition_evaluation_set(in_tmp: Path) -> None:
    from worldforge.suites.science_birds.config import SuiteConfig

    text = "\n".join(_seed_lines(PCG_SEED))
    assert "10 trials for each of the 26 uppercase letters" in text
    letters_line = next(line for line in _seed_lines(PCG_SEED) if line.startswith("$A \\ B"))
    letters = tuple(re.findall(r"[A-Z]", letters_line))
    config = SuiteConfig.from_options({})
    assert config.letters == letters == tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert config.trials == 10


def _cosine_distance(u: list[float], v: list[float]) -> float:
    dot = sum(a * b for a, b in zip(u, v, strict=True))
    return 1.0 - dot / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))


def _seed_scores(
    records: list[dict[str, Any]], models: list[str], programs: list[str], letters: str, trials: int
) -> dict[str, Any]:
    """The competition's scoring policy, term by term, from the item records."""
    cell = {(r["model"], r["program"], r["letter"], r["trial"]): r for r in records}
    n_prog, n_char = len(programs), len(letters)
    prompt: dict[tuple[str, str], float] = {}
    for m in models:
        sta = {key[1:]: 0.0 for key in cell if key[0] == m}
        sim = dict(sta)
        div: dict[tuple[str, str], float] = {}
        for (model, k, j, i), r in cell.items():
            if model != m or r["status"] != "ok":
                continue
            blocks = r["stability"]
            # sta = (total_blocks - moving_blocks) / total_blocks, in [0, 1]
            sta[(k, j, i)] = (blocks["total_blocks"] - blocks["moving_blocks"]) / blocks["total_blocks"]
            # sim = softmax probability of the target letter j
            sim[(k, j, i)] = r["softmax"][ord(j) - ord("A")]
        for k, j in itertools.product(programs, letters):
            vectors = [
                cell[(m, k, j, i)]["softmax"]
                for i in range(1, trials + 1)
                if cell[(m, k, j, i)]["status"] == "ok"
            ]
            pairs = itertools.combinations(vectors, 2)
            div[(k, j)] = sum(_cosine_distance(a, b) for a, b in pairs) / (
                0.5 * trials * (trials + 1) - trials
            )
        for k in programs:
            chars = []
            for j in letters:
                t_sum = [(kk, i) for kk in programs for i in range(1, trials + 1)]
                w_sta = max(1 - sum(sta[(kk, j, i)] for kk, i in t_sum) / (n_prog * trials), 1 / n_char)
                w_sim = max(1 - sum(sim[(kk, j, i)] for kk, i in t_sum) / (n_prog * trials), 1 / n_char)
                w_div = max(1 - sum(div[(kk, j)] for kk in programs) / n_prog, 1 / n_char)
                weight = w_sta * w_sim * w_div
                trial_scores = [weight * sta[(k, j, i)] * sim[(k, j, i)] for i in range(1, trials + 1)]
                chars.append(div[(k, j)] * sum(trial_scores) / trials)
            prompt[(m, k)] = sum(chars) / n_char
    total = {k: sum(prompt[(m, k)] for m in models) for k in programs}
    competition = sum(total.values())
    return {"prompt": prompt, "total": total, "norm": {k: 100 * total[k] / competition for k in programs}}


def test_scoring_policy_restated_from_records(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    models, letters, trials = ["mock:qwen", "mock:gemma"], "AC", 3
    argv = ["eval", "--suite", "science-birds", "--characters", ",".join(letters), "--trials", str(trials)]
    for model in models:
        argv += ["--provider", model]
    argv += ["--workers", "1", "--run-workspace", "ws", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "worldforge", *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    (run_dir,) = list((tmp_path / "ws" / "runs").iterdir())
    records = [json.loads(p.read_text())["record"] for p in sorted((run_dir / "items").glob("*.json"))]
    programs = sorted({r["program"] for r in records})
    assert programs == ["zero-shot", "zero-shot-multi-turn"]
    assert len(records) == len(models) * len(programs) * len(letters) * trials
    for r in records:
        assert 0.0 <= r["sta"] <= 1.0 and 0.0 <= r["sim"] <= 1.0
        blocks = r["stability"]
        assert r["sta"] == pytest.approx(
            (blocks["total_blocks"] - blocks["moving_blocks"]) / blocks["total_blocks"]
        )
        assert r["sim"] == r["softmax"][ord(r["letter"]) - ord("A")]

    expected = _seed_scores(records, models, programs, letters, trials)
    for result in report["results"]:
        model, program, metrics = result["provider"], result["scenario"], result["metrics"]
        assert result["score"] == pytest.approx(expected["prompt"][(model, program)], rel=1e-9, abs=1e-15)
        assert metrics["total_prompt_score"] == pytest.approx(expected["total"][program], rel=1e-9)
        assert metrics["normalized_total"] == pytest.approx(expected["norm"][program], rel=1e-9)
    assert sum(expected["norm"].values()) == pytest.approx(100.0)

    # Ranking: highest normalised total first; the winner is compared with the zero-shot baseline.
    rows = report["sections"]["ranking"]["rows"]
    assert [row["program"] for row in rows] == sorted(programs, key=lambda p: -expected["norm"][p])
    winner = report["sections"]["winner"]
    top = max(programs, key=lambda p: expected["norm"][p])
    beats = expected["total"][top] > expected["total"]["zero-shot"]
    assert winner["winner_beats_zero_shot_baseline"] is beats
    if beats:
        assert winner["winners"] == top
    else:
        assert winner["winners"] == f"none (top program {top} does not overcome the zero-shot baseline)"

    # Similarity images: black blocks on a white background.
    from PIL import Image

    image = Image.open(run_dir / records[0]["image"]["path"]).convert("L")
    histogram = image.histogram()
    assert histogram[0] > 0 and histogram[255] > 0 and sum(histogram[1:255]) == 0
    assert image.getpixel((0, 0)) == 255


def test_ranking_policy_ties_go_to_the_shortest_prompt_then_co_winners() -> None:
    from worldforge.pcg.scoring.scores import rank_programs

    lengths = {"a": 120, "b": 90, "c": 90, "baseline_zero_shot": 50}
    shortest = rank_programs([("a", 40.0), ("b", 40.0), ("baseline_zero_shot", 20.0)], prompt_lengths=lengths)
    assert shortest.winners == ("b",) and shortest.decided_by == "shortest-prompt"
    assert shortest.beats_zero_shot is True
    co = rank_programs([("b", 40.0), ("c", 40.0), ("baseline_zero_shot", 20.0)], prompt_lengths=lengths)
    assert co.winners == ("b", "c") and co.decided_by == "co-winners"
    weak = rank_programs([("a", 10.0), ("baseline_zero_shot", 90.0)], prompt_lengths=lengths)
    assert weak.beats_zero_shot is False  # the top program does not overcome the zero-shot baseline
    assert weak.winners == () and weak.leaders == ("a",) and weak.decided_by == "below-zero-shot"
