"""Coverage of the market: every provider, how gpucost gets its prices, and how old they are.

:func:`provider_coverage` answers ``GET /v1/providers`` and the page's freshness table. A
provider's **fetcher** is what can refresh it (:data:`scrapers.SCRAPERS`): ``api`` (its own
API, first-hand), ``public_catalog`` (a maintained public catalog only: gpuhunt, SkyPilot) or
``seed`` (nothing: hand-kept seed rows). Its offers are counted per price-age tier and by
**source kind** (what wrote each row, :func:`app.price_age.source_kind`: ``api``, ``catalog``
or ``seed``), since a keyless API provider runs its catalog fallback instead.

Counted offers are those a default ranking considers (:func:`app.services.offers.counted_offers`).
A provider's **age tier** is the freshest tier any of them has (:func:`app.price_age.best_tier`,
each price aged by its own kind's thresholds in :data:`app.price_age.AGE_TIERS_DAYS`);
``undated`` when none is dated.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, Provider, as_utc, utcnow
from app.fields import same_named
from app.price_age import age_days, best_tier, source_kind
from app.services.offers import count_price_tiers, counted_offers
from app.services.refresh_runs import latest_runs
from scrapers import SCRAPERS, Scraper
from scrapers.catalogs import CATALOG_SOURCES

#: Fetcher kinds, from the registry.
FETCHERS = ("api", "public_catalog", "seed")


@dataclass(frozen=True, slots=True)
class ProviderCoverage:
    """One provider: its fetcher, credentials, offers per price age and by source kind, last
    run and last success (aware UTC), newest price and age tier.

    ``price_ages``: :func:`app.services.offers.count_price_tiers`'s counts (``fresh``,
    ``aging``, ``old``, ``undated``, ``bookable``, ``offers``); ``age_days``: days since
    ``newest_price_at``."""

    slug: str
    name: str
    homepage_url: str | None
    kind: str
    source: str
    fetcher: str
    needs_api_key: bool
    api_key_settings: list[str]
    catalog_fallback: str | None
    price_ages: dict[str, int]
    offers_by_source: dict[str, int] = field(default_factory=dict)
    last_run_at: dt.datetime | None = None
    last_run_status: str | None = None
    last_run_source: str | None = None
    last_success_at: dt.datetime | None = None
    newest_price_at: dt.datetime | None = None
    age_days: float | None = None
    age_tier: str = "undated"


@dataclass(frozen=True, slots=True)
class MarketCoverage:
    """Every provider's coverage, by slug, and ``price_ages`` counted over all of them."""

    providers: list[ProviderCoverage]
    price_ages: dict[str, int]


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


def _by_source(
    session: Session,
) -> tuple[dict[int, dict[str, int]], dict[int, dt.datetime]]:
    """Per provider id: counted offers by source kind, and the newest price's time."""
    by_source: dict[int, dict[str, int]] = {}
    newest: dict[int, dt.datetime] = {}
    for pid, kind, count, latest in session.execute(
        select(
            InstanceOffer.provider_id,
            InstanceOffer.price_kind,
            func.count(),
            func.max(InstanceOffer.last_seen_at),
        )
        .where(*counted_offers())
        .group_by(InstanceOffer.provider_id, InstanceOffer.price_kind)
    ):
        counts = by_source.setdefault(pid, {})
        counts[source_kind(kind)] = counts.get(source_kind(kind), 0) + count
        seen = as_utc(latest)
        if seen is not None and (pid not in newest or seen > newest[pid]):
            newest[pid] = seen
    return by_source, newest


def provider_coverage(
    session: Session, stale_after_hours: float, now: dt.datetime | None = None
) -> MarketCoverage:
    """Every provider row, by slug, with its coverage (module docstring) at ``now``;
    ``stale_after_hours`` is the refresh job's stale window (its latest run's status)."""
    now = now or utcnow()
    tiers = count_price_tiers(session, now, provider_ids=True)
    by_source, newest = _by_source(session)
    runs = {r.provider: r for r in latest_runs(session, stale_after_hours)}
    empty = dict.fromkeys(tiers["all"], 0)
    out = []
    for provider in session.scalars(select(Provider).order_by(Provider.slug)):
        scraper = SCRAPERS.get(provider.slug)
        run = runs.get(provider.slug)
        seen = newest.get(provider.id)
        ages = tiers.get(provider.id, empty)
        age = age_days(seen, now)
        out.append(
            same_named(
                ProviderCoverage,
                provider,
                fetcher=fetcher_of(scraper),
                needs_api_key=bool(_credentials(scraper)),
                api_key_settings=_credentials(scraper),
                catalog_fallback=_fallback(scraper),
                price_ages=dict(ages),
                offers_by_source=dict(sorted(by_source.get(provider.id, {}).items())),
                last_run_at=(run.finished_at or run.started_at) if run else None,
                last_run_status=run.status if run else None,
                last_run_source=run.source_kind if run else None,
                last_success_at=run.last_success_at if run else None,
                newest_price_at=seen,
                age_days=round(age, 2) if age is not None else None,
                age_tier=best_tier(ages),
            )
        )
    return MarketCoverage(providers=out, price_ages=tiers["all"])
