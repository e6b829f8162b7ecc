"""HTTP API under ``/v1`` (JSON). Handlers parse, make one service call, and shape the answer."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery, JSONBody, QueryParameter
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.api.schemas import (
    Billing,
    EstimateOut,
    EstimateRequest,
    EstimateResponse,
    EvidenceOut,
    MemoryOut,
    OfferFilters,
    OfferOut,
    OfferPage,
    RankedOfferOut,
    RankRequest,
    RankResponse,
)
from app.db.models import GpuModel, ThroughputBenchmark
from app.estimate.types import Estimate
from app.services.estimates import estimate_what_if, hardware_from_input, rank
from app.services.offers import FilterError, OfferRow, select_offers, stale_provider_ids
from app.services.reference import ReferenceData
from app.services.workloads import resolve_workload
from app.settings import Settings

#: Evidence rows per ranked offer (the full list is in ``POST /v1/estimate``).
RANK_MAX_EVIDENCE = 5


def provide_session(request: Request) -> Any:
    """One SQLAlchemy session per request (read-only use), closed afterwards."""
    session = request.app.state.session_factory()
    try:
        yield session
    finally:
        session.close()


def provide_reference(request: Request) -> ReferenceData:
    """The cached reference data (catalog, benchmarks, presets, rates)."""
    return request.app.state.reference.get()


def provide_settings(request: Request) -> Settings:
    """The app's settings."""
    return request.app.state.settings


def estimate_out(e: Estimate, max_evidence: int | None = None) -> EstimateOut:
    """Core estimate → response model (``max_evidence`` caps the evidence list)."""
    m = e.memory
    b = m.breakdown
    return EstimateOut(
        samples_per_s=e.samples_per_s, samples_per_s_low=e.samples_per_s_low,
        samples_per_s_high=e.samples_per_s_high, tokens_per_s=e.tokens_per_s, basis=e.basis,
        epoch_hours=e.epoch_hours, epoch_hours_low=e.epoch_hours_low,
        epoch_hours_high=e.epoch_hours_high, total_hours=e.total_hours,
        cost_per_epoch=e.cost_per_epoch, cost_per_epoch_low=e.cost_per_epoch_low,
        cost_per_epoch_high=e.cost_per_epoch_high, total_cost=e.total_cost,
        currency=e.currency, peak_memory_gib=m.peak_memory_gib,
        memory_utilization=m.memory_utilization, oom_risk=m.oom_risk,
        max_micro_batch_size=m.max_micro_batch_size,
        memory=MemoryOut(
            weights_gib=b.weights_gib, gradients_gib=b.gradients_gib,
            optimizer_gib=b.optimizer_gib, activations_gib=b.activations_gib,
            overhead_gib=b.overhead_gib, usable_vram_gib=m.usable_vram_gib,
        ),
        multi_gpu_efficiency=e.multi_gpu_efficiency,
        data_loader_samples_per_s=e.data_loader_samples_per_s,
        warnings=list(e.warnings), notes=list(e.notes),
        evidence=[EvidenceOut.model_validate(ev, from_attributes=True)
                  for ev in e.evidence[:max_evidence]],
        evidence_total=len(e.evidence),
    )


def offer_out(row: OfferRow, ref: ReferenceData, stale: set[int]) -> OfferOut:
    """Offer row → response model."""
    gpu = ref.gpu_names_by_id.get(row.gpu_model_id) if row.gpu_model_id else None
    vram = row.vram_gib_per_gpu or (ref.gpus[gpu].vram_gb if gpu else None)
    last_seen = row.last_seen_at
    if last_seen.tzinfo is None:
        last_seen = last_seen.replace(tzinfo=dt.UTC)
    return OfferOut(
        id=row.id, provider=row.provider, provider_name=row.provider_name,
        offer_key=row.offer_key, instance_type=row.instance_type, region=row.region, gpu=gpu,
        gpu_name_raw=row.gpu_name_raw, gpu_count=row.gpu_count, vram_gb_per_gpu=vram,
        vcpus=row.vcpus, ram_gb=row.ram_gib, disk_gb=row.disk_gb, max_cuda=row.max_cuda,
        driver_version=row.driver_version, interconnect=row.interconnect, billing=row.billing,
        price_per_hour=row.price_per_hour, currency=row.currency,
        price_is_estimate=row.price_is_estimate, available=row.available,
        stale=row.provider_id in stale, last_seen_at=last_seen.isoformat(), source=row.source,
    )


class V1Controller(Controller):
    """gpucost API v1."""

    path = "/v1"
    dependencies = {  # noqa: RUF012 - Litestar reads this class attribute
        "session": Provide(provide_session),
        "ref": Provide(provide_reference, sync_to_thread=False),
        "settings": Provide(provide_settings, sync_to_thread=False),
    }

    @get("/offers", sync_to_thread=True)
    def list_offers(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
        gpu: FromQuery[str | None] = None,
        min_vram_gb: Annotated[float | None, QueryParameter(ge=0)] = None,
        gpu_count: Annotated[float | None, QueryParameter(gt=0)] = None,
        provider: FromQuery[str | None] = None,
        region: FromQuery[str | None] = None,
        billing: FromQuery[Billing | None] = None,
        max_price_per_hour: Annotated[float | None, QueryParameter(gt=0)] = None,
        currency: Annotated[str, QueryParameter(pattern=r"^[A-Z]{3}$")] = "USD",
        available_only: FromQuery[bool] = True,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0,
    ) -> OfferPage:
        """Instance offers, filtered and paginated (ordered by id).

        ``max_price_per_hour`` is in ``currency`` (offers in other currencies are converted
        with the stored exchange rates); prices in the answer are as listed.
        """
        filters = OfferFilters(
            gpu=gpu, min_vram_gb=min_vram_gb, gpu_count=gpu_count, provider=provider,
            region=region, billing=billing, max_price_per_hour=max_price_per_hour,
            available_only=available_only,
        ).model_dump()
        rows = select_offers(session, filters, ref, currency=currency)
        stale = stale_provider_ids(session, settings.stale_after_hours)
        page = rows[offset:offset + limit]
        return OfferPage(items=[offer_out(r, ref, stale) for r in page], total=len(rows),
                         limit=limit, offset=offset)

    @get("/gpus", sync_to_thread=True)
    def list_gpus(self, session: NamedDependency[Session]) -> list[dict[str, Any]]:
        """The GPU catalog with specs, aliases and sources (dense TFLOPS; VRAM in GB)."""
        out = []
        for g in session.scalars(select(GpuModel).order_by(GpuModel.id)):
            out.append({
                c.name: getattr(g, c.name) for c in GpuModel.__table__.columns
            })
        return out

    @get("/benchmarks", sync_to_thread=True)
    def list_benchmarks(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        gpu: FromQuery[str | None] = None,
        workload: FromQuery[str | None] = None,
        ids: Annotated[str | None, QueryParameter(pattern=r"^\d{1,12}(,\d{1,12}){0,499}$")] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=5000)] = 500,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0,
    ) -> dict[str, Any]:
        """Measured training throughput, filtered by GPU (any alias) and workload label.

        ``workload`` matches the benchmark label (e.g. "ResNet-50 v1.5") or a preset slug,
        which selects the labels that preset stands for; ``ids`` (comma-separated) fetches the
        measurements an estimate cites in its ``evidence``.
        """
        stmt = select(ThroughputBenchmark)
        if ids:
            stmt = stmt.where(ThroughputBenchmark.id.in_([int(i) for i in ids.split(",")]))
        if gpu:
            canonical = ref.resolve_gpu(gpu)
            if canonical is None:
                raise FilterError("gpu", f"unknown GPU {gpu!r}")
            stmt = stmt.where(ThroughputBenchmark.gpu_model_id == ref.gpu_ids_by_name[canonical])
        if workload:
            labels = list(ref.presets[workload].benchmark_workloads) if workload in ref.presets \
                else [workload]
            stmt = stmt.where(ThroughputBenchmark.workload.in_(labels))
        total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
        rows = session.scalars(stmt.order_by(ThroughputBenchmark.id).offset(offset).limit(limit))
        items = []
        for b in rows:
            item = {c.name: getattr(b, c.name) for c in ThroughputBenchmark.__table__.columns}
            item["gpu"] = ref.gpu_names_by_id.get(b.gpu_model_id) if b.gpu_model_id else None
            item["throughput_per_gpu"] = b.throughput_total / b.gpu_count
            items.append(item)
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    @get("/workloads", sync_to_thread=False)
    def list_workloads(self, ref: NamedDependency[ReferenceData]) -> list[dict[str, Any]]:
        """Workload presets: every field value, the benchmark labels they stand for, sources."""
        return [
            {
                "preset": p.slug, "name": p.name, **p.fields,
                "benchmark_workloads": list(p.benchmark_workloads),
                "benchmark_method": p.benchmark_method,
                "units_per_sample": p.units_per_sample, "throughput_unit": p.throughput_unit,
                "source": p.source, "notes": p.notes,
            }
            for p in ref.presets.values()
        ]

    @post("/estimate", sync_to_thread=False, status_code=200)
    def estimate(
        self, data: JSONBody[EstimateRequest], ref: NamedDependency[ReferenceData]
    ) -> EstimateResponse:
        """Estimate a workload on a what-if machine (no offer needed).

        Returns throughput (samples/s for all GPUs), epoch time, OOM risk from the per-GPU
        memory estimate, and the measurements used. With ``price_per_hour`` (in ``currency``)
        the cost per epoch too.
        """
        given = data.workload.model_dump(exclude_unset=True, mode="json")
        workload, reference, echo = resolve_workload(given, ref)
        hw_in = data.hardware.model_dump(mode="json")
        hw = hardware_from_input(hw_in, ref)
        if data.currency not in {c for pair in ref.rates for c in pair} | {"USD"}:
            raise FilterError("currency", f"no exchange rate for {data.currency}")
        est = estimate_what_if(workload, reference, hw, ref, price_per_hour=data.price_per_hour,
                               currency=data.currency)
        hw_echo = {**hw_in, "gpu": hw.gpu.name, "vram_gb": hw.vram_gib_per_gpu or hw.gpu.vram_gb}
        return EstimateResponse(workload=echo, hardware=hw_echo, estimate=estimate_out(est))

    @post("/rank", sync_to_thread=True, status_code=200)
    def rank_offers(
        self,
        data: JSONBody[RankRequest],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> RankResponse:
        """Rank offers for a workload by cost per epoch (or time), OOM-risky offers last.

        Each result carries the offer, its price in ``currency`` and the estimate;
        ``pareto_optimal`` marks offers no other fitting offer beats on both cost per epoch and
        epoch time.
        """
        given = data.workload.model_dump(exclude_unset=True, mode="json")
        workload, reference, echo = resolve_workload(given, ref)
        ranked, total = rank(workload, reference, session, data.filters.model_dump(), ref,
                             currency=data.currency, sort=data.sort, limit=data.limit,
                             drop_oom=data.drop_oom)
        stale = stale_provider_ids(session, settings.stale_after_hours)
        results = [
            RankedOfferOut(rank=r.rank, pareto_optimal=r.pareto_optimal,
                           offer=offer_out(r.offer, ref, stale), price_per_hour=r.price_per_hour,
                           estimate=estimate_out(r.estimate, RANK_MAX_EVIDENCE))
            for r in ranked
        ]
        return RankResponse(workload=echo, currency=data.currency, sort=data.sort,
                            total_offers=total, results=results)
