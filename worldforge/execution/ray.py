"""The ``ray`` executor: work units as Ray tasks on a cluster (the optional ``distributed`` extra).

Each submitted unit becomes one Ray task running the same plain function a local worker would run;
its result comes back to the driver, which alone writes the run workspace, the competition folder
and the events. Ray retries a task whose worker or node died (``max_retries``), so losing a node
mid-run costs time, not results, and since the driver consumes results by item (never by
completion order), a run on Ray gives the records and digests of a local run.

Design points:

* ``ray`` is imported here only, when ``--executor ray`` is asked for; without it the error names
  the extra to install.
* The driver's secrets stay on the driver: every environment variable whose name the sanitizer
  deems sensitive (``*_API_KEY``, ``*TOKEN*``, ...) is blanked in the job's ``runtime_env``, so
  workers, including those of a cluster this process starts itself, never see them.
* Without an address a private single-machine cluster is started on the loopback interface with a
  capped object store (about 200 MB): units carry kilobytes, not gigabytes.
* Each task reports the node it ran on; :class:`~worldforge.execution.base.NodeFuture` carries it
  to the driver, which may log it (informational, never digested).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from worldforge import heavy
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact.keys import is_sensitive_key
from worldforge.execution.base import NodeFuture

EXTRA_HINT = "--executor ray needs the optional Ray dependency: pip install 'worldforge[distributed]'."
#: Object store of a cluster this process starts itself (bytes): units and results are small.
LOCAL_OBJECT_STORE_BYTES = 200 * 1024 * 1024
#: How often Ray re-runs a task whose worker process or node died.
TASK_RETRIES = 5


def _import_ray() -> Any:
    try:
        return heavy.ray()
    except WorldForgeError:
        raise WorldForgeError(EXTRA_HINT) from None


def scrubbed_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``{NAME: ""}`` for every sensitive variable of the driver's environment (the job's
    ``runtime_env`` sets them to empty strings in every worker)."""
    env = os.environ if environ is None else environ
    return {name: "" for name in sorted(env) if is_sensitive_key(name)}


def _run_unit(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
    """What a Ray task runs: the unit, plus the id of the node that ran it."""
    ray = heavy.ray()

    node = ray.get_runtime_context().get_node_id()
    return node, fn(*args, **kwargs)


class RayExecutor(Executor):
    """``submit``/``shutdown`` over Ray tasks (see the module docstring)."""

    name = "ray"

    def __init__(self, *, address: str | None = None, workers: int | None = None) -> None:
        address = address or os.environ.get("RAY_ADDRESS") or None
        ray = _import_ray()
        self._ray = ray
        runtime_env: dict[str, Any] = {"env_vars": scrubbed_env()}
        kwargs: dict[str, Any] = {
            "runtime_env": runtime_env,
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if address:
            kwargs["address"] = address
            if address.split(":", 1)[0] in ("127.0.0.1", "localhost"):
                # a cluster on this machine: the driver joins on the loopback interface too
                kwargs["_node_ip_address"] = "127.0.0.1"
        else:
            kwargs.update(
                num_cpus=workers,
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                _node_ip_address="127.0.0.1",
            )
        self._owns = not ray.is_initialized()
        if self._owns:
            try:
                ray.init(**kwargs)
            except ConnectionError as exc:
                raise WorldForgeError(
                    f"--ray-address {address}: cannot connect to a Ray cluster ({exc})."
                ) from None
        # SPREAD: Ray's default packs tasks onto the driver's node while it has room, which left a
        # second node nearly idle in the two-node benchmark; units are uniform, so spread them.
        self._remote = ray.remote(max_retries=TASK_RETRIES, num_cpus=1, scheduling_strategy="SPREAD")(
            _run_unit
        )
        self.nodes: dict[str, int] = {}

    @property
    def parallelism(self) -> int:
        """CPUs of the cluster now (nodes may join or leave; at least 1)."""
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        ref = self._remote.remote(fn, args, kwargs)
        out = NodeFuture()

        def _done(inner: Future[Any]) -> None:
            try:
                node, value = inner.result()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                out.set_exception(exc)
                return
            out.node = node
            self.nodes[node] = self.nodes.get(node, 0) + 1
            out.set_result(value)

        ref.future().add_done_callback(_done)
        return out

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns = False


def start_ray(workers: int, *, address: str | None = None) -> RayExecutor:
    """The registry's factory: connect to ``address`` (else ``RAY_ADDRESS``), or start a private
    cluster of ``workers`` CPUs on this machine."""
    return RayExecutor(address=address, workers=workers)


__all__ = ["EXTRA_HINT", "LOCAL_OBJECT_STORE_BYTES", "RayExecutor", "scrubbed_env", "start_ray"]
