"""``/healthz`` and the worker-thread budget: the parts of serving that must never queue.

Request handlers are synchronous (SQLAlchemy sessions); Litestar runs them on the event
loop's default executor, which :func:`limit_handler_threads` sizes to one thread per pooled
connection, so a handler holding a thread never waits for a connection held by a request
still queued. Everything that must progress while every handler thread is busy runs on
anyio worker threads under its own limiter, never on that executor: returning a request's
session to the pool (:func:`app.interface.deps.provide_session`; when it shared the handlers'
threads, 26 concurrent requests on 20 connections deadlocked), the reference-data reload,
and the ``/healthz`` database probe (:class:`DatabaseProbe`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import anyio.to_thread
from litestar import Litestar, MediaType, Request, Response, get
from litestar.status_codes import HTTP_503_SERVICE_UNAVAILABLE
from sqlalchemy import Engine, text

from app.settings import Settings

log = logging.getLogger(__name__)


class DatabaseProbe:
    """``SELECT 1`` on a dedicated one-connection engine and thread, bounded in time.

    At most one probe runs at a time; a caller waits for it at most ``timeout_s`` seconds
    and then gets ``slow`` while the probe carries on (the next caller waits on the same
    probe instead of starting another thread). The probe's own connect and statement
    timeouts (the engine's) make it finish eventually even against a hung database.

    A result younger than ``fresh_s`` seconds is answered at once (the event loop only: no
    thread to wait for while the handler threads hold the GIL), and past half of that age a
    new probe starts in the background; while that probe is in flight, the last result is
    still the answer, until the probe has run for longer than ``timeout_s``: then the answer
    is ``slow`` whatever the last result said. So with polls closer than ``fresh_s / 2`` (a
    load balancer's) no poll waits for a probe thread; only the first one, and one after a
    pause longer than ``fresh_s``, does.
    """

    def __init__(self, engine: Engine, timeout_s: float, *, fresh_s: float = 0.0):
        self.engine = engine
        self.timeout_s = timeout_s
        self.fresh_s = fresh_s
        self._limiter: anyio.CapacityLimiter | None = None
        self._inflight: asyncio.Future[str] | None = None
        self._started = 0.0
        #: (result, time.monotonic() when it came) of the last probe that finished
        self._last: tuple[str, float] | None = None

    def _ping(self) -> str:
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:  # any failure means "not usable now"; the reason is logged
            log.warning("healthz: database unreachable: %s", exc)
            return "unreachable"
        return "ok"

    def _record(self, future: asyncio.Future[str]) -> None:
        if not future.cancelled() and future.exception() is None:
            self._last = (future.result(), time.monotonic())

    def _start(self) -> asyncio.Future[str]:
        if self._inflight is None or self._inflight.done():
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(1)
            self._started = time.monotonic()
            self._inflight = asyncio.ensure_future(
                anyio.to_thread.run_sync(self._ping, limiter=self._limiter)
            )
            self._inflight.add_done_callback(self._record)
        return self._inflight

    async def check(self) -> str:
        """``ok``, ``slow`` (no answer within ``timeout_s``) or ``unreachable``."""
        now = time.monotonic()
        running = self._inflight is not None and not self._inflight.done()
        if running and now - self._started > self.timeout_s:
            return "slow"
        if self._last is not None and now - self._last[1] < self.fresh_s:
            if now - self._last[1] >= self.fresh_s / 2:
                self._start()  # in the background: this answer does not wait for it
            return self._last[0]
        if self._last is not None and running and self.fresh_s > 0:
            return self._last[0]  # the probe begun in the background: not slow yet
        inflight = self._start()
        wait_s = self.timeout_s - (time.monotonic() - self._started)
        try:
            return await asyncio.wait_for(asyncio.shield(inflight), max(wait_s, 0.0))
        except TimeoutError:
            return "slow"

    def dispose(self) -> None:
        """Close the probe's connection."""
        self.engine.dispose()


@get("/healthz", include_in_schema=True, summary="Liveness and database reachability")
async def healthz(request: Request) -> Response[dict[str, Any]]:
    """Liveness and database reachability, answered from the event loop.

    200 ``{"status": "ok", "database": "ok"}``; 503 ``{"status": "degraded", "database":
    "slow" | "unreachable"}`` with ``Retry-After`` when ``SELECT 1`` fails or takes longer
    than ``GPUCOST_HEALTHZ_TIMEOUT_S``. ``latency_ms`` is how long the check took. ``worker``:
    this process's resident memory (``rss_mib``, MiB) and what it holds of the catalog
    (:meth:`app.services.reference_cache.ReferenceCache.stats`: version, offers, the
    snapshot's MiB, its build time, cached answers).
    """
    probe: DatabaseProbe = request.app.state.db_probe
    settings: Settings = request.app.state.settings
    t0 = time.perf_counter()
    state = await probe.check()
    latency_ms = round((time.perf_counter() - t0) * 1000, 1)
    worker = {"pid": os.getpid(), "rss_mib": rss_mib(), **request.app.state.reference.stats()}
    if state == "ok":
        return Response(
            {"status": "ok", "database": "ok", "latency_ms": latency_ms, "worker": worker},
            media_type=MediaType.JSON,
        )
    return Response(
        {"status": "degraded", "database": state, "latency_ms": latency_ms, "worker": worker},
        status_code=HTTP_503_SERVICE_UNAVAILABLE,
        media_type=MediaType.JSON,
        headers={"Retry-After": str(settings.retry_after_s)},
    )


def rss_mib() -> float | None:
    """Resident memory of this process, MiB (Linux ``/proc/self/statm``; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def limit_handler_threads(app: Litestar) -> None:
    """Startup hook: give the event loop a default executor (where Litestar runs sync
    handlers) of ``settings.handler_threads`` threads, and the session-release limiter."""
    settings: Settings = app.state.settings
    executor = ThreadPoolExecutor(
        max_workers=settings.handler_threads, thread_name_prefix="gpucost-handler"
    )
    asyncio.get_running_loop().set_default_executor(executor)
    app.state.handler_executor = executor
    if settings.gil_switch_ms:
        sys.setswitchinterval(settings.gil_switch_ms / 1000)
    app.state.release_limiter = anyio.CapacityLimiter(settings.handler_threads)


def stop_handler_threads(app: Litestar) -> None:
    """Shutdown hook: let the handler threads end once their work is done."""
    executor = getattr(app.state, "handler_executor", None)
    if executor is not None:
        executor.shutdown(wait=False)
