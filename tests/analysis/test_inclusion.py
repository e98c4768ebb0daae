"""An active task's inclusion probabilities (evalcore.analysis.inclusion): proportional to the uncertainty, summing
to k, floored at a share of k / M (0.3 in the cases worked by hand; inclusion.FLOOR by default) and capped at 1; and the Poisson draw's frequencies."""
from __future__ import annotations

import numpy as np
import pytest

from evalcore.analysis import inclusion


@pytest.mark.parametrize("u, k, expected", [
    # no bound binds: c = k / sum(u) = 2 / 8
    ([1, 1, 2, 4], 2, [0.25, 0.25, 0.5, 1.0]),
    # the cap: the last unit is 1, the other three share 1: 3c = 1
    ([1, 1, 1, 10], 2, [1 / 3, 1 / 3, 1 / 3, 1.0]),
    # the floor: 0.3 * 2 / 4 = 0.15 for the sure ones, the rest 2c = 2 - 0.3
    ([0, 0, 1, 1], 2, [0.15, 0.15, 0.85, 0.85]),
    # floor and cap at once: 0.3 * 2 / 5 = 0.12 for u = 0 and u = 0.0001 (0.0001 c is below it); 1 for u = 100;
    # 2c + 3c = 2 - 2 * 0.12 - 1 -> c = 0.152
    ([0, 2, 3, 100, 0.0001], 2, [0.12, 0.304, 0.456, 1.0, 0.12]),
    # nothing to go on: uniform
    ([0, 0, 0], 1, [1 / 3] * 3),
    # as many asked as there are: all of them
    ([1, 2], 2, [1.0, 1.0]),
    # more certain units than the floor can carry: every uncertain one at 1, the sure ones share the rest
    ([0, 0, 0, 1], 3, [2 / 3, 2 / 3, 2 / 3, 1.0]),
])
def test_probabilities_worked_by_hand(u, k, expected):
    pi = inclusion.probabilities(u, k, floor=0.3)
    assert pi == pytest.approx(expected, abs=1e-9)
    assert pi.sum() == pytest.approx(min(k, len(u)), abs=1e-9)


def test_probabilities_keep_the_floor_the_cap_and_the_order_of_uncertainty():
    rng = np.random.default_rng(7)
    for _ in range(200):
        m = int(rng.integers(2, 40))
        k = int(rng.integers(1, m))
        u = rng.exponential(size=m) * (rng.random(m) < 0.8)   # some units the predictor is sure about
        pi = inclusion.probabilities(u, k)
        assert pi.sum() == pytest.approx(k, abs=1e-9)
        assert pi.min() >= inclusion.FLOOR * k / m - 1e-12 and pi.max() <= 1 + 1e-12
        order = np.argsort(u, kind="stable")
        assert (np.diff(pi[order]) >= -1e-12).all()                 # more uncertain, never less likely
        free = (pi > inclusion.FLOOR * k / m + 1e-9) & (pi < 1 - 1e-9) & (u > 0)
        if free.sum() >= 2:                                           # off both bounds: proportional to u
            ratio = pi[free] / u[free]
            assert ratio == pytest.approx(np.full(free.sum(), ratio[0]), rel=1e-6)


def test_boundary_is_largest_in_the_middle_of_the_scale():
    assert inclusion.boundary([0, 0.5, 1, 0.25, 2], 0, 2).tolist() == pytest.approx(
        [0, 0.25 * 0.75, 0.25, 0.125 * 0.875, 0])
    assert inclusion.boundary([3, 3], 3, 3).tolist() == [0, 0]   # an empty range says nothing


def test_the_draw_takes_each_unit_with_its_probability():
    pi = np.array([0.05, 0.3, 0.5, 0.9, 1.0, 0.12])
    n = 4000
    drawn = np.array([inclusion.draw(pi, np.random.default_rng(s)) for s in range(n)])
    se = np.sqrt(pi * (1 - pi) / n)
    assert (np.abs(drawn.mean(axis=0) - pi) <= 4 * se + 1e-12).all()
    assert drawn[:, 4].all()                                            # pi = 1: always
    assert (inclusion.draw(pi, np.random.default_rng(3)) == inclusion.draw(pi, np.random.default_rng(3))).all()
