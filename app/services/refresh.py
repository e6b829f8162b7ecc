"""The nightly price refresh (``gpucost refresh``): run scrapers, apply each provider atomically.

Flow (:func:`run_refresh`):

1. Take the refresh lock so two runs never overlap: a session-level advisory lock on
   PostgreSQL (``pg_try_advisory_lock``, released when the connection ends, also on a crash);
   on SQLite an exclusive ``flock`` on ``<database file>.refresh.lock`` (released by the OS when
   the process ends). A second run exits at once with :class:`RefreshLockedError`.
2. ``running`` refresh-run rows left by a killed process are marked ``interrupted``.
3. Each enabled provider gets a refresh-run row (``running``, with its source kind: ``api``,
   or ``catalog`` when a keyless provider runs its public-catalog fallback,
   :func:`plan_providers`), committed before its fetch.
4. The scrapers run concurrently on one shared ``httpx.AsyncClient``. As each finishes, its
   result is applied in **one transaction** that also closes its refresh-run row (``ok`` and
   the counts). A failure (network, HTTP status, malformed or empty answer) instead records
   ``error`` with the reason and leaves that provider's stored offers untouched. A process
   killed mid-apply leaves the transaction uncommitted: no half-written provider.
5. **Shrink guard**: an answer with more than ``max_shrink_fraction`` (default 50 %) fewer
   offers than the provider's last successful run is rolled back, its run recorded
   ``suspect`` with both counts (``offers_seen`` = received, ``baseline_offers`` = last
   success) and the stored offers stay; ``accept_shrink`` (``--accept-shrink NAME``) applies
   it deliberately. A transient partial answer never marks the rest of a catalog unavailable.
6. **Bounds**: each provider's fetch runs under a wall-clock deadline
   (``provider_deadline_s``, and what is left of ``run_deadline_s``), so a drip-fed answer is
   given up at the deadline, not after per-read timeout × chunks; body-size caps are in
   :mod:`scrapers.http`.
7. **Secrets**: every error text and warning goes through :func:`scrapers.redact.redact`
   (with the configured key values) before it is logged, stored or reported.

``--dry-run`` fetches and applies inside transactions that are rolled back (counts only, no
lock, no refresh-run rows).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import fcntl
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Sequence, Sized
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, cast

import httpx
from sqlalchemy import Connection, CursorResult, Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.ingest import Catalog, IngestCounts, apply_offers, load_catalog
from app.db.models import Provider, RefreshRun, utcnow
from scrapers import SCRAPERS, Scraper, ScraperError, ScrapeResult
from scrapers.http import make_client, make_http
from scrapers.redact import install_log_redaction, redact
from scrapers.settings import ScraperSettings

log = logging.getLogger(__name__)


class Posting(Protocol):
    """Posts running on a background thread (:class:`app.watches.WebhookSender`)."""

    @property
    def found(self) -> Sized:
        """The events being posted."""

    def join(self, timeout: float | None = None) -> None:
        """Wait until the posts are done (or ``timeout`` seconds)."""


#: ``after_refresh(session_factory, seed_dir)``: run once a refresh committed (the watches'
#: check, :func:`app.watches.after_refresh`); what it returns is ``RefreshReport.webhooks``.
AfterRefresh = Callable[[sessionmaker[Session], Path], Posting | None]

#: ``pg_try_advisory_lock`` key of the refresh job (the bytes of "gpucost").
ADVISORY_LOCK_KEY = int.from_bytes(b"gpucost", "big")
#: Longest error text stored on a refresh-run row.
MAX_ERROR_CHARS = 2000

#: ``progress(provider slug, phase, detail)``; phases: queued, fetching, applying, ok, error,
#: suspect, skipped.
Progress = Callable[[str, str, str], None]


class RefreshLockedError(RuntimeError):
    """Another refresh holds the lock."""


class RefreshSetupError(RuntimeError):
    """The refresh cannot start (unknown provider, missing API key asked for, schema)."""


class ShrinkRefusedError(ScraperError):
    """A provider's answer shrank too much against its last successful run (not applied)."""

    def __init__(self, baseline: int, received: int, would_be_gone: int, max_fraction: float):
        self.baseline, self.received = baseline, received
        self.would_be_gone, self.max_fraction = would_be_gone, max_fraction
        super().__init__(
            f"answer shrank from {baseline} offers (last successful run) to {received} "
            f"(-{shrink_fraction(baseline, received):.0%}, limit -{max_fraction:.0%}); "
            f"not applied: {would_be_gone} stored offer(s) would have been marked unavailable. "
            "Stored offers kept; rerun with --accept-shrink to apply it"
        )


def shrink_fraction(baseline: int | None, received: int) -> float:
    """How much smaller ``received`` is than ``baseline`` (0 when it grew or no baseline)."""
    if not baseline or received >= baseline:
        return 0.0
    return 1.0 - received / baseline


def last_success_count(session: Session, provider_id: int, source_kind: str = "api") -> int | None:
    """``offers_seen`` of the provider's newest ``ok`` refresh run of ``source_kind`` (its API
    or its public catalog: the two are never compared), or ``None`` if it has none."""
    return session.scalar(
        select(RefreshRun.offers_seen)
        .where(
            RefreshRun.provider_id == provider_id,
            RefreshRun.status == "ok",
            RefreshRun.source_kind == source_kind,
        )
        .order_by(RefreshRun.finished_at.desc(), RefreshRun.id.desc())
        .limit(1)
    )


@dataclass
class ProviderOutcome:
    """One provider's result in this run."""

    slug: str
    name: str
    status: str  # ok | error | suspect | skipped
    counts: IngestCounts | None = None
    #: Offers in the last successful run, when the shrink guard compared against it.
    baseline_offers: int | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    skipped_rows: int = 0
    duration_s: float = 0.0
    run_id: int | None = None
    #: ``api`` or ``catalog`` (the provider's public-catalog fallback ran)
    source_kind: str = "api"


@dataclass
class RefreshReport:
    """Every provider's outcome; ``ok`` when every enabled provider succeeded."""

    outcomes: list[ProviderOutcome]
    dry_run: bool
    observed_at: dt.datetime
    #: What ``after_refresh`` started (the watches' webhook posts on a background thread,
    #: :func:`app.watches.after_refresh`); ``None`` without a hook or with nothing to post.
    webhooks: Posting | None = None

    @property
    def ok(self) -> bool:
        """True when no enabled provider failed or was held back as ``suspect``."""
        return all(o.status not in ("error", "suspect") for o in self.outcomes)


def plan_providers(
    settings: ScraperSettings, requested: Sequence[str] = ()
) -> tuple[list[Scraper], list[tuple[Scraper, str]]]:
    """Split the scrapers into enabled ones and skipped ones (with the reason).

    Without ``requested``, all registered providers (or ``GPUCOST_SCRAPER_PROVIDERS``) are
    candidates. One that needs an API key (or another credential) it does not have runs its
    public-catalog fallback instead when it has one and ``catalog_fallback`` is on (the
    fallback's offers are labelled ``catalog``), else it is skipped with a message.

    Raises:
        RefreshSetupError: an unknown provider, or an explicitly requested provider whose key is
            not set and that has no fallback to run.
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
        reason = scraper.missing_credentials(settings)
        if reason is None:
            enabled.append(scraper)
        elif scraper.fallback is not None and settings.catalog_fallback:
            enabled.append(scraper.fallback)
        elif requested:
            raise RefreshSetupError(f"{name}: {reason}")
        else:
            skipped.append((scraper, reason))
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


def _check_accept_shrink(names: Sequence[str]) -> list[str]:
    slugs = [n.strip().lower() for n in names]
    unknown = [n for n in slugs if n not in SCRAPERS]
    if unknown:
        raise RefreshSetupError(
            f"--accept-shrink: unknown provider(s) {', '.join(unknown)}; "
            f"known: {', '.join(SCRAPERS)}"
        )
    return slugs


#: Error text of a refresh-run row whose process died before it finished.
INTERRUPTED_TEXT = (
    "the refresh process ended before this provider finished (killed or crashed); "
    "nothing of it was applied"
)


def open_run(
    session: Session, provider_id: int, started_at: dt.datetime, source_kind: str = "api"
) -> RefreshRun:
    """Add a ``running`` refresh-run row for the provider, its counts zero, and flush it (its
    ``id`` is then set)."""
    run = RefreshRun(
        provider_id=provider_id,
        source_kind=source_kind,
        started_at=started_at,
        status="running",
        offers_seen=0,
        offers_new=0,
        offers_changed=0,
        offers_gone=0,
    )
    session.add(run)
    session.flush()
    return run


def mark_interrupted(session: Session | Connection, now: dt.datetime | None = None) -> int:
    """Mark every ``running`` refresh-run row ``interrupted`` (call only holding the lock)."""
    # an UPDATE's result is a CursorResult (it has rowcount)
    stale = cast(
        "CursorResult[Any]",
        session.execute(
            update(RefreshRun)
            .where(RefreshRun.status == "running")
            .values(status="interrupted", finished_at=now or utcnow(), error=INTERRUPTED_TEXT)
        ),
    )
    count = stale.rowcount or 0
    if count:
        log.warning("marked %d unfinished refresh run(s) as interrupted", count)
    return count


def reap_interrupted(engine: Engine) -> int:
    """The stale-lock check: when no refresh holds the lock, ``running`` rows are dead.

    Takes the lock without waiting; if it is free, marks every ``running`` row
    ``interrupted`` in its own transaction and returns how many. Returns 0 when a refresh is
    running (the lock is held).
    """
    try:
        with refresh_lock(engine), engine.begin() as conn:
            return mark_interrupted(conn)
    except RefreshLockedError:
        return 0


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
        settings: ScraperSettings | None = None,
        accept_shrink: Sequence[str] = (),
    ):
        settings = settings or ScraperSettings()
        self.max_shrink = settings.max_shrink_fraction
        self.accept_shrink = frozenset(accept_shrink)
        self.secrets = settings.secret_values()
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
            mark_interrupted(session, now)
            ids: dict[str, tuple[int, int]] = {}
            for scraper in scrapers:
                provider = _ensure_provider(session, scraper)
                run = open_run(session, provider.id, now, scraper.source_kind)
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
                baseline = last_success_count(session, provider.id, scraper.source_kind)
                counts = apply_offers(
                    session,
                    provider,
                    result.offers,
                    self.catalog,
                    self.observed_at,
                    scraper.source_kind,
                )
                warnings = self.clean(result.warnings)
                shrink = shrink_fraction(baseline, counts.seen)
                if shrink > self.max_shrink:
                    assert baseline is not None
                    if scraper.slug not in self.accept_shrink:
                        session.rollback()
                        raise ShrinkRefusedError(
                            baseline, counts.seen, counts.gone, self.max_shrink
                        )
                    warnings = [
                        f"shrink accepted (--accept-shrink): {baseline} offers in the last "
                        f"successful run, {counts.seen} now; {counts.gone} marked unavailable",
                        *warnings,
                    ]
                if self.dry_run:
                    session.rollback()
                    return counts
                run = session.get(RefreshRun, ids[1]) if ids else None
                if run is not None:
                    run.status = "ok"
                    run.finished_at = utcnow()
                    run.offers_seen, run.offers_new = counts.seen, counts.new
                    run.offers_changed, run.offers_gone = counts.changed, counts.gone
                    run.baseline_offers = baseline
                    run.unknown_gpu_names = counts.unknown_gpu_names or None
                    run.warnings = warnings or None
                    run.offers_suspect = counts.suspect
                    run.error = None
                session.commit()
                return counts
            except BaseException:
                session.rollback()
                raise

    def clean(self, texts: Sequence[str]) -> list[str]:
        """``texts`` redacted (patterns and the configured key values)."""
        return [redact(t, self.secrets) or "" for t in texts]

    def fail(
        self,
        ids: tuple[int, int] | None,
        error: str,
        warnings: list[str],
        shrink: ShrinkRefusedError | None = None,
    ) -> None:
        """Record the failure (``error``, or ``suspect`` for a refused shrink) on the provider's
        refresh-run row; its offers stay as they are. ``error`` must already be redacted."""
        if self.dry_run or ids is None:
            return
        with self.factory() as session, session.begin():
            run = session.get(RefreshRun, ids[1])
            if run is not None:
                run.status = "error" if shrink is None else "suspect"
                run.finished_at = utcnow()
                run.error = error[:MAX_ERROR_CHARS]
                run.warnings = self.clean(warnings) or None
                if shrink is not None:
                    run.offers_seen, run.baseline_offers = shrink.received, shrink.baseline


async def _one(
    run: _Run,
    scraper: Scraper,
    ids: tuple[int, int] | None,
    fetch: Callable[[Scraper], Awaitable[ScrapeResult]],
    deadline: float,
) -> ProviderOutcome:
    outcome = ProviderOutcome(
        slug=scraper.slug,
        name=scraper.name,
        status="error",
        run_id=ids[1] if ids else None,
        source_kind=scraper.source_kind,
    )
    started = time.monotonic()
    result = ScrapeResult()
    try:
        run.progress(scraper.slug, "fetching", "")
        result = await _fetch_by_deadline(scraper, fetch, deadline)
        outcome.warnings, outcome.skipped_rows = run.clean(result.warnings), result.skipped
        if not result.offers:
            raise ScraperError(_empty_text(result))
        run.progress(scraper.slug, "applying", f"{len(result.offers)} offers")
        async with run.write_lock:
            outcome.counts = await asyncio.to_thread(run.apply, scraper, ids, result)
        outcome.status = "ok"
    except Exception as exc:
        shrink = exc if isinstance(exc, ShrinkRefusedError) else None
        outcome.error = redact(_failure_text(exc), run.secrets) or ""
        if shrink is not None:
            outcome.status, outcome.baseline_offers = "suspect", shrink.baseline
            log.warning("%s: held back as suspect: %s", scraper.slug, outcome.error)
        elif not isinstance(exc, ScraperError):
            trace = "".join(traceback.format_exception(exc))
            log.error(
                "%s: refresh failed unexpectedly\n%s",
                scraper.slug,
                redact(trace, run.secrets),
            )
        else:
            log.warning("%s: skipped this run: %s", scraper.slug, outcome.error)
        try:
            async with run.write_lock:
                await asyncio.to_thread(run.fail, ids, outcome.error, result.warnings, shrink)
        except Exception as exc2:
            log.error(
                "%s: could not record the failure: %s",
                scraper.slug,
                redact(_failure_text(exc2), run.secrets),
            )
    outcome.duration_s = time.monotonic() - started
    c = outcome.counts
    run.progress(
        scraper.slug,
        outcome.status,
        f"{c.seen} seen, {c.new} new, {c.changed} changed, {c.gone} gone, {c.suspect} suspect"
        if c
        else outcome.error or "",
    )
    return outcome


async def _fetch_by_deadline(
    scraper: Scraper, fetch: Callable[[Scraper], Awaitable[ScrapeResult]], deadline: float
) -> ScrapeResult:
    """``fetch(scraper)``, cancelled at ``deadline`` (event-loop time) with a ScraperError."""
    loop = asyncio.get_running_loop()
    limit_s = max(deadline - loop.time(), 0.0)
    try:
        async with asyncio.timeout_at(deadline) as scope:
            return await fetch(scraper)
    except TimeoutError:
        if not scope.expired():
            raise
        raise ScraperError(
            f"gave up after {limit_s:.1f} s: the provider's deadline passed "
            "(GPUCOST_SCRAPER_PROVIDER_DEADLINE_S / RUN_DEADLINE_S); stored offers kept"
        ) from None


@dataclass(frozen=True, slots=True)
class RefreshOptions:
    """What one refresh is asked to do.

    Attributes:
        seed_dir: for ``gpu_aliases.csv`` (the GPU-name normaliser).
        providers: restrict to these slugs (default: all enabled).
        dry_run: fetch and compute the counts, write nothing.
        observed_at: the run's timestamp (default now, UTC).
        transport: replaces the network (tests).
        progress: called on every phase change.
        accept_shrink: provider slugs whose shrunken answer is applied anyway.
    """

    seed_dir: Path
    providers: Sequence[str] = ()
    dry_run: bool = False
    observed_at: dt.datetime | None = None
    transport: httpx.AsyncBaseTransport | None = None
    progress: Progress | None = None
    accept_shrink: Sequence[str] = ()


async def refresh_async(
    engine: Engine,
    session_factory: sessionmaker[Session],
    settings: ScraperSettings,
    options: RefreshOptions,
) -> RefreshReport:
    """Run the refresh (the caller holds the lock unless ``options.dry_run``); see the module
    docstring.

    Args:
        engine, session_factory: the database.
        settings: scraper settings (URLs, keys, timeouts, retries).
        options: the seed directory, the providers, dry run, timestamp, transport, progress
            callback and accepted shrinks (:class:`RefreshOptions`).

    Raises:
        RefreshSetupError: see :func:`plan_providers`, or an unknown ``accept_shrink`` slug.
    """
    observed_at = options.observed_at or utcnow()
    enabled, skipped = plan_providers(settings, options.providers)
    accept = _check_accept_shrink(options.accept_shrink)
    install_log_redaction(settings.secret_values())
    report_progress = options.progress or (lambda slug, phase, detail: None)
    with session_factory() as session:
        catalog = load_catalog(session, options.seed_dir)
    if catalog.empty:
        log.warning("the GPU catalog is empty (run `gpucost seed`): every GPU name is unknown")
    dry_run = options.dry_run
    run = _Run(session_factory, catalog, observed_at, dry_run, report_progress, settings, accept)
    ids = {} if dry_run else await asyncio.to_thread(run.start, enabled)
    outcomes: list[ProviderOutcome] = []
    for scraper, reason in skipped:
        report_progress(scraper.slug, "skipped", reason)
        outcomes.append(ProviderOutcome(scraper.slug, scraper.name, "skipped", error=reason))
    for scraper in enabled:
        report_progress(scraper.slug, "queued", "")

    async with make_client(settings, options.transport) as client:
        http = make_http(settings, client)

        async def fetch(scraper: Scraper) -> ScrapeResult:
            return await scraper.fetch(http, settings)

        now = asyncio.get_running_loop().time()
        deadline = now + min(settings.provider_deadline_s, settings.run_deadline_s)
        results = await asyncio.gather(
            *(_one(run, s, ids.get(s.slug), fetch, deadline) for s in enabled)
        )
    outcomes.extend(results)
    order = {slug: i for i, slug in enumerate(SCRAPERS)}
    outcomes.sort(key=lambda o: order.get(o.slug, len(order)))
    return RefreshReport(outcomes=outcomes, dry_run=dry_run, observed_at=observed_at)


def run_refresh(
    engine: Engine,
    session_factory: sessionmaker[Session],
    settings: ScraperSettings,
    options: RefreshOptions,
    *,
    after_refresh: AfterRefresh | None = None,
) -> RefreshReport:
    """Take the lock (unless ``options.dry_run``) and run :func:`refresh_async` to completion;
    then, when a provider committed, call ``after_refresh(session_factory, seed_dir)`` (the
    surfaces pass :func:`app.watches.after_refresh`: services do not import what sits above
    them) and keep what it returns in ``report.webhooks``.

    Raises:
        RefreshLockedError: another refresh is running.
        RefreshSetupError: see :func:`plan_providers`.
    """
    plan_providers(settings, options.providers)  # fail on bad names before taking the lock
    _check_accept_shrink(options.accept_shrink)

    def go() -> RefreshReport:
        return asyncio.run(refresh_async(engine, session_factory, settings, options))

    if options.dry_run:
        return go()
    with refresh_lock(engine):
        report = go()
    if after_refresh is not None and any(o.status == "ok" for o in report.outcomes):
        # after the providers' commits; the posts run on their own thread (never waited on)
        report.webhooks = after_refresh(session_factory, options.seed_dir)
    return report
