"""Ranking policy: order estimated offers and mark the cost/time Pareto frontier.

Works on light :class:`Candidate` records or on their columns (:class:`CandidateColumns`,
numpy arrays) so that ten thousand offers rank in a few array sorts; full estimates are built
only for the offers returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

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
    #: the job cannot run on the offer as asked (:data:`app.model.run_warnings.CANNOT_RUN`)
    cannot_run: bool = False


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate with its position and Pareto flag."""

    candidate: Candidate
    pareto_optimal: bool
    rank: int


@dataclass(frozen=True, slots=True)
class CandidateColumns:
    """Many candidates as columns (float64 arrays of one length; ``inf`` where a cost or
    price is unknown), so ranking 10,000 offers is a few array sorts.

    Costs are in the requested currency per epoch / per run, prices per hour, epoch time in
    hours, throughput in samples/s; ``offer_id`` breaks ties (int64), ``oom_high`` is bool.

    ``cannot_run`` (bool, optional: ``None``, every offer can): the GPU cannot run the job's
    software as asked (:func:`app.model.run_warnings.software_blocked`: a QLoRA job's
    bitsandbytes on ROCm), or the offer's disk, host RAM or driver cannot
    (``app.services.runnable``: ``disk_too_small``, ``ram_short``, ``cuda_too_old``, ...);
    such an offer ranks after every runnable one (before those
    predicted out of memory) and is never on the Pareto frontier.

    The price's trust, all optional (``None``: every offer alike): ``unbookable`` (bool: the
    offer cannot be rented as listed, ranked after every bookable one), ``demoted`` (bool: an
    old or undated price, ranked after every ``fresh`` one of its ``group``: int ids of the
    offers' GPU model and count).
    """

    offer_id: np.ndarray
    cost_per_epoch: np.ndarray
    epoch_hours: np.ndarray
    total_cost: np.ndarray
    price_per_hour: np.ndarray
    samples_per_s: np.ndarray
    oom_high: np.ndarray
    cannot_run: np.ndarray | None = None
    unbookable: np.ndarray | None = None
    demoted: np.ndarray | None = None
    fresh: np.ndarray | None = None
    group: np.ndarray | None = None

    @classmethod
    def from_candidates(cls, candidates: Sequence[Candidate]) -> CandidateColumns:
        """Columns of ``candidates`` (``None`` costs and prices become ``inf``)."""

        def col(values: list[float | None]) -> np.ndarray:
            return np.array(
                [math.inf if v is None else v for v in values], dtype=np.float64
            ).reshape(-1)

        return cls(
            offer_id=np.array([c.offer_id for c in candidates], dtype=np.int64),
            cost_per_epoch=col([c.cost_per_epoch for c in candidates]),
            epoch_hours=col([c.epoch_hours for c in candidates]),
            total_cost=col([c.total_cost for c in candidates]),
            price_per_hour=col([c.price_per_hour for c in candidates]),
            samples_per_s=col([c.samples_per_s for c in candidates]),
            oom_high=np.array([c.oom_high for c in candidates], dtype=bool),
            cannot_run=np.array([c.cannot_run for c in candidates], dtype=bool),
        )


def _flag(column: np.ndarray | None, idx: np.ndarray) -> np.ndarray:
    """``column[idx]`` as bool, all false without the column."""
    return np.zeros(len(idx), dtype=bool) if column is None else column[idx].astype(bool)


def _after_fresh(
    value: np.ndarray, group: np.ndarray, fresh: np.ndarray, demoted: np.ndarray
) -> np.ndarray:
    """Sort values (smaller first) with each demoted candidate's raised to the largest value
    of a fresh candidate of its group, so that, demoted ranking after not demoted at equal
    value, it ranks after every fresh one of its group and keeps its place among the rest."""
    out = value.copy()
    if not demoted.any() or not fresh.any():
        return out
    # per group the largest fresh value (NaN values ignored), as array operations
    if group.dtype.kind in "iu" and group.min() >= 0 and group.max() < 4 * len(group):
        of, size = group, int(group.max()) + 1  # small ids (the snapshot's): no sort
    else:
        groups, of = np.unique(group, return_inverse=True)
        of, size = of.reshape(-1), len(groups)
    worst = np.full(size, -math.inf)
    np.fmax.at(worst, of[fresh], value[fresh])
    mine = out[demoted]
    out[demoted] = np.where(np.isnan(mine), mine, np.fmax(mine, worst[of[demoted]]))
    return out


def _pareto_flags(cost: np.ndarray, time: np.ndarray) -> np.ndarray:
    """Vectorised :func:`pareto_front`: in order of cost, a point enters the frontier when its
    time is the least of its cost and beats every time of a smaller cost; identical points
    share their flag. One sort of the costs (the groups of one cost reduced in place), not a
    sort of (cost, time) pairs: the same flags (``tests/unit/test_cost_rank.py``)."""
    n = len(cost)
    flags = np.zeros(n, dtype=bool)
    if n == 0:
        return flags
    keep = _not_surely_dominated(cost, time)
    if keep is not None:
        flags[keep] = _front_sorted(cost[keep], time[keep])
    else:
        flags = _front_sorted(cost, time)
    return flags


def _front_sorted(cost: np.ndarray, time: np.ndarray) -> np.ndarray:
    """:func:`_pareto_flags` of every point (no pruning)."""
    n = len(cost)
    flags = np.zeros(n, dtype=bool)
    order = np.argsort(cost)
    c, t = cost[order], time[order]
    starts = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
    first = np.zeros(n, dtype=np.intp)
    first[starts] = 1
    group = np.cumsum(first) - 1
    # the least time of each cost (NaN times sort after numbers within a cost), and the
    # least of every time of the smaller costs (a NaN there, as in a running minimum of
    # the (cost, time) order, lets nothing after it in)
    least = np.fmin.reduceat(t, starts)
    before = np.concatenate(([math.inf], np.minimum.accumulate(np.minimum.reduceat(t, starts))))
    on_front = (t == least[group]) & (t < before[group]) & np.isfinite(c) & np.isfinite(t)
    flags[order] = on_front
    return flags


#: candidates above which :func:`_pareto_flags` first drops points surely dominated
PRUNE_ABOVE = 4096


def _not_surely_dominated(cost: np.ndarray, time: np.ndarray) -> np.ndarray | None:
    """Indices of the points that may be on the frontier, or ``None`` when pruning would not
    help (few points) or might change a flag (a NaN time at a number cost, which in the
    (cost, time) order stops every later point entering). The :data:`PRUNE_ABOVE` ÷ 2
    cheapest points are kept; of the others (each costing at least as much as every one of
    those) only those not slower than the fastest of them: the rest are dominated by it, and
    whatever one of them dominates, it dominates too."""
    n = len(cost)
    if n <= PRUNE_ABOVE or np.isnan(time[~np.isnan(cost)]).any():
        return None
    k = PRUNE_ABOVE // 2
    cheapest = np.argpartition(cost, k - 1)[:k]
    fastest = time[cheapest].min()
    if np.isnan(cost[cheapest]).any() or not fastest < math.inf:
        return None
    rest = np.ones(n, dtype=bool)
    rest[cheapest] = False
    rest &= ~(time > fastest)
    keep: np.ndarray = np.concatenate((cheapest, np.flatnonzero(rest)))
    return keep


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Flags for points not dominated in (cost, time), both minimised.

    A point is dominated when another is no worse in both and strictly better in one.
    O(n log n): sort by cost then time, sweep keeping the best time seen; exact duplicates of
    a frontier point are on the frontier too. Infinite coordinates are never on it.
    """
    if not points:
        return []
    arr = np.array(points, dtype=np.float64).reshape(-1, 2)
    return [bool(f) for f in _pareto_flags(arr[:, 0], arr[:, 1])]


def rank_candidates(
    candidates: Sequence[Candidate],
    *,
    sort: str = "cost_per_epoch",
    drop_oom: bool = False,
    limit: int | None = None,
) -> list[Ranked]:
    """Order candidates by ``sort`` (ascending; ``samples_per_s`` descending).

    Offers predicted to run out of memory come after all others, or are dropped with
    ``drop_oom``; with the ``cannot_run`` column of :class:`CandidateColumns`, offers whose GPU
    cannot run the job's software come after every runnable one. Ties break on price per
    hour, then offer id. With the price-trust columns of
    :class:`CandidateColumns`, offers that cannot be rented as listed come after the bookable
    ones, and an old or undated price after every fresh one of its GPU model and count. The
    Pareto frontier is computed over all offers that fit and have a price (only the bookable
    ones when any is: :func:`_frontier_pool`); with ``limit`` only
    the first ``limit`` ranked offers are returned.

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
    top, extra = rank_columns(
        CandidateColumns.from_candidates(candidates), sort=sort, drop_oom=drop_oom, limit=limit
    )
    return (
        [Ranked(candidates[i], pareto, rank) for i, rank, pareto in top],
        [Ranked(candidates[i], pareto, rank) for i, rank, pareto in extra],
    )


def rank_columns(
    cols: CandidateColumns,
    *,
    sort: str = "cost_per_epoch",
    drop_oom: bool = False,
    limit: int | None = None,
) -> tuple[list[tuple[int, int, bool]], list[tuple[int, int, bool]]]:
    """:func:`rank_with_frontier` on columns: O(n log n) in array sorts.

    With ``limit`` the full order is never built: the first ``limit`` come from the offers
    whose primary sort value is at most the ``limit``-th smallest (a partition, then a sort of
    those few), and the rank of each Pareto offer below them is counted (one sort of the
    primary values, ties compared on the full key): the same triples as sorting every offer
    (``tests/unit/test_cost_rank.py`` compares both on random offers).

    Returns:
        (top, extra) as ``(row index, rank, pareto_optimal)`` triples, in rank order.

    Raises:
        ValueError: unknown ``sort`` key.
    """
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}")
    value = -cols.samples_per_s if sort == "samples_per_s" else getattr(cols, sort)
    oom_high = cols.oom_high.astype(bool)
    blocked = _flag(cols.cannot_run, np.arange(len(oom_high))) & ~oom_high
    fits = np.flatnonzero(~oom_high & ~blocked)
    oom = np.array([], dtype=np.int64) if drop_oom else np.flatnonzero(oom_high)
    pareto = np.zeros(len(cols.offer_id), dtype=bool)
    front = _frontier_pool(cols, fits)
    pareto[front] = _pareto_flags(cols.cost_per_epoch[front], cols.epoch_hours[front])
    fit_blocks = _blocks(cols, value, fits)
    blocks = fit_blocks + _blocks(cols, value, np.flatnonzero(blocked)) + _blocks(cols, value, oom)
    total = sum(len(b.idx) for b in blocks)
    shown = total if limit is None else min(limit, total)
    top_rows: list[int] = []
    for b in blocks:
        if len(top_rows) >= shown:
            break
        top_rows.extend(b.first(shown - len(top_rows)).tolist())
    top = [(i, pos + 1, bool(pareto[i])) for pos, i in enumerate(top_rows)]
    # Pareto offers always fit and can run, so they rank among ``fits`` (offers that cannot
    # run come after all of those, OOM offers after all)
    extra: list[tuple[int, int, bool]] = []
    before = 0
    for b in fit_blocks:
        for i, pos in b.positions(np.flatnonzero(pareto[b.idx])):
            if before + pos >= shown:
                extra.append((i, before + pos + 1, True))
        before += len(b.idx)
    extra.sort(key=lambda t: t[1])
    return top, extra


def _frontier_pool(cols: CandidateColumns, fits: np.ndarray) -> np.ndarray:
    """The offers the Pareto frontier is drawn over: those that fit and can run (``fits``),
    only the bookable ones where ``cols`` marks some ``unbookable`` and any fitting offer is
    bookable: an offer that cannot be rented as listed (a price index) is no choice, so it
    knocks no rentable offer off the frontier (the answer's picks come from the same pool:
    :func:`app.interface.responses.answer_picks`)."""
    if cols.unbookable is None:
        return fits
    bookable = fits[~_flag(cols.unbookable, fits)]
    return bookable if len(bookable) else fits


@dataclass(frozen=True, slots=True)
class _Block:
    """Rows ranked together, by (``v``, ``demoted``, price per hour, offer id) ascending:
    ``keys`` in :func:`numpy.lexsort` order (last key primary)."""

    idx: np.ndarray
    v: np.ndarray
    keys: tuple[np.ndarray, ...]

    def _order(self, at: np.ndarray) -> np.ndarray:
        """Positions ``at`` (into this block) sorted by the full key."""
        return at[np.lexsort(tuple(k[at] for k in self.keys))]

    def first(self, k: int) -> np.ndarray:
        """Rows of the first ``k`` of this block in rank order."""
        n = len(self.idx)
        at: np.ndarray = np.arange(n)
        if k < n:
            kth = np.partition(self.v, k - 1)[k - 1]
            if not np.isnan(kth):  # else fewer than k numbers (NaN sorts last): every row
                at = np.flatnonzero(self.v <= kth)
        rows: np.ndarray = self.idx[self._order(at)[:k]]
        return rows

    def positions(self, at: np.ndarray) -> list[tuple[int, int]]:
        """(row, 0-based position in this block's order) of positions ``at``: for a few, the
        rows with a smaller primary value counted and the ties at equal value ranked on the
        full key (NaN sorts after every number); for more, every row's position from one sort
        on the full key (the same positions: that sort puts NaN last too)."""
        if len(at) == 0:
            return []
        if len(at) > 16:
            n = len(self.v)
            rank = np.empty(n, dtype=np.int64)
            rank[self._order(np.arange(n))] = np.arange(n)
            return [(int(self.idx[p]), int(rank[p])) for p in at.tolist()]
        nan = np.isnan(self.v)
        numbers = len(self.v) - int(np.count_nonzero(nan))
        out = []
        for p in at.tolist():
            vp = self.v[p]
            if np.isnan(vp):
                lo, ties = numbers, np.flatnonzero(nan)
            else:
                lo = int(np.count_nonzero(self.v < vp))
                ties = np.flatnonzero(self.v == vp)
            pos = lo + int(np.flatnonzero(self._order(ties) == p)[0])
            out.append((int(self.idx[p]), pos))
        return out


def _blocks(cols: CandidateColumns, value: np.ndarray, idx: np.ndarray) -> list[_Block]:
    """``idx``'s rows in rank order as blocks: bookable first, then the others; within one,
    the sort value moved past the fresh offers of the group when demoted, demoted after the
    others at one value, then price per hour, then offer id (ids are unique, so the order is
    total)."""
    after = _flag(cols.unbookable, idx)
    demoted = _flag(cols.demoted, idx)
    out = []
    for block in (~after, after):
        sub = idx[block]
        if len(sub) == 0:
            continue
        v = value[sub].copy()
        if cols.group is not None and cols.fresh is not None:
            v = _after_fresh(v, cols.group[sub], cols.fresh[sub], demoted[block])
        keys = (cols.offer_id[sub], cols.price_per_hour[sub], demoted[block], v)
        out.append(_Block(sub, v, keys))
    return out
