"""The one home of every seed derivation: integers and random generators from SHA-256 of their parts.

Replies, glyph variants, gateway choices and mock embeddings must be byte-identical in every process
and on every platform, so no seed here comes from ``hash()`` or a clock; each recipe digests its
parts with SHA-256. The recipes sit in the lowest layer because the letter-glyph code (``pcg``), the
providers, the model gateway and the suites all derive seeds, and two copies of a recipe could drift
apart without any test noticing until a pinned digest moved. The formulas are frozen: changing one
changes recorded replies and every digest pinned on them.
"""

from __future__ import annotations

import hashlib
import random
import struct


def _material(parts: tuple[object, ...]) -> bytes:
    """The bytes a part list is digested as (unit-separator joined, UTF-8)."""
    return "\x1f".join(str(p) for p in parts).encode("utf-8")


def derive_seed(*parts: object) -> int:
    """A 31-bit integer seed derived from ``parts`` (the first four bytes of their SHA-256)."""
    return int.from_bytes(hashlib.sha256(_material(parts)).digest()[:4], "big") & 0x7FFFFFFF


def trial_seed(master_seed: int, *identity: object) -> int:
    """The sampling seed of one trial: derived from the master seed and the trial's identity.

    ``identity`` is (program, letter, trial) in the Science Birds suite. Deriving rather than
    reusing one seed keeps trials independent samples (the 2024 package sent seed 42 on every call,
    which made the ten trials of a letter differ only through server nondeterminism) while keeping a
    rerun of the same trial reproducible.
    """
    return derive_seed("trial-seed/v1", int(master_seed), *identity)


def seeded_rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded from the first eight bytes of SHA-256 of ``parts``."""
    return random.Random(int.from_bytes(hashlib.sha256(_material(parts)).digest()[:8], "big"))


def variant_rng(letter: str, seed: int, variant: str = "") -> random.Random:
    """The glyph generator's ``random.Random`` for ``(letter, seed, variant)``.

    Its salt names the module the recipe was first written in; it stays so that every glyph, and
    every reply and classifier sample built from one, stays the same.
    """
    material = f"worldforge.pcg.glyphs|{letter}|{seed}|{variant}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


def deterministic_floats(seed_text: str, count: int) -> list[float]:
    """``count`` floats in [0, 1) from a SHA-256 chain over ``seed_text`` (stable everywhere)."""
    values: list[float] = []
    block = hashlib.sha256(seed_text.encode("utf-8")).digest()
    while len(values) < count:
        for (word,) in struct.iter_unpack(">I", block):
            values.append((word % 10000) / 10000.0)
        block = hashlib.sha256(block).digest()
    return values[:count]


__all__ = ["derive_seed", "deterministic_floats", "seeded_rng", "trial_seed", "variant_rng"]
