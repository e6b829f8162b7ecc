"""The demoted-after-fresh sort values on arrays equal the per-offer definition."""

from __future__ import annotations

import math

import numpy as np

from app.model.rank import _after_fresh


def _definition(value: list[float], group: list[int], fresh: list[bool], demoted: list[bool]):
    """Each demoted value raised to the largest fresh value of its group (Python ``max``)."""
    worst: dict[int, float] = {}
    for v, g, f in zip(value, group, fresh, strict=True):
        if f:
            worst[g] = max(worst.get(g, -math.inf), v)
    return [
        max(v, worst.get(g, -math.inf)) if d else v
        for v, g, d in zip(value, group, demoted, strict=True)
    ]


def test_after_fresh_matches_the_definition_on_random_offers() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        value = rng.choice([0.5, 1.0, 2.0, 3.5, math.inf, math.nan], size=n)
        group = rng.integers(0, 5, size=n)
        fresh = rng.random(n) < 0.5
        demoted = ~fresh & (rng.random(n) < 0.7)
        got = _after_fresh(value, group, fresh, demoted)
        want = _definition(value.tolist(), group.tolist(), fresh.tolist(), demoted.tolist())
        assert np.array_equal(got, np.array(want), equal_nan=True)
    # a worked case: group 0's fresh offers cost 2 and 5; its demoted 1 ranks as 5
    got = _after_fresh(
        np.array([2.0, 5.0, 1.0, 1.0]),
        np.array([0, 0, 0, 1]),
        np.array([True, True, False, False]),
        np.array([False, False, True, True]),
    )
    assert got.tolist() == [2.0, 5.0, 5.0, 1.0]
