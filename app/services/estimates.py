"""Estimate and rank services: resolve inputs, call the pure core, shape the answers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
from sqlalchemy.orm import Session

from app.estimate.compat import effective_precision
from app.estimate.cost import (
    SpotAssumptions,
    UnknownCurrencyError,
    combine,
    convert,
    data_loader_rate,
    epoch_hours,
    epoch_plan,
    spot_expected_hours,
)
from app.estimate.memory import estimate_memory, vram_per_gpu_gib
from app.estimate.rank import Candidate, CandidateColumns, Ranked, rank_columns
from app.estimate.throughput import ThroughputModel
from app.estimate.types import (
    Estimate,
    GpuSpec,
    Hardware,
    Interconnect,
    MemoryEstimate,
    OomRisk,
    Precision,
    ThroughputEstimate,
    Workload,
    interconnect_class,
)
from app.gpu_names import form_hint
from app.services.offers import (
    FilterError,
    OfferRow,
    select_offers_by_id,
    select_rank_rows,
)
from app.services.reference import ReferenceData
from app.services.workloads import WorkloadError


class HardwareError(ValueError):
    """Bad hardware input; ``field`` names it."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def offer_interconnect(label: str | None) -> Interconnect | None:
    """An offer's interconnect word as the core's link class
    (:func:`app.estimate.types.interconnect_class`: NVSwitch boards are NVLink)."""
    return interconnect_class(label)


def hardware_from_input(h: dict[str, Any], ref: ReferenceData) -> Hardware:
    """Build core hardware from ``HardwareIn`` values.

    The GPU name is identified by the rule offers are
    (:meth:`app.gpu_names.GpuNameNormaliser.identify`, weighing the VRAM and interconnect
    given), without the providers' naming conventions (there is no provider): a name that
    leaves several catalog models open ("A100": PCIe or SXM4, 40 or 80 GB) is not guessed.

    Raises:
        HardwareError: the GPU name matches nothing in the catalog, or is ambiguous (the
            reason lists the candidates).
    """
    name = h["gpu"]
    canonical: str | None = name if name in ref.gpus else None
    if canonical is None:
        identity = ref.normaliser.identify(
            name,
            vram_gib=h.get("vram_gib"),
            form_hint=form_hint(h.get("interconnect")),
            gpu_count=h.get("gpu_count") or 1,
            conventions=False,  # no provider: "A100" names the whole family
        )
        if identity.status == "ambiguous":
            raise HardwareError(
                "hardware.gpu",
                f"GPU {name!r} is ambiguous: could be {' or '.join(identity.candidates)}; "
                "name one of them",
            )
        canonical = identity.match.canonical_name if identity.match else None
    if canonical is None:
        raise HardwareError("hardware.gpu", f"unknown GPU {name!r}")
    return Hardware(
        gpu=ref.gpus[canonical],
        gpu_count=h.get("gpu_count") or 1,
        interconnect=interconnect_class(h.get("interconnect")),
        vcpus=h.get("vcpus"),
        ram_gib=h.get("ram_gib"),
        disk_gb=h.get("disk_gb"),
        max_cuda=h.get("max_cuda"),
        vram_gib_per_gpu=h.get("vram_gib"),
        disk_type=h.get("disk_type"),
    )


def check_estimable(w: Workload, model: ThroughputModel) -> None:
    """Raise a field error when the workload's throughput cannot be estimated at all.

    Raises:
        WorkloadError: no measurement at a compatible precision and no FLOPs estimate.
    """
    if model.can_estimate():
        return
    if w.benchmark_workloads:
        raise WorkloadError(
            "workload.precision",
            f"no measurement of this workload at a precision compatible with "
            f"{w.precision.value} and no FLOPs per sample to estimate from "
            "(give forward_gflops_per_sample or another precision)",
        )
    raise WorkloadError(
        "workload.forward_gflops_per_sample", "needed to estimate throughput of this workload"
    )


def offer_hardware(offer: OfferRow, ref: ReferenceData) -> Hardware:
    """The machine an offer describes (its GPU must be in the catalog)."""
    gpu = ref.gpus[ref.gpu_names_by_id[offer.gpu_model_id]]  # type: ignore[index]
    return Hardware(
        gpu=gpu,
        gpu_count=offer.gpu_count,
        interconnect=offer_interconnect(offer.interconnect),
        vcpus=offer.vcpus,
        ram_gib=offer.ram_gib,
        disk_gb=offer.disk_gb,
        max_cuda=offer.max_cuda,
        vram_gib_per_gpu=offer.vram_gib_per_gpu,
    )


def price_in(
    price: float | None, from_currency: str, currency: str, ref: ReferenceData
) -> float | None:
    """An offer's price converted to ``currency``.

    Raises:
        FilterError: no exchange rate between the two currencies.
    """
    if price is None or from_currency == currency:
        return price
    try:
        return convert(price, from_currency, currency, ref.rates)
    except UnknownCurrencyError as exc:
        raise FilterError("currency", str(exc)) from exc


class _Models:
    """Throughput models of ``w`` per precision a GPU really runs it at (issue 10: bf16 on a
    V100 runs at the fp32 rate, fp8 before Ada/Hopper at bf16; see
    :func:`app.estimate.compat.effective_precision`)."""

    def __init__(self, w: Workload, reference: Workload | None, ref: ReferenceData):
        self.w, self.reference, self.ref = w, reference, ref
        self._by_precision: dict[Precision, ThroughputModel] = {}

    def requested(self) -> ThroughputModel:
        return self.get(self.w.precision)

    def get(self, precision: Precision) -> ThroughputModel:
        model = self._by_precision.get(precision)
        if model is None:
            w = self.w if precision == self.w.precision else replace(self.w, precision=precision)
            model = self._by_precision[precision] = ThroughputModel(
                w,
                points=self.ref.points,
                catalog=self.ref.gpus,
                reference=self.reference,
                flops_table=self.ref.flops_table,
                data=self.ref.throughput_data,
            )
        return model

    def for_gpu(self, gpu: GpuSpec) -> ThroughputModel:
        run, _ = effective_precision(gpu, self.w.precision)
        model = self.get(run)
        return model if model.can_estimate() else self.requested()


def estimate_what_if(
    w: Workload,
    reference: Workload | None,
    hw: Hardware,
    ref: ReferenceData,
    *,
    price_per_hour: float | None,
    currency: str,
    billing: str | None = None,
    spot: SpotAssumptions | None = None,
) -> Estimate:
    """Estimate for a hardware configuration with no offer (``billing`` ``spot`` adds the
    interruption warning and expected cost)."""
    vram = vram_per_gpu_gib(hw.gpu.vram_gib, hw.vram_gib_per_gpu, hw.gpu_count)
    memory = estimate_memory(w, vram_gib=vram, gpu_count=hw.gpu_count)
    models = _Models(w, reference, ref)
    check_estimable(w, models.requested())
    tp = models.for_gpu(hw.gpu).estimate(hw.gpu, hw.gpu_count, hw.interconnect)
    return combine(
        w,
        hw,
        tp,
        memory,
        price_per_hour=price_per_hour,
        currency=currency,
        billing=billing,
        spot=spot,
    )


def _candidate(cols: CandidateColumns, i: int) -> Candidate:
    def opt(a: np.ndarray) -> float | None:
        return None if math.isinf(a[i]) else float(a[i])

    return Candidate(
        offer_id=int(cols.offer_id[i]),
        cost_per_epoch=opt(cols.cost_per_epoch),
        epoch_hours=float(cols.epoch_hours[i]),
        total_cost=opt(cols.total_cost),
        price_per_hour=opt(cols.price_per_hour),
        samples_per_s=float(cols.samples_per_s[i]),
        oom_high=bool(cols.oom_high[i]),
    )


@dataclass(frozen=True, slots=True)
class RankedOffer:
    """A ranked offer with its full estimate and converted price."""

    rank: int
    pareto_optimal: bool
    offer: OfferRow
    price_per_hour: float | None
    estimate: Estimate


@dataclass(frozen=True, slots=True)
class Ranking:
    """The top offers, the Pareto-optimal offers ranked below them, and how many were ranked."""

    results: list[RankedOffer]
    frontier: list[RankedOffer]
    total: int
    #: matching offers whose GPU is not in the catalog (no estimate possible)
    unestimated: int = 0
    #: estimated offers left out by ``max_total_cost`` / ``max_total_hours``
    over_budget: int = 0
    #: the unestimated offers, each with the reason it cannot be estimated (listed, never dropped)
    unestimable: tuple[tuple[OfferRow, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits a ranked offer must meet, and the spot assumptions its expected cost uses.

    ``max_total_cost`` in the request's currency and ``max_total_hours`` wall-clock hours, both
    for all epochs; spot offers are judged by their expected time and cost (interruptions
    included, :func:`app.estimate.cost.spot_expected_hours`). ``exclude_spot`` drops them.
    """

    max_total_cost: float | None = None
    max_total_hours: float | None = None
    exclude_spot: bool = False
    spot: SpotAssumptions = field(default_factory=SpotAssumptions)


def rank_offers(
    w: Workload,
    reference: Workload | None,
    session: Session,
    filters: dict[str, Any],
    ref: ReferenceData,
    *,
    currency: str,
    sort: str,
    limit: int,
    drop_oom: bool,
    budget: Budget | None = None,
) -> Ranking:
    """Estimate every matching offer, rank them, and build full estimates for the top ``limit``
    and for the Pareto-optimal offers ranked below it.

    Throughput depends only on (GPU, count, interconnect) and memory on (VRAM, count), so each
    is computed once per distinct configuration; the data-loader cap and the price are applied
    per offer. Full offer rows and estimates are built only for the offers returned. Offers
    whose GPU is unknown to the catalog cannot be estimated and are left out.

    Raises:
        FilterError: bad filter, or no exchange rate for ``currency``.
        WorkloadError: the workload's throughput cannot be estimated (see
            :func:`check_estimable`).
    """
    budget = budget or Budget()
    rows = select_rank_rows(session, filters, ref, currency=currency)
    if budget.exclude_spot:
        rows = [r for r in rows if r.billing != "spot"]
    models = _Models(w, reference, ref)
    check_estimable(w, models.requested())
    tp_cache: dict[tuple[str, float, Interconnect | None], ThroughputEstimate] = {}
    mem_cache: dict[tuple[float, int], MemoryEstimate] = {}
    samples_per_epoch = epoch_plan(w).samples
    names = ref.gpu_names_by_id
    skipped = [r.id for r in rows if r.gpu_model_id is None]
    estimable = [r for r in rows if r.gpu_model_id is not None]
    # One estimate per distinct hardware configuration; then per offer only the price, the
    # data-loader cap and the epoch time, and the ranking on columns (numpy).
    configs: dict[tuple[int, float, str | None, float | None], int] = {}
    config_of = [
        configs.setdefault(
            # estimable rows all have a GPU model
            (cast(int, r.gpu_model_id), r.gpu_count, r.interconnect, r.vram_gib_per_gpu),
            len(configs),
        )
        for r in estimable
    ]
    config_est: list[tuple[ThroughputEstimate, MemoryEstimate]] = []
    config_mem_key: list[tuple[float, float]] = []
    for gpu_id, count, interconnect, listed_vram in configs:
        gpu = ref.gpus[names[gpu_id]]
        link = offer_interconnect(interconnect)
        tkey = (gpu.name, count, link)
        tp = tp_cache.get(tkey)
        if tp is None:
            tp = tp_cache[tkey] = models.for_gpu(gpu).estimate(gpu, count, link)
        vram = vram_per_gpu_gib(gpu.vram_gib, listed_vram, count)
        mkey = (vram, math.floor(count))
        mem = mem_cache.get(mkey)
        if mem is None:
            # the verdict ranks every offer; the fixes are searched only for offers shown
            mem = mem_cache[mkey] = estimate_memory(
                w, vram_gib=vram, gpu_count=count, with_fixes=False
            )
        config_est.append((tp, mem))
        config_mem_key.append((vram, count))
    rates = {
        c: price_in(1.0, c, currency, ref)
        for c in {r.currency for r in estimable if r.price_per_hour is not None}
        if c != currency
    }
    prices: list[float | None] = [
        r.price_per_hour
        if r.price_per_hour is None or r.currency == currency
        else r.price_per_hour * cast(float, rates[r.currency])  # a price in gives a price out
        for r in estimable
    ]
    samples = []
    for r, c in zip(estimable, config_of, strict=True):
        s = config_est[c][0].samples_per_s
        loader = data_loader_rate(w, r.vcpus)
        samples.append(s if loader is None else min(s, loader))
    hours = [epoch_hours(samples_per_epoch, s) for s in samples]
    keep = list(range(len(estimable)))
    if budget.max_total_cost is not None or budget.max_total_hours is not None:
        keep = [
            i
            for i in keep
            if _within_budget(
                hours[i] * w.epochs, prices[i], estimable[i].billing == "spot", budget
            )
        ]
    over_budget = len(estimable) - len(keep)
    idx = np.array(keep, dtype=np.intp)
    price_col = np.array([math.inf if p is None else p for p in prices], dtype=np.float64).reshape(
        -1
    )[idx]
    hours_col = np.array(hours, dtype=np.float64).reshape(-1)[idx]
    cost_col = hours_col * price_col  # inf where there is no price
    cfg = np.array(config_of, dtype=np.intp).reshape(-1)[idx]
    cfg_oom = np.array([m.oom_risk == OomRisk.HIGH for _, m in config_est], dtype=bool)
    cols = CandidateColumns(
        offer_id=np.array([r.id for r in estimable], dtype=np.int64).reshape(-1)[idx],
        cost_per_epoch=cost_col,
        epoch_hours=hours_col,
        total_cost=cost_col * w.epochs,
        price_per_hour=price_col,
        samples_per_s=np.array(samples, dtype=np.float64).reshape(-1)[idx],
        oom_high=cfg_oom[cfg] if len(cfg) else np.zeros(0, dtype=bool),
    )
    top, below = rank_columns(cols, sort=sort, drop_oom=drop_oom, limit=limit)
    prepared = {}
    fixes_cache: dict[tuple[float, int], MemoryEstimate] = {}
    for i, _, _ in (*top, *below):
        j = keep[i]
        tp, mem = config_est[config_of[j]]
        if mem.oom_risk == OomRisk.HIGH:
            vram, count = config_mem_key[config_of[j]]
            key = (vram, math.floor(count))
            if key not in fixes_cache:
                fixes_cache[key] = estimate_memory(w, vram_gib=vram, gpu_count=count)
            mem = fixes_cache[key]
        prepared[estimable[j].id] = (estimable[j], tp, mem, prices[j])
    ranked = [Ranked(_candidate(cols, i), pareto, rank) for i, rank, pareto in top]
    extra = [Ranked(_candidate(cols, i), pareto, rank) for i, rank, pareto in below]
    candidates = keep
    full = select_offers_by_id(session, [r.candidate.offer_id for r in (*ranked, *extra)] + skipped)

    def build(r: Any) -> RankedOffer:
        _, tp, mem, price = prepared[r.candidate.offer_id]
        offer = full[r.candidate.offer_id]
        est = combine(
            w,
            offer_hardware(offer, ref),
            tp,
            mem,
            price_per_hour=price,
            currency=currency,
            billing=offer.billing,
            spot=budget.spot,
        )
        return RankedOffer(
            rank=r.rank,
            pareto_optimal=r.pareto_optimal,
            offer=offer,
            price_per_hour=price,
            estimate=est,
        )

    return Ranking(
        results=[build(r) for r in ranked],
        frontier=[build(r) for r in extra],
        total=len(candidates),
        unestimated=len(rows) - len(candidates) - over_budget,
        over_budget=over_budget,
        unestimable=tuple(
            (
                full[i],
                full[i].gpu_note
                or f"GPU {full[i].gpu_name_raw!r} matches no catalog model: no specs or "
                "measurements to estimate from",
            )
            for i in skipped
        ),
    )


def _within_budget(total_hours: float, price: float | None, spot: bool, budget: Budget) -> bool:
    """Whether an offer's whole run meets ``budget`` (spot: expected hours and cost)."""
    if budget.max_total_cost is None and budget.max_total_hours is None:
        return True
    hours = spot_expected_hours(total_hours, budget.spot) if spot else total_hours
    if budget.max_total_hours is not None and not hours <= budget.max_total_hours:
        return False
    return budget.max_total_cost is None or (
        price is not None and hours * price <= budget.max_total_cost
    )


@dataclass(frozen=True, slots=True)
class OfferEstimate:
    """One offer with its price in the asked currency and, when possible, its estimate."""

    offer: OfferRow
    price_per_hour: float | None
    estimate: Estimate | None


def estimate_offer(
    w: Workload | None,
    reference: Workload | None,
    session: Session,
    offer_id: int,
    ref: ReferenceData,
    *,
    currency: str,
    spot: SpotAssumptions | None = None,
) -> OfferEstimate | None:
    """Estimate ``w`` on one offer (``None`` when the offer does not exist).

    Gives the same numbers as :func:`rank_offers` for that offer. The estimate is ``None``
    without a workload or when the offer's GPU is not in the catalog.

    Raises:
        FilterError: no exchange rate for ``currency``.
    """
    offer = select_offers_by_id(session, [offer_id]).get(offer_id)
    if offer is None:
        return None
    price = price_in(offer.price_per_hour, offer.currency, currency, ref)
    if w is None or offer.gpu_model_id is None:
        return OfferEstimate(offer=offer, price_per_hour=price, estimate=None)
    est = estimate_what_if(
        w,
        reference,
        offer_hardware(offer, ref),
        ref,
        price_per_hour=price,
        currency=currency,
        billing=offer.billing,
        spot=spot,
    )
    return OfferEstimate(offer=offer, price_per_hour=price, estimate=est)
