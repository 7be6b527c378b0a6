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
  capped object store (about 200 MB): units carry kilobytes, not gigabytes. It keeps Ray's token
  authentication, but with a token of its own held in this process's environment only: left to
  itself Ray would write ``~/.ray/auth_token`` and export ``RAY_AUTH_MODE=token``, and every cluster
  the user starts afterwards (``ray start --head``) would turn token authentication on and refuse
  ``ray status``. The user's Ray setup is left as it was found; the variables are restored at
  shutdown.
* Each task reports the node it ran on; :class:`~worldforge.execution.base.NodeFuture` carries it
  to the driver, which may log it (informational, never digested).
* Work that needs an expensive state (a classifier's weights) runs in long-lived actors
  (:meth:`RayExecutor.actor_pool`, one per node): each builds its state once, then serves many
  batches. Actors reserve no CPU, so they never starve the stage tasks of a small cluster (on a
  one-CPU node an actor holding the CPU would leave no room for any task); an actor lost with its
  node is started again on another node (rebuilding its state) and its unfinished calls are sent
  there, as Ray retries tasks.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from worldforge import heavy
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact.keys import is_sensitive_key
from worldforge.execution.base import NodeFuture, StatefulPool

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


#: Ray's own authentication variables: workers need them to talk to their cluster, so they are
#: never blanked, and a private cluster sets them for its lifetime only.
RAY_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def scrubbed_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``{NAME: ""}`` for every sensitive variable of the driver's environment (the job's
    ``runtime_env`` sets them to empty strings in every worker), except Ray's own token, without
    which a worker could not join a cluster that authenticates."""
    env = os.environ if environ is None else environ
    return {name: "" for name in sorted(env) if is_sensitive_key(name) and name not in RAY_AUTH_VARS}


def _private_auth() -> dict[str, str | None]:
    """Give a private cluster a fresh token in this process's environment (never on disk) and
    return the variables as they were, for :func:`_restore_env`."""
    saved = {name: os.environ.get(name) for name in RAY_AUTH_VARS}
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    return saved


def _restore_env(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _reload_auth(ray: Any) -> None:
    """Make this process's Ray read its authentication variables again: Ray caches the mode and the
    token at first use, and refreshes them the same way when it turns token mode on itself."""
    raylet = ray._raylet
    raylet.Config.initialize("")
    raylet.AuthenticationTokenLoader.instance().reset_cache()


def _run_unit(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
    """What a Ray task runs: the unit, plus the id of the node that ran it."""
    ray = heavy.ray()

    node = ray.get_runtime_context().get_node_id()
    return node, fn(*args, **kwargs)


def alive_node_ids(ray: Any) -> list[str]:
    """Ids of the cluster's nodes that are up now, in Ray's order."""
    return [str(node["NodeID"]) for node in ray.nodes() if node.get("Alive")]


class _Holder:
    """A Ray actor's body: ``factory(*args)`` built once, then ``fn(state, *args)`` per call."""

    def __init__(self, factory: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._state = factory(*args)

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
        node = heavy.ray().get_runtime_context().get_node_id()
        return node, fn(self._state, *args)


def _forward(ref: Any, out: NodeFuture, done: Callable[[str], None]) -> None:
    """Resolve ``out`` from the ``(node, value)`` a Ray reference yields; ``done(node)`` on success."""

    def _done(inner: Future[Any]) -> None:
        try:
            node, value = inner.result()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            out.set_exception(exc)
            return
        out.node = node
        done(node)
        out.set_result(value)

    ref.future().add_done_callback(_done)


def _init_failure(exc: BaseException) -> WorldForgeError:
    """The one-line error for an actor whose state could not be built (e.g. a classifier directory
    missing on its node): a new actor would fail the same way, so the call fails at once."""
    cause = getattr(exc, "cause", None) or exc
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    last = lines[-1] if lines else type(exc).__name__
    return WorldForgeError(f"a Ray actor could not build its state (e.g. load the classifier): {last}")


class ActorPool:
    """``count`` Ray actors holding ``factory(*args)``, one per node in turn; :meth:`submit` sends a
    call to the actor with the fewest calls in flight (ties: the next in turn). Results are futures,
    never ordered by completion, so the caller consumes them by item as with tasks.

    Each actor is pinned to its node: Ray's SPREAD does not spread actors that reserve no CPU (both
    landed on one node of two), and a "soft" node affinity was not honoured either. A pinned actor
    cannot be restarted elsewhere, so the pool does it: a call whose actor died (its node was lost)
    gets a new actor on a node that is up (which builds its state again) and is sent there, up to
    ``TASK_RETRIES`` times per call. An error raised by the call itself is returned, not retried, and
    so is an actor whose construction raised (it would fail the same way on any node).
    """

    def __init__(self, ray: Any, factory: Callable[..., Any], args: tuple[Any, ...], count: int) -> None:
        self._ray = ray
        self._factory = factory
        self._args = args
        self._class = ray.remote(num_cpus=0, max_restarts=0)(_Holder)
        self._affinity = heavy.load("ray.util.scheduling_strategies").NodeAffinitySchedulingStrategy
        nodes = alive_node_ids(ray) or [""]
        self._placed = [nodes[i % len(nodes)] for i in range(max(1, count))]
        self._actors = [self._start(node) for node in self._placed]
        self._busy = [0] * len(self._actors)
        self._turn = 0
        self._lock = threading.Lock()
        self._closed = False
        self.nodes: dict[str, int] = {}
        #: Actors started again after theirs died (informational).
        self.replaced = 0

    def _start(self, node: str) -> Any:
        strategy = self._affinity(node, soft=False) if node else "SPREAD"
        return self._class.options(scheduling_strategy=strategy).remote(self._factory, self._args)

    @property
    def size(self) -> int:
        return len(self._actors)

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        out = NodeFuture()
        self._send(out, fn, args, TASK_RETRIES)
        return out

    def _send(self, out: NodeFuture, fn: Callable[..., Any], args: tuple[Any, ...], retries: int) -> None:
        with self._lock:
            n = len(self._actors)
            index = min(range(n), key=lambda i: (self._busy[i], (i - self._turn) % n))
            self._turn = (index + 1) % n
            self._busy[index] += 1
            handle = self._actors[index]
        actor_died = self._ray.exceptions.RayActorError

        def _done(inner: Future[Any]) -> None:
            with self._lock:
                self._busy[index] -= 1
            try:
                node, value = inner.result()
            except actor_died as exc:
                if getattr(exc, "actor_init_failed", False):  # its state cannot be built: no retry
                    out.set_exception(_init_failure(exc))
                elif retries > 0 and not self._closed:
                    self._replace(index, handle)
                    self._send(out, fn, args, retries - 1)
                else:
                    out.set_exception(exc)
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                out.set_exception(exc)
                return
            out.node = node
            self.nodes[node] = self.nodes.get(node, 0) + 1
            out.set_result(value)

        handle.call.remote(fn, args).future().add_done_callback(_done)

    def _replace(self, index: int, dead: Any) -> None:
        """A new actor for slot ``index`` on the node that is up with the fewest of this pool's."""
        with self._lock:
            if self._actors[index] is not dead or self._closed:
                return  # another call already replaced it
            up = [n for n in alive_node_ids(self._ray) if n != self._placed[index]] or [""]
            node = min(up, key=lambda n: (self._placed.count(n), up.index(n)))
            self._placed[index] = node
            self._actors[index] = self._start(node)
            self.replaced += 1

    def shutdown(self) -> None:
        """End the actors (their state goes with them)."""
        with self._lock:
            self._closed = True
            actors, self._actors = self._actors, []
        for handle in actors:
            try:
                self._ray.kill(handle)
            except Exception:  # noqa: BLE001 - an actor already gone is what we want
                pass


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
        self._saved_env: dict[str, str | None] | None = None
        if self._owns:
            if not address:
                self._saved_env = _private_auth()
                _reload_auth(ray)
            try:
                ray.init(**kwargs)
            except ConnectionError as exc:
                self._restore()
                raise WorldForgeError(
                    f"--ray-address {address}: cannot connect to a Ray cluster ({exc})."
                ) from None
            except BaseException:
                self._restore()
                raise
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
        out = NodeFuture()

        def _count(node: str) -> None:
            self.nodes[node] = self.nodes.get(node, 0) + 1

        _forward(self._remote.remote(fn, args, kwargs), out, _count)
        return out

    def alive_nodes(self) -> int:
        """Nodes of the cluster that are up now (at least 1)."""
        return max(1, len(alive_node_ids(self._ray)))

    def actor_pool(self, factory: Callable[..., Any], *args: Any, count: int | None = None) -> StatefulPool:
        """Long-lived actors each holding ``factory(*args)`` (default: one per node that is up)."""
        return ActorPool(self._ray, factory, args, count or self.alive_nodes())

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns = False
        self._restore()

    def _restore(self) -> None:
        """Put Ray's authentication variables back as they were before a private cluster."""
        if self._saved_env is not None:
            _restore_env(self._saved_env)
            self._saved_env = None
            _reload_auth(self._ray)


def start_ray(workers: int, *, address: str | None = None) -> RayExecutor:
    """The registry's factory: connect to ``address`` (else ``RAY_ADDRESS``), or start a private
    cluster of ``workers`` CPUs on this machine."""
    return RayExecutor(address=address, workers=workers)


__all__ = ["EXTRA_HINT", "ActorPool", "LOCAL_OBJECT_STORE_BYTES", "RayExecutor", "scrubbed_env", "start_ray"]
