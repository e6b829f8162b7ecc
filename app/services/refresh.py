"""The nightly price refresh (``gpucost refresh``): run scrapers, apply each provider atomically.

Flow (:func:`run_refresh`):

1. Take the refresh lock so two runs never overlap: a session-level advisory lock on
   PostgreSQL (``pg_try_advisory_lock``, released when the connection ends, also on a crash);
   on SQLite an exclusive ``flock`` on ``<database file>.refresh.lock`` (released by the OS when
   the process ends). A second run exits at once with :class:`RefreshLockedError`.
2. ``running`` refresh-run rows left by a killed process are marked ``interrupted``.
3. Each enabled provider gets a refresh-run row (``running``), committed before its fetch.
4. The scrapers run concurrently on one shared ``httpx.AsyncClient``. As each finishes, its
   result is applied in **one transaction** that also closes its refresh-run row (``ok`` and
   the counts). A failure (network, HTTP status, malformed or empty answer) instead records
   ``error`` with the reason and leaves that provider's stored offers untouched. A process
   killed mid-apply leaves the transaction uncommitted: no half-written provider.

``--dry-run`` fetches and applies inside transactions that are rolled back (counts only, no
lock, no refresh-run rows).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import fcntl
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import httpx
from sqlalchemy import CursorResult, Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.ingest import Catalog, IngestCounts, apply_offers, load_catalog
from app.db.models import Provider, RefreshRun, utcnow
from scrapers import SCRAPERS, Scraper, ScraperError, ScrapeResult
from scrapers.http import make_client, make_http
from scrapers.settings import ScraperSettings

log = logging.getLogger(__name__)

#: ``pg_try_advisory_lock`` key of the refresh job (the bytes of "gpucost").
ADVISORY_LOCK_KEY = int.from_bytes(b"gpucost", "big")
#: Longest error text stored on a refresh-run row.
MAX_ERROR_CHARS = 2000

#: ``progress(provider slug, phase, detail)``; phases: queued, fetching, applying, ok, error,
#: skipped.
Progress = Callable[[str, str, str], None]


class RefreshLockedError(RuntimeError):
    """Another refresh holds the lock."""


class RefreshSetupError(RuntimeError):
    """The refresh cannot start (unknown provider, missing API key asked for, schema)."""


@dataclass
class ProviderOutcome:
    """One provider's result in this run."""

    slug: str
    name: str
    status: str  # ok | error | skipped
    counts: IngestCounts | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    skipped_rows: int = 0
    duration_s: float = 0.0
    run_id: int | None = None


@dataclass
class RefreshReport:
    """Every provider's outcome; ``ok`` when every enabled provider succeeded."""

    outcomes: list[ProviderOutcome]
    dry_run: bool
    observed_at: dt.datetime

    @property
    def ok(self) -> bool:
        """True when no enabled provider failed (skipped providers were not enabled)."""
        return all(o.status != "error" for o in self.outcomes)


def plan_providers(
    settings: ScraperSettings, requested: Sequence[str] = ()
) -> tuple[list[Scraper], list[tuple[Scraper, str]]]:
    """Split the scrapers into enabled ones and skipped ones (with the reason).

    Without ``requested``, all registered providers (or ``GPUCOST_SCRAPER_PROVIDERS``) are
    candidates, and one that needs an API key it does not have is skipped with a message.

    Raises:
        RefreshSetupError: an unknown provider, or an explicitly requested provider whose key is
            not set.
    """
    names = [n.strip().lower() for n in (requested or settings.providers or SCRAPERS)]
    unknown = [n for n in names if n not in SCRAPERS]
    if unknown:
        raise RefreshSetupError(
            f"unknown provider(s) {', '.join(unknown)}; known: {', '.join(SCRAPERS)}"
        )
    enabled: list[Scraper] = []
    skipped: list[tuple[Scraper, str]] = []
    for name in dict.fromkeys(names):
        scraper = SCRAPERS[name]
        if scraper.needs_api_key and not settings.api_key(name):
            reason = f"no API key: set GPUCOST_SCRAPER_{name.upper()}_API_KEY"
            if requested:
                raise RefreshSetupError(f"{name}: {reason}")
            skipped.append((scraper, reason))
        else:
            enabled.append(scraper)
    return enabled, skipped


@contextmanager
def refresh_lock(engine: Engine) -> Iterator[None]:
    """Hold the refresh lock for the block (see the module docstring).

    Raises:
        RefreshLockedError: another run holds it.
    """
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            got = conn.execute(select(func.pg_try_advisory_lock(ADVISORY_LOCK_KEY))).scalar()
            conn.commit()
            if not got:
                raise RefreshLockedError(
                    "another refresh is running (PostgreSQL advisory lock "
                    f"{ADVISORY_LOCK_KEY} is held)"
                )
            try:
                yield
            finally:
                conn.execute(select(func.pg_advisory_unlock(ADVISORY_LOCK_KEY)))
                conn.commit()
        return
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        yield  # in-memory SQLite or another dialect: one process only, nothing to lock
        return
    path = Path(database).with_name(Path(database).name + ".refresh.lock")
    handle: IO[str] = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RefreshLockedError(
                f"another refresh is running (lock file {path} is held)"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def _ensure_provider(session: Session, scraper: Scraper) -> Provider:
    provider = session.scalar(select(Provider).where(Provider.slug == scraper.slug))
    if provider is None:
        provider = Provider(
            slug=scraper.slug,
            name=scraper.name,
            homepage_url=scraper.homepage_url,
            kind=scraper.kind,
            source=f"created by gpucost refresh; API docs {scraper.docs_url}",
        )
        session.add(provider)
        session.flush()
    return provider


def _failure_text(exc: BaseException) -> str:
    if isinstance(exc, ScraperError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _empty_text(result: ScrapeResult) -> str:
    text_ = "empty result: the provider returned no offers; stored offers kept unchanged"
    if result.warnings:
        text_ += f" ({result.skipped} row(s) skipped, e.g. {result.warnings[0]})"
    return text_


class _Run:
    """State of one refresh run (database side)."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        catalog: Catalog,
        observed_at: dt.datetime,
        dry_run: bool,
        progress: Progress,
    ):
        self.factory = session_factory
        self.catalog = catalog
        self.observed_at = observed_at
        self.dry_run = dry_run
        self.progress = progress
        self.write_lock = asyncio.Lock()

    def start(self, scrapers: Sequence[Scraper]) -> dict[str, tuple[int, int]]:
        """Mark stale ``running`` rows interrupted; open a ``running`` row per provider.

        Returns ``{slug: (provider id, refresh-run id)}``.
        """
        now = utcnow()
        with self.factory() as session, session.begin():
            # an UPDATE's result is a CursorResult (it has rowcount)
            stale = cast(
                "CursorResult[Any]",
                session.execute(
                    update(RefreshRun)
                    .where(RefreshRun.status == "running")
                    .values(
                        status="interrupted",
                        finished_at=now,
                        error="the refresh process ended before this provider finished "
                        "(killed or crashed); nothing of it was applied",
                    )
                ),
            )
            if stale.rowcount:
                log.warning("marked %d unfinished refresh run(s) as interrupted", stale.rowcount)
            ids: dict[str, tuple[int, int]] = {}
            for scraper in scrapers:
                provider = _ensure_provider(session, scraper)
                run = RefreshRun(
                    provider_id=provider.id,
                    started_at=now,
                    status="running",
                    offers_seen=0,
                    offers_new=0,
                    offers_changed=0,
                    offers_gone=0,
                )
                session.add(run)
                session.flush()
                ids[scraper.slug] = (provider.id, run.id)
        return ids

    def apply(
        self, scraper: Scraper, ids: tuple[int, int] | None, result: ScrapeResult
    ) -> IngestCounts:
        """Apply the result and close the refresh-run row, in one transaction."""
        with self.factory() as session:
            session.begin()
            try:
                provider = (
                    session.get(Provider, ids[0]) if ids else _ensure_provider(session, scraper)
                )
                assert provider is not None
                counts = apply_offers(
                    session, provider, result.offers, self.catalog, self.observed_at
                )
                if self.dry_run:
                    session.rollback()
                    return counts
                run = session.get(RefreshRun, ids[1]) if ids else None
                if run is not None:
                    run.status = "ok"
                    run.finished_at = utcnow()
                    run.offers_seen, run.offers_new = counts.seen, counts.new
                    run.offers_changed, run.offers_gone = counts.changed, counts.gone
                    run.unknown_gpu_names = counts.unknown_gpu_names or None
                    run.warnings = result.warnings or None
                    run.error = None
                session.commit()
                return counts
            except BaseException:
                session.rollback()
                raise

    def fail(self, ids: tuple[int, int] | None, error: str, warnings: list[str]) -> None:
        """Record the failure on the provider's refresh-run row (its offers stay as they are)."""
        if self.dry_run or ids is None:
            return
        with self.factory() as session, session.begin():
            run = session.get(RefreshRun, ids[1])
            if run is not None:
                run.status = "error"
                run.finished_at = utcnow()
                run.error = error[:MAX_ERROR_CHARS]
                run.warnings = warnings or None


async def _one(
    run: _Run,
    scraper: Scraper,
    ids: tuple[int, int] | None,
    fetch: Callable[[Scraper], Awaitable[ScrapeResult]],
) -> ProviderOutcome:
    outcome = ProviderOutcome(
        slug=scraper.slug, name=scraper.name, status="error", run_id=ids[1] if ids else None
    )
    started = time.monotonic()
    result = ScrapeResult()
    try:
        run.progress(scraper.slug, "fetching", "")
        result = await fetch(scraper)
        outcome.warnings, outcome.skipped_rows = result.warnings, result.skipped
        if not result.offers:
            raise ScraperError(_empty_text(result))
        run.progress(scraper.slug, "applying", f"{len(result.offers)} offers")
        async with run.write_lock:
            outcome.counts = await asyncio.to_thread(run.apply, scraper, ids, result)
        outcome.status = "ok"
    except Exception as exc:
        outcome.error = _failure_text(exc)
        if not isinstance(exc, ScraperError):
            log.exception("%s: refresh failed unexpectedly", scraper.slug)
        else:
            log.warning("%s: skipped this run: %s", scraper.slug, outcome.error)
        try:
            async with run.write_lock:
                await asyncio.to_thread(run.fail, ids, outcome.error, result.warnings)
        except Exception:
            log.exception("%s: could not record the failure", scraper.slug)
    outcome.duration_s = time.monotonic() - started
    c = outcome.counts
    run.progress(
        scraper.slug,
        outcome.status,
        f"{c.seen} seen, {c.new} new, {c.changed} changed, {c.gone} gone"
        if c
        else outcome.error or "",
    )
    return outcome


async def refresh_async(
    engine: Engine,
    session_factory: sessionmaker[Session],
    settings: ScraperSettings,
    *,
    seed_dir: Path,
    providers: Sequence[str] = (),
    dry_run: bool = False,
    observed_at: dt.datetime | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: Progress | None = None,
) -> RefreshReport:
    """Run the refresh (the caller holds the lock unless ``dry_run``); see the module docstring.

    Args:
        engine, session_factory: the database.
        settings: scraper settings (URLs, keys, timeouts, retries).
        seed_dir: for ``gpu_aliases.csv`` (the GPU-name normaliser).
        providers: restrict to these slugs (default: all enabled).
        dry_run: fetch and compute the counts, write nothing.
        observed_at: the run's timestamp (default now, UTC).
        transport: replaces the network (tests).
        progress: called on every phase change.

    Raises:
        RefreshSetupError: see :func:`plan_providers`.
    """
    observed_at = observed_at or utcnow()
    enabled, skipped = plan_providers(settings, providers)
    report_progress = progress or (lambda slug, phase, detail: None)
    with session_factory() as session:
        catalog = load_catalog(session, seed_dir)
    if catalog.empty:
        log.warning("the GPU catalog is empty (run `gpucost seed`): every GPU name is unknown")
    run = _Run(session_factory, catalog, observed_at, dry_run, report_progress)
    ids = {} if dry_run else await asyncio.to_thread(run.start, enabled)
    outcomes: list[ProviderOutcome] = []
    for scraper, reason in skipped:
        report_progress(scraper.slug, "skipped", reason)
        outcomes.append(ProviderOutcome(scraper.slug, scraper.name, "skipped", error=reason))
    for scraper in enabled:
        report_progress(scraper.slug, "queued", "")

    async with make_client(settings, transport) as client:
        http = make_http(settings, client)

        async def fetch(scraper: Scraper) -> ScrapeResult:
            return await scraper.fetch(http, settings)

        results = await asyncio.gather(*(_one(run, s, ids.get(s.slug), fetch) for s in enabled))
    outcomes.extend(results)
    order = {slug: i for i, slug in enumerate(SCRAPERS)}
    outcomes.sort(key=lambda o: order.get(o.slug, len(order)))
    return RefreshReport(outcomes=outcomes, dry_run=dry_run, observed_at=observed_at)


def run_refresh(
    engine: Engine,
    session_factory: sessionmaker[Session],
    settings: ScraperSettings,
    *,
    seed_dir: Path,
    providers: Sequence[str] = (),
    dry_run: bool = False,
    observed_at: dt.datetime | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: Progress | None = None,
) -> RefreshReport:
    """Take the lock (unless ``dry_run``) and run :func:`refresh_async` to completion.

    Raises:
        RefreshLockedError: another refresh is running.
        RefreshSetupError: see :func:`plan_providers`.
    """
    plan_providers(settings, providers)  # fail on bad names before taking the lock

    def go() -> RefreshReport:
        return asyncio.run(
            refresh_async(
                engine,
                session_factory,
                settings,
                seed_dir=seed_dir,
                providers=providers,
                dry_run=dry_run,
                observed_at=observed_at,
                transport=transport,
                progress=progress,
            )
        )

    if dry_run:
        return go()
    with refresh_lock(engine):
        return go()
