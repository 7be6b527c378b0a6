"""The paired sign-flip test and Holm's adjustment used between adjacent programs of a ranking."""

from __future__ import annotations

import pytest

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.scoring.pairtests import holm_adjust, sign_flip_test


def test_exact_p_value_counts_assignments_at_least_as_extreme() -> None:
    # Sums over the 8 sign assignments of (1, 2, 3): +-6, +-4, +-2, 0, 0 -> two reach |6|.
    result = sign_flip_test([1.0, 2.0, 3.0], seed=0)
    assert (result.method, result.flips, result.nonzero) == ("exact", 8, 3)
    assert result.statistic == 6.0
    assert result.p_value == pytest.approx(2 / 8)
    # (1, 3, -2): |sum| = 2; the sums are +-6, +-4, +-2, 0, 0 -> all but the two zero sums.
    assert sign_flip_test([1.0, 3.0, -2.0], seed=0).p_value == pytest.approx(6 / 8)


def test_letters_without_a_difference_do_not_count() -> None:
    base = sign_flip_test([0.4, -0.1, 0.3, 0.2, 0.5], seed=1)
    padded = sign_flip_test([0.0, 0.4, -0.1, 0.0, 0.3, 0.2, 0.5, 0.0], seed=1)
    assert padded == base
    assert base.nonzero == 5 and base.flips == 32
    none = sign_flip_test([0.0, 0.0], seed=1)
    assert (none.method, none.p_value, none.nonzero) == ("none", 1.0, 0)


def test_random_flips_agree_with_exact_enumeration() -> None:
    differences = [0.9, -0.2, 0.35, 0.1, -0.05, 0.6, 0.02, -0.4, 0.25, 0.3, -0.15, 0.07, 0.5, -0.3]
    exact = sign_flip_test(differences, seed=3)
    random = sign_flip_test(differences, seed=3, exact_limit=0)
    assert (exact.method, exact.flips) == ("exact", 2**14)
    assert (random.method, random.flips) == ("random", 100_000)
    assert 0.01 < exact.p_value < 0.5  # a p-value where a sign error would show
    # Monte Carlo standard error at 100,000 flips is below 0.0016; 0.006 is nearly four of them.
    assert random.p_value == pytest.approx(exact.p_value, abs=0.006)


def test_more_than_sixteen_letters_switch_to_seeded_random_flips() -> None:
    differences = [0.1 * (j % 5 + 1) * (1 if j % 3 else -1) for j in range(20)]
    first = sign_flip_test(differences, seed=11)
    assert (first.method, first.flips, first.nonzero) == ("random", 100_000, 20)
    assert sign_flip_test(differences, seed=11) == first
    assert sign_flip_test(differences, seed=12).p_value != first.p_value
    assert first.p_value >= 1 / 100_001  # never 0: the observed assignment counts


def test_holm_on_a_known_vector() -> None:
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, then max(0.06, 0.04*1) = 0.06.
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert holm_adjust([]) == []
    assert holm_adjust([0.2]) == [0.2]


def test_bad_input_is_refused() -> None:
    with pytest.raises(WorldForgeError, match="finite"):
        sign_flip_test([1.0, float("nan")], seed=0)
    with pytest.raises(WorldForgeError, match="flips"):
        sign_flip_test([1.0], seed=0, flips=0)
    with pytest.raises(WorldForgeError, match="p-value"):
        holm_adjust([0.5, 1.5])
