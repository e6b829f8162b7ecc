"""Estimate and rank services: resolve inputs, call the pure core, shape the answers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.orm import Session

from app.estimate.cost import UnknownCurrencyError, combine, convert, epoch_hours
from app.estimate.memory import estimate_memory, vram_per_gpu_gb
from app.estimate.rank import Candidate, rank_with_frontier
from app.estimate.throughput import ThroughputModel
from app.estimate.types import (
    Estimate,
    Hardware,
    Interconnect,
    MemoryEstimate,
    OomRisk,
    ThroughputEstimate,
    Workload,
)
from app.services.offers import (
    FilterError,
    OfferRow,
    RankRow,
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
    """Map an offer's interconnect label to the core enum (NVSwitch/SXM boards are NVLink)."""
    if label in ("nvlink", "nvswitch", "sxm"):
        return Interconnect.NVLINK
    if label == "pcie":
        return Interconnect.PCIE
    return None


def hardware_from_input(h: dict[str, Any], ref: ReferenceData) -> Hardware:
    """Build core hardware from ``HardwareIn`` values.

    Raises:
        HardwareError: the GPU name matches nothing in the catalog.
    """
    canonical = ref.resolve_gpu(h["gpu"])
    if canonical is None:
        raise HardwareError("hardware.gpu", f"unknown GPU {h['gpu']!r}")
    return Hardware(
        gpu=ref.gpus[canonical],
        gpu_count=h.get("gpu_count") or 1,
        interconnect=Interconnect(h["interconnect"]) if h.get("interconnect") else None,
        vcpus=h.get("vcpus"),
        ram_gib=h.get("ram_gb"),
        disk_gb=h.get("disk_gb"),
        max_cuda=h.get("max_cuda"),
        vram_gib_per_gpu=h.get("vram_gb"),
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


def estimate_what_if(
    w: Workload,
    reference: Workload | None,
    hw: Hardware,
    ref: ReferenceData,
    *,
    price_per_hour: float | None,
    currency: str,
) -> Estimate:
    """Estimate for a hardware configuration with no offer."""
    vram = vram_per_gpu_gb(hw.gpu.vram_gb, hw.vram_gib_per_gpu, hw.gpu_count)
    memory = estimate_memory(w, vram_gb=vram, gpu_count=hw.gpu_count)
    model = ThroughputModel(
        w,
        points=ref.points,
        catalog=ref.gpus,
        reference=reference,
        flops_table=ref.flops_table,
        flop_rates=ref.flop_rates,
    )
    check_estimable(w, model)
    tp = model.estimate(hw.gpu, hw.gpu_count, hw.interconnect)
    return combine(w, hw, tp, memory, price_per_hour=price_per_hour, currency=currency)


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


def rank(
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
) -> tuple[list[RankedOffer], int]:
    """Estimate every matching offer, rank them, and build full estimates for the top ``limit``.

    Returns:
        (ranked offers, number of offers considered). See :func:`rank_offers`.

    Raises:
        FilterError: bad filter, or no exchange rate for ``currency``.
    """
    ranking = rank_offers(
        w,
        reference,
        session,
        filters,
        ref,
        currency=currency,
        sort=sort,
        limit=limit,
        drop_oom=drop_oom,
    )
    return ranking.results, ranking.total


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
    rows = select_rank_rows(session, filters, ref, currency=currency)
    model = ThroughputModel(
        w,
        points=ref.points,
        catalog=ref.gpus,
        reference=reference,
        flops_table=ref.flops_table,
        flop_rates=ref.flop_rates,
    )
    check_estimable(w, model)
    tp_cache: dict[tuple[str, float, Interconnect | None], ThroughputEstimate] = {}
    mem_cache: dict[tuple[float, int], MemoryEstimate] = {}
    rate_cache: dict[str, float] = {}
    cpu_ms = w.cpu_ms_per_sample
    samples_per_epoch = w.samples_per_epoch
    prepared: dict[int, tuple[RankRow, ThroughputEstimate, MemoryEstimate, float | None]] = {}
    candidates = []
    names = ref.gpu_names_by_id
    for row in rows:
        if row.gpu_model_id is None:
            continue
        gpu = ref.gpus[names[row.gpu_model_id]]
        link = offer_interconnect(row.interconnect)
        tkey = (gpu.name, row.gpu_count, link)
        tp = tp_cache.get(tkey)
        if tp is None:
            tp = tp_cache[tkey] = model.estimate(gpu, row.gpu_count, link)
        vram = vram_per_gpu_gb(gpu.vram_gb, row.vram_gib_per_gpu, row.gpu_count)
        mkey = (vram, math.floor(row.gpu_count))
        mem = mem_cache.get(mkey)
        if mem is None:
            mem = mem_cache[mkey] = estimate_memory(w, vram_gb=vram, gpu_count=row.gpu_count)
        price = row.price_per_hour
        if price is not None and row.currency != currency:
            rate = rate_cache.get(row.currency)
            if rate is None:
                # a price in gives a price out: never None here
                rate = rate_cache[row.currency] = cast(
                    float, price_in(1.0, row.currency, currency, ref)
                )
            price *= rate
        samples = tp.samples_per_s
        if cpu_ms and row.vcpus:
            samples = min(samples, max(row.vcpus - 1, 1.0) * 1000.0 / cpu_ms)
        hours = epoch_hours(samples_per_epoch, samples)
        cost = hours * price if price is not None else None
        candidates.append(
            Candidate(
                offer_id=row.id,
                cost_per_epoch=cost,
                epoch_hours=hours,
                total_cost=cost * w.epochs if cost is not None else None,
                price_per_hour=price,
                samples_per_s=samples,
                oom_high=mem.oom_risk == OomRisk.HIGH,
            )
        )
        prepared[row.id] = (row, tp, mem, price)
    ranked, extra = rank_with_frontier(candidates, sort=sort, drop_oom=drop_oom, limit=limit)
    full = select_offers_by_id(session, [r.candidate.offer_id for r in (*ranked, *extra)])

    def build(r: Any) -> RankedOffer:
        _, tp, mem, price = prepared[r.candidate.offer_id]
        offer = full[r.candidate.offer_id]
        est = combine(
            w, offer_hardware(offer, ref), tp, mem, price_per_hour=price, currency=currency
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
        unestimated=len(rows) - len(candidates),
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
        w, reference, offer_hardware(offer, ref), ref, price_per_hour=price, currency=currency
    )
    return OfferEstimate(offer=offer, price_per_hour=price, estimate=est)
