"""``GET /v1/providers``: every provider, how its prices are fetched and how old they are
(one controller; the answer is :func:`app.services.providers.provider_coverage`)."""

from __future__ import annotations

from dataclasses import asdict

from litestar import get
from litestar.di import NamedDependency
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.api.params import ResourceController
from app.interface.responses import iso_times
from app.price_age import AGE_TIERS_DAYS, BOOKABLE_KINDS
from app.services.providers import provider_coverage
from app.services.reference import ReferenceData
from app.services.snapshot import per_version
from app.settings import Settings


class PriceAgesOut(BaseModel):
    """Counted offers (available, plausible, not hidden by a first-hand twin) per price-age
    tier (app/price_age.py), and how many of them can be rented as listed."""

    offers: int = Field(description="available offers that passed the plausibility checks")
    fresh: int = Field(description="offers whose price is fresh for its kind")
    aging: int = Field(description="offers whose price is aging for its kind")
    old: int = Field(description="offers whose price is old for its kind")
    undated: int = Field(description="offers whose source gives no date for the price")
    bookable: int = Field(description="offers that can be rented as listed")


class ProviderOut(BaseModel):
    """One provider: how its prices are fetched, its offers and their age (times ISO 8601
    UTC)."""

    slug: str = Field(description="provider slug (offers' provider)", examples=["gcp"])
    name: str = Field(description="provider name for display")
    homepage_url: str | None = Field(description="the provider's home page; null: none known")
    kind: str = Field(description="cloud or marketplace")
    source: str = Field(description="where the provider's facts come from")
    fetcher: str = Field(
        description="how gpucost refreshes it: api (its own API, first-hand prices), "
        "public_catalog (a maintained public catalog: gpuhunt or SkyPilot) or seed (not "
        "refreshed: hand-kept seed data)",
        examples=["api"],
    )
    needs_api_key: bool = Field(description="its API needs credentials (see api_key_settings)")
    api_key_settings: list[str] = Field(
        description="the environment variables the refresh job needs for its API; without them "
        "it loads catalog_fallback instead, or is skipped"
    )
    catalog_fallback: str | None = Field(
        description="the public catalog loaded when its API cannot be called (format and name)",
        examples=["gpuhunt gcp"],
    )
    price_ages: PriceAgesOut = Field(description="its offers per price-age tier")
    offers_by_source: dict[str, int] = Field(
        description="its offers (as counted in price_ages) by source kind: api (its own API, "
        "price kind scraped), catalog (a public catalog), seed (hand-kept seed data)"
    )
    last_run_at: str | None = Field(description="when its latest refresh run ended or began")
    last_run_status: str | None = Field(
        description="ok, error, suspect, running or interrupted (GET /v1/refresh-runs); null: "
        "never refreshed"
    )
    last_run_source: str | None = Field(description="api or catalog: what the latest run read")
    last_success_at: str | None = Field(description="when its last successful refresh ended")
    newest_price_at: str | None = Field(
        description="when its newest counted price was seen at its source (fetch time, a "
        "catalog's date, or a seed row's date); null: none is dated"
    )
    age_days: float | None = Field(description="days since newest_price_at")
    age_tier: str = Field(
        description="the freshest price-age tier of its offers (fresh, aging, old; undated "
        "when none is dated), each price aged by its kind's thresholds (age_tiers_days)",
        examples=["fresh"],
    )


class ProvidersOut(BaseModel):
    """Providers with their coverage and their offers' price ages, and the totals."""

    age_tiers_days: dict[str, tuple[float, float]] = Field(
        description="per price kind: (fresh up to, aging up to) days; older is old"
    )
    bookable_kinds: list[str] = Field(description="price kinds that can be rented as listed")
    price_ages: PriceAgesOut = Field(description="every provider's offers together")
    providers: list[ProviderOut] = Field(description="every provider, by slug")


class ProvidersController(ResourceController):
    """Providers (JSON, under ``/v1``)."""

    path = "/v1"
    tags = ["providers"]  # noqa: RUF012 - Litestar reads this class attribute

    @get("/providers", sync_to_thread=True, summary="Every provider: fetcher, offers, price ages")
    def providers(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> ProvidersOut:
        """Every provider with how its prices are fetched (its own API, a public catalog, or
        hand-kept seed data), whether that needs a key and its catalog fallback, its latest
        run and last success, its offers counted per price-age tier (fresh, aging, old,
        undated: thresholds per price kind in ``age_tiers_days``) and by source kind, and its
        age tier; ``price_ages`` totals them. Counts available offers that passed the
        plausibility checks and are not hidden by a first-hand price of the same instance
        (those a ranking considers)."""
        hours = settings.stale_after_hours
        coverage = per_version(
            ref, "provider_coverage", hours, lambda: provider_coverage(session, hours)
        )
        times = ("last_run_at", "last_success_at", "newest_price_at")
        out = [ProviderOut(**iso_times(asdict(c), *times)) for c in coverage.providers]
        return ProvidersOut(
            age_tiers_days=dict(AGE_TIERS_DAYS),
            bookable_kinds=sorted(BOOKABLE_KINDS),
            price_ages=PriceAgesOut(**coverage.price_ages),
            providers=out,
        )
