"""Ranking policy: order estimated offers and mark the cost/time Pareto frontier.

Works on light :class:`Candidate` records (a few floats per offer) so that ten thousand
offers rank in milliseconds; full estimates are built only for the offers returned.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

SORT_KEYS = ("cost_per_epoch", "epoch_hours", "total_cost", "price_per_hour", "samples_per_s")


class Candidate(NamedTuple):
    """What ranking needs of one estimated offer (costs in the requested currency)."""

    offer_id: int
    cost_per_epoch: float | None
    epoch_hours: float
    total_cost: float | None
    price_per_hour: float | None
    samples_per_s: float
    oom_high: bool


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate with its position and Pareto flag."""

    candidate: Candidate
    pareto_optimal: bool
    rank: int


def _value(c: Candidate, key: str) -> float:
    if key == "samples_per_s":
        return -c.samples_per_s
    value = getattr(c, key)
    return value if value is not None else math.inf


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Flags for points not dominated in (cost, time), both minimised.

    A point is dominated when another is no worse in both and strictly better in one.
    O(n log n): sort by cost then time, sweep keeping the best time seen; exact duplicates of
    a frontier point are on the frontier too. Infinite coordinates are never on it.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    flags = [False] * len(points)
    best_time = math.inf
    front: set[tuple[float, float]] = set()
    for i in order:
        cost, time = points[i]
        if math.isinf(cost) or math.isinf(time):
            continue
        if time < best_time:
            best_time = time
            front.add(points[i])
        if points[i] in front:
            flags[i] = True
    return flags


def rank_candidates(
    candidates: Sequence[Candidate],
    *,
    sort: str = "cost_per_epoch",
    drop_oom: bool = False,
    limit: int | None = None,
) -> list[Ranked]:
    """Order candidates by ``sort`` (ascending; ``samples_per_s`` descending).

    Offers predicted to run out of memory come after all others, or are dropped with
    ``drop_oom``. Ties break on price per hour, then offer id. The Pareto frontier is computed
    over all offers that fit and have a price; with ``limit`` only the first ``limit`` ranked
    offers are returned (selected in O(n log limit)).

    Raises:
        ValueError: unknown ``sort`` key.
    """
    return rank_with_frontier(candidates, sort=sort, drop_oom=drop_oom, limit=limit)[0]


def rank_with_frontier(
    candidates: Sequence[Candidate],
    *,
    sort: str = "cost_per_epoch",
    drop_oom: bool = False,
    limit: int | None = None,
) -> tuple[list[Ranked], list[Ranked]]:
    """Like :func:`rank_candidates`, plus the Pareto-optimal offers ranked below ``limit``.

    Returns:
        (the first ``limit`` ranked offers, the Pareto-optimal offers not among them, each
        with its rank in the full order, best first). The second list lets a chart draw the
        whole cost/time frontier while a table shows only the top offers.

    Raises:
        ValueError: unknown ``sort`` key.
    """
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}")
    fits = [c for c in candidates if not c.oom_high]
    oom = [] if drop_oom else [c for c in candidates if c.oom_high]
    flags = pareto_front(
        [
            (c.cost_per_epoch if c.cost_per_epoch is not None else math.inf, c.epoch_hours)
            for c in fits
        ]
    )
    pareto = {c.offer_id for c, f in zip(fits, flags, strict=True) if f}

    def key(c: Candidate) -> tuple[float, float, int]:
        price = c.price_per_hour if c.price_per_hour is not None else math.inf
        return (_value(c, sort), price, c.offer_id)

    if limit is None:
        ordered = sorted(fits, key=key) + sorted(oom, key=key)
    else:
        ordered = heapq.nsmallest(limit, fits, key=key)
        if len(ordered) < limit:
            ordered += heapq.nsmallest(limit - len(ordered), oom, key=key)
    top = [
        Ranked(candidate=c, pareto_optimal=c.offer_id in pareto, rank=i + 1)
        for i, c in enumerate(ordered)
    ]
    shown = {c.offer_id for c in ordered}
    rest = [c for c in fits if c.offer_id in pareto and c.offer_id not in shown]
    if not rest:
        return top, []
    # Keys are unique (the offer id breaks ties), so a bisect over all sorted keys gives each
    # frontier offer its position in the full order; Pareto offers always fit, so they rank
    # among ``fits`` (OOM offers come after all of them).
    keys = sorted(key(c) for c in fits)
    extra = sorted(
        (
            Ranked(candidate=c, pareto_optimal=True, rank=bisect_left(keys, key(c)) + 1)
            for c in rest
        ),
        key=lambda r: r.rank,
    )
    return top, extra
