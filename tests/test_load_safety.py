"""Serving under load and database faults: no deadlock, 503 with Retry-After, healthz on time.

The load figures themselves come from ``python -m benchmarks.load``; these tests check the
mechanisms with a pool small enough to exhaust.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from litestar.testing import TestClient

from app.asgi import create_app
from app.settings import Settings
from tests.conftest import ADMIN_URL

pytestmark = pytest.mark.db

RANK = {"workload": {"preset": "resnet50-imagenet"}, "limit": 3}


def small_pool(url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {"db_pool_size": 2, "db_max_overflow": 0, "db_pool_timeout_s": 5.0}
    return Settings(database_url=url, **(values | extra))


def hang(probe: Any, seconds: float) -> tuple[list[float], Callable[[], str], Callable[[], str]]:
    """A ping for ``probe`` that sleeps ``seconds`` before the real one: the start time of
    each of its calls, the hanging ping, and the real ping to put back."""
    calls: list[float] = []
    real_ping = probe._ping

    def hung_ping() -> str:
        calls.append(time.monotonic())
        time.sleep(seconds)
        return real_ping()

    return calls, hung_ping, real_ping


def first_call(calls: list[float]) -> None:
    """Wait up to 0.5 s for a probe thread started behind an answer to begin."""
    for _ in range(50):
        if calls:
            return
        time.sleep(0.01)


def _burst(app: Any, n: int, *, oversubscribe: bool) -> list[int]:
    """``n`` requests at once (alternating rank and offers), from ``n`` client threads."""
    with TestClient(app) as client:
        assert client.get("/v1/workloads").status_code == 200  # reference data loaded
        if oversubscribe:
            # how the server deadlocked before: more handler threads than connections, more
            # requests than threads
            client.blocking_portal.call(
                lambda: asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(8))
            )

        def one(i: int) -> int:
            if i % 2:
                return client.get("/v1/offers", params={"limit": 1}).status_code
            return client.post("/v1/rank", json=RANK).status_code

        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(one, range(n)))


@pytest.mark.parametrize("oversubscribe", [False, True])
def test_more_concurrent_requests_than_connections_all_succeed(
    seeded_url: str, oversubscribe: bool
) -> None:
    """30 concurrent requests on a 2-connection pool: every one answered 200, none waits for a
    pool timeout (5 s). With 8 handler threads on 2 connections (``oversubscribe``) the
    sessions still go back to the pool, since closing a session does not need a handler
    thread (when it did, this gave 503s after 5, 10 and 15 s)."""
    app = create_app(small_pool(seeded_url))
    t0 = time.perf_counter()
    codes = _burst(app, 30, oversubscribe=oversubscribe)
    assert codes == [200] * 30
    assert time.perf_counter() - t0 < 20


def test_no_free_connection_in_time_is_503_with_retry_after(seeded_url: str) -> None:
    app = create_app(small_pool(seeded_url, db_pool_timeout_s=0.5, retry_after_s=7))
    with TestClient(app) as client:
        assert client.get("/v1/offers", params={"limit": 1}).status_code == 200
        engine = app.state.session_factory.kw["bind"]
        held = [engine.connect() for _ in range(2)]  # every pooled connection taken
        try:
            t0 = time.perf_counter()
            # the offers are served from the worker's catalog snapshot without a connection
            # (still 200 here); the refresh runs are read from the database
            assert client.get("/v1/offers", params={"limit": 1}).status_code == 200
            r = client.get("/v1/refresh-runs")
            elapsed = time.perf_counter() - t0
            health = client.get("/healthz")  # its own connection: still ok
        finally:
            for conn in held:
                conn.close()
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"] == "7" and "database" in r.json()["detail"]
        assert 0.4 < elapsed < 5
        assert health.status_code == 200
        assert client.get("/v1/offers", params={"limit": 1}).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/v1/offers", {}),
        ("POST", "/v1/rank", {"json": RANK}),
        ("GET", "/v1/gpus", {}),
        ("GET", "/", {}),
        ("GET", "/gpus", {}),
    ],
)
def test_unreachable_database_is_503_not_500(method: str, path: str, kwargs: dict) -> None:
    url = ADMIN_URL.rsplit("/", 1)[0] + "/gpucost_no_such_database"
    with TestClient(create_app(Settings(database_url=url))) as client:
        r = client.request(method, path, **kwargs)
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"] == "5"


def test_slow_database_makes_healthz_degraded_within_its_timeout(seeded_url: str) -> None:
    """A probe that does not answer in time: ``/healthz`` says ``slow`` after
    ``healthz_timeout_s``, not after the database gives up."""
    app = create_app(Settings(database_url=seeded_url, healthz_timeout_s=0.3, healthz_fresh_s=0))
    probe = app.state.db_probe
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        real_ping = probe._ping

        def hung_ping() -> str:
            time.sleep(2)
            return real_ping()

        probe._ping = hung_ping
        t0 = time.perf_counter()
        r = client.get("/healthz")
        elapsed = time.perf_counter() - t0
        again = client.get("/healthz")  # waits on the same probe, starts no second one
        assert r.status_code == 503 and r.json() == {
            "status": "degraded",
            "database": "slow",
            "latency_ms": r.json()["latency_ms"],
            "worker": r.json()["worker"],
        }
        assert elapsed < 1.0 and again.json()["database"] == "slow"
        probe._ping = real_ping
        time.sleep(2)  # the hung probe finishes; the next check starts a fresh one
        assert client.get("/healthz").status_code == 200


def test_healthz_answers_a_fresh_result_at_once_and_a_hung_probe_as_slow(seeded_url: str) -> None:
    """With ``healthz_fresh_s``: a result younger than it is the answer (no probe waited for);
    past half of it a probe starts in the background; once that probe has run longer than
    ``healthz_timeout_s`` the answer is ``slow``, and the next fresh result is ``ok`` again."""
    app = create_app(Settings(database_url=seeded_url, healthz_timeout_s=0.3, healthz_fresh_s=1.0))
    probe = app.state.db_probe
    calls, hung_ping, real_ping = hang(probe, 1.5)
    with TestClient(app) as client:
        assert client.get("/healthz").json()["database"] == "ok"  # probed: nothing held yet
        probe._ping = hung_ping
        r = client.get("/healthz")  # the result just read: no probe started
        # answered on the event loop (well under the 300 ms a probe may take)
        assert r.status_code == 200 and r.json()["latency_ms"] < 250 and calls == []
        time.sleep(0.6)
        assert client.get("/healthz").status_code == 200  # past half: a probe starts behind
        first_call(calls)  # its thread starts after the answer went out
        assert len(calls) == 1
        time.sleep(0.5)  # the probe has run longer than the timeout
        r = client.get("/healthz")
        assert r.status_code == 503 and r.json()["database"] == "slow"
        assert r.json()["latency_ms"] < 250 and len(calls) == 1  # no second probe
        probe._ping = real_ping
        # the hung probe finishes ok (1.5 s after it began, later on a loaded machine): its
        # result is then the answer; until then each answer is "slow" and starts no probe
        answers = []
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and "ok" not in answers:
            time.sleep(0.1)
            answers.append(client.get("/healthz").json()["database"])
        assert answers[-1] == "ok" and set(answers) <= {"slow", "ok"}
        assert len(calls) == 1  # the hung probe was the only one started meanwhile


def test_healthz_answers_the_last_result_while_its_background_probe_runs(seeded_url: str) -> None:
    """Past ``healthz_fresh_s`` a poll does not wait for the probe a poll started in the
    background: it answers the last result at once until that probe has run longer than
    ``healthz_timeout_s`` (then ``slow``)."""
    app = create_app(Settings(database_url=seeded_url, healthz_timeout_s=1.0, healthz_fresh_s=0.4))
    probe = app.state.db_probe
    calls, hung_ping, real_ping = hang(probe, 2.0)
    with TestClient(app) as client:
        assert client.get("/healthz").json()["database"] == "ok"
        probe._ping = hung_ping
        time.sleep(0.25)
        assert client.get("/healthz").status_code == 200  # past half: a probe starts behind
        first_call(calls)
        time.sleep(max(0.0, calls[0] + 0.3 - time.monotonic()))  # the result is now stale
        r = client.get("/healthz")
        # the last result, at once (the probe has run ~0.3 s of its 1 s timeout)
        assert r.status_code == 200 and r.json()["database"] == "ok"
        assert r.json()["latency_ms"] < 250 and len(calls) == 1
        time.sleep(max(0.0, calls[0] + 1.2 - time.monotonic()))
        assert client.get("/healthz").json()["database"] == "slow"
        probe._ping = real_ping


def test_statement_timeout_applies_to_server_sessions(seeded_url: str) -> None:
    from sqlalchemy import text

    app = create_app(Settings(database_url=seeded_url, db_statement_timeout_ms=1234))
    with app.state.session_factory() as session:
        assert session.execute(text("SHOW statement_timeout")).scalar_one() == "1234ms"


def test_the_server_sets_the_gil_switch_interval(seeded_url: str) -> None:
    """``GPUCOST_GIL_SWITCH_MS``: a handler thread running Python hands the GIL to the event
    loop (``/healthz``) after at most this long (``sys.setswitchinterval``, set at startup)."""
    import sys

    before = sys.getswitchinterval()
    try:
        with TestClient(create_app(Settings(database_url=seeded_url, gil_switch_ms=2.5))):
            assert sys.getswitchinterval() == pytest.approx(0.0025)
        with TestClient(create_app(Settings(database_url=seeded_url, gil_switch_ms=0))):
            assert sys.getswitchinterval() == pytest.approx(0.0025)  # 0: left as it is
    finally:
        sys.setswitchinterval(before)
