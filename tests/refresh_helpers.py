"""Helpers for the refresh tests: run a refresh in-process against the fake providers."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from app.db.models import InstanceOffer, PriceObservation, Provider, RefreshRun
from app.db.session import create_engine_from_url, create_session_factory
from app.services.refresh import RefreshOptions, RefreshReport, run_refresh
from app.watches import after_refresh
from scrapers.settings import ScraperSettings
from tests.conftest import SEED_DIR
from tests.fake_providers import FakeProviders, scraper_env

T0 = dt.datetime(2026, 11, 20, 2, 0, tzinfo=dt.UTC)


def fake_settings(**overrides: Any) -> ScraperSettings:
    """Scraper settings for the fake providers (``http://fake`` via MockTransport)."""
    env = {
        k.removeprefix("GPUCOST_SCRAPER_").lower(): v for k, v in scraper_env("http://fake").items()
    }
    return ScraperSettings(**{**env, **overrides})


def refresh(
    url: str,
    fake: FakeProviders,
    *,
    at: dt.datetime,
    settings: dict[str, Any] | None = None,
    **kwargs: Any,
) -> RefreshReport:
    """One refresh of ``url`` through ``fake``'s MockTransport, observed at ``at``.

    ``settings`` overrides scraper settings (e.g. ``{"provider_deadline_s": 1}``). The
    watches are checked afterwards, as ``gpucost refresh`` does.
    """
    engine = create_engine_from_url(url)
    after = kwargs.pop("after_refresh", after_refresh)
    options = RefreshOptions(
        seed_dir=SEED_DIR, observed_at=at, transport=fake.transport(), **kwargs
    )
    try:
        return run_refresh(
            engine,
            create_session_factory(engine),
            fake_settings(**(settings or {})),
            options,
            after_refresh=after,
        )
    finally:
        engine.dispose()


def offers(url: str, slug: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The provider's stored offers by natural key (the columns a refresh touches)."""
    engine = create_engine_from_url(url)
    try:
        with create_session_factory(engine)() as s:
            rows = s.scalars(select(InstanceOffer).join(Provider).where(Provider.slug == slug))
            return {
                (o.offer_key, o.region, o.billing): {
                    "id": o.id,
                    "price": o.price_per_hour,
                    "available": o.available,
                    "last_seen_at": o.last_seen_at,
                    "gpu_model_id": o.gpu_model_id,
                    "vram": o.vram_gib_per_gpu,
                    "source": o.source,
                    "raw": o.gpu_name_raw,
                    "network_gbps": o.network_gbps,
                }
                for o in rows
            }
    finally:
        engine.dispose()


def observations(url: str, offer_id: int) -> list[tuple[dt.datetime, float | None]]:
    """An offer's observations, oldest first."""
    engine = create_engine_from_url(url)
    try:
        with create_session_factory(engine)() as s:
            return [
                (at, float(p) if p is not None else None)
                for at, p in s.execute(
                    select(PriceObservation.observed_at, PriceObservation.price_per_hour)
                    .where(PriceObservation.offer_id == offer_id)
                    .order_by(PriceObservation.observed_at)
                )
            ]
    finally:
        engine.dispose()


def latest_run(url: str, slug: str) -> RefreshRun:
    """The provider's newest refresh-run row."""
    engine = create_engine_from_url(url)
    try:
        with create_session_factory(engine)() as s:
            run = s.scalars(
                select(RefreshRun)
                .join(Provider)
                .where(Provider.slug == slug)
                .order_by(RefreshRun.id.desc())
                .limit(1)
            ).one()
            s.expunge(run)
            return run
    finally:
        engine.dispose()
