"""Model aliases: a program that hard-codes its model name (the competition packages) is served the
trial's model, and the exchange records both what was asked for and what answered."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from worldforge.forge import WorldForge
from worldforge.gateway import Gateway

HI = [{"role": "user", "content": "draw the letter"}]


def _post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_an_alias_is_served_the_trials_model_and_recorded() -> None:
    options = {"target_character": "A", "trial_seed": 3}
    with Gateway(WorldForge(), models=["mock"]) as gateway:
        aliased = gateway.open_trial("t1", "mock", options=options, seed=3, aliases=("gpt-3.5-turbo-0125",))
        plain = gateway.open_trial("t2", "mock", options=options, seed=3)
        port = gateway.port
        body = {"model": "gpt-3.5-turbo-0125", "messages": HI, "seed": 42, "temperature": 1}
        ok = _post(f"http://127.0.0.1:{port}/t/{aliased.token}/v1/chat/completions", body)
        refused = _post(f"http://127.0.0.1:{port}/t/{plain.token}/v1/chat/completions", body)
        (exchange,) = gateway.close_trial(aliased)
        assert gateway.close_trial(plain) == []  # a refused model is not an exchange
    assert ok[0] == 200 and ok[1]["choices"][0]["message"]["content"]
    assert refused[0] == 404 and "is not the model of this trial" in refused[1]["error"]["message"]
    assert exchange["request"]["model"] == "mock" and exchange["request"]["seed"] == 3
    assert exchange["request"]["client_params"] == {
        "model": "gpt-3.5-turbo-0125",
        "seed": 42,
        "temperature": 1,
    }
