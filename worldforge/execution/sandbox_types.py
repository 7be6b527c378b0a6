"""The typed shape of what the evaluator hands a trial host (:mod:`worldforge.execution.sandbox`).

The host (``trial_host.py``) runs with the standard library alone inside the sandbox and reads this
configuration back from its one command-line argument; the evaluator's side builds it as a
:class:`HostConfig` so every key the host reads is named in one place.
"""

from __future__ import annotations

from typing import TypedDict


class HostConfig(TypedDict):
    """:func:`~worldforge.execution.sandbox.host_config`: the trial host's one command-line
    argument, sent as JSON."""

    package: str
    source: str
    module: str
    class_name: str
    scratch: str
    host_dir: str
    wall_seconds: float
    memory_bytes: int
    output_bytes: int
    result_bytes: int
    trial_tmp_bytes: int
    shm_bytes: int
    gateway_port: int
    relay_socket: str | None
    namespaces: bool
    deny_read: list[str]
    allow_read: list[str]
    env: dict[str, str]


__all__ = ["HostConfig"]
