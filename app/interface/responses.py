"""The answers' builders the JSON API and the web pages share.

The pages (:mod:`app.web.pages`) render the same answers as the API's controllers
(:mod:`app.api`), so both build them here; neither imports the other (import contracts in
pyproject.toml). The request dependencies are :mod:`app.interface.deps`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from litestar import MediaType, Response
from litestar.exceptions import NotFoundException
from litestar.serialization import encode_json
from sqlalchemy.orm import Session

from app.db.models import as_utc
from app.fields import same_named
from app.interface.query import (
    OfferQuery,
    order_rows,
)
from app.interface.schemas import (
    EstimateOut,
    EvidenceOut,
    ExchangeRateOut,
    MemoryFixOut,
    MemoryOut,
    MultiGpuOut,
    OfferDetailResponse,
    OfferDetailsOut,
    OfferFilters,
    OfferOut,
    PricePointOut,
    RankAnswerOut,
    RankedOfferOut,
    RankRequest,
    RankResponse,
    SpotIn,
    UnestimableOfferOut,
    WarningOut,
)
from app.model.cost import SpotAssumptions, price_per_gpu_hour
from app.model.rank import pareto_front
from app.model.run_warnings import cannot_run
from app.model.types import Estimate, interconnect_label
from app.services.estimates import (
    Budget,
    RankedOffer,
    estimate_offer,
    rank_offers,
)
from app.services.offer_detail import offer_extras
from app.services.offers import (
    FilterError,
    OfferRow,
    resolve_gpu_list,
    vram_gib,
)
from app.services.rates import rates_used
from app.services.reference import ReferenceData
from app.services.refresh_runs import price_history
from app.services.snapshot import per_version, stale_providers
from app.services.workloads import resolve_workload
from app.settings import Settings


def iso_times(values: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """``values`` with the datetimes under ``keys`` as ISO 8601 text (``None`` stays
    ``None``), as the answers' models take them."""
    return {k: v.isoformat() if k in keys and v is not None else v for k, v in values.items()}


#: Evidence rows per ranked offer (the full list is in ``POST /v1/estimate``).
RANK_MAX_EVIDENCE = 5


def estimate_out(e: Estimate, max_evidence: int | None = None) -> EstimateOut:
    """Core estimate → response model (``max_evidence`` caps the evidence list): the
    estimate's own figures, its memory's (peak, utilisation, OOM risk and probability, largest
    micro-batch) and the breakdown's parts, each under the same name."""
    m = e.memory
    return same_named(
        EstimateOut,
        e,
        m,
        memory=same_named(MemoryOut, m.breakdown, m),
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
        multi_gpu=MultiGpuOut.model_validate(e.multi_gpu, from_attributes=True)
        if e.multi_gpu
        else None,
        warnings=[
            WarningOut(code=w.code.value, message=w.message, values=dict(w.values))
            for w in e.warnings
        ],
        notes=list(e.notes),
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


def exchange_rates_out(
    ref: ReferenceData, currencies: Iterable[str], target: str
) -> list[ExchangeRateOut]:
    """The rates converting ``currencies`` to ``target``, with their dates and sources
    (:func:`app.services.rates.rates_used`)."""
    return [
        ExchangeRateOut(
            base=r.base,
            quote=r.quote,
            rate=r.rate,
            seen_on=r.seen_on.isoformat() if r.seen_on else None,
            source=r.source,
            age_days=r.age_days,
            warning=r.warning,
        )
        for r in rates_used(ref, sorted(set(currencies)), target)
    ]


def offer_out(
    row: OfferRow,
    ref: ReferenceData,
    stale: set[int],
    *,
    now: dt.datetime | None = None,
) -> OfferOut:
    """Offer row → response model.

    ``stale``: ids of providers whose refreshes stopped succeeding. The price's age, tier and
    kind come from :mod:`app.price_age` (one definition for the API, the ranking and the pages).
    """
    gpu = ref.gpu_names_by_id.get(row.gpu_model_id) if row.gpu_model_id else None
    vram = vram_gib(row, ref)  # the VRAM the min_vram_gib filter sees
    last_seen = as_utc(row.last_seen_at)
    age = row.price_age(now or dt.datetime.now(dt.UTC))
    per_gpu = price_per_gpu_hour(row.price_per_hour, row.gpu_count)
    refresh_stale = row.provider_id in stale
    seen = last_seen.isoformat() if last_seen is not None else None
    return same_named(
        OfferOut,
        row,
        gpu=gpu,
        vram_gib_per_gpu=vram,
        interconnect=interconnect_label(row.interconnect),
        stale=age.demoted or refresh_stale,
        last_seen_at=seen,
        age_days=round(age.age_days, 2) if age.age_days is not None else None,
        price_seen_at=seen,
        price_age=age.tier,
        price_kind=age.kind,
        bookable=age.bookable,
        provider_refresh_stale=refresh_stale,
        price_per_gpu_hour=per_gpu,
        offer_url=row.offer_url or row.provider_url,
    )


def rank_response(
    data: RankRequest,
    session: Session,
    ref: ReferenceData,
    settings: Settings,
    order: str | None = None,
) -> RankResponse:
    """Rank offers for a request (``POST /v1/rank``, ``GET /v1/rank`` and the web page).

    ``order`` re-orders the returned rows by a column (see :func:`app.interface.query.order_rows`).

    The answer is kept per (request, ``order``) with the offers of ``ref``'s catalog version
    (:func:`app.services.snapshot.per_version`: at most 256 answers, each for at most 60 s,
    since prices age with the clock), so a repeated request is answered without ranking.

    Raises:
        WorkloadError, FilterError: bad input, naming the field.
    """
    key = (data.model_dump_json(), order)
    return per_version(
        ref, "rank", key, lambda: _rank_response(data, session, ref, settings, order)
    )


def _rank_response(
    data: RankRequest,
    session: Session,
    ref: ReferenceData,
    settings: Settings,
    order: str | None,
) -> RankResponse:
    """:func:`_ranked` with a bad filter named where the body has it (``filters.gpu``, as an
    estimate names ``hardware.gpu``; flat query parameters drop the prefix again:
    :func:`app.interface.query.flat_field`)."""
    try:
        return _ranked(data, session, ref, settings, order)
    except FilterError as exc:
        if exc.field in OfferFilters.model_fields:
            raise FilterError(f"filters.{exc.field}", exc.reason) from None
        raise


def _ranked(
    data: RankRequest,
    session: Session,
    ref: ReferenceData,
    settings: Settings,
    order: str | None,
) -> RankResponse:
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
        budget=same_named(
            Budget, data, at_high_end=data.budget_at_high_end, spot=spot_assumptions(data)
        ),
        bookable_fresh_first=data.bookable_fresh_first,
    )
    stale = stale_providers(session, ref, settings.stale_after_hours)

    def out(r: RankedOffer) -> RankedOfferOut:
        return RankedOfferOut(
            rank=r.rank,
            pareto_optimal=r.pareto_optimal,
            offer=offer_out(r.offer, ref, stale),
            price_per_hour=r.price_per_hour,
            estimate=estimate_out(r.estimate, RANK_MAX_EVIDENCE),
        )

    results = [out(r) for r in ranking.results]
    frontier = [out(r) for r in ranking.frontier]
    listed = {r.offer.currency for r in (*ranking.results, *ranking.frontier)}
    return RankResponse(
        workload=echo,
        currency=data.currency,
        exchange_rates=exchange_rates_out(ref, listed, data.currency),
        sort=data.sort,
        order=order,
        total_offers=ranking.total,
        unestimated_offers=ranking.unestimated,
        over_budget_offers=ranking.over_budget,
        gpus_matched=resolve_gpu_list(ref, data.filters.gpu) if data.filters.gpu else None,
        results=order_rows(results, order),
        frontier=frontier,
        answer=answer_picks([*results, *frontier], prefer_bookable=data.bookable_fresh_first),
        unestimable=[
            UnestimableOfferOut(
                offer=offer_out(o, ref, stale),
                reason=reason,
            )
            for o, reason in ranking.unestimable
        ],
    )


def rank_json(
    data: RankRequest,
    session: Session,
    ref: ReferenceData,
    settings: Settings,
    order: str | None = None,
) -> Response[RankResponse]:
    """:func:`rank_response` encoded as JSON (the API's answer): the encoded bytes are kept
    per (request, ``order``) with the offers of ``ref``'s catalog version (at most 16 MiB of
    answers, each at most 60 s: :data:`app.services.snapshot.CACHE_LIMITS`), so a repeated
    request costs neither the ranking nor the encoding (~3 ms for 50 results).

    Raises:
        WorkloadError, FilterError: bad input, naming the field.
    """

    def encoded() -> bytes:
        answer = _rank_response(data, session, ref, settings, order)
        return encode_json(answer.model_dump(mode="json"))

    body = per_version(ref, "rank_json", (data.model_dump_json(), order), encoded)
    # the bytes are a RankResponse, encoded (the type documents the answer in OpenAPI)
    return cast("Response[RankResponse]", Response(body, media_type=MediaType.JSON))


def answer_picks(rows: Sequence[RankedOfferOut], *, prefer_bookable: bool = True) -> RankAnswerOut:
    """The cheapest, the fastest and the best-value offer among ``rows`` (the answer's
    results and frontier) that can run the job as asked (OOM risk not high, no warning of
    :data:`app.model.run_warnings.CANNOT_RUN`: a QLoRA job on an MI300X, a disk too small)
    and have a price; with
    ``prefer_bookable`` (the ranking's ``bookable_fresh_first``), only those that can be rented
    as listed when any can. Cheapest: lowest cost per epoch; fastest: shortest epoch; best
    value: on their cost/time Pareto front, the lowest cost per epoch × epoch hours. Ties go
    to the better rank."""
    fits = [
        r
        for r in rows
        if r.estimate.oom_risk != "high"
        and r.estimate.cost_per_epoch is not None
        and not cannot_run(w.code for w in r.estimate.warnings)
    ]
    if prefer_bookable and any(r.offer.bookable for r in fits):
        fits = [r for r in fits if r.offer.bookable]
    if not fits:
        return RankAnswerOut()

    def cost(r: RankedOfferOut) -> float:
        return float(r.estimate.cost_per_epoch or 0.0)

    cheapest = min(fits, key=lambda r: (cost(r), r.estimate.epoch_hours, r.rank))
    fastest = min(fits, key=lambda r: (r.estimate.epoch_hours, cost(r), r.rank))
    on_front = pareto_front([(cost(r), r.estimate.epoch_hours) for r in fits])
    front = [r for r, flag in zip(fits, on_front, strict=True) if flag]
    best = min(front, key=lambda r: (cost(r) * r.estimate.epoch_hours, r.rank))
    return RankAnswerOut(
        cheapest_offer_id=cheapest.offer.id,
        fastest_offer_id=fastest.offer.id,
        best_value_offer_id=best.offer.id,
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
    stale = stale_providers(session, ref, settings.stale_after_hours)
    return OfferDetailResponse(
        offer=offer_out(found.offer, ref, stale),
        details=same_named(
            OfferDetailsOut,
            extras,
            first_seen_at=extras.first_seen_at.isoformat(),
            seen_on=extras.seen_on.isoformat() if extras.seen_on else None,
        ),
        currency=query.currency,
        price_per_hour=found.price_per_hour,
        exchange_rates=exchange_rates_out(ref, [found.offer.currency], query.currency),
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
