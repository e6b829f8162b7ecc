"""Cost per epoch, currency conversion, data-loader cap, warnings, ranking, Pareto front."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from app.model.cost import (
    UnknownCurrencyError,
    combine,
    convert,
    data_loader_rate,
    epoch_hours,
)
from app.model.memory import estimate_memory
from app.model.rank import (
    Candidate,
    CandidateColumns,
    pareto_front,
    rank_candidates,
    rank_columns,
    rank_with_frontier,
)
from app.model.throughput import estimate_throughput
from app.model.types import Hardware
from tests.unit.helpers import RTX_4090, resnet50

RATES = {("USD", "CNY"): 7.0197}

CNN = resnet50(
    image_size=224,
    micro_batch_size=256,
    samples_per_epoch=1_281_167,
    epochs=90,
    dataset_gb=147.9,
    cpu_ms_per_sample=5.0,
    min_cuda="12.1",
)


def test_epoch_hours() -> None:
    assert epoch_hours(1_281_167, 1000) == pytest.approx(0.355880, rel=1e-5)
    assert math.isinf(epoch_hours(10, 0))


def test_convert_both_directions() -> None:
    assert convert(0.75, "CNY", "USD", RATES) == pytest.approx(0.75 / 7.0197)
    assert convert(1.0, "USD", "CNY", RATES) == pytest.approx(7.0197)
    assert convert(3.0, "USD", "USD", RATES) == 3.0
    with pytest.raises(UnknownCurrencyError):
        convert(1.0, "EUR", "USD", RATES)


def test_data_loader_rate_leaves_one_core() -> None:
    assert data_loader_rate(CNN, 11) == pytest.approx(10 * 1000 / 5.0)
    assert data_loader_rate(CNN, None) is None


def test_combine_caps_by_loader_and_prices_epoch() -> None:
    hw = Hardware(gpu=RTX_4090, vcpus=3, ram_gib=31.5, disk_gb=70, max_cuda="11.8")
    tp = estimate_throughput(CNN, RTX_4090)
    mem = estimate_memory(CNN, vram_gib=24)
    e = combine(CNN, hw, tp, mem, price_per_hour=0.5, currency="USD")
    assert e.samples_per_s == pytest.approx(400.0)  # (3 - 1) * 1000 / 5 ms < GPU rate
    assert e.epoch_hours == pytest.approx(1_281_167 / 400 / 3600)
    assert e.cost_per_epoch == pytest.approx(e.epoch_hours * 0.5)
    assert e.total_cost == pytest.approx(e.cost_per_epoch * 90)
    codes = {w.code for w in e.warnings}
    assert {"data_loader_bound", "disk_too_small", "cuda_too_old"} <= codes


def cand(
    oid: int, cost: float | None, hours: float, oom: bool = False, price: float = 1.0
) -> Candidate:
    return Candidate(
        offer_id=oid,
        cost_per_epoch=cost,
        epoch_hours=hours,
        total_cost=cost,
        price_per_hour=price,
        samples_per_s=1 / hours,
        oom_high=oom,
    )


def test_pareto_front() -> None:
    pts = [(1.0, 10.0), (2.0, 5.0), (3.0, 6.0), (2.0, 5.0), (4.0, 1.0), (math.inf, 0.5)]
    assert pareto_front(pts) == [True, True, False, True, True, False]


def test_rank_puts_oom_last_and_can_drop_it() -> None:
    cs = [cand(1, 5.0, 1.0), cand(2, 1.0, 9.0, oom=True), cand(3, 2.0, 2.0), cand(4, None, 1.0)]
    ranked = rank_candidates(cs)
    assert [r.candidate.offer_id for r in ranked] == [3, 1, 4, 2]
    assert {r.candidate.offer_id for r in ranked if r.pareto_optimal} == {1, 3}
    assert [r.candidate.offer_id for r in rank_candidates(cs, drop_oom=True)] == [3, 1, 4]
    by_time = rank_candidates(cs, sort="epoch_hours")
    assert [r.candidate.offer_id for r in by_time][:2] == [1, 4]
    with pytest.raises(ValueError, match="sort must be one of"):
        rank_candidates(cs, sort="bogus")


def test_rank_with_frontier_returns_pareto_offers_beyond_the_limit() -> None:
    # cost-sorted: 1 (cheap, slow), 2, 3 (dominated by 2), 4 (dearest, fastest, Pareto)
    cs = [
        cand(1, 1.0, 10.0),
        cand(2, 2.0, 5.0),
        cand(3, 3.0, 6.0),
        cand(4, 9.0, 1.0),
        cand(5, 0.5, 0.5, oom=True),
    ]
    top, extra = rank_with_frontier(cs, limit=2)
    assert [r.candidate.offer_id for r in top] == [1, 2]
    assert all(r.pareto_optimal for r in top)
    assert [(r.candidate.offer_id, r.rank, r.pareto_optimal) for r in extra] == [(4, 4, True)]
    # nothing extra when the limit already covers the frontier, or with no limit
    assert rank_with_frontier(cs, limit=4)[1] == []
    assert rank_with_frontier(cs)[1] == []
    assert rank_candidates(cs, limit=2) == top


def test_vectorised_ranking_matches_the_definitions_on_random_offers() -> None:
    """Frontier = brute-force non-dominated set; order = sorted by (value, price, id); OOM
    last; ranks of frontier offers below the limit are their places in the full order."""
    import math
    import random

    rng = random.Random(3)
    cs = []
    for i in range(400):
        hours = rng.choice([1.0, 2.0, 2.5, 4.0, math.inf]) * rng.choice([1, 1, 0.5])
        price = rng.choice([None, 1.0, 2.0, 3.0])
        cost = hours * price if price is not None else None
        cs.append(
            Candidate(
                offer_id=1000 - i,
                cost_per_epoch=cost,
                epoch_hours=hours,
                total_cost=cost * 3 if cost is not None else None,
                price_per_hour=price,
                samples_per_s=1 / hours if hours else 0.0,
                oom_high=rng.random() < 0.2,
            )
        )
    fits = [c for c in cs if not c.oom_high]

    def pt(c: Candidate) -> tuple[float, float]:
        return (math.inf if c.cost_per_epoch is None else c.cost_per_epoch, c.epoch_hours)

    def dominated(c: Candidate) -> bool:
        a = pt(c)
        return any((b := pt(o))[0] <= a[0] and b[1] <= a[1] and b != a for o in fits if o is not c)

    frontier = {c.offer_id for c in fits if not dominated(c) and all(map(math.isfinite, pt(c)))}
    inf = math.inf
    for sort in ("cost_per_epoch", "epoch_hours", "samples_per_s", "total_cost"):

        def key(c: Candidate, sort: str = sort) -> tuple[float, float, int]:
            v = -c.samples_per_s if sort == "samples_per_s" else getattr(c, sort)
            price = inf if c.price_per_hour is None else c.price_per_hour
            return (inf if v is None else v, price, c.offer_id)

        full = sorted(fits, key=key) + sorted((c for c in cs if c.oom_high), key=key)
        top, extra = rank_with_frontier(cs, sort=sort, limit=25)
        assert [r.candidate.offer_id for r in top] == [c.offer_id for c in full[:25]]
        assert [r.rank for r in top] == list(range(1, 26))
        assert {r.candidate.offer_id for r in top if r.pareto_optimal} | {
            r.candidate.offer_id for r in extra
        } == frontier
        assert [r.rank for r in extra] == [
            full.index(c) + 1 for c in full[25:] if c.offer_id in frontier
        ]


def test_spot_expected_hours_and_epoch_in_tokens() -> None:
    from dataclasses import replace

    from app.model.cost import SpotAssumptions, epoch_plan, spot_expected_hours
    from tests.unit.helpers import GPT2

    a = SpotAssumptions(interruptions_per_hour=0.1, checkpoint_interval_hours=2, restart_hours=0.5)
    # Daly: a 2 h segment takes e^(0.1·0.5)·(e^(0.1·2) − 1)/0.1 = 1.051271 × 2.214028 = 2.32754 h
    assert spot_expected_hours(10.0, a) == pytest.approx(5 * 2.32754, rel=1e-5)
    # 3 h = one segment + 1 h: e^0.05 · (e^0.1 − 1)/0.1 = 1.10563 h
    assert spot_expected_hours(3.0, a) == pytest.approx(2.32754 + 1.10563, rel=1e-5)
    assert spot_expected_hours(10.0, SpotAssumptions(interruptions_per_hour=0)) == 10.0
    # 2 interruptions an hour, 1 h checkpoints: slow (e^0.5 · (e^2 − 1)/2 = 5.26687 h) but finite
    heavy = SpotAssumptions(interruptions_per_hour=2)
    assert spot_expected_hours(1.0, heavy) == pytest.approx(5.26687, rel=1e-5)
    # more interruptions never make it faster; rare ones approach the first-order loss
    rates = [0.01, 0.05, 0.2, 1.0, 4.0]
    times = [spot_expected_hours(10.0, SpotAssumptions(interruptions_per_hour=r)) for r in rates]
    assert times == sorted(times) and all(math.isfinite(t) for t in times)
    rare = SpotAssumptions(interruptions_per_hour=0.001)
    assert spot_expected_hours(10.0, rare) == pytest.approx(10.0 / (1 - 0.001 * 0.75), rel=1e-4)
    plan = epoch_plan(replace(GPT2, tokens_per_epoch=2_048_000))
    assert plan.samples == pytest.approx(2000) and plan.tokens == 2_048_000
    assert epoch_plan(GPT2).assumed_full_length


def test_padded_epoch_without_token_count_is_exact() -> None:
    from dataclasses import replace

    from app.model.cost import epoch_plan
    from tests.unit.helpers import GPT2

    plan = epoch_plan(replace(GPT2, packed=False))
    assert plan.samples == 1000 and plan.tokens == 1000 * 1024
    assert not plan.assumed_full_length and "padded" in plan.definition


def test_small_sizes_in_the_disk_warning_keep_two_significant_figures() -> None:
    from app.model.cost import _gb

    assert (_gb(147.897), _gb(0.0511), _gb(0.2044), _gb(9.63)) == ("148", "0.051", "0.2", "9.6")


def test_price_per_gpu_hour_is_the_instance_price_over_its_gpus() -> None:
    from app.model.cost import price_per_gpu_hour

    assert price_per_gpu_hour(8.0, 8) == 1.0
    # half a card at 1.00/h costs 2.00 per GPU-hour
    assert price_per_gpu_hour(1.0, 0.5) == 2.0
    assert price_per_gpu_hour(None, 8) is None and price_per_gpu_hour(1.0, 0) is None


def test_top_k_ranking_is_the_prefix_of_the_full_order() -> None:
    """With ``limit`` the first offers come from a partition and the frontier's ranks from
    counting (issue 28): the same triples as the full order, on random columns with ties,
    NaN and infinite values, unbookable, demoted and OOM offers."""
    from dataclasses import replace

    import numpy as np

    from app.model.rank import CandidateColumns, rank_columns

    rng = np.random.default_rng(5)
    n = 3000
    hours = rng.choice([0.5, 1.0, 2.0, 2.5, 4.0, np.inf], n)
    price = rng.choice([np.inf, 1.0, 1.5, 2.0, 3.0], n)
    cost = hours * price
    cost[rng.random(n) < 0.01] = np.nan
    cols = CandidateColumns(
        offer_id=rng.permutation(n).astype(np.int64),
        cost_per_epoch=cost,
        epoch_hours=hours,
        total_cost=cost * 3,
        price_per_hour=price,
        samples_per_s=1 / hours,
        oom_high=rng.random(n) < 0.2,
        unbookable=rng.random(n) < 0.1,
        demoted=rng.random(n) < 0.3,
        fresh=rng.random(n) < 0.5,
        group=rng.integers(0, 20, n),
    )
    # a long frontier (time falls as cost rises): its ranks counted in one sort
    x = rng.random(n).round(3) + 0.01
    long_front = replace(cols, cost_per_epoch=x, epoch_hours=1 / x, total_cost=x * 3)
    for c in (cols, long_front):
        for sort in ("cost_per_epoch", "epoch_hours", "samples_per_s", "price_per_hour"):
            for drop_oom in (False, True):
                full, none = rank_columns(c, sort=sort, drop_oom=drop_oom)
                assert none == []
                for limit in (0, 1, 7, 50, 2300, n + 5):
                    top, extra = rank_columns(c, sort=sort, drop_oom=drop_oom, limit=limit)
                    assert top == full[:limit]
                    assert extra == [t for t in full[limit:] if t[2]]
    assert len(rank_columns(long_front, limit=10)[1]) > 16


def test_pruned_pareto_flags_are_the_flags_of_every_point() -> None:
    """Above ``PRUNE_ABOVE`` points the frontier drops the surely dominated first: the same
    flags as without (ties, infinite and NaN costs; a long frontier)."""
    import numpy as np

    from app.model.rank import PRUNE_ABOVE, _front_sorted, _not_surely_dominated, _pareto_flags

    rng = np.random.default_rng(11)
    n = 3 * PRUNE_ABOVE
    time = rng.choice([0.5, 1.0, 2.0, 4.0, np.inf], n) * rng.random(n).round(2)
    cost = time * rng.choice([1.0, 2.0, np.inf, np.nan], n, p=[0.45, 0.45, 0.05, 0.05])
    x = rng.random(n).round(4) + 0.001
    for c, t in ((cost, time), (x, 1 / x), (x, x)):
        flags = _pareto_flags(c, t)
        assert (flags == _front_sorted(c, t)).all()
        assert 0 < flags.sum() <= n
    kept = _not_surely_dominated(x, x)
    assert kept is not None and len(kept) < n  # pruned
    time[np.isnan(time)] = 3.0
    assert _not_surely_dominated(cost, time) is not None
    assert (_pareto_flags(cost, time) == _front_sorted(cost, time)).all()


def test_offers_that_cannot_run_rank_after_every_runnable_one() -> None:
    # 2 is the cheapest and fastest but its GPU cannot run the job's software (QLoRA's
    # bitsandbytes on ROCm): after 1, 3 and 4 (4 has no price), before the OOM offer 5, and
    # never on the frontier, which is then 1 (cheapest) and 3 (fastest of the rest)
    cs = [
        cand(1, 1.0, 10.0),
        cand(2, 0.5, 0.5),
        cand(3, 3.0, 2.0),
        cand(4, None, 1.0),
        cand(5, 0.2, 0.2, oom=True),
    ]
    cols = CandidateColumns.from_candidates(cs)
    blocked = replace(cols, cannot_run=np.array([False, True, False, False, False]))
    for sort, order in (("cost_per_epoch", [1, 3, 4, 2, 5]), ("epoch_hours", [4, 3, 1, 2, 5])):
        top, extra = rank_columns(blocked, sort=sort)
        assert [cs[i].offer_id for i, _, _ in top] == order, sort
        assert {cs[i].offer_id for i, _, pareto in top if pareto} == {1, 3}
        assert extra == []
    # drop_oom drops only the OOM offer; a limit keeps the frontier's offers below it
    top, _ = rank_columns(blocked, drop_oom=True)
    assert [cs[i].offer_id for i, _, _ in top] == [1, 3, 4, 2]
    top, extra = rank_columns(blocked, sort="epoch_hours", limit=1)
    assert [cs[i].offer_id for i, _, _ in top] == [4]
    assert [(cs[i].offer_id, rank) for i, rank, _ in extra] == [(3, 2), (1, 3)]
    # without the column, 2 leads both orders and is the whole frontier's cheap end
    top, _ = rank_columns(cols)
    assert [cs[i].offer_id for i, _, _ in top][:2] == [2, 1]


def test_spot_warning_shows_the_two_figures_apart_when_they_differ() -> None:
    from app.model.cost import SpotAssumptions, _spot_warning, spot_expected_hours

    a = SpotAssumptions()
    # 0.1 h of work, no whole checkpoint segment: e^(0.05·0.25)·(e^(0.05·0.1) − 1)/0.05
    # = 1.012578 × 0.100250 = 0.10151 h; at 1.90 USD/h 0.19288 USD against 0.19
    expected = spot_expected_hours(0.1, a)
    assert expected == pytest.approx(0.10151, abs=1e-5)
    w = _spot_warning(0.1, expected, 1.9, "USD", a)
    assert "take 0.102 h instead of 0.100 h" in w.message
    assert "0.193 USD instead of 0.190 USD" in w.message
    # long runs keep one decimal: 10 h = 10 segments of 1.012578 × (e^0.05 − 1)/0.05 = 1.03832
    w = _spot_warning(10.0, spot_expected_hours(10.0, a), None, "USD", a)
    assert "take 10.4 h instead of 10.0 h" in w.message
    # no interruptions: the same time, said so
    w = _spot_warning(0.1, 0.1, 1.9, "USD", a)
    assert "about the same 0.1 h and about the same 0.19 USD" in w.message
