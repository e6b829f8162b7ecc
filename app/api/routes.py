"""HTTP API under ``/v1`` (JSON). Handlers parse, make one service call, and shape the answer."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import anyio.to_thread
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import NotFoundException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromQuery, JSONBody, PathParameter, QueryParameter
from sqlalchemy.orm import Session

from app.api.query import (
    OfferQuery,
    ParamError,
    flat_field,
    order_rows,
    parse_offer_query,
    parse_rank_query,
)
from app.api.schemas import (
    MAX_PRICE,
    MAX_TEXT,
    Billing,
    ErrorOut,
    EstimateOut,
    EstimateRequest,
    EstimateResponse,
    EvidenceOut,
    MemoryFixOut,
    MemoryOut,
    OfferDetailResponse,
    OfferDetailsOut,
    OfferFilters,
    OfferOut,
    OfferPage,
    PricePointOut,
    RankedOfferOut,
    RankRequest,
    RankResponse,
    SpotIn,
    UnestimableOfferOut,
    WarningOut,
)
from app.api.submissions import handle_submission
from app.estimate.cost import SpotAssumptions
from app.estimate.memory import vram_per_gpu_gb
from app.estimate.types import Estimate
from app.services.catalog import search_benchmarks, search_gpus
from app.services.estimates import (
    Budget,
    RankedOffer,
    estimate_offer,
    estimate_what_if,
    hardware_from_input,
    rank_offers,
)
from app.services.offer_detail import offer_extras
from app.services.offers import (
    FilterError,
    OfferRow,
    offer_age_days,
    offer_is_stale,
    page_offers,
    stale_provider_ids,
)
from app.services.reference import ReferenceData
from app.services.refresh_runs import price_history
from app.services.workloads import WorkloadError, resolve_workload
from app.settings import Settings

#: Largest id a BIGINT primary key holds (bigger path ids are a 400, not a database error).
MAX_ID = 2**63 - 1


def error_responses(*codes: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the error answers a route gives besides validation's 400."""
    text = {
        400: "Invalid input: `extra` names each field and the reason",
        401: "No valid bearer token (`Authorization: Bearer <token>`); nothing was stored",
        404: "No such offer",
        409: "The `run_id` was already used by another submitter",
        429: "Too many submissions for this token; see `Retry-After`",
        503: "Database unavailable or busy; see `Retry-After`",
    }
    return {
        c: ResponseSpec(data_container=ErrorOut, description=text[c], generate_examples=False)
        for c in codes
    }


#: Evidence rows per ranked offer (the full list is in ``POST /v1/estimate``).
RANK_MAX_EVIDENCE = 5


async def provide_session(request: Request) -> AsyncGenerator[Session, None]:
    """One SQLAlchemy session per request (read-only use), closed afterwards.

    The session is created on the event loop (it connects lazily, in the handler's thread)
    and closed on a thread of its own limiter: closing returns the connection to the pool,
    and must not wait for a handler thread, since those may all be waiting for connections
    (see :mod:`app.api.health`).
    """
    session = request.app.state.session_factory()
    try:
        yield session
    finally:
        await anyio.to_thread.run_sync(session.close, limiter=request.app.state.release_limiter)


async def provide_reference(request: Request) -> ReferenceData:
    """The cached reference data (catalog, benchmarks, presets, rates); loads off the loop."""
    return await request.app.state.reference.aget()


def provide_settings(request: Request) -> Settings:
    """The app's settings."""
    return request.app.state.settings


def estimate_out(e: Estimate, max_evidence: int | None = None) -> EstimateOut:
    """Core estimate → response model (``max_evidence`` caps the evidence list)."""
    m = e.memory
    b = m.breakdown
    return EstimateOut(
        samples_per_s=e.samples_per_s,
        samples_per_s_low=e.samples_per_s_low,
        samples_per_s_high=e.samples_per_s_high,
        tokens_per_s=e.tokens_per_s,
        basis=e.basis,
        situation=e.situation,
        epoch_hours=e.epoch_hours,
        epoch_hours_low=e.epoch_hours_low,
        epoch_hours_high=e.epoch_hours_high,
        total_hours=e.total_hours,
        cost_per_epoch=e.cost_per_epoch,
        cost_per_epoch_low=e.cost_per_epoch_low,
        cost_per_epoch_high=e.cost_per_epoch_high,
        total_cost=e.total_cost,
        currency=e.currency,
        peak_memory_gib=m.peak_memory_gib,
        memory_utilization=m.memory_utilization,
        oom_risk=m.oom_risk,
        max_micro_batch_size=m.max_micro_batch_size,
        memory=MemoryOut(
            weights_gib=b.weights_gib,
            gradients_gib=b.gradients_gib,
            optimizer_gib=b.optimizer_gib,
            activations_gib=b.activations_gib,
            overhead_gib=b.overhead_gib,
            usable_vram_gib=m.usable_vram_gib,
            allocated_gib=b.allocated_gib,
            logits_gib=b.logits_gib,
            buffers_gib=b.buffers_gib,
            init_extra_gib=b.init_extra_gib,
            context_gib=b.context_gib,
            allocator_slack_gib=b.allocator_slack_gib,
        ),
        oom_probability=m.oom_probability,
        memory_fixes=[
            MemoryFixOut(
                label=f.label,
                changes=dict(f.changes),
                peak_memory_gib=f.peak_memory_gib,
                oom_risk=f.oom_risk,
                oom_probability=f.oom_probability,
            )
            for f in m.fixes
        ],
        multi_gpu_efficiency=e.multi_gpu_efficiency,
        data_loader_samples_per_s=e.data_loader_samples_per_s,
        warnings=[
            WarningOut(code=w.code.value, message=w.message, values=dict(w.values))
            for w in e.warnings
        ],
        notes=list(e.notes),
        epoch_definition=e.epoch_definition,
        epoch_samples=e.epoch_samples,
        epoch_tokens=e.epoch_tokens,
        interruptible=e.interruptible,
        expected_total_hours=e.expected_total_hours,
        expected_total_cost=e.expected_total_cost,
        evidence=[
            EvidenceOut.model_validate(ev, from_attributes=True) for ev in e.evidence[:max_evidence]
        ],
        evidence_total=len(e.evidence),
    )


def spot_assumptions(data: SpotIn) -> SpotAssumptions:
    """The request's spot assumptions over the documented defaults."""
    default = SpotAssumptions()
    return SpotAssumptions(
        interruptions_per_hour=default.interruptions_per_hour
        if data.spot_interruptions_per_hour is None
        else data.spot_interruptions_per_hour,
        checkpoint_interval_hours=data.spot_checkpoint_interval_hours
        or default.checkpoint_interval_hours,
        restart_hours=default.restart_hours
        if data.spot_restart_hours is None
        else data.spot_restart_hours,
    )


def offer_out(
    row: OfferRow,
    ref: ReferenceData,
    stale: set[int],
    *,
    stale_after_days: float = 7.0,
    now: dt.datetime | None = None,
) -> OfferOut:
    """Offer row → response model.

    ``stale``: ids of providers whose refreshes stopped succeeding; an offer is also stale when
    its source last showed it more than ``stale_after_days`` ago, or gave no date.
    """
    gpu = ref.gpu_names_by_id.get(row.gpu_model_id) if row.gpu_model_id else None
    vram = (
        vram_per_gpu_gb(ref.gpus[gpu].vram_gb, row.vram_gib_per_gpu, row.gpu_count)
        if gpu
        else row.vram_gib_per_gpu
    )
    last_seen = row.last_seen_at
    if last_seen is not None and last_seen.tzinfo is None:
        last_seen = last_seen.replace(tzinfo=dt.UTC)
    age = offer_age_days(last_seen, now or dt.datetime.now(dt.UTC))
    per_gpu = (
        row.price_per_hour / row.gpu_count
        if row.price_per_hour is not None and row.gpu_count
        else None
    )
    return OfferOut(
        id=row.id,
        provider=row.provider,
        provider_name=row.provider_name,
        offer_key=row.offer_key,
        instance_type=row.instance_type,
        region=row.region,
        gpu=gpu,
        gpu_name_raw=row.gpu_name_raw,
        gpu_count=row.gpu_count,
        vram_gb_per_gpu=vram,
        vcpus=row.vcpus,
        ram_gb=row.ram_gib,
        disk_gb=row.disk_gb,
        max_cuda=row.max_cuda,
        driver_version=row.driver_version,
        interconnect=row.interconnect,
        billing=row.billing,
        price_per_hour=row.price_per_hour,
        currency=row.currency,
        price_is_estimate=row.price_is_estimate,
        available=row.available,
        stale=offer_is_stale(age, stale_after_days, row.provider_id in stale),
        last_seen_at=last_seen.isoformat() if last_seen is not None else None,
        source=row.source,
        age_days=round(age, 2) if age is not None else None,
        price_per_gpu_hour=per_gpu,
        suspect=row.suspect,
        suspect_reason=row.suspect_reason,
        gpu_note=row.gpu_note,
        offer_url=row.offer_url,
    )


def rank_response(
    data: RankRequest,
    session: Session,
    ref: ReferenceData,
    settings: Settings,
    order: str | None = None,
) -> RankResponse:
    """Rank offers for a request (``POST /v1/rank``, ``GET /v1/rank`` and the web page).

    ``order`` re-orders the returned rows by a column (see :func:`app.api.query.order_rows`).

    Raises:
        WorkloadError, FilterError: bad input, naming the field.
    """
    given = data.workload.model_dump(exclude_unset=True, mode="json")
    workload, reference, echo = resolve_workload(given, ref)
    ranking = rank_offers(
        workload,
        reference,
        session,
        data.filters.model_dump(),
        ref,
        currency=data.currency,
        sort=data.sort,
        limit=data.limit,
        drop_oom=data.drop_oom,
        budget=Budget(
            max_total_cost=data.max_total_cost,
            max_total_hours=data.max_total_hours,
            exclude_spot=data.exclude_spot,
            spot=spot_assumptions(data),
        ),
    )
    stale = stale_provider_ids(session, settings.stale_after_hours)

    def out(r: RankedOffer) -> RankedOfferOut:
        return RankedOfferOut(
            rank=r.rank,
            pareto_optimal=r.pareto_optimal,
            offer=offer_out(r.offer, ref, stale, stale_after_days=settings.offer_stale_after_days),
            price_per_hour=r.price_per_hour,
            estimate=estimate_out(r.estimate, RANK_MAX_EVIDENCE),
        )

    return RankResponse(
        workload=echo,
        currency=data.currency,
        sort=data.sort,
        order=order,
        total_offers=ranking.total,
        unestimated_offers=ranking.unestimated,
        over_budget_offers=ranking.over_budget,
        results=order_rows([out(r) for r in ranking.results], order),
        frontier=[out(r) for r in ranking.frontier],
        unestimable=[
            UnestimableOfferOut(
                offer=offer_out(o, ref, stale, stale_after_days=settings.offer_stale_after_days),
                reason=reason,
            )
            for o, reason in ranking.unestimable
        ],
    )


def offer_detail(
    offer_id: int,
    query: OfferQuery,
    session: Session,
    ref: ReferenceData,
    settings: Settings,
) -> OfferDetailResponse:
    """One offer with its listing details, price history and, for a workload, its estimate.

    Raises:
        NotFoundException: no offer ``offer_id``.
        WorkloadError, FilterError: bad input, naming the field.
    """
    workload = reference = echo = None
    if query.workload is not None:
        given = query.workload.model_dump(exclude_unset=True, mode="json")
        workload, reference, echo = resolve_workload(given, ref)
    found = estimate_offer(workload, reference, session, offer_id, ref, currency=query.currency)
    extras = offer_extras(session, offer_id)
    history = price_history(session, offer_id)
    if found is None or extras is None or history is None:
        raise NotFoundException(f"no offer {offer_id}")
    stale = stale_provider_ids(session, settings.stale_after_hours)
    return OfferDetailResponse(
        offer=offer_out(found.offer, ref, stale, stale_after_days=settings.offer_stale_after_days),
        details=OfferDetailsOut(
            cpu_model=extras.cpu_model,
            system_disk_gb=extras.system_disk_gb,
            data_disk_gb=extras.data_disk_gb,
            disk_type=extras.disk_type,
            network_up_mbps=extras.network_up_mbps,
            network_down_mbps=extras.network_down_mbps,
            first_seen_at=extras.first_seen_at.isoformat(),
            seen_on=extras.seen_on.isoformat() if extras.seen_on else None,
            notes=extras.notes,
        ),
        currency=query.currency,
        price_per_hour=found.price_per_hour,
        workload=echo,
        estimate=estimate_out(found.estimate) if found.estimate is not None else None,
        price_history=[
            PricePointOut(
                observed_at=p.observed_at.isoformat(),
                price_per_hour=p.price_per_hour,
                currency=p.currency,
                source=p.source,
            )
            for p in history.observations
        ],
    )


def bad_params(exc: ParamError | WorkloadError | FilterError) -> ValidationException:
    """A flat-parameter error as the API's 400 (``extra`` names every parameter, flat)."""
    if not isinstance(exc, ParamError):
        exc = ParamError([(flat_field(exc.field), exc.reason)])
    return ValidationException(detail="Invalid query parameters", extra=exc.as_extra())


class V1Controller(Controller):
    """gpucost API v1."""

    path = "/v1"
    dependencies = {  # noqa: RUF012 - Litestar reads this class attribute
        "session": Provide(provide_session),
        "ref": Provide(provide_reference),
        "settings": Provide(provide_settings, sync_to_thread=False),
    }

    @get("/offers", sync_to_thread=True)
    def list_offers(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
        gpu: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        min_vram_gb: Annotated[float | None, QueryParameter(ge=0, le=10**5)] = None,
        gpu_count: Annotated[float | None, QueryParameter(gt=0, le=1024)] = None,
        provider: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        region: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        billing: FromQuery[Billing | None] = None,
        max_price_per_hour: Annotated[float | None, QueryParameter(gt=0, le=MAX_PRICE)] = None,
        currency: Annotated[str, QueryParameter(pattern=r"^[A-Z]{3}$")] = "USD",
        available_only: FromQuery[bool] = True,
        include_suspect: FromQuery[bool] = False,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0,
    ) -> OfferPage:
        """Instance offers, filtered and paginated (ordered by id).

        ``max_price_per_hour`` is in ``currency`` (offers in other currencies are converted
        with the stored exchange rates); prices in the answer are as listed.
        """
        filters = OfferFilters(
            gpu=gpu,
            min_vram_gb=min_vram_gb,
            gpu_count=gpu_count,
            provider=provider,
            region=region,
            billing=billing,
            max_price_per_hour=max_price_per_hour,
            available_only=available_only,
            include_suspect=include_suspect,
        ).model_dump()
        page, total = page_offers(
            session, filters, ref, currency=currency, limit=limit, offset=offset
        )
        stale = stale_provider_ids(session, settings.stale_after_hours)
        return OfferPage(
            items=[
                offer_out(r, ref, stale, stale_after_days=settings.offer_stale_after_days)
                for r in page
            ],
            total=total,
            limit=limit,
            offset=offset,
        )

    @get("/gpus", sync_to_thread=True)
    def list_gpus(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        q: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
    ) -> list[dict[str, Any]]:
        """The GPU catalog with specs, aliases and sources (dense TFLOPS; VRAM in GB).

        ``q`` keeps GPUs whose name, alias, vendor, architecture or market contains it, or
        whose name it resolves to (``A100-SXM4-80GB``).
        """
        return search_gpus(session, ref, q)

    @get("/benchmarks", sync_to_thread=True)
    def list_benchmarks(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        gpu: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        workload: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        q: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        ids: Annotated[str | None, QueryParameter(pattern=r"^\d{1,12}(,\d{1,12}){0,499}$")] = None,
        status: Annotated[str | None, QueryParameter(pattern=r"^(accepted|held)$")] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=5000)] = 500,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0,
    ) -> dict[str, Any]:
        """Measured training throughput, filtered by GPU (any alias) and workload label.

        ``workload`` matches the benchmark label (e.g. "ResNet-50 v1.5") or a preset slug,
        which selects the labels that preset stands for; ``q`` is a case-insensitive
        substring of the label, task, GPU as published, framework, precision or source;
        ``ids`` (comma-separated) fetches the measurements an estimate cites in its
        ``evidence``; ``status`` ``held`` lists the submitted rows held for review (more than
        2× off the estimate: stored, never used), ``accepted`` the rest.
        """
        items, total = search_benchmarks(
            session,
            ref,
            gpu=gpu,
            workload=workload,
            q=q,
            ids=[int(i) for i in ids.split(",")] if ids else None,
            status=status,
            limit=limit,
            offset=offset,
        )
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    @post(
        "/benchmarks",
        sync_to_thread=True,
        status_code=201,
        responses={
            200: ResponseSpec(
                data_container=dict[str, Any],
                description="The row already stored for this `run_id` (same submitter)",
                generate_examples=False,
            ),
            **error_responses(400, 401, 409, 429),
        },
    )
    def submit_benchmark(
        self,
        request: Request,
        data: JSONBody[dict[str, Any]],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[dict[str, Any]]:
        """Store a measurement from ``gpucost bench`` (``Authorization: Bearer <token>``).

        Body: :class:`app.api.submissions.BenchmarkSubmission`. Stored with ``source``
        ``submitted``, the environment, the token's name and the time; it moves estimates only
        within 2× of the current estimate for that workload on that GPU, else it is ``held``
        (``GET /v1/benchmarks?status=held``). 201 new; 200 with the stored row when the same
        submitter sends the same ``run_id`` again; 401 without a valid token (nothing stored);
        400 naming the field; 409 run id of another submitter; 429 past the rate limit.
        """
        return handle_submission(request, data, session, ref, settings)

    @get("/workloads", sync_to_thread=False)
    def list_workloads(self, ref: NamedDependency[ReferenceData]) -> list[dict[str, Any]]:
        """Workload presets: every field value, the benchmark labels they stand for, sources."""
        return [
            {
                "preset": p.slug,
                "name": p.name,
                **p.fields,
                "benchmark_workloads": list(p.benchmark_workloads),
                "benchmark_method": p.benchmark_method,
                "units_per_sample": p.units_per_sample,
                "throughput_unit": p.throughput_unit,
                "source": p.source,
                "notes": p.notes,
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
        est = estimate_what_if(
            workload,
            reference,
            hw,
            ref,
            price_per_hour=data.price_per_hour,
            currency=data.currency,
            billing=data.billing,
            spot=spot_assumptions(data),
        )
        hw_echo = {
            **hw_in,
            "gpu": hw.gpu.name,
            "vram_gb": vram_per_gpu_gb(hw.gpu.vram_gb, hw.vram_gib_per_gpu, hw.gpu_count),
        }
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
        return rank_response(data, session, ref, settings)

    @get("/rank", sync_to_thread=True, responses=error_responses(400))
    def rank_offers_flat(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> RankResponse:
        """``POST /v1/rank`` with flat query parameters: the JSON twin of the web page ``/``.

        Parameters are the body's field names, flat: every workload field (``preset``,
        ``params``, ``micro_batch_size``, ``seq_len``, ``precision`` …), every filter (``gpu``,
        ``gpu_count``, ``provider``, ``region``, ``billing``, ``max_price_per_hour`` …),
        ``currency``, ``sort``, ``limit``, ``drop_oom``, and ``order`` (re-order the returned
        rows by any table column, ``-`` prefix for descending). Example:
        ``/v1/rank?preset=resnet50-imagenet&gpu_count=1&currency=CNY``.
        """
        try:
            query = parse_rank_query(dict(request.query_params.items()))
            return rank_response(query.request, session, ref, settings, order=query.order)
        except (ParamError, WorkloadError, FilterError) as exc:
            raise bad_params(exc) from exc

    @get("/offers/{offer_id:int}", sync_to_thread=True, responses=error_responses(404))
    def get_offer(
        self,
        offer_id: Annotated[int, PathParameter(ge=1, le=MAX_ID)],
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> OfferDetailResponse:
        """One offer, its price history and, given workload parameters, its estimate.

        The JSON twin of the web page ``/offers/{id}``. Parameters: the flat workload fields
        of ``GET /v1/rank`` (``preset``, ``micro_batch_size`` …) and ``currency``; the
        estimate lists every measurement it used.
        """
        try:
            query = parse_offer_query(dict(request.query_params.items()))
            return offer_detail(offer_id, query, session, ref, settings)
        except (ParamError, WorkloadError, FilterError) as exc:
            raise bad_params(exc) from exc
