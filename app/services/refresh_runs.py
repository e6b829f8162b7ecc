"""Read side of the refresh job: latest run per provider, and an offer's price history."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from sqlalchemy import Engine, Float, cast, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, PriceObservation, Provider, RefreshRun, as_utc
from app.fields import same_named
from app.services.offers import last_successful_refresh, stale_provider_ids
from app.services.refresh import reap_interrupted
from scrapers.redact import redact

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunStatus:
    """A provider's latest refresh run, its last success, and whether its offers are stale."""

    provider: str
    provider_name: str
    run_id: int
    status: str
    started_at: dt.datetime
    finished_at: dt.datetime | None
    offers_seen: int
    offers_new: int
    offers_changed: int
    offers_gone: int
    error: str | None
    unknown_gpu_names: list[str]
    warnings: list[str]
    last_success_at: dt.datetime | None
    stale: bool
    baseline_offers: int | None = None
    #: offers of the run stored ``suspect`` (failed a plausibility rule)
    offers_suspect: int = 0
    #: what the run read: ``api`` (the provider's API) or ``catalog`` (a public catalog)
    source_kind: str = "api"


def latest_runs(session: Session, stale_after_hours: float) -> list[RunStatus]:
    """The newest refresh-run row of every provider that has one, by provider slug.

    A ``running`` row while no refresh holds the lock belongs to a dead process: it is
    reported (and, via :func:`app.services.refresh.reap_interrupted`, stored) as
    ``interrupted``. Error texts and warnings are redacted again on the way out
    (:func:`scrapers.redact.redact`, patterns only: rows stored before redaction existed).
    """
    newest = select(func.max(RefreshRun.id)).group_by(RefreshRun.provider_id)
    last_ok = last_successful_refresh(session)
    stale = stale_provider_ids(session, stale_after_hours)
    query = (
        select(RefreshRun, Provider.slug, Provider.name)
        .join(Provider)
        .where(RefreshRun.id.in_(newest))
        .order_by(Provider.slug)
    )
    rows = session.execute(query).all()
    if any(run.status == "running" for run, _, _ in rows):
        bind = session.get_bind()
        try:
            reaped = reap_interrupted(bind if isinstance(bind, Engine) else bind.engine)
        except SQLAlchemyError as exc:  # the read still answers; the next run reaps
            log.warning("stale-lock check failed: %s", exc)
            reaped = 0
        if reaped:
            session.expire_all()
            rows = session.execute(query).all()
    return [
        same_named(
            RunStatus,
            run,
            provider=slug,
            provider_name=name,
            run_id=run.id,
            started_at=as_utc(run.started_at),
            finished_at=as_utc(run.finished_at),
            error=redact(run.error),
            unknown_gpu_names=list(run.unknown_gpu_names or []),
            warnings=[redact(w) or "" for w in run.warnings or []],
            last_success_at=as_utc(last_ok.get(run.provider_id)),
            stale=run.provider_id in stale,
            offers_suspect=run.offers_suspect or 0,
        )
        for run, slug, name in rows
    ]


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One observation: price per instance-hour in ``currency`` (``None`` = unknown)."""

    observed_at: dt.datetime
    price_per_hour: float | None
    currency: str
    source: str


@dataclass(frozen=True, slots=True)
class PriceHistory:
    """An offer's identity, its current price and every observation, oldest first."""

    offer_id: int
    provider: str
    offer_key: str
    instance_type: str
    region: str
    billing: str
    gpu_name_raw: str
    available: bool
    price_per_hour: float | None
    currency: str
    observations: list[PricePoint]


def price_history(session: Session, offer_id: int) -> PriceHistory | None:
    """The offer's price history, or ``None`` when there is no such offer."""
    row = session.execute(
        select(InstanceOffer, Provider.slug).join(Provider).where(InstanceOffer.id == offer_id)
    ).first()
    if row is None:
        return None
    offer, slug = row
    points = [
        PricePoint(as_utc(at), price, currency, source)
        for at, price, currency, source in session.execute(
            select(
                PriceObservation.observed_at,
                cast(PriceObservation.price_per_hour, Float),
                PriceObservation.currency,
                PriceObservation.source,
            )
            .where(PriceObservation.offer_id == offer_id)
            .order_by(PriceObservation.observed_at, PriceObservation.id)
        )
    ]
    return same_named(
        PriceHistory,
        offer,
        offer_id=offer.id,
        provider=slug,
        price_per_hour=float(offer.price_per_hour) if offer.price_per_hour is not None else None,
        observations=points,
    )
