"""The classify stage of the Science Birds items: softmax and embedding per level image.

Vectors are cached by the image's digest. The images of a chunk that are not cached are classified
in one batch: in this process, or, when the executor keeps long-lived workers (Ray actors, see
:func:`worldforge.execution.stateful_pool`), in one of the actors, each of which loads the
classifier once and then serves batch after batch while this process goes on with the next chunks.
Either way a batch carries each image's PNG and the input the level worker prepared from the render,
and its vectors come back keyed by item, so records do not depend on where or in which batch an
image was classified: the classifier runs every forward pass on a fixed batch size (a short batch is
padded), which makes an image's vector independent of its batch companions and of the thread count
(``tests/test_classifier_prep.py``), and an actor's classifier must have the driver's identity
(same weights digest) or the batch fails.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.execution import NodeFuture, StatefulPool, stateful_pool
from worldforge.pcg.similarity.prep import PreparedPng
from worldforge.suites.science_birds.config import Classifier
from worldforge.suites.science_birds.records import is_classify_value
from worldforge.suites.science_birds.stage_cache import StageCache

#: ``(softmax, embedding)`` of one image.
Vectors = tuple[list[float], list[float]]
#: The classifier input a level worker prepared from an image's render (``None``: not prepared).
Prepared = NDArray[np.float32] | None


def actor_classifier(spec: str | None) -> Classifier:
    """What a classify actor holds: the classifier named by ``spec``, loaded once, here."""
    classifier = Classifier(spec)
    classifier.identity()  # load now: the first batch should not pay for it
    return classifier


def classify_batch(
    classifier: Classifier,
    identity: Mapping[str, object],
    items: Sequence[tuple[bytes, Prepared]],
    embedding: bool,
) -> list[Vectors]:
    """Runs in an actor: vectors for ``(png, prepared or None)`` items, in input order."""
    mine = classifier.identity()
    if dict(mine) != dict(identity):
        raise WorldForgeError(
            f"the classifier on a cluster node is {mine}, not the driver's {dict(identity)}: "
            "install the same checkpoint on every node."
        )
    return classifier.classify(_inputs(items), embedding)


def _inputs(items: Sequence[tuple[bytes, Prepared]]) -> list[bytes]:
    """The classifier's inputs: each PNG with the input its level worker prepared, when there is one."""
    return [PreparedPng(png, prep) if prep is not None else png for png, prep in items]


@dataclass
class PendingVectors:
    """One chunk's vectors: the cached ones, and the missing ones computed or in flight."""

    vectors: dict[str, Vectors]
    missing: list[tuple[str, str]] = field(default_factory=list)
    future: Future[list[Vectors]] | None = None
    #: The node that classified the missing images (informational; set when they arrive).
    node: str | None = None

    def done(self) -> bool:
        return self.future is None or self.future.done()


class ItemClassifier:
    """Vectors per item for a run (see the module docstring)."""

    def __init__(
        self, classifier: Classifier, cache: StageCache, *, embedding: bool, single_thread: bool
    ) -> None:
        self.classifier = classifier
        self.cache = cache
        self.embedding = embedding
        self.single_thread = single_thread
        self.ident = digest_payload({"classifier": classifier.identity(), "embedding": embedding})
        self.pool: StatefulPool | None = None
        self._executor: Executor | None = None

    def use_executor(self, executor: Executor | None) -> None:
        """Classify in the executor's long-lived workers when it has them (Ray actors; started at
        the first image that is not cached). Only the suite's own :class:`Classifier` can be
        rebuilt there (by its spec); any other classifier object stays in this process."""
        self._executor = executor if isinstance(self.classifier, Classifier) else None

    def warm(self) -> None:
        """Start the actors now (they load the classifier while the first chunks are generated and
        simulated, instead of when the first images arrive); nothing without actors."""
        self._pool()

    def _pool(self) -> StatefulPool | None:
        if self.pool is None and self._executor is not None:
            self.pool = stateful_pool(self._executor, actor_classifier, self.classifier.spec)
            self._executor = None  # asked once: an executor without actors stays without
        return self.pool

    @property
    def depth(self) -> int:
        """How many chunks may be classifying at once (one per actor; 1 in this process)."""
        return self.pool.size if self.pool is not None else 1

    def close(self) -> None:
        self._executor = None
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def start(self, pngs: Mapping[str, bytes], prepared: Mapping[str, Prepared]) -> PendingVectors:
        """Cached vectors now; the rest classified here (done on return) or sent to an actor."""
        pending = PendingVectors({})
        for iid, png in pngs.items():
            key = StageCache.key("classify", self.ident, digest_bytes(png))
            cached = self.cache.get_json("classify", key)
            if isinstance(cached, dict) and is_classify_value(cached):
                pending.vectors[iid] = (cached["softmax"], cached["embedding"])
            else:
                pending.missing.append((iid, key))
        if not pending.missing:
            return pending
        items = [(bytes(pngs[iid]), prepared.get(iid)) for iid, _ in pending.missing]
        pool = self._pool()
        if pool is not None:
            identity = self.classifier.identity()
            pending.future = pool.submit(classify_batch, identity, items, self.embedding)
            return pending
        with torch_threads(1 if self.single_thread else None):
            vectors = self.classifier.classify(_inputs(items), self.embedding)
        self._store(pending, vectors)
        return pending

    def finish(self, pending: PendingVectors) -> dict[str, Vectors]:
        """Every item's vectors (waits for an actor's batch, then caches it)."""
        if pending.future is not None:
            self._store(pending, pending.future.result())
            pending.node = pending.future.node if isinstance(pending.future, NodeFuture) else None
            pending.future = None
        return pending.vectors

    def _store(self, pending: PendingVectors, vectors: Sequence[Vectors]) -> None:
        for (iid, key), (softmax, embedding) in zip(pending.missing, vectors, strict=True):
            pending.vectors[iid] = (softmax, embedding)
            self.cache.put_json("classify", key, {"softmax": softmax, "embedding": embedding})


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch on ``count`` threads for the block (``None``: unchanged).

    While the level workers keep every core busy, a second torch thread only spins against them
    (OpenMP busy-waits): one thread classifies several times faster then. The model's outputs do
    not depend on the thread count (``tests/test_classifier_prep.py`` checks it on the bundled one).
    """
    torch = sys.modules.get("torch")
    if count is None or torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = [
    "ItemClassifier",
    "PendingVectors",
    "Vectors",
    "actor_classifier",
    "classify_batch",
    "torch_threads",
]
