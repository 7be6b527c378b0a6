"""The recording model gateway: its HTTP contract, the exchanges it records, and ``eval --replay``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.ollama_stub import OllamaStub
from tests.openai_stub import OpenAIStub
from tests.providers.test_openai_provider import _letter_reply
from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app
from worldforge.core.seeds import derive_seed
from worldforge.evaluation import EvaluationSuite
from worldforge.evaluation.suite import result_payload
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, TrialSession
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.providers.mock_letters import cap_words, letter_reply
from worldforge.workspace import start_run

pytestmark = pytest.mark.usefixtures("model_env_free")

runner = CliRunner()
SECRET = "sk-proj-Zq3J9x7LmP2vR8tY4wK6nB1cD5fH0gA9sE3uI7oQ"
HI = [{"role": "user", "content": "draw the letter"}]


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with Gateway(WorldForge(), models=["mock", "mock:v2"]) as gw:
        yield gw


def _http(url: str, body: Any = None, key: str | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _letter_trial(gw: Gateway, letter: str = "A", seed: int = 11, **policy: Any) -> Any:
    options = {"target_character": letter, "trial_seed": seed}
    return gw.trial(f"mock__p__{letter}__001", "mock", options=options, seed=seed, **policy)


# -- the HTTP contract -------------------------------------------------------------------------------


def test_models_and_chat_completions_with_n_and_usage(gateway: Gateway) -> None:
    status, listed = _http(f"{gateway.base_url}/models")
    assert status == 200 and [m["id"] for m in listed["data"]] == ["mock", "mock:v2"]
    with _letter_trial(gateway) as session:
        assert _http(f"{session.base_url}/models")[1]["data"][0]["id"] == "mock"  # the trial's model
        status, answer = _http(
            f"{session.base_url}/chat/completions", {"model": "mock", "messages": HI, "n": 2}
        )
    assert status == 200 and answer["object"] == "chat.completion"
    texts = [c["message"]["content"] for c in answer["choices"]]
    # choice 0 is the trial's own reply; the extra choice uses a seed derived from the trial seed
    assert texts == [letter_reply("A", 11), letter_reply("A", derive_seed("gateway-choice/v1", 11, 1))]
    assert [c["index"] for c in answer["choices"]] == [0, 1]
    usage = answer["usage"]
    assert usage["prompt_tokens"] == 2 * 3 and usage["completion_tokens"] == sum(
        len(t.split()) for t in texts
    )
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert answer["model"] == "mock-deterministic-v1"


def test_the_official_openai_client_talks_to_it(gateway: Gateway) -> None:
    openai = pytest.importorskip("openai")
    with _letter_trial(gateway, "L", 5) as session:
        by_url = openai.OpenAI(base_url=session.base_url, api_key="unused", max_retries=0)
        reply = by_url.chat.completions.create(model="mock", messages=HI, n=2)
        assert len(reply.choices) == 2 and reply.choices[0].message.content == letter_reply("L", 5)
        assert reply.usage is not None and reply.usage.prompt_tokens == 6
        assert [m.id for m in by_url.models.list().data] == ["mock"]
    route = gateway.open_trial("mock__p__L__002", "mock", options={"target_character": "L", "trial_seed": 6})
    by_key = openai.OpenAI(base_url=gateway.base_url, api_key=route.token, max_retries=0)
    assert by_key.chat.completions.create(model="mock", messages=HI).choices[0].message.content == (
        letter_reply("L", 6)
    )
    assert len(gateway.close_trial(route)) == 1


def test_refusals_are_openai_shaped_errors(gateway: Gateway) -> None:
    url = f"{gateway.base_url}/chat/completions"
    status, body = _http(url, {"model": "mock", "messages": HI}, key="not-a-trial")
    assert status == 401 and body["error"]["type"] == "authentication_error"
    with _letter_trial(gateway) as session:
        base = session.base_url
        assert _http(f"{base}/chat/completions", {"model": "mock:v2", "messages": HI})[0] == 404
        for bad in ({"messages": HI, "n": 0}, {"messages": HI, "stream": True}, {"messages": []}):
            status, body = _http(f"{base}/chat/completions", {"model": "mock", **bad})
            assert status == 400 and body["error"]["type"] == "invalid_request_error"
        assert _http(f"{base}/embeddings", {"model": "mock", "input": "x"})[0] == 404
        assert session.exchanges == []  # nothing that reached no model is an exchange
    # a closed trial's route no longer answers
    assert _http(f"{base}/chat/completions", {"model": "mock", "messages": HI})[0] == 401


def test_policy_seed_and_token_budget_are_the_gateways(gateway: Gateway) -> None:
    with _letter_trial(gateway, seed=11, max_tokens=50) as session:
        body = {"model": "mock", "messages": HI, "seed": 999, "temperature": 0.1}
        status, answer = _http(f"{session.base_url}/chat/completions", body)
        # the reply is longer than the budget: it stops at the 50 tokens left, as at a max_tokens
        assert status == 200
        assert answer["choices"][0]["message"]["content"] == cap_words(letter_reply("A", 11), 50)[0]
        assert answer["choices"][0]["finish_reason"] == "length"
        assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 50, "total_tokens": 53}
        first = session.exchanges[0]
        assert first["request"]["seed"] == 11 and first["request"]["client_params"] == {
            "seed": 999,
            "temperature": 0.1,
        }
        # nothing is left: the next request is refused before it reaches the model
        status, answer = _http(f"{session.base_url}/chat/completions", {"model": "mock", "messages": HI})
        assert status == 429 and answer["error"]["type"] == "trial_limit"
        assert "trial token limit" in answer["error"]["message"]
        assert [bool(e.get("error")) for e in session.exchanges] == [False, True]


def test_n_choices_through_stub_servers() -> None:
    with OpenAIStub() as openai_stub, OllamaStub() as ollama_stub:
        forge = WorldForge(
            provider_options={"openai_base_url": openai_stub.base_url, "ollama_host": ollama_stub.host}
        )
        with Gateway(forge, models=["openai:stub-model", "ollama:qwen2.5"]) as gw:
            with gw.trial("o", "openai:stub-model", options={"trial_seed": 7}, seed=7, temperature=1.0) as s:
                answer = s.chat(HI, n=2)
            with gw.trial("l", "ollama:qwen2.5", options={"trial_seed": 7}, seed=7) as t:
                again = t.chat(HI, n=2)
    # OpenAI-compatible servers make the choices in one request
    (request,) = openai_stub.chat_requests()
    assert request["n"] == 2 and request["seed"] == 7 and request["temperature"] == 1.0
    assert [c["message"]["content"] for c in answer["choices"]] == [
        "echo: draw the letter",
        "echo: draw the letter #1",
    ]
    assert answer["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    # Ollama gives one reply per request: the gateway asks again with a derived seed
    seeds = [r["options"]["seed"] for r in ollama_stub.requests if "messages" in r]
    assert seeds == [7, derive_seed("gateway-choice/v1", 7, 1)]
    assert again["usage"]["prompt_tokens"] == 20 and again["usage"]["completion_tokens"] == 40


# -- recording through the command line -------------------------------------------------------------


def _planted_program(root: Path, secret: str = SECRET) -> Path:
    prompts = root / "planted" / "prompts"
    prompts.mkdir(parents=True, exist_ok=True)
    (prompts / "0.txt").write_text(
        f'Build the character "<OBJECT>" with drop_block calls.\ndebug: OPENAI_API_KEY={secret}\n',
        encoding="utf-8",
    )
    (prompts / "1.txt").write_text("Now put the final program in one code block.\n", encoding="utf-8")
    return root / "planted"


def _eval(workspace: Path, *extra: str, provider: str = "mock", program: str = "planted") -> Any:
    args = [
        "eval", "--suite", "science-birds", "--provider", provider, "--program", program,
        "--characters", "A,L", "--trials", "2", "--workers", "1",
        "--run-workspace", str(workspace), "--format", "json", *extra,
    ]  # fmt: skip
    return runner.invoke(app, args)


def _run_dirs(workspace: Path) -> list[Path]:
    return sorted((workspace / "runs").iterdir()) if (workspace / "runs").is_dir() else []


def _result_digest(run_dir: Path) -> str:
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    return str(manifest["result_digest"])


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    bodies = [json.loads(p.read_text()) for p in sorted((run_dir / "items").glob("*.json"))]
    return {b["item_id"]: b["record"] for b in bodies}


def _events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines() if x.strip()]
    return [e["payload"] for e in lines if e.get("type") == kind]


def _diff_identical(workspace: Path, a: Path, b: Path) -> None:
    result = runner.invoke(app, ["runs", "diff", a.name, b.name, "--workspace-dir", str(workspace)])
    assert result.exit_code == 0 and "identical results" in result.output, result.output


def test_exchanges_are_recorded_sanitized_and_deterministic(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
) -> None:
    _planted_program(tmp_path)
    first, second = tmp_path / "ws1", tmp_path / "ws2"
    assert _eval(first).exit_code == 0 and _eval(second).exit_code == 0
    (run_a,), (run_b,) = _run_dirs(first), _run_dirs(second)
    assert _result_digest(run_a) == _result_digest(run_b)
    for path in sorted((run_a / "items").glob("*.json")):  # byte-identical item records
        assert path.read_bytes() == (run_b / "items" / path.name).read_bytes()

    records = _records(run_a)
    assert len(records) == 4
    for record in records.values():
        turn1, turn2 = record["exchanges"]
        assert turn1["request"]["seed"] == record["trial_seed"] and turn1["request"]["n"] == 1
        assert [m["role"] for m in turn2["request"]["messages"]] == ["user", "assistant", "user"]
        assert turn2["request"]["messages"][1]["content"] == turn1["response"]["choices"][0]
        assert turn2["response"]["choices"][0] == record["reply"]
        shown = turn1["request"]["messages"][0]["content"]
        assert "debug: OPENAI_API_KEY=" in shown and SECRET not in shown  # redacted in place
        assert (
            sum(e["response"]["usage"]["prompt_tokens"] for e in record["exchanges"])
            == (record["usage"]["prompt_tokens"])
        )
        assert all(e["request_digest"].startswith("sha256:") for e in record["exchanges"])
        assert "duration_ms" not in json.dumps(record)
    events = _events(run_a, "gateway.exchange")
    assert len(events) == 8 and all(e["source"] == "model" and e["duration_ms"] >= 0 for e in events)
    assert {e["request_digest"] for e in events} == {
        x["request_digest"] for r in records.values() for x in r["exchanges"]
    }
    session = json.loads((run_a / "gateway" / "session.json").read_text())
    assert session["providers"]["mock"]["identity"]["model"] == "mock-deterministic-v1"
    for path in [*(run_a / "items").glob("*.json"), run_a / "events.jsonl"]:
        assert SECRET not in path.read_text(), path

    # the replay matches the raw requests (secret included) although the records hold them redacted
    replayed = _eval(first, "--replay", run_a.name)
    assert replayed.exit_code == 0, replayed.output
    run_c = _run_dirs(first)[-1]
    assert _result_digest(run_c) == _result_digest(run_a)
    assert {e["source"] for e in _events(run_c, "gateway.exchange")} == {"replay"}
    assert not _events(run_c, "provider.event")  # no model was asked
    _diff_identical(first, run_a, run_c)


# -- replay ------------------------------------------------------------------------------------------


def test_replay_of_a_stub_ollama_run_needs_no_server(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    def reply(request: dict[str, Any]) -> str:
        letter = request["messages"][0]["content"].split('character "', 1)[1][0]
        return f"Here.\n```\n{letter_program(letter, request['options']['seed'] % 1000)}```\n"

    ws = tmp_path / "ws"
    with OllamaStub() as stub:
        stub.reply = reply
        recorded = _eval(
            ws, "--ollama-host", stub.host, provider="ollama:qwen2.5", program="zero-shot-multi-turn"
        )
        assert recorded.exit_code == 0, recorded.output
        host = stub.host
    (run_a,) = _run_dirs(ws)
    assert any(r["status"] == "ok" for r in _records(run_a).values())
    replayed = _eval(ws, "--ollama-host", host, "--replay", run_a.name, provider="ollama:qwen2.5",
                     program="zero-shot-multi-turn")  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    run_b = _run_dirs(ws)[-1]
    assert _result_digest(run_b) == _result_digest(run_a) and _records(run_b) == _records(run_a)
    _diff_identical(ws, run_a, run_b)


def test_replay_of_a_stub_openai_run_needs_no_server(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    ws = tmp_path / "ws"
    with OpenAIStub() as stub:
        stub.reply = _letter_reply
        url = stub.base_url
        recorded = _eval(ws, "--openai-base-url", url, provider="openai:stub-model", program="zero-shot")
        assert recorded.exit_code == 0, recorded.output
        assert len(stub.chat_requests()) == 4
    (run_a,) = _run_dirs(ws)
    # a unique prefix of the run id is enough
    replayed = _eval(ws, "--openai-base-url", url, "--replay", run_a.name[:20], provider="openai:stub-model",
                     program="zero-shot")  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    run_b = _run_dirs(ws)[-1]
    assert _result_digest(run_b) == _result_digest(run_a)
    report = json.loads(replayed.stdout)
    assert report["provenance"]["runtime_manifests"]["openai:stub-model"]["served_model"] == "stub-model"
    _diff_identical(ws, run_a, run_b)


def _programmatic_run(
    workspace: Path, forge: WorldForge, options: dict[str, Any], providers: list[str]
) -> Path:
    config = {"suite": "science-birds", **{k: v for k, v in options.items() if k != "replay"}}
    with start_run(workspace, kind="evaluation", argv=["test"], config=config) as run:
        forge.add_event_sink(run.event_sink)
        report = EvaluationSuite.from_builtin("science-birds", options=options).run_report(
            providers, forge=forge, run=run
        )
        run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    return Path(run.dir)


def test_replay_reproduces_recorded_failures(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    ws = tmp_path / "ws"
    base = {
        "characters": "A",
        "trials": 2,
        "workers": 1,
        "progress": False,
        "programs": ["zero-shot-multi-turn"],
    }
    # a trial budget the second turn exceeds: a client-side limit failure after two exchanges
    tight = {**base, "max_tokens_per_trial": 900}
    run_a = _programmatic_run(ws, WorldForge(), tight, ["mock"])
    records = _records(run_a)
    assert all("trial token limit" in r["error"] and len(r["exchanges"]) == 2 for r in records.values())
    run_b = _programmatic_run(ws, WorldForge(), {**tight, "replay": run_a}, ["mock"])
    assert _result_digest(run_b) == _result_digest(run_a) and _records(run_b) == records
    # a server that fails after its preflight: provider errors recorded as exchanges, replayed as such
    with OllamaStub() as stub:
        options = {**base, "ollama_host": stub.host, "ollama_backoff_s": 0, "ollama_retries": 0}
        forge = WorldForge(provider_options=options)
        forge.runtime_manifest("ollama:qwen2.5")
        stub.fail_next = [500] * 100
        run_c = _programmatic_run(ws, forge, options, ["ollama:qwen2.5"])
    failed = _records(run_c)
    assert all(r["error"].startswith("generate: ollama:qwen2.5: generate failed") for r in failed.values())
    assert all(r["exchanges"][0]["error"]["type"] == "provider_error" for r in failed.values())
    run_d = _programmatic_run(ws, WorldForge(), {**options, "replay": run_c}, ["ollama:qwen2.5"])
    assert _result_digest(run_d) == _result_digest(run_c) and _records(run_d) == failed


def test_an_unrecorded_request_is_a_per_trial_failure_naming_the_difference(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
) -> None:
    program = _planted_program(tmp_path, secret="nothing-secret-here")
    ws = tmp_path / "ws"
    assert _eval(ws).exit_code == 0
    (run_a,) = _run_dirs(ws)
    (program / "prompts" / "0.txt").write_text('Draw "<OBJECT>" now.\n', encoding="utf-8")
    changed = _eval(ws, "--replay", run_a.name)
    assert changed.exit_code == 0, changed.output  # the run completes; the trials fail
    records = _records(_run_dirs(ws)[-1])
    for record in records.values():
        assert record["status"] == "failed" and record["failed_stage"] == "generate"
        assert record["error"].startswith(
            f"generate: replay: request 1 of trial {record['item_id']} was not recorded in run {run_a.name}: "
            "messages[0].content differs (recorded sha256:"
        )
        assert record["exchanges"][0]["error"]["type"] == "not_recorded"
    reseeded = _eval(ws, "--replay", run_a.name, "--seed", "7", "--trials", "3")
    assert reseeded.exit_code == 0
    errors = {k: r["error"] for k, r in _records(_run_dirs(ws)[-1]).items()}
    assert all("seed differs (recorded " in e for k, e in errors.items() if not k.endswith("003"))
    assert all("holds no exchanges for trial" in e for k, e in errors.items() if k.endswith("003"))


def test_bad_replay_inputs_are_one_line_usage_errors(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    ws = tmp_path / "ws"

    def refused(*args: str, suite: str = "science-birds", workspace: Path | None = ws) -> str:
        before = len(_run_dirs(ws))
        extra = ["--run-workspace", str(workspace)] if workspace is not None else []
        command = ["eval", "--suite", suite, "--provider", "mock", *extra, *args]
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --replay"), lines
        assert len(_run_dirs(ws)) == before  # refused before a run was created
        return lines[0]

    assert "not found in the run workspace" in refused("--replay", "20260101T000000.000Z-000000000000")
    assert runner.invoke(app, ["eval", "--suite", "physics", "--run-workspace", str(ws)]).exit_code == 0
    physics = _run_dirs(ws)[-1].name
    assert "it evaluated 'physics'; only science-birds runs record model exchanges" in refused(
        "--replay", physics
    )
    with start_run(ws, kind="benchmark", argv=["bench"], config={}) as run:
        run.complete({"results": []})
    assert f"--replay {run.run_id}: it is a 'benchmark' run" in refused("--replay", run.run_id)
    assert "needs --workspace" in refused("--replay", physics, workspace=None)
    # replayable is the suite's own property: physics records no model exchanges
    assert "'physics' does not record model exchanges" in refused("--replay", physics, suite="physics")
    direct = _programmatic_run(
        ws, WorldForge(), {"characters": "A", "trials": 2, "workers": 1, "progress": False, "gateway": False},
        ["mock"],
    )  # fmt: skip
    assert "ran without the gateway" in refused("--replay", direct.name)
    assert "expected a run id" in refused("--replay", "../elsewhere")


def test_trial_session_is_the_chat_trial_callable(gateway: Gateway) -> None:
    from worldforge.providers.chat import ChatTrial

    with _letter_trial(gateway, "Q", 3) as session:
        assert isinstance(session, TrialSession)
        transcript = ChatTrial().run(session.generate, ["one", "two"], {"trial_seed": 3})
        exchanges = session.exchanges
    assert transcript.final_reply == letter_reply("Q", 3) and transcript.calls == 2
    assert transcript.models == ["mock-deterministic-v1"] * 2 and len(exchanges) == 2
