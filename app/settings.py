"""Service settings, read from ``GPUCOST_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import resources

#: Root of the source checkout, for tests, tools and benchmarks only: the service finds its
#: migrations and seed data through :mod:`app.resources`, which also works from a wheel.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SQLITE_URL = "sqlite:///gpucost.db"


class Settings(BaseSettings):
    """Runtime settings.

    ``database_url`` comes from ``GPUCOST_DATABASE_URL``. Without it, an SQLite file
    ``gpucost.db`` in the current working directory is used (the zero-setup default).
    PostgreSQL URLs are written ``postgresql+psycopg://user@host:5432/dbname``.

    The ``db_*`` settings size the server's connection pool (``GPUCOST_DB_POOL_SIZE`` …).
    The server runs at most ``handler_threads`` request handlers at once (one thread and one
    connection each; never more than the pool holds), so a handler never waits for a
    connection held by a queued request; a
    request that still cannot get one within ``db_pool_timeout_s`` is answered 503 with
    ``Retry-After``.
    """

    model_config = SettingsConfigDict(env_prefix="GPUCOST_", extra="ignore")

    database_url: str = Field(default=DEFAULT_SQLITE_URL)
    seed_dir: Path = Field(default_factory=resources.seed_dir)
    migrations_dir: Path = Field(default_factory=resources.migrations_dir)
    #: Offers whose provider last refreshed successfully longer ago than this are
    #: ``provider_refresh_stale`` (a price's own age: :mod:`app.price_age`).
    stale_after_hours: float = 48.0
    #: Connections kept open per server process.
    db_pool_size: int = Field(default=10, ge=1, le=1000)
    #: Extra connections opened under load beyond ``db_pool_size`` (closed when returned).
    db_max_overflow: int = Field(default=10, ge=0, le=1000)
    #: Seconds a request waits for a free connection before it is answered 503.
    db_pool_timeout_s: float = Field(default=10.0, gt=0, le=600)
    #: Seconds to establish a new database connection (PostgreSQL ``connect_timeout``, SQLite
    #: busy timeout).
    db_connect_timeout_s: float = Field(default=5.0, gt=0, le=600)
    #: PostgreSQL ``statement_timeout`` for the server's queries, in milliseconds (0 = none).
    db_statement_timeout_ms: int = Field(default=15_000, ge=0, le=3_600_000)
    #: ``/healthz`` waits this long (seconds) for ``SELECT 1`` before it answers ``degraded``.
    healthz_timeout_s: float = Field(default=0.5, gt=0, le=60)
    #: ``/healthz`` answers the last ``SELECT 1`` result at once while it is younger than this
    #: (seconds; a new probe starts in the background past half of it), so a poll never
    #: waits for a thread while the handlers are busy; 0: probe on every request.
    healthz_fresh_s: float = Field(default=1.0, ge=0, le=60)
    #: ``Retry-After`` (seconds) sent with a 503 when the database is unavailable or busy.
    retry_after_s: int = Field(default=5, ge=1, le=3600)

    #: Threads running request handlers per server process. Handlers are mostly Python CPU
    #: work under the GIL: more threads than cores add no throughput, and every extra one
    #: slows the event loop (``/healthz``); scale with ``gpucost serve --workers`` instead.
    max_handler_threads: int = Field(default=2, ge=1, le=1000)
    #: Seconds between a worker's checks of the catalog version (one tiny ``SELECT``, made by
    #: the first request after the interval): a refresh, a seed or a submission is served by
    #: every worker at most this long after it commits
    #: (:class:`app.services.reference_cache.ReferenceCache`).
    catalog_poll_s: float = Field(default=0.5, ge=0, le=60)
    #: Load a new catalog version when it commits, before a request asks: PostgreSQL
    #: ``LISTEN gpucost_catalog`` (the catalog triggers ``NOTIFY`` it), elsewhere (SQLite) a
    #: version check every ``catalog_fallback_poll_s`` seconds
    #: (:meth:`app.services.reference_cache.ReferenceCache.watch`).
    catalog_listen: bool = True
    #: Seconds between background version checks where there is no ``LISTEN`` (SQLite, or
    #: while the ``LISTEN`` connection is down).
    catalog_fallback_poll_s: float = Field(default=1.0, gt=0, le=60)

    @property
    def handler_threads(self) -> int:
        """Request handlers that may run at once: ``max_handler_threads``, at most one per
        connection the pool can hold."""
        return min(self.max_handler_threads, self.db_pool_size + self.db_max_overflow)

    #: Bearer tokens allowed to ``POST /v1/benchmarks`` (``GPUCOST_API_TOKENS``): comma-separated
    #: ``name=token`` entries (a bare ``token`` is named ``token-<first 8 hex of its SHA-256>``).
    #: The name is what a submitted row records as its submitter; the token itself is never
    #: stored or logged. Empty: submissions are refused (401).
    api_tokens: SecretStr = Field(default=SecretStr(""))
    #: Submissions one token may make per minute (``GPUCOST_SUBMIT_RATE_PER_MINUTE``); more are
    #: answered 429 with ``Retry-After``.
    submit_rate_per_minute: int = Field(default=30, ge=1, le=100_000)


@functools.cache
def get_settings() -> Settings:
    """Return the process-wide settings, read once from the environment."""
    return Settings()
