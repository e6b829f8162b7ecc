"""``GET /v1/providers``: every provider with how old its prices are (one controller)."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.responses import provide_session
from app.db.models import Provider
from app.price_age import AGE_TIERS_DAYS, BOOKABLE_KINDS
from app.services.offers import count_price_tiers


class PriceAgesOut(BaseModel):
    """Available, plausible offers per price-age tier (app/price_age.py), and how many of
    them can be rented as listed."""

    offers: int = Field(description="available offers that passed the plausibility checks")
    fresh: int = Field(description="offers whose price is fresh for its kind")
    aging: int = Field(description="offers whose price is aging for its kind")
    old: int = Field(description="offers whose price is old for its kind")
    undated: int = Field(description="offers whose source gives no date for the price")
    bookable: int = Field(description="offers that can be rented as listed")


class ProviderOut(BaseModel):
    """A provider and the age of its offers' prices."""

    slug: str = Field(description="provider slug (offers' provider)")
    name: str = Field(description="provider name for display")
    homepage_url: str | None = Field(description="the provider's home page; null: none known")
    kind: str = Field(description="cloud or marketplace")
    source: str = Field(description="where the provider's facts come from")
    price_ages: PriceAgesOut = Field(description="its offers per price-age tier")


class ProvidersOut(BaseModel):
    """Providers with their offers' price ages, and the totals."""

    age_tiers_days: dict[str, tuple[float, float]] = Field(
        description="per price kind: (fresh up to, aging up to) days; older is old"
    )
    bookable_kinds: list[str] = Field(description="price kinds that can be rented as listed")
    price_ages: PriceAgesOut = Field(description="every provider's offers together")
    providers: list[ProviderOut] = Field(description="every provider, by slug")


class ProvidersController(Controller):
    """Providers (JSON, under ``/v1``)."""

    path = "/v1"
    dependencies = {"session": Provide(provide_session)}  # noqa: RUF012 - read by Litestar

    @get("/providers", sync_to_thread=True, summary="Providers and the age of their prices")
    def providers(self, session: NamedDependency[Session]) -> ProvidersOut:
        """Every provider with its offers counted per price-age tier (fresh, aging, old,
        undated: thresholds per price kind in ``age_tiers_days``) and how many can be rented
        as listed; ``price_ages`` totals them. Counts available offers that passed the
        plausibility checks (those a ranking considers)."""
        counts = count_price_tiers(session, provider_ids=True)
        empty = dict.fromkeys(PriceAgesOut.model_fields, 0)
        return ProvidersOut(
            age_tiers_days=dict(AGE_TIERS_DAYS),
            bookable_kinds=sorted(BOOKABLE_KINDS),
            price_ages=PriceAgesOut(**counts["all"]),
            providers=[
                ProviderOut(
                    slug=p.slug,
                    name=p.name,
                    homepage_url=p.homepage_url,
                    kind=p.kind,
                    source=p.source,
                    price_ages=PriceAgesOut(**counts.get(p.id, empty)),
                )
                for p in session.scalars(select(Provider).order_by(Provider.slug))
            ],
        )
