"""Per-worker reference data and offers of the current catalog version.

A worker checks ``catalog_version`` (one tiny ``SELECT``) at most every ``poll_s`` seconds,
on the first request after that interval; when the version moved it reads the new version's
reference data (only when ``reference_version`` moved too: otherwise it keeps the data and
its memoised estimates; and when only submitted runs or rates moved, :func:`load_reference`
keeps the published measurements and the model built on them) and offers (only the rows
written since the version held, :func:`app.services.snapshot_build.update_snapshot`, when
the reference data stayed), and swaps them in at once. A request takes one
:class:`ReferenceData` and reads everything from it, so no answer mixes two versions. The read
is checked: the version is read again after the offers, and the read is repeated when a write
committed in between.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from dataclasses import replace
from pathlib import Path

import anyio
import anyio.to_thread
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from app.services.heap import freeze_long_lived, return_free_memory
from app.services.reference import ReferenceData, load_reference
from app.services.snapshot import read_version
from app.services.snapshot_build import build_snapshot, update_snapshot

log = logging.getLogger(__name__)

#: reads of one version tried before giving up (each retry: a write committed meanwhile)
MAX_READS = 5
#: the channel the catalog triggers ``NOTIFY`` with each new version
CHANNEL = "gpucost_catalog"
#: longest wait (seconds) between two attempts to reconnect the ``LISTEN`` connection
RECONNECT_MAX_S = 30.0


def listen_conninfo(url: str | None) -> str | None:
    """The libpq connection string of a PostgreSQL SQLAlchemy ``url`` (its driver name
    dropped), ``None`` for any other database."""
    if url is None:
        return None
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def _log_failure(future: asyncio.Future[ReferenceData]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("catalog check or load failed: %s", future.exception())


class CatalogMoved(RuntimeError):
    """Writes kept committing while the catalog was read (:data:`MAX_READS` times)."""


class ReferenceCache:
    """The current :class:`ReferenceData` (with its offers) of this process.

    :meth:`get` checks and loads in the calling thread; :meth:`aget` (the server's path)
    never touches the database on the event loop: the check and a load run on a worker
    thread of the cache's own limiter (one at a time; concurrent callers share it), and a
    caller waits for them at most ``wait_s`` seconds before it is served the version held,
    except after :meth:`invalidate`: then it waits for a check that began after the write (and
    its load) to finish, so a write this process committed is in every later answer (a
    revoked submitter's runs never bend one again). Writes are counted (a generation), not
    flagged under the load's lock: :meth:`invalidate` never waits for a load in flight.
    ``version_engine``: where the version is read (the server gives it a one-connection
    engine of its own, so the check never queues behind the handlers for a connection).
    """

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        seed_dir: Path,
        *,
        poll_s: float = 0.5,
        wait_s: float = 2.0,
        version_engine: Engine | None = None,
    ):
        self._factory = session_factory
        self._seed_dir = seed_dir
        self.poll_s = poll_s
        self._wait_s = wait_s
        self._version_engine = version_engine
        self._data: ReferenceData | None = None
        self._checked = 0.0
        #: writes this process committed (:meth:`invalidate`), numbered 1, 2, ...
        self._writes = itertools.count(1)
        self._write_gen = 0
        #: the latest write generation a finished check began after
        self._seen_gen = 0
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None
        self._check: asyncio.Future[ReferenceData] | None = None
        #: versions loaded by this process (statistics)
        self.loads = 0
        #: how new catalog versions reach this worker besides the requests' own checks:
        #: ``notified`` (PostgreSQL LISTEN open), ``polled`` (SQLite, or LISTEN down: a check
        #: every ``fallback_s``), ``connecting``, or ``off`` (:meth:`watch` not running)
        self.updates = "off"
        #: a :meth:`poke` came while a check was in flight: check again after it
        self._again = False

    @property
    def listening(self) -> bool:
        """A ``LISTEN`` connection is open (:meth:`watch`)."""
        return self.updates == "notified"

    @property
    def current(self) -> ReferenceData | None:
        """The data held now (``None`` before the first load); never touches the database."""
        return self._data

    @property
    def pending_write(self) -> bool:
        """A write of this process is not yet in the data held (no check began after it)."""
        return self._seen_gen < self._write_gen

    def _due(self) -> bool:
        return (
            self._data is None
            or self.pending_write
            or time.monotonic() - self._checked >= self.poll_s
        )

    def _read_version(self) -> tuple[int, int]:
        if self._version_engine is not None:
            with self._version_engine.connect() as conn:
                return read_version(conn)
        with self._factory() as session:
            return read_version(session)

    def get(self) -> ReferenceData:
        """The current data: checks the version when ``poll_s`` has passed since the last
        check, and loads the new version when it moved.

        Raises:
            CatalogMoved: writes kept committing during every read.
            sqlalchemy.exc.SQLAlchemyError: the database failed.
        """
        with self._lock:
            if self._due():
                gen = self._write_gen  # writes before this read are in what it reads
                version = self._read_version()
                if self._data is None or self._data.version != version[0]:
                    held = self._data
                    self._data = self._load(version)
                    self.loads += 1
                    new_reference = held is None or held.points is not self._data.points
                    del held  # the previous version goes now, unless a request still reads it
                    if new_reference:
                        # new reference data: thousands of long-lived objects; keep the cyclic
                        # GC from rescanning them on every request (unfrozen first, so the
                        # previous data's cycles can go). An offers-only version, or one whose
                        # published tables are the same (a submission: load_reference keeps
                        # the held objects) adds few tracked objects: no full collection then.
                        freeze_long_lived(collect_first=True)
                    # what the previous versions freed, merges too (100,000 offers, a price
                    # written and a new workload ranked 20 times: 30 MiB of the resident 223
                    # MiB was free heap; malloc_trim took 0.1 ms)
                    return_free_memory()
                self._checked = time.monotonic()
                self._seen_gen = max(self._seen_gen, gen)
            return self._data  # type: ignore[return-value]

    def _load(self, version: tuple[int, int]) -> ReferenceData:
        """Reference data and offers of one version: read, then the version read again; read
        again when it moved (a write committed meanwhile)."""
        for _ in range(MAX_READS):
            with self._factory() as session:
                held = self._data
                if held is not None and held.reference_version == version[1]:
                    ref = held.without_offers()  # same tables: keep the data and its memo
                    offers = (
                        build_snapshot(session, ref, version[0])
                        if held.offers is None
                        else update_snapshot(session, ref, held.offers, version[0])
                    )
                else:
                    kept = held.without_offers() if held is not None else None
                    ref = load_reference(session, self._seed_dir, kept)
                    offers = build_snapshot(session, ref, version[0])
                after = read_version(session)
            if after == version:
                out = replace(ref, version=version[0], reference_version=version[1], offers=offers)
                object.__setattr__(out, "memo", ref.memo)
                return out
            version = after
        raise CatalogMoved(f"the catalog changed during each of {MAX_READS} reads")

    def _checking(self) -> asyncio.Future[ReferenceData]:
        """The check in flight, or a new one on the cache's limiter."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        if self._check is None or self._check.done():
            self._check = asyncio.ensure_future(
                anyio.to_thread.run_sync(self.get, limiter=self._limiter)
            )
            self._check.add_done_callback(_log_failure)
        return self._check

    async def aget(self) -> ReferenceData:
        """:meth:`get` for the event loop.

        Raises:
            sqlalchemy.exc.SQLAlchemyError, CatalogMoved: the first load failed (a failed
            later check is logged, and the version held is served).
        """
        data = self._data
        if data is not None and not self._due():
            return data
        if data is None:
            return await asyncio.shield(self._checking())
        want = self._write_gen
        try:
            if self._seen_gen >= want:
                return await asyncio.wait_for(asyncio.shield(self._checking()), self._wait_s)
            fresh = await asyncio.shield(self._checking())
            while self._seen_gen < want:  # that check began before the write: one after it
                fresh = await asyncio.shield(self._checking())
            return fresh
        except Exception:  # slow or failing database: the version held (logged above)
            return data

    def poke(self) -> None:
        """Check the version now, in the background (on the cache's limiter), so that a
        version announced by ``NOTIFY`` or found by the background poll is loaded before the
        next request asks; call on the event loop. Nothing before the first load (the first
        request makes it, as without a watch: a server starting does not read the catalog
        while its first ``/healthz`` probes run)."""
        if self._data is None:
            return
        self._checked = 0.0
        if self._check is not None and not self._check.done():
            self._again = True  # that check may have read the version before this one
            return
        self._again = False
        self._checking().add_done_callback(self._after_poke)

    def _after_poke(self, _: asyncio.Future[ReferenceData]) -> None:
        if self._again:
            self.poke()

    async def watch(self, url: str | None, *, fallback_s: float = 1.0) -> None:
        """Load each new catalog version as soon as it commits, until cancelled.

        PostgreSQL: ``LISTEN`` on :data:`CHANNEL` (the catalog triggers ``NOTIFY`` it with
        each version, migration ``0010_catalog_version``) on a connection of its own
        (psycopg, async), :meth:`poke` on each notification and on each (re)connection
        (what was missed while down); a failed connection is retried after 1 s, doubling up
        to :data:`RECONNECT_MAX_S`, with a :meth:`poke` every ``fallback_s`` meanwhile.
        Another database (SQLite: no notifications) or ``url`` ``None``: :meth:`poke` every
        ``fallback_s`` seconds. Requests still check at most every ``poll_s`` themselves.
        """
        conninfo = listen_conninfo(url)
        delay = 1.0
        self.updates = "polled" if conninfo is None else "connecting"
        while True:
            if conninfo is None:
                await asyncio.sleep(fallback_s)
                self.poke()
                continue
            try:
                await self._listen(conninfo)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # down or restarted: poll until it answers again
                self.updates = "polled"
                log.warning("catalog LISTEN failed (%s); retrying in %.0f s", exc, delay)
            end = time.monotonic() + delay
            while time.monotonic() < end:
                await asyncio.sleep(min(fallback_s, delay))
                self.poke()
            delay = min(delay * 2, RECONNECT_MAX_S)

    async def _listen(self, conninfo: str) -> None:
        """One ``LISTEN`` connection: :meth:`poke` once connected, then per notification."""
        import psycopg  # the PostgreSQL driver; absent from a SQLite-only install

        async with await psycopg.AsyncConnection.connect(
            conninfo, autocommit=True, connect_timeout=5
        ) as conn:
            await conn.execute(f"LISTEN {CHANNEL}")
            self.updates = "notified"
            try:
                self.poke()
                async for _ in conn.notifies():
                    self.poke()
            finally:
                self.updates = "polled"

    def invalidate(self) -> None:
        """Check the version on next use (a write this process just committed): the next
        :meth:`aget` waits for that check however long the load takes (not ``wait_s``).
        Returns at once: a load in flight (which may have read the version before the write)
        is not waited for here; the next :meth:`aget` waits for one begun after it."""
        self._write_gen = next(self._writes)

    def stats(self) -> dict[str, object]:
        """What this process holds: catalog version, offers, the snapshot's bytes, how long
        it took to build, cached answers, versions loaded."""
        data = self._data
        snap = data.offers if data is not None else None
        return {
            "version": data.version if data is not None else None,
            "offers": len(snap) if snap is not None else None,
            "snapshot_mib": round(snap.nbytes / 2**20, 1) if snap is not None else None,
            "build_ms": round(snap.build_ms, 1) if snap is not None else None,
            "cached_answers": snap.cached_answers() if snap is not None else {},
            "versions_loaded": self.loads,
            "listening": self.listening,
            "catalog_updates": self.updates,
        }
