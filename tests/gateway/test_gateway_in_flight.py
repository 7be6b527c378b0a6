"""A request still unanswered when its trial ends is evidence too: it is recorded, never lost."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

from worldforge.forge import WorldForge
from worldforge.gateway import Gateway
from worldforge.gateway.exchange import Completion

HI = [{"role": "user", "content": "draw the letter A"}]


class SlowUpstream:
    """Answers once ``release`` is set, the way a model server answers a long reply."""

    source = "slow"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()

    def complete(self, route: Any, request: Any, index: int) -> Completion:
        self.asked.set()
        assert self.release.wait(10)
        return Completion(texts=["```python\ndrop_block('b11', 10)\n```"], prompt_tokens=12,
                          completion_tokens=9, model="slow-model")  # fmt: skip


def _post(url: str, key: str, body: dict[str, Any], answers: list[Any]) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            answers.append((answer.status, json.loads(answer.read())))
    except (urllib.error.URLError, OSError) as exc:
        answers.append(exc)


def test_a_request_in_flight_when_the_trial_ends_is_recorded_and_its_late_reply_left_out() -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    class Run:
        def emit(self, kind: str, payload: dict[str, Any]) -> None:
            events.append((kind, payload))

    slow = SlowUpstream()
    with Gateway(WorldForge(), models=["mock"], run=Run()) as gateway:
        gateway.upstream = slow
        route = gateway.open_trial("mock__p__A__001", "mock", seed=7)
        answers: list[Any] = []
        sender = threading.Thread(
            target=_post,
            args=(
                f"{gateway.base_url}/chat/completions",
                route.token,
                {"model": "mock", "messages": HI},
                answers,
            ),
        )
        sender.start()
        assert slow.asked.wait(10)
        # The trial is killed while the model is still answering: close_trial keeps the request.
        (exchange,) = gateway.close_trial(route)
        assert exchange["request"]["messages"] == HI and exchange["request"]["seed"] == 7
        assert exchange["error"] == {
            "type": "trial_ended",
            "message": "the trial ended before the answer to request 1 arrived.",
        }
        assert "response" not in exchange and exchange["request_digest"].startswith("sha256:")
        slow.release.set()
        sender.join(15)
        # The late reply reaches nobody's record: the trial's list is what close_trial returned.
        assert route.exchanges == [exchange]
        assert route.tokens == 21  # what the model spent is still counted against the route
    late = [p for kind, p in events if kind == "gateway.exchange" and p.get("after_trial_end")]
    assert len(late) == 1 and late[0]["response"]["usage"]["completion_tokens"] == 9
    ended = [
        p
        for kind, p in events
        if kind == "gateway.exchange" and (p.get("error") or {}).get("type") == "trial_ended"
    ]
    assert len(ended) == 1 and ended[0]["index"] == 0


def test_answered_requests_are_not_pending_when_the_trial_closes() -> None:
    slow = SlowUpstream()
    slow.release.set()
    with Gateway(WorldForge(), models=["mock"]) as gateway:
        gateway.upstream = slow
        route = gateway.open_trial("mock__p__A__001", "mock", seed=7)
        answers: list[Any] = []
        for _ in range(2):
            _post(
                f"{gateway.base_url}/chat/completions",
                route.token,
                {"model": "mock", "messages": HI},
                answers,
            )
        assert [a[0] for a in answers] == [200, 200]
        exchanges = gateway.close_trial(route)
        assert [("error" in e, e["response"]["usage"]["completion_tokens"]) for e in exchanges] == [
            (False, 9),
            (False, 9),
        ]
        assert route.pending == {} and route.next_index == 2
