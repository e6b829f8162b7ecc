"""``gpucost refresh`` as a subprocess against a local HTTP server serving recorded responses.

The issue's "done when": every provider loads into PostgreSQL and shows up in ``/v1/offers``
and ``/v1/rank``; a second run with changed prices appends history; a run where one provider
answers 500 and another garbage lands the rest, keeps theirs, and exits non-zero; and a run
killed in the middle of applying a provider leaves nothing half-written.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, func, select, text

from app.services.refresh import ADVISORY_LOCK_KEY
from tests.conftest import seeded_database
from tests.fake_providers import FakeProviders, scraper_env
from tests.refresh_helpers import latest_run, observations, offers

pytestmark = pytest.mark.db

PROVIDERS = ("vast", "runpod", "azure", "aws", "lambda", "vultr")


def gpucost() -> list[str]:
    exe = shutil.which("gpucost", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "app.cli"]


def env_for(url: str, base_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("GPUCOST_")}
    return {**keep, **scraper_env(base_url), "GPUCOST_DATABASE_URL": url, "COLUMNS": "120"}


def run_cli(url: str, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*gpucost(), "refresh", *args],
        env=env_for(url, base_url),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def seeded() -> Iterator[str]:
    with seeded_database() as url:
        yield url


def test_refresh_cli_end_to_end(seeded: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings

    fake = FakeProviders()
    with fake.serve() as base:
        first = run_cli(seeded, base)
        assert first.returncode == 0, first.stderr
        assert "refresh at" in first.stderr and "GTX 1660 S" in first.stderr
        with TestClient(create_app(Settings(database_url=seeded))) as client:
            for slug in PROVIDERS:
                items = client.get("/v1/offers", params={"provider": slug, "limit": 1000}).json()[
                    "items"
                ]
                live = [o for o in items if o["source"].startswith("live: ")]
                assert live and not any(o["stale"] for o in live), slug
            ranked = client.post(
                "/v1/rank", json={"workload": {"preset": "resnet50-imagenet"}, "limit": 500}
            ).json()
            providers = {
                r["offer"]["provider"]
                for r in ranked["results"]
                if r["offer"]["source"].startswith("live: ")
            }
            assert {"vast", "runpod", "aws", "lambda"} <= providers
            runs = {r["provider"]: r["status"] for r in client.get("/v1/refresh-runs").json()}
            assert all(runs[p] == "ok" for p in PROVIDERS)

        fake.version = 2  # the next night: some prices changed
        second = run_cli(seeded, base)
        assert second.returncode == 0, second.stderr
        h100 = offers(seeded, "vast")[("m52001-8x", "Finland, FI", "on_demand")]
        assert [p for _, p in observations(seeded, h100["id"])] == [15.2, 14.8]
        lam = offers(seeded, "lambda")[("gpu_8x_h100_sxm5", "us-south-1", "on_demand")]
        assert lam["price"] == Decimal("21") and len(observations(seeded, lam["id"])) == 2

        fake.version = 1
        fake.faults = {"runpod": "500", "azure": "garbage"}
        kept = {slug: offers(seeded, slug) for slug in ("runpod", "azure")}
        third = run_cli(seeded, base)
        assert third.returncode == 1, third.stderr
        assert "failed: runpod, azure" in third.stderr
        for slug in ("runpod", "azure"):
            assert offers(seeded, slug) == kept[slug]
            assert latest_run(seeded, slug).status == "error"
        assert "HTTP 500" in (latest_run(seeded, "runpod").error or "")
        assert "malformed JSON" in (latest_run(seeded, "azure").error or "")
        back = offers(seeded, "vast")[("m52001-8x", "Finland, FI", "on_demand")]
        assert back["price"] == Decimal("15.2")  # the healthy providers landed
        assert latest_run(seeded, "vast").status == "ok"


def _wait(predicate, timeout_s: float = 30, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def waiting_queries(engine: Engine) -> list[str]:
    """Statements of this database's sessions that wait for a lock."""
    with engine.connect() as conn:
        return [
            q
            for (q,) in conn.execute(
                text(
                    "SELECT query FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            )
        ]


def test_killed_refresh_leaves_no_half_written_provider(seeded: str) -> None:
    fake = FakeProviders()
    admin = create_engine(seeded)
    with fake.serve() as base:
        assert run_cli(seeded, base).returncode == 0
        before = {slug: offers(seeded, slug) for slug in PROVIDERS}
        fake.version = 2
        with admin.connect() as blocker:
            # Let the refresh write its offer rows but block it on the history insert, then
            # kill it: the provider's transaction is in flight and never commits.
            blocker.execute(text("LOCK TABLE price_observation IN EXCLUSIVE MODE"))
            proc = subprocess.Popen(
                [*gpucost(), "refresh", "--provider", "vast", "--provider", "lambda"],
                env=env_for(seeded, base),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            try:

                def blocked() -> bool:
                    if proc.poll() is not None:
                        out = proc.stdout.read().decode() if proc.stdout else ""
                        pytest.fail(f"refresh ended before blocking ({proc.returncode}):\n{out}")
                    return bool(waiting_queries(admin))

                _wait(blocked, what="the refresh to block inside its transaction")
                # offers already updated in the open transaction, history insert pending
                assert all("INSERT INTO price_observation" in q for q in waiting_queries(admin))
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
            blocker.rollback()

        # PostgreSQL notices the dead client and rolls its transaction back; the advisory lock
        # goes with the session.
        def lock_free() -> bool:
            with admin.connect() as conn:
                got = conn.execute(select(func.pg_try_advisory_lock(ADVISORY_LOCK_KEY))).scalar()
                if got:
                    conn.execute(select(func.pg_advisory_unlock(ADVISORY_LOCK_KEY)))
                return bool(got)

        _wait(lock_free, what="the killed run's session to end")
        for slug in PROVIDERS:
            assert offers(seeded, slug) == before[slug], slug
        assert {latest_run(seeded, s).status for s in ("vast", "lambda")} == {"running"}

        rerun = run_cli(seeded, base)
        assert rerun.returncode == 0, rerun.stderr
    admin.dispose()
    with create_engine(seeded).connect() as conn:
        statuses = [
            r[0]
            for r in conn.execute(
                text(
                    "SELECT r.status FROM refresh_run r JOIN provider p ON p.id = r.provider_id "
                    "WHERE p.slug IN ('vast', 'lambda') ORDER BY r.id"
                )
            )
        ]
    assert statuses.count("interrupted") == 2 and statuses[-2:] == ["ok", "ok"]
    h100 = offers(seeded, "vast")[("m52001-8x", "Finland, FI", "on_demand")]
    assert h100["price"] == Decimal("14.8")
    assert [p for _, p in observations(seeded, h100["id"])] == [15.2, 14.8]
