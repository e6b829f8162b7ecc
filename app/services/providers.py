"""Coverage of the market: every provider, how gpucost gets its prices, and how old they are.

:func:`provider_coverage` answers ``GET /v1/providers`` and the page's freshness table. A
provider's **fetcher** is what can refresh it (:data:`scrapers.SCRAPERS`): ``api`` (its own
API, first-hand), ``public_catalog`` (a maintained public catalog only: gpuhunt, SkyPilot) or
``seed`` (nothing: hand-kept seed rows). Its offers are counted by **source kind** (what wrote
each row: ``api``, ``catalog`` or ``seed``), since a keyless API provider runs its catalog
fallback instead.

**Age tier** of a provider = the tier of its newest available price (``last_seen_at``: the
fetch time of live rows, the date a seed row was seen): ``fresh`` within
``stale_after_hours`` (48 h), ``aging`` within ``offer_stale_after_days`` (7 d), ``old``
beyond, ``undated`` when no available offer has a date. These are the two windows the service
already used for stale flags (``app.settings``), one pair for every source kind; per-kind
thresholds belong to the price-age tiers of issue 22 and should replace :func:`age_tier`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, Provider, RefreshRun, as_utc, utcnow
from scrapers import SCRAPERS, Scraper
from scrapers.catalogs import CATALOG_SOURCES

#: Fetcher kinds, from the registry.
FETCHERS = ("api", "public_catalog", "seed")


@dataclass(frozen=True, slots=True)
class ProviderCoverage:
    """One provider: its fetcher, credentials, offers by source kind, last success, age."""

    slug: str
    name: str
    homepage_url: str | None
    fetcher: str
    needs_api_key: bool
    api_key_settings: list[str]
    catalog_fallback: str | None
    offers: int
    offers_by_source: dict[str, int] = field(default_factory=dict)
    last_run_at: dt.datetime | None = None
    last_run_status: str | None = None
    last_run_source: str | None = None
    last_success_at: dt.datetime | None = None
    newest_price_at: dt.datetime | None = None
    age_days: float | None = None
    age_tier: str = "undated"


def age_tier(
    seen_at: dt.datetime | None, now: dt.datetime, fresh_hours: float, aging_days: float
) -> str:
    """``fresh`` / ``aging`` / ``old`` / ``undated`` for a price seen at ``seen_at`` (see the
    module docstring for the windows)."""
    if seen_at is None:
        return "undated"
    age = now - seen_at
    if age <= dt.timedelta(hours=fresh_hours):
        return "fresh"
    return "aging" if age <= dt.timedelta(days=aging_days) else "old"


def fetcher_of(scraper: Scraper | None) -> str:
    """``api``, ``public_catalog`` or ``seed`` for a registry entry (``None``: not listed)."""
    if scraper is None:
        return "seed"
    return "api" if scraper.source_kind == "api" else "public_catalog"


def _credentials(scraper: Scraper | None) -> list[str]:
    if scraper is None or scraper.source_kind != "api":
        return []
    names = [f"GPUCOST_SCRAPER_{n.upper()}" for n in scraper.required_settings]
    if scraper.needs_api_key:
        names.insert(0, f"GPUCOST_SCRAPER_{scraper.slug.upper()}_API_KEY")
    return names


def _fallback(scraper: Scraper | None) -> str | None:
    if scraper is None or scraper.fallback is None:
        return None
    source = CATALOG_SOURCES[scraper.slug]
    return f"{source.format} {source.name}"


def provider_coverage(
    session: Session,
    *,
    fresh_hours: float,
    aging_days: float,
    now: dt.datetime | None = None,
) -> list[ProviderCoverage]:
    """Every provider (seeded or registered), by name, with its coverage (module docstring)."""
    now = now or utcnow()
    by_source: dict[int, dict[str, int]] = {}
    newest: dict[int, dt.datetime | None] = {}
    for pid, kind, count, latest in session.execute(
        select(
            InstanceOffer.provider_id,
            InstanceOffer.source_kind,
            func.count(),
            func.max(InstanceOffer.last_seen_at),
        )
        .where(InstanceOffer.available.is_(True))
        .group_by(InstanceOffer.provider_id, InstanceOffer.source_kind)
    ):
        by_source.setdefault(pid, {})[kind] = count
        seen, current = as_utc(latest), newest.get(pid)
        if seen is not None and (current is None or seen > current):
            newest[pid] = seen
    last_ok = dict(
        session.execute(
            select(RefreshRun.provider_id, func.max(RefreshRun.finished_at))
            .where(RefreshRun.status == "ok")
            .group_by(RefreshRun.provider_id)
        ).all()
    )
    latest_runs = {
        run.provider_id: run
        for run in session.scalars(
            select(RefreshRun).where(
                RefreshRun.id.in_(select(func.max(RefreshRun.id)).group_by(RefreshRun.provider_id))
            )
        )
    }
    out = []
    for provider in session.scalars(select(Provider).order_by(Provider.name)):
        scraper = SCRAPERS.get(provider.slug)
        run = latest_runs.get(provider.id)
        seen = newest.get(provider.id)
        counts = by_source.get(provider.id, {})
        if scraper is None and not counts and run is None:
            continue  # a provider row with nothing to show
        out.append(
            ProviderCoverage(
                slug=provider.slug,
                name=provider.name,
                homepage_url=provider.homepage_url,
                fetcher=fetcher_of(scraper),
                needs_api_key=bool(_credentials(scraper)),
                api_key_settings=_credentials(scraper),
                catalog_fallback=_fallback(scraper),
                offers=sum(counts.values()),
                offers_by_source=dict(sorted(counts.items())),
                last_run_at=as_utc(run.finished_at or run.started_at) if run else None,
                last_run_status=run.status if run else None,
                last_run_source=run.source_kind if run else None,
                last_success_at=as_utc(last_ok.get(provider.id)),
                newest_price_at=seen,
                age_days=round((now - seen).total_seconds() / 86400, 2) if seen else None,
                age_tier=age_tier(seen, now, fresh_hours, aging_days),
            )
        )
    return out
