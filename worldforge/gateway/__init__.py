"""The recording model gateway: the one road from a prompt program to a model, and its evidence.

A layer between the providers and the evaluation suites. A run starts a :class:`Gateway` (a
loopback OpenAI-compatible endpoint, :mod:`.server`), each trial talks to it through a route of
its own (:mod:`.client`), and the gateway forwards to the trial's provider under the run's policy
(:mod:`.upstream`), records every exchange in the item record and the event log
(:mod:`.exchange`), or answers from a recorded run instead of a model (:mod:`.replay`).
"""

from worldforge.gateway.client import GatewayClient, TrialSession
from worldforge.gateway.core import Gateway
from worldforge.gateway.exchange import Completion, GatewayError, Recorder, Request
from worldforge.gateway.replay import (
    SESSION_PATH,
    ReplaySource,
    load_replay,
    open_replay,
    session_payload,
    write_session,
)
from worldforge.gateway.upstream import ProviderUpstream, TrialRoute

__all__ = [
    "SESSION_PATH",
    "Completion",
    "Gateway",
    "GatewayClient",
    "GatewayError",
    "ProviderUpstream",
    "Recorder",
    "ReplaySource",
    "Request",
    "TrialRoute",
    "TrialSession",
    "load_replay",
    "open_replay",
    "session_payload",
    "write_session",
]
