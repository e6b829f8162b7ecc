"""When each provider's prices were last refreshed (the banner on every web page)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, Provider, RefreshRun
from app.services.offers import stale_provider_ids


@dataclass(frozen=True, slots=True)
class ProviderFreshness:
    """A provider's latest refresh run, or, without runs, the newest ``seen_on`` of its offers.

    ``stale`` is :func:`app.services.offers.stale_provider_ids`: the provider ran refreshes
    but none succeeded within ``stale_after_hours``.
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


def _aware(t: dt.datetime | None) -> dt.datetime | None:
    if t is None or t.tzinfo is not None:
        return t
    return t.replace(tzinfo=dt.UTC)


def provider_freshness(session: Session, stale_after_hours: float,
                       now: dt.datetime | None = None) -> list[ProviderFreshness]:
    """One entry per provider that has offers or refresh runs, by name."""
    counts = {
        pid: (n, seen)
        for pid, n, seen in session.execute(
            select(InstanceOffer.provider_id, func.count(), func.max(InstanceOffer.seen_on))
            .group_by(InstanceOffer.provider_id)
        )
    }
    latest_start = (
        select(RefreshRun.provider_id, func.max(RefreshRun.started_at).label("started_at"))
        .group_by(RefreshRun.provider_id).subquery()
    )
    latest = {
        run.provider_id: run
        for run in session.scalars(
            select(RefreshRun).join(
                latest_start,
                (RefreshRun.provider_id == latest_start.c.provider_id)
                & (RefreshRun.started_at == latest_start.c.started_at),
            )
        )
    }
    last_ok = dict(session.execute(
        select(RefreshRun.provider_id, func.max(RefreshRun.finished_at))
        .where(RefreshRun.status == "ok").group_by(RefreshRun.provider_id)
    ).all())
    stale = stale_provider_ids(session, stale_after_hours, now)
    out = []
    for pid, slug, name in session.execute(
        select(Provider.id, Provider.slug, Provider.name).order_by(Provider.name)
    ):
        run = latest.get(pid)
        n, seen = counts.get(pid, (0, None))
        if not n and run is None:
            continue
        out.append(ProviderFreshness(
            slug=slug, name=name, offers=n,
            last_run_at=_aware(run.finished_at or run.started_at) if run else None,
            last_run_status=run.status if run else None,
            last_run_error=run.error if run else None,
            last_ok_at=_aware(last_ok.get(pid)), seen_on=seen, stale=pid in stale,
        ))
    return out
