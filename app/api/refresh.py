"""HTTP API of the price refresh: ``GET /v1/refresh-runs`` (an offer's price history is
``GET /v1/offers/{id}/prices``, :mod:`app.api.offers`)."""

from __future__ import annotations

from dataclasses import asdict

from litestar import get
from litestar.di import NamedDependency
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.api.params import ResourceController
from app.interface.responses import iso_times
from app.interface.schemas import OfferOut, described_as
from app.services.refresh_runs import latest_runs
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


class RefreshController(ResourceController):
    """Refresh-job status (JSON, under ``/v1``)."""

    path = "/v1"
    tags = ["refresh"]  # noqa: RUF012 - Litestar reads this class attribute

    @get("/refresh-runs", sync_to_thread=True, summary="Latest price-refresh run per provider")
    def refresh_runs(
        self, session: NamedDependency[Session], settings: NamedDependency[Settings]
    ) -> list[RefreshRunOut]:
        """The latest refresh run of every provider that has one, by provider slug."""
        times = ("started_at", "finished_at", "last_success_at")
        runs = latest_runs(session, settings.stale_after_hours)
        return [RefreshRunOut(**iso_times(asdict(r), *times)) for r in runs]
