"""When each provider's prices were last refreshed (the banner on every web page)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, Provider
from app.services.refresh_runs import latest_runs


@dataclass(frozen=True, slots=True)
class ProviderFreshness:
    """A provider's latest refresh run (:func:`app.services.refresh_runs.latest_runs`), or,
    for a provider never refreshed, the newest ``seen_on`` of its (seed) offers.

    ``stale`` is the refresh job's flag: the provider ran refreshes but none succeeded within
    ``stale_after_hours``.
    """

    slug: str
    name: str
    offers: int
    last_run_at: dt.datetime | None
    last_run_status: str | None
    last_run_error: str | None
    last_ok_at: dt.datetime | None
    seen_on: dt.date | None
    stale: bool


def provider_freshness(session: Session, stale_after_hours: float) -> list[ProviderFreshness]:
    """One entry per provider that has offers or refresh runs, by name."""
    runs = {r.provider: r for r in latest_runs(session, stale_after_hours)}
    rows = session.execute(
        select(
            Provider.slug,
            Provider.name,
            func.count(InstanceOffer.id),
            func.max(InstanceOffer.seen_on),
        )
        .outerjoin(InstanceOffer, InstanceOffer.provider_id == Provider.id)
        .group_by(Provider.id, Provider.slug, Provider.name)
        .order_by(Provider.name)
    ).all()
    out = []
    for slug, name, offers, seen in rows:
        run = runs.get(slug)
        if not offers and run is None:
            continue
        out.append(
            ProviderFreshness(
                slug=slug,
                name=name,
                offers=offers,
                last_run_at=(run.finished_at or run.started_at) if run else None,
                last_run_status=run.status if run else None,
                last_run_error=run.error if run else None,
                last_ok_at=run.last_success_at if run else None,
                seen_on=seen,
                stale=run.stale if run else False,
            )
        )
    return out
