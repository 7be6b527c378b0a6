"""The trial token budget bounds what a request can spend, and never changes an answer it can pay for.

The competition packages (``llms4pcg.competition.chat_with_llm``) count
``usage.prompt_tokens + usage.completion_tokens`` after each call and raise
``ValueError("Prompt token limit exceeded. X > 25000")`` once the total passes 25,000. These tests
drive the gateway with the package itself and the official ``openai`` client, against the mock
(which counts whitespace-separated words as tokens), so every figure is exact.
"""

from __future__ import annotations

import importlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.openai_stub import OpenAIStub
from worldforge.core.seeds import derive_seed
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, TrialRoute
from worldforge.gateway.exchange import Completion, Request
from worldforge.providers.chat import usage_counts
from worldforge.providers.mock_letters import cap_words, letter_reply

pytestmark = pytest.mark.usefixtures("model_env_free")


def _package_site() -> None:
    """The competition package lives in its own environment (never the evaluator's): put that
    environment's site-packages at the end of the path, so its counters are the real ones."""
    import sys

    from worldforge.execution.environments import package_environment

    folder = Path(package_environment("llms4pcg").python).parent.parent
    for site in sorted(folder.glob("lib/python3*/site-packages")):
        if str(site) not in sys.path:
            sys.path.append(str(site))


_package_site()
competition = importlib.import_module("llms4pcg.competition")
trial_context = importlib.import_module("llms4pcg.models.trial_context")

BUDGET = 25_000
SEED = 11
#: The mock's reply to the letter A with the trial seed (its word count is its completion count).
REPLY = letter_reply("A", SEED)
R = len(REPLY.split())


class CountingForge(WorldForge):
    """A forge that keeps what each provider call really spent: ``(cap, prompt, completion)``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int | None, int, int]] = []

    def generate(self, provider_name: str, messages: Any, options: Any = None) -> Any:
        result = super().generate(provider_name, messages, options)
        self.calls.append(((options or {}).get("max_tokens"), *usage_counts(result.metadata)))
        return result

    @property
    def spent(self) -> int:
        return sum(p + c for _, p, c in self.calls)


class Run:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.events.append((kind, payload))

    def budgets(self) -> list[dict[str, Any]]:
        return [p["budget"] for k, p in self.events if k == "gateway.exchange" and "budget" in p]


@pytest.fixture
def forge() -> CountingForge:
    return CountingForge()


@pytest.fixture
def run() -> Run:
    return Run()


@pytest.fixture
def gateway(forge: CountingForge, run: Run) -> Iterator[Gateway]:
    with Gateway(forge, models=["mock"], run=run) as gw:
        yield gw


def _route(gw: Gateway, item: str = "sub__A__001", budget: int = BUDGET) -> TrialRoute:
    options = {"target_character": "A", "trial_seed": SEED}
    return gw.open_trial(item, "mock", options=options, seed=SEED, max_tokens=budget)


def _context(tmp_path: Path, gw: Gateway, route: TrialRoute) -> Any:
    url = f"http://127.0.0.1:{gw.port}/t/{route.token}/v1"
    return trial_context.TrialContext("team", "A", 1, tmp_path / "trial.log", "mock", url)


def _prompt(words: int) -> list[dict[str, str]]:
    """A user turn the mock counts as ``words`` prompt tokens."""
    return [{"role": "user", "content": " ".join(["block"] * words)}]


# -- n=128 ---------------------------------------------------------------------------------------


def test_n128_spends_about_the_budget_and_fails_as_the_package_fails(
    tmp_path: Path, gateway: Gateway, forge: CountingForge, run: Run
) -> None:
    """The review's request: a long prompt (2,800 words) asked for 128 choices, on a fresh trial.

    Uncapped, the mock answers all 128 calls: 128 x 2,800 prompt tokens plus 11,933 completion
    tokens = 370,333 (the review measured 370,416). Capped, the gateway stops asking once the
    trial's 25,000 tokens are spent; the choices it did not ask for come back empty and count their
    prompt, so the package still sees a total past the budget and fails the trial.
    """
    route = _route(gateway)
    ctx = _context(tmp_path, gateway, route)
    with pytest.raises(ValueError) as failure:
        competition.chat_with_llm(ctx, _prompt(2800), n=128)
    exchanges = gateway.close_trial(route)
    (exchange,) = exchanges
    response = exchange["response"]
    asked = len(forge.calls)
    print(
        f"n=128 x 2800-word prompt: {asked} provider calls, spent {forge.spent} tokens "
        f"(budget {BUDGET}), counted {route.tokens}, choices not asked {128 - asked}"
    )
    assert forge.spent <= BUDGET + 2800  # the overshoot is at most the crossing call's prompt
    assert asked == 9 and forge.spent == 9 * 2800 + sum(c for _, _, c in forge.calls)
    # each call is capped at what the earlier ones left
    caps = [cap or 0 for cap, _, _ in forge.calls]
    assert caps[0] == BUDGET and all(b < a for a, b in zip(caps, caps[1:], strict=False))
    # the texts that were asked for are the uncapped ones: none of them passed its cap
    assert response["choices"][:2] == [REPLY, letter_reply("A", derive_seed("gateway-choice/v1", SEED, 1))]
    assert response["choices"][asked:] == [""] * (128 - asked) and response["finish_reason"] == "length"
    usage = response["usage"]
    assert usage["prompt_tokens"] == 128 * 2800 and route.tokens == forge.spent + (128 - asked) * 2800
    # the package's own message, and what the gateway exposes to reproduce it
    assert route.over_budget and route.exceeded_at == route.tokens
    assert str(failure.value) == f"Prompt token limit exceeded. {route.exceeded_at} > {route.max_tokens}"
    assert run.budgets() == [
        {"allowance": BUDGET, "max_tokens": None, "capped": False, "not_asked": 128 - asked}
    ]


def test_n_choices_from_one_server_request_share_the_allowance() -> None:
    with OpenAIStub() as stub:
        forge = WorldForge(provider_options={"openai_base_url": stub.base_url})
        with Gateway(forge, models=["openai:stub-model"]) as gw:
            with gw.trial("o", "openai:stub-model", options={"trial_seed": 7}, seed=7) as session:
                assert len(session.chat(_prompt(3), n=128)["choices"]) == 128
                session.chat(_prompt(3), n=1)
            stub.usage = (BUDGET - 100, 0)
            with gw.trial("p", "openai:stub-model", options={"trial_seed": 8}, seed=8) as session:
                session.chat(_prompt(3))
                with pytest.raises(Exception, match="cannot pay for the 128 choices"):
                    session.chat(_prompt(3), n=128)  # 100 tokens left: under one per choice
                assert len(session.chat(_prompt(3), n=50)["choices"]) == 50
    first, single, _, fifty = stub.chat_requests()
    assert first["n"] == 128 and first["max_tokens"] == BUDGET // 128  # per choice: 195
    # a cap above what servers accept is not sent: the server's own limit is the smaller one
    assert "max_tokens" not in single and fifty["max_tokens"] == 2


# -- a request the package lets complete is not changed ----------------------------------------------


def _at(gw: Gateway, tmp_path: Path, route: TrialRoute, before: int) -> Any:
    """A package context whose trial has spent ``before`` tokens through the gateway."""
    ctx = _context(tmp_path, gw, route)
    competition.chat_with_llm(ctx, _prompt(before - R))
    assert ctx.get_total_token_count() == route.tokens == before
    return ctx


def test_24000_plus_900_completes_with_the_reply_it_gets_without_a_cap(
    tmp_path: Path, gateway: Gateway, run: Run
) -> None:
    route = _route(gateway)
    ctx = _at(gateway, tmp_path, route, 24_000)
    (reply,) = competition.chat_with_llm(ctx, _prompt(900 - R))
    assert ctx.get_total_token_count() == route.tokens == 24_900 and not route.over_budget
    assert reply == REPLY and route.exceeded_at is None
    capped = gateway.close_trial(route)
    # the same two requests with no budget to speak of: the same records, byte for byte
    loose = _route(gateway, "sub__A__002", budget=10**9)
    ctx = _at(gateway, tmp_path, loose, 24_000)
    assert competition.chat_with_llm(ctx, _prompt(900 - R)) == [reply]
    assert json.dumps(gateway.close_trial(loose)) == json.dumps(capped)
    assert run.budgets()[:2] == [
        {"allowance": BUDGET, "max_tokens": None, "capped": False, "not_asked": 0},
        {"allowance": 1_000, "max_tokens": None, "capped": False, "not_asked": 0},
    ]


def test_a_request_past_the_budget_is_cut_only_where_it_passes_it(
    tmp_path: Path, gateway: Gateway, run: Run
) -> None:
    # 1,100 tokens at 24,000: the reply (108 tokens) fits the 1,000 left, the prompt takes it past
    route = _route(gateway)
    ctx = _at(gateway, tmp_path, route, 24_000)
    with pytest.raises(ValueError, match=r"^Prompt token limit exceeded\. 25100 > 25000$"):
        competition.chat_with_llm(ctx, _prompt(1_100 - R))
    assert route.exceeded_at == route.tokens == 25_100 and route.over_budget
    (_, past) = gateway.close_trial(route)
    assert past["response"]["choices"] == [REPLY] and past["response"]["finish_reason"] == "stop"
    # 50 tokens left: the reply stops at 50, as at a server's max_tokens, and the trial fails
    route = _route(gateway, "sub__A__002")
    ctx = _at(gateway, tmp_path, route, BUDGET - 50)
    with pytest.raises(ValueError, match=r"^Prompt token limit exceeded\. 25010 > 25000$"):
        competition.chat_with_llm(ctx, _prompt(10))
    (_, cut) = gateway.close_trial(route)
    assert cut["response"]["choices"] == [cap_words(REPLY, 50)[0]]
    assert (
        cut["response"]["finish_reason"] == "length" and cut["response"]["usage"]["completion_tokens"] == 50
    )
    assert run.budgets()[-1] == {"allowance": 50, "max_tokens": None, "capped": True, "not_asked": 0}


def test_at_the_budget_a_call_still_goes_out_and_past_it_none_does(tmp_path: Path, gateway: Gateway) -> None:
    route = _route(gateway)
    ctx = _at(gateway, tmp_path, route, BUDGET)  # exactly 25,000: the package carries on
    with pytest.raises(ValueError, match=r"^Prompt token limit exceeded\. 25011 > 25000$"):
        competition.chat_with_llm(ctx, _prompt(10))  # one token allowed: 10 + 1
    status, body = _post(gateway, route, {"model": "mock", "messages": _prompt(10)})
    assert status == 429 and body["error"]["type"] == "trial_limit"
    assert (
        body["error"]["message"]
        == "trial token limit: 25011 prompt+completion tokens before request 3 (limit 25000)."
    )
    gateway.close_trial(route)


# -- the program's own max_tokens --------------------------------------------------------------------


def test_the_programs_own_max_tokens_is_honoured_recorded_and_digested(gateway: Gateway) -> None:
    openai = pytest.importorskip("openai")
    route = _route(gateway)
    client = openai.OpenAI(base_url=f"{gateway.base_url}", api_key=route.token, max_retries=0)
    short = client.chat.completions.create(model="mock", messages=_prompt(3), max_tokens=10)
    assert short.choices[0].message.content == cap_words(REPLY, 10)[0]
    assert short.choices[0].finish_reason == "length" and short.usage is not None
    assert short.usage.completion_tokens == 10
    long = client.chat.completions.create(model="mock", messages=_prompt(3), max_completion_tokens=4000)
    assert long.choices[0].message.content == REPLY  # a cap the reply does not reach changes nothing
    plain = client.chat.completions.create(model="mock", messages=_prompt(3))
    assert plain.choices[0].message.content == REPLY
    with pytest.raises(openai.BadRequestError, match="max_tokens: expected a positive integer"):
        client.chat.completions.create(model="mock", messages=_prompt(3), max_tokens=0)
    first, second, third = gateway.close_trial(route)  # a refused request reached no model
    assert first["request"]["client_params"] == {"max_tokens": 10}
    assert second["request"]["client_params"] == {"max_completion_tokens": 4000}
    assert "client_params" not in third["request"] and third["response"] == second["response"]
    # a forwarded cap is part of what the digest covers; a request without one keeps its digest
    assert len({first["request_digest"], second["request_digest"], third["request_digest"]}) == 3
    assert third["request_digest"] == Request("mock", _prompt(3), 1, SEED, None).digest


# -- requests in flight ------------------------------------------------------------------------------


class HeldUpstream:
    """Answers each request once released, spending ``spend`` completion tokens (at most its cap)."""

    source = "held"

    def __init__(self, spend: int) -> None:
        self.spend = spend
        self.asked: list[tuple[int, int | None]] = []
        self.release = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def complete(self, route: Any, request: Request, index: int) -> Completion:
        with self.changed:
            self.asked.append((index, request.allowance))
            self.changed.notify_all()
        assert self.release.acquire(timeout=10)
        cap = (
            request.allowance
            if request.max_tokens is None
            else min(request.allowance or 0, request.max_tokens)
        )
        return Completion(
            texts=["x"], prompt_tokens=10, completion_tokens=min(self.spend, cap or 0), model="held"
        )

    def wait_asked(self, count: int) -> list[tuple[int, int | None]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.asked) >= count, timeout=10)
            return list(self.asked)


def _post(gw: Gateway, route: TrialRoute, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{gw.base_url}/chat/completions", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {route.token}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _send(gw: Gateway, route: TrialRoute, body: dict[str, Any], answers: list[Any]) -> threading.Thread:
    thread = threading.Thread(target=lambda: answers.append(_post(gw, route, body)))
    thread.start()
    return thread


def test_two_requests_in_flight_cannot_each_spend_the_remainder(gateway: Gateway) -> None:
    held = HeldUpstream(spend=20_000)
    gateway.upstream = held
    route = _route(gateway)
    answers: list[Any] = []
    body = {"model": "mock", "messages": _prompt(3)}
    first = _send(gateway, route, body, answers)
    assert held.wait_asked(1) == [(0, BUDGET)]  # the first holds the whole remainder
    second = _send(gateway, route, body, answers)
    _until(lambda: len(route.pending) == 2)  # the second is waiting for it, not upstream
    assert len(held.asked) == 1 and route.reserved == BUDGET
    held.release.release()
    # answered: 20,010 spent, the second gets what is left, not the whole budget again
    assert held.wait_asked(2) == [(0, BUDGET), (1, BUDGET - 20_010)]
    held.release.release()
    first.join(15)
    second.join(15)
    assert [a[0] for a in answers] == [200, 200] and route.reserved == 0
    assert route.tokens == 20_010 + 10 + (BUDGET - 20_010) and route.tokens <= BUDGET + 10
    gateway.close_trial(route)


def test_requests_with_their_own_caps_go_together_when_the_budget_covers_them(gateway: Gateway) -> None:
    held = HeldUpstream(spend=20_000)
    gateway.upstream = held
    route = _route(gateway)
    answers: list[Any] = []
    capped = {"model": "mock", "messages": _prompt(3), "max_tokens": 5_000, "n": 2}
    threads = [_send(gateway, route, capped, answers) for _ in range(2)]
    assert [a for _, a in held.wait_asked(2)] == [10_000, 10_000]  # both upstream at once
    assert route.reserved == 20_000
    third = _send(gateway, route, capped, answers)  # 5,000 free < 10,000: it waits for them
    _until(lambda: len(route.pending) == 3)
    assert len(held.asked) == 2
    for _ in range(3):
        held.release.release()
    for thread in [*threads, third]:
        thread.join(15)
    # it went once both were answered (10,020 spent): 14,980 free covers its own 2 x 5,000
    assert held.wait_asked(3)[2][1] == 10_000 and route.tokens == 3 * (10 + 5_000)
    assert [a[0] for a in answers] == [200, 200, 200]
    gateway.close_trial(route)


def test_a_request_waiting_for_budget_when_the_trial_ends_is_recorded_and_never_sent(
    gateway: Gateway,
) -> None:
    held = HeldUpstream(spend=1)
    gateway.upstream = held
    route = _route(gateway)
    answers: list[Any] = []
    threads = [_send(gateway, route, {"model": "mock", "messages": _prompt(3)}, answers) for _ in range(2)]
    held.wait_asked(1)
    _until(lambda: len(route.pending) == 2)
    exchanges = gateway.close_trial(route)
    assert [e["error"]["type"] for e in exchanges] == ["trial_ended", "trial_ended"]
    held.release.release()
    for thread in threads:
        thread.join(15)
    assert len(held.asked) == 1  # the waiting one never reached the model
    assert sorted(a[0] for a in answers) == [200, 504]
