"""Per-configuration estimates shared by requests (issue 13): a ranking answered from the memo
is the ranking computed afresh, and the memo never outlives its reference data."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from app.model.comm import NO_FABRIC, board_twin, twin_index
from app.model.multigpu import multi_gpu_comm
from app.model.throughput.multi_gpu import Span
from app.model.types import Interconnect
from app.services.estimates import (
    ConfigEstimates,
    Ranking,
    config_estimates,
    estimate_what_if,
    hardware_from_input,
    model_of,
    rank_offers,
)
from app.services.offers import select_offers, select_rank_columns
from app.services.reference import Memo, ReferenceData
from app.services.reference_cache import ReferenceCache
from app.services.submitted import SubmittedRun, workload_key
from app.services.workloads import resolve_workload
from tests.conftest import SEED_DIR

pytestmark = pytest.mark.db


def test_memo_makes_a_value_once_and_drops_the_least_recently_used() -> None:
    memo = Memo(max_entries=2)
    made: list[str] = []

    def make(key: str) -> Any:
        return lambda: made.append(key) or f"value of {key}"

    assert memo.get_or_make("a", make("a")) == "value of a"
    assert memo.get_or_make("a", make("a")) == "value of a"
    assert made == ["a"]
    memo.get_or_make("b", make("b"))
    memo.get_or_make("a", make("a"))  # a is now the most recently used
    memo.get_or_make("c", make("c"))  # third entry: b goes
    assert len(memo) == 2
    memo.get_or_make("a", make("a"))
    memo.get_or_make("b", make("b"))
    assert made == ["a", "b", "c", "b"]


@pytest.fixture(scope="module")
def factory(seeded_url: str) -> Iterator[Any]:
    from app.db.session import create_engine_from_url, create_session_factory

    engine = create_engine_from_url(seeded_url)
    yield create_session_factory(engine)
    engine.dispose()


def _fresh_reference(factory: Any) -> ReferenceData:
    return ReferenceCache(factory, SEED_DIR).get()


def _rank(factory: Any, ref: ReferenceData, given: dict[str, Any], **kw: Any) -> Ranking:
    w, reference, _ = resolve_workload(given, ref)
    options: dict[str, Any] = {"currency": "USD", "sort": "cost_per_epoch", "limit": 10}
    options.update(kw)
    with factory() as session:
        return rank_offers(w, reference, session, {}, ref, drop_oom=False, **options)


@pytest.mark.parametrize(
    ("given", "options"),
    [
        ({"preset": "resnet50-imagenet"}, {}),
        ({"preset": "llama3-8b-qlora", "micro_batch_size": 8}, {"currency": "CNY"}),
        ({"preset": "bert-base-squad"}, {"sort": "epoch_hours", "limit": 3}),
    ],
)
def test_a_ranking_from_the_memo_is_the_ranking_computed_afresh(
    factory: Any, given: dict[str, Any], options: dict[str, Any]
) -> None:
    ref = _fresh_reference(factory)
    assert len(ref.memo) == 0
    model_of(ref)  # the estimator on this reference data: one entry of its own
    first = _rank(factory, ref, given, **options)
    assert len(ref.memo) == 2  # the estimator, then one workload with all its configurations
    again = _rank(factory, ref, given, **options)
    afresh = _rank(factory, _fresh_reference(factory), given, **options)
    assert first.results, "a ranking without results checks nothing"
    assert again == first
    assert afresh == first


def test_the_memo_is_per_workload_and_per_reference_data(factory: Any) -> None:
    ref = _fresh_reference(factory)
    _rank(factory, ref, {"preset": "resnet50-imagenet"})
    _rank(factory, ref, {"preset": "resnet50-imagenet", "micro_batch_size": 32})
    assert len(ref.memo) == 3  # the estimator (app.services.estimates.model_of) + two workloads
    w, reference, _ = resolve_workload({"preset": "resnet50-imagenet"}, ref)
    assert config_estimates(w, reference, ref) is config_estimates(w, reference, ref)
    reloaded = _fresh_reference(factory)
    assert len(reloaded.memo) == 0
    assert config_estimates(w, reference, reloaded) is not config_estimates(w, reference, ref)


def test_rank_columns_are_the_filtered_offers(factory: Any) -> None:
    ref = _fresh_reference(factory)
    filters: dict[str, Any] = {"min_vram_gib": 24, "max_price_per_hour": 20.0}
    with factory() as session:
        rows = {r.id: r for r in select_offers(session, filters, ref, currency="CNY")}
        cols = select_rank_columns(session, filters, ref, currency="CNY")
        no_spot = select_rank_columns(session, filters, ref, currency="CNY", exclude_spot=True)
    assert rows, "a filter that keeps nothing checks nothing"
    assert sorted(cols.id) == sorted(rows)
    for i, offer_id in enumerate(cols.id):
        r = rows[offer_id]
        assert (
            cols.gpu_model_id[i],
            cols.gpu_count[i],
            cols.vram_gib_per_gpu[i],
            cols.vcpus[i],
            cols.interconnect[i],
            cols.price_per_hour[i],
            cols.currency[i],
            cols.billing[i],
        ) == (
            r.gpu_model_id,
            r.gpu_count,
            r.vram_gib_per_gpu,
            r.vcpus,
            r.interconnect,
            r.price_per_hour,
            r.currency,
            r.billing,
        )
    spot = {i for i, r in rows.items() if r.billing == "spot"}
    assert spot, "the seed data has spot offers"
    assert sorted(no_spot.id) == sorted(set(rows) - spot)


def test_what_if_hardware_from_requests_does_not_grow_the_memo_without_bound(
    factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfigEstimates, "max_entries", 3)
    ref = _fresh_reference(factory)
    w, reference, _ = resolve_workload({"preset": "resnet50-imagenet"}, ref)
    answers = []
    for vram in (10.0, 11.0, 12.0, 13.0, 14.0, 10.0):
        for count in (1, 2, 3, 4, 5):
            hw = hardware_from_input(
                {"gpu": "A100 SXM4 80GB", "gpu_count": count, "vram_gib": vram}, ref
            )
            answers.append(
                estimate_what_if(w, reference, hw, ref, price_per_hour=None, currency="USD")
            )
    est = config_estimates(w, reference, ref)
    assert len(est._tp) == 3 and len(est._mem) == 3
    # the first three configurations come from the memo, the others are computed afresh
    # past the bound: the same answers either way
    assert answers[-5:] == answers[:5]


def test_new_estimates_are_frozen_and_everything_collected_every_so_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_freeze_estimates``: ``gc.freeze`` each time, and every ``COLLECT_EVERY``-th time an
    unfreeze and a full collection first (what a freeze kept of cyclic garbage goes then)."""
    import gc
    import itertools

    from app.services import estimates

    calls: list[str] = []
    monkeypatch.setattr(estimates, "COLLECT_EVERY", 3)
    monkeypatch.setattr(estimates, "_freezes", itertools.count(1))
    monkeypatch.setattr(gc, "collect", lambda: calls.append("collect") or 0)
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    for _ in range(7):
        estimates._freeze_estimates()
    assert calls.count("freeze") == 7
    assert calls.count("collect") == calls.count("unfreeze") == 2
    assert calls[:4] == ["freeze", "freeze", "unfreeze", "collect"]
    assert gc.isenabled()


def test_ranked_figures_of_a_configuration_moved_by_submitted_runs_are_the_moved_ones(
    factory: Any,
) -> None:
    # ConfigEstimates.rates (what ranking reads of every configuration) takes the answer moved
    # by accepted submitted runs, as the full estimate shown does: a run 1.5x the published
    # ResNet-50 rate on 8 x A100 SXM4 80GB moves it up (uncorroborated: a bounded move)
    ref = _fresh_reference(factory)
    w, reference, _ = resolve_workload({"preset": "resnet50-imagenet"}, ref)
    gpu = ref.gpus["A100 SXM4 80GB"]
    published = ConfigEstimates(w, reference, ref).throughput(gpu, 8, None)
    key = workload_key(w, gpu.name, 8, published.precision)
    assert key is not None
    units = w.units_per_sample or 1.0
    run = SubmittedRun(
        id=1,
        submitter="alice",
        workload=key[0],
        method=key[1],
        gpu=gpu.name,
        gpu_count=8,
        precision=published.precision,
        batch_size_per_gpu=w.micro_batch_size,
        throughput_total=published.samples_per_s * units * 1.5,
    )
    moved_ref = dataclasses.replace(ref, submitted={key: (run,)})
    shown = ConfigEstimates(w, reference, moved_ref).throughput(gpu, 8, None)
    assert published.samples_per_s < shown.samples_per_s < published.samples_per_s * 1.5
    ranked = ConfigEstimates(w, reference, moved_ref).rates(gpu, 8, None)
    assert ranked == (shown.samples_per_s, shown.samples_per_s_low, shown.samples_per_s_high)


def test_an_sxm_estimate_is_the_same_fresh_and_after_its_pcie_twin(factory: Any) -> None:
    # A PCIe card's efficiency is capped at its SXM twin's at the card's own per-GPU rate
    # (MultiGpu._eta_at); that efficiency was once memoised without the rate, so the twin's own
    # estimate in the same model (one per workload, shared by requests) got the card's:
    # ResNet-50 (micro-batch 7) on 8 x H100 SXM 80GB was 10,811.7 samples/s fresh and 10,720.6
    # after the H100 PCIe 80GB. Every catalog twin pair, 2/4/8 GPUs, both orders.
    ref = _fresh_reference(factory)
    twins = twin_index(ref.gpus)
    pairs = [
        (ref.gpus[c], ref.gpus[b.name]) for c, b in twins.items() if board_twin(ref.gpus[c], twins)
    ]
    assert len(pairs) >= 5
    for given in (
        {"preset": "resnet50-imagenet", "micro_batch_size": 7},
        {"preset": "llama3-8b-lora"},
    ):
        w, reference, _ = resolve_workload(given, ref)
        checked = 0
        for (card, board), n in itertools.product(pairs, (2, 4, 8)):
            fresh = model_of(ref).throughput_model(w, reference=reference)
            board_alone = fresh.estimate(board, n, Interconnect.NVLINK)
            card_alone = model_of(ref).throughput_model(w, reference=reference).estimate(card, n)
            after = model_of(ref).throughput_model(w, reference=reference)
            assert after.estimate(card, n) == card_alone
            assert after.estimate(board, n, Interconnect.NVLINK) == board_alone, (card.name, n)
            before = model_of(ref).throughput_model(w, reference=reference)
            before.estimate(board, n, Interconnect.NVLINK)
            assert before.estimate(card, n) == card_alone, (card.name, n)
            checked += 1
        assert checked == 3 * len(pairs)


def _resnet50_models(ref: Any) -> list[Any]:
    """Throughput models of ResNet-50 at its preset's micro-batch and at 64 (two workloads
    of one measured group), as two requests build them."""
    return [
        model_of(ref).throughput_model(w, reference=reference)
        for w, reference, _ in (
            resolve_workload(given, ref)
            for given in (
                {"preset": "resnet50-imagenet"},
                {"preset": "resnet50-imagenet", "micro_batch_size": 64},
            )
        )
    ]


def test_multi_gpu_rows_are_indexed_once_and_their_efficiency_shared_by_workloads(
    factory: Any,
) -> None:
    # A new micro-batch per request builds a new throughput model; the measured rows of each
    # (GPU, count) and the measured efficiencies read nothing of the micro-batch, so they are
    # indexed and kept on the data (PooledData.rows_on / kept), not rescanned per workload.
    ref = _fresh_reference(factory)
    models = _resnet50_models(ref)
    group = models[0]._group_at(None)
    rows = models[0].data.rows(group)
    assert group == ("ResNet-50 v1.5", "full") and len(rows) == 280
    for gpu, count in {(p.gpu, p.gpu_count) for p in rows}:
        assert models[0].data.rows_on(group, gpu, count) == [
            p for p in rows if p.gpu == gpu and p.gpu_count == count
        ]
        assert models[0].data.rows_on(group, gpu) == [p for p in rows if p.gpu == gpu]
    assert len(models[0].data.rows_on(group, "A100 SXM4 80GB", 8)) == 6
    a100 = ref.gpus["A100 SXM4 80GB"]
    prec = models[0].w.precision
    # 8 x A100 SXM4 80GB over NVLink, ResNet-50: measured 0.904 of the 1-GPU rate per GPU
    # (MultiGpu._eta_at's docstring); the same figure from either workload's model
    first = models[0]._measured_eta(a100, 8, Interconnect.NVLINK, prec)
    assert first == pytest.approx(0.9038, abs=1e-4)
    assert models[1]._measured_eta(a100, 8, Interconnect.NVLINK, prec) == first
    assert models[1]._measured_eta_now(a100, 8, Interconnect.NVLINK, prec) == first
    assert models[1]._measured_eta(a100, 4, Interconnect.NVLINK, prec) == pytest.approx(
        0.9661, abs=1e-4
    )


def test_multi_gpu_link_plans_are_shared_by_workloads_and_model_as_the_comm_model(
    factory: Any,
) -> None:
    # MultiGpu._eta_plan keeps on the data what no micro-batch changes (each compared link's
    # measured median, else its topology and bus bandwidth/latency): a second workload reads
    # the very same plan, and its modelled efficiency is the comm model's at its own rate.
    ref = _fresh_reference(factory)
    models = _resnet50_models(ref)
    prec = models[0].w.precision
    assert models[0].w.micro_batch_size == 256
    card, board = ref.gpus["A100 PCIe 80GB"], ref.gpus["A100 SXM4 80GB"]
    plans = [m._eta_plan(card, 8, Interconnect.PCIE, prec, NO_FABRIC) for m in models]
    assert plans[0] is plans[1]
    # the card's own PCIe link, its NVLink bridge, then its SXM twin's measured NVLink 0.904
    assert [measured is None for measured, _ in plans[0]][:-1] == [True] * (len(plans[0]) - 1)
    assert plans[0][-1][0] == pytest.approx(0.9038, abs=1e-4)
    # default micro-batch: the card's PCIe model 0.956 is capped at the twin's measured 0.904;
    # micro-batch 64: a quarter of the step to hide the same all-reduce in, the model's 0.896
    expected = [(0.9557, 0.9038, True), (0.8957, 0.8957, False)]
    for m, (own_expected, eta_expected, measured_expected) in zip(models, expected, strict=True):
        per_gpu = m.single_gpu(card, prec)[0]
        eta, measured = m._eta_at(Span(card, Interconnect.PCIE, prec, per_gpu), 8)
        own = multi_gpu_comm(m.w, card, 8, Interconnect.PCIE, per_gpu, cal=m.cal).efficiency
        assert own == pytest.approx(own_expected, abs=1e-4)
        assert (eta, measured) == (min(own, plans[0][-1][0]), measured_expected)
        assert eta == pytest.approx(eta_expected, abs=1e-4)
        nvlink = Span(board, Interconnect.NVLINK, prec, per_gpu)
        assert m._eta_at(nvlink, 8) == (plans[0][-1][0], True)
