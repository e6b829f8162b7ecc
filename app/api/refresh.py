"""HTTP API of the price refresh: ``GET /v1/refresh-runs`` and ``GET /v1/offers/{id}/prices``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import PathParameter
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.interface.deps import (
    DEPENDENCIES,
    MAX_ID,
    error_responses,
)
from app.interface.schemas import OFFER_ID_TEXT, OfferOut, PricePointOut, described_as
from app.services.refresh_runs import latest_runs, price_history
from app.settings import Settings


class RefreshRunOut(BaseModel):
    """A provider's latest refresh run (times ISO 8601 UTC).

    ``status`` is ``running``, ``ok``, ``error`` (``error`` says why; stored offers were kept),
    ``suspect`` (the answer had more than the allowed fraction fewer offers than the last
    successful run, ``baseline_offers``; ``offers_seen`` is what arrived; nothing was applied
    and stored offers were kept) or ``interrupted`` (the process was killed; nothing of that
    run was applied). ``error`` and ``warnings`` never contain credentials (redacted).
    ``stale``: the provider's last successful run is older than the stale window (48 h), so its
    offers are flagged ``stale`` in ``/v1/offers`` and ``/v1/rank``.
    """

    provider: str = described_as(OfferOut, "provider")
    provider_name: str = described_as(OfferOut, "provider_name")
    run_id: int = Field(description="id of the refresh run")
    status: str = Field(
        description="running, ok, error, suspect or interrupted (see the schema's description)",
        examples=["ok"],
    )
    started_at: str = Field(description="when the run started (ISO 8601, UTC)")
    finished_at: str | None = Field(
        description="when the run ended (ISO 8601, UTC); null while running or if killed"
    )
    offers_seen: int = Field(description="offers the provider's answer listed")
    offers_new: int = Field(description="offers stored for the first time by the run")
    offers_changed: int = Field(description="stored offers whose price or specs changed")
    offers_gone: int = Field(description="stored offers the answer no longer listed")
    error: str | None = Field(description="why the run failed (credentials redacted); null: none")
    unknown_gpu_names: list[str] = Field(
        description="GPU names in the answer that match no catalog model (stored raw)"
    )
    warnings: list[str] = Field(description="what the run noticed, in sentences (redacted)")
    last_success_at: str | None = Field(
        description="when the provider's last ok run finished (ISO 8601, UTC); null: never"
    )
    stale: bool = Field(
        description="the last ok run is older than the stale window; offers are flagged stale"
    )
    baseline_offers: int | None = Field(
        default=None,
        description="offers of the last successful run that a suspect run was compared with",
    )
    offers_suspect: int = Field(
        default=0,
        description="offers of the run stored suspect (failed a plausibility rule at ingest; "
        "left out of rankings unless include_suspect)",
    )
    source_kind: str = Field(
        default="api",
        description="what the run read: api (the provider's own API) or catalog (a public "
        "catalog: the provider's only source, or its fallback when the API key is not set)",
        examples=["api"],
    )


class PriceHistoryOut(BaseModel):
    """An offer's price history, oldest first, with its current price."""

    offer_id: int = described_as(OfferOut, "id")
    provider: str = described_as(OfferOut, "provider")
    offer_key: str = described_as(OfferOut, "offer_key")
    instance_type: str = described_as(OfferOut, "instance_type")
    region: str = described_as(OfferOut, "region")
    billing: str = described_as(OfferOut, "billing")
    gpu_name_raw: str = described_as(OfferOut, "gpu_name_raw")
    available: bool = described_as(OfferOut, "available")
    price_per_hour: float | None = Field(
        description="current price of the whole instance per hour, in currency, as listed"
    )
    currency: str = Field(description="ISO 4217 code of every price here")
    observations: list[PricePointOut] = Field(description="every observed price, oldest first")


def _iso(value: object) -> str | None:
    return value.isoformat() if value is not None else None  # type: ignore[attr-defined]


class RefreshController(Controller):
    """Refresh-job status and price history (JSON, under ``/v1``)."""

    path = "/v1"
    dependencies = DEPENDENCIES

    @get("/refresh-runs", sync_to_thread=True, summary="Latest price-refresh run per provider")
    def refresh_runs(
        self, session: NamedDependency[Session], settings: NamedDependency[Settings]
    ) -> list[RefreshRunOut]:
        """The latest refresh run of every provider that has one, by provider slug."""
        out = []
        for r in latest_runs(session, settings.stale_after_hours):
            values = asdict(r)
            for key in ("started_at", "finished_at", "last_success_at"):
                values[key] = _iso(values[key])
            out.append(RefreshRunOut(**values))
        return out

    @get(
        "/offers/{offer_id:int}/prices",
        sync_to_thread=True,
        summary="Price history of one offer",
        responses=error_responses(400, 404),
    )
    def offer_prices(
        self,
        offer_id: Annotated[int, PathParameter(ge=1, le=MAX_ID, description=OFFER_ID_TEXT)],
        session: NamedDependency[Session],
    ) -> PriceHistoryOut:
        """Price history of one offer (every observation, oldest first); 404 if no such offer.

        An observation is recorded when the price changed and at least daily while an offer is
        seen; unknown prices are not observed.
        """
        history = price_history(session, offer_id)
        if history is None:
            raise NotFoundException(f"no offer with id {offer_id}")
        values = asdict(history)
        values["observations"] = [
            PricePointOut(**{**p, "observed_at": _iso(p["observed_at"])})
            for p in values["observations"]
        ]
        return PriceHistoryOut(**values)
