"""``GET /v1/providers``: every provider, how its prices are fetched and how old they are."""

from __future__ import annotations

from dataclasses import asdict

from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.api.responses import provide_session, provide_settings
from app.services.providers import provider_coverage
from app.settings import Settings


class ProviderOut(BaseModel):
    """One provider's coverage (times ISO 8601 UTC)."""

    provider: str = Field(description="provider slug (the offers' provider)", examples=["gcp"])
    provider_name: str = Field(description="the provider's name")
    homepage_url: str | None = Field(description="the provider's home page")
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
    offers: int = Field(description="available offers")
    offers_by_source: dict[str, int] = Field(
        description="available offers by source kind: api (first-hand), catalog, seed"
    )
    last_run_at: str | None = Field(description="when its latest refresh run ended or began")
    last_run_status: str | None = Field(
        description="ok, error, suspect, running or interrupted (GET /v1/refresh-runs); null: "
        "never refreshed"
    )
    last_run_source: str | None = Field(description="api or catalog: what the latest run read")
    last_success_at: str | None = Field(description="when its last successful refresh ended")
    newest_price_at: str | None = Field(
        description="when its newest available price was seen at its source (fetch time, or a "
        "seed row's date); null: undated"
    )
    age_days: float | None = Field(description="days since newest_price_at")
    age_tier: str = Field(
        description="fresh (within the 48 h refresh window), aging (within the 7-day offer "
        "window), old, or undated",
        examples=["fresh"],
    )


def _iso(value: object) -> str | None:
    return value.isoformat() if value is not None else None  # type: ignore[attr-defined]


class ProvidersController(Controller):
    """Provider coverage (JSON, under ``/v1``)."""

    path = "/v1"
    dependencies = {  # noqa: RUF012 - Litestar reads this class attribute
        "session": Provide(provide_session),
        "settings": Provide(provide_settings, sync_to_thread=False),
    }

    @get("/providers", sync_to_thread=True, summary="Every provider: fetcher, offers, price age")
    def providers(
        self, session: NamedDependency[Session], settings: NamedDependency[Settings]
    ) -> list[ProviderOut]:
        """Every provider with offers or a fetcher: how its prices are fetched (its own API,
        a public catalog, or hand-kept seed data), whether that needs a key, its offers by
        source kind, its last successful refresh and the age tier of its newest price."""
        out = []
        for c in provider_coverage(
            session,
            fresh_hours=settings.stale_after_hours,
            aging_days=settings.offer_stale_after_days,
        ):
            values = asdict(c)
            values["provider"], values["provider_name"] = values.pop("slug"), values.pop("name")
            for key in ("last_run_at", "last_success_at", "newest_price_at"):
                values[key] = _iso(values[key])
            out.append(ProviderOut(**values))
        return out
