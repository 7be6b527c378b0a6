"""What the letter classifier returns: one :class:`Prediction` per image, a :class:`Classification`
per batch.

Kept apart from :mod:`worldforge.pcg.similarity.classifier` (loading models and preparing inputs)
so the result types, and what a reviewer reads off them, need neither torch nor a model: the
argmax letter, its confidence, and the **top-2 margin**, the softmax gap between the two likeliest
letters. A similarity score is the softmax value at the intended letter; when the margin is small
the classifier hesitated between two letters, and a small change to the level (one block) can move
the score a long way. The margin says which similarity scores are shaky.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS


def top2_margin(softmax: Sequence[float]) -> float:
    """The likeliest letter's probability minus the second likeliest's (0 to 1; near 0 when the
    classifier could not tell two letters apart). Also for stored softmax vectors (a suite's item
    records keep them rounded), so a reader computes the same margin the classifier reports."""
    if len(softmax) < 2:
        raise WorldForgeError(f"top-2 margin: needs at least two probabilities, got {len(softmax)}")
    first, second = sorted(softmax, reverse=True)[:2]
    return float(first - second)


@dataclass(frozen=True)
class Prediction:
    """One image: softmax over A..Z, its argmax letter and (optionally) the embedding."""

    softmax: list[float]
    embedding: list[float] | None

    @property
    def top(self) -> str:
        return LETTERS[max(range(len(LETTERS)), key=self.softmax.__getitem__)]

    @property
    def confidence(self) -> float:
        return max(self.softmax)

    @property
    def margin(self) -> float:
        """Top-2 margin of this image (:func:`top2_margin`)."""
        return top2_margin(self.softmax)

    @property
    def runner_up(self) -> str:
        """The second likeliest letter (the one :attr:`margin` separates :attr:`top` from)."""
        order = sorted(range(len(LETTERS)), key=self.softmax.__getitem__, reverse=True)
        return LETTERS[order[1]]


class Classification(Sequence[Prediction]):
    """Batch result: a sequence of :class:`Prediction` with row views ``softmax``/``embeddings``."""

    def __init__(self, predictions: list[Prediction]) -> None:
        self._items = predictions

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Prediction:  # type: ignore[override]
        return self._items[index]

    def __iter__(self) -> Iterator[Prediction]:
        return iter(self._items)

    @property
    def softmax(self) -> list[list[float]]:
        return [p.softmax for p in self._items]

    @property
    def embeddings(self) -> list[list[float]] | None:
        if any(p.embedding is None for p in self._items):
            return None
        return [p.embedding for p in self._items if p.embedding is not None]

    @property
    def top(self) -> list[str]:
        return [p.top for p in self._items]

    @property
    def margins(self) -> list[float]:
        """Per image, the top-2 margin (:attr:`Prediction.margin`), in input order."""
        return [p.margin for p in self._items]


__all__ = ["Classification", "Prediction", "top2_margin"]
