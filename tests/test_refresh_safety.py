"""The refresh under faults (issue 13 items 4-5): it never blanks good data, never leaks a key,
gives up by its deadline, refuses oversized answers, and never leaves a dead run ``running``.

PostgreSQL, recorded fixtures through the fake providers (``tests/fake_providers.py``).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from sqlalchemy import create_engine, func, select

from app.asgi import create_app
from app.cli import EXIT_OK, EXIT_PROVIDER_FAILED, EXIT_SUSPECT, main
from app.db.models import Provider, RefreshRun
from app.db.session import create_engine_from_url, create_session_factory
from app.services.refresh import ADVISORY_LOCK_KEY, open_run
from app.settings import Settings
from tests.conftest import seeded_database
from tests.fake_providers import FakeProviders, scraper_env
from tests.refresh_helpers import T0, latest_run, offers, refresh

pytestmark = pytest.mark.db

DAY = dt.timedelta(days=1)
VAST_KEY = "sk-vast-9f8e7d6c5b4a3210"


@pytest.fixture(scope="module")
def db() -> Iterator[str]:
    """A seeded database with one clean refresh of every provider at ``T0`` (shared)."""
    with seeded_database() as url:
        assert refresh(url, FakeProviders(), at=T0).ok
        yield url


class Clock:
    """Later and later run times for the tests sharing the module database."""

    now = T0

    @classmethod
    def next(cls) -> dt.datetime:
        cls.now += DAY
        return cls.now


def clean_run(url: str) -> None:
    """A full, healthy refresh: every provider's baseline is its whole fixture again."""
    assert refresh(url, FakeProviders(), at=Clock.next()).ok


def available(url: str, slug: str) -> set[tuple[str, str, str]]:
    return {k for k, v in offers(url, slug).items() if v["available"]}


def cli(url: str, base: str, *args: str, **env: str) -> Any:
    environment = {**scraper_env(base), "GPUCOST_DATABASE_URL": url, "COLUMNS": "200", **env}
    return CliRunner().invoke(main, ["refresh", *args], env=environment)


# --- 1. a shrunken answer is held back ---------------------------------------------------------


def test_partial_answer_is_held_back_as_suspect_and_keeps_the_catalog(db: str) -> None:
    clean_run(db)
    before = offers(db, "vast")
    baseline = latest_run(db, "vast").offers_seen
    # the fixture's 8 machines: 8 on-demand offers + 5 with a spot bid; its RTX 4090 rows
    # are 3 machines, one with a bid: 4 offers (-69 %, past the default limit of -50 %)
    assert baseline == len(available(db, "vast")) == 13

    report = refresh(db, FakeProviders(faults={"vast": "one_gpu"}), at=Clock.next())

    assert not report.ok
    vast = next(o for o in report.outcomes if o.slug == "vast")
    assert vast.status == "suspect" and vast.baseline_offers == 13
    assert "from 13 offers" in (vast.error or "") and "to 4 (-69%, limit -50%)" in (
        vast.error or ""
    )
    assert "9 stored offer(s) would have been marked unavailable" in (vast.error or "")
    assert offers(db, "vast") == before  # nothing marked unavailable, no new last_seen_at
    run = latest_run(db, "vast")
    assert (run.status, run.offers_seen, run.baseline_offers) == ("suspect", 4, 13)
    assert all(o.status == "ok" for o in report.outcomes if o.slug != "vast")

    with TestClient(create_app(Settings(database_url=db))) as client:
        runs = {r["provider"]: r for r in client.get("/v1/refresh-runs").json()}
        assert runs["vast"]["status"] == "suspect"
        assert (runs["vast"]["offers_seen"], runs["vast"]["baseline_offers"]) == (4, 13)
        assert runs["vast"]["last_success_at"] is not None  # the held-back run is no success
        page = client.get("/").text
        assert "was held back (answer shrank)" in page

    # applied deliberately: the other GPU models' nine offers become unavailable
    accepted = refresh(
        db, FakeProviders(faults={"vast": "one_gpu"}), at=Clock.next(), accept_shrink=["vast"]
    )
    assert accepted.ok
    run = latest_run(db, "vast")
    assert (run.status, run.offers_seen, run.offers_gone, run.baseline_offers) == ("ok", 4, 9, 13)
    assert run.warnings and run.warnings[0].startswith("shrink accepted")
    assert len(available(db, "vast")) == 4


def test_shrink_within_the_limit_is_applied_and_limit_is_a_setting(db: str) -> None:
    clean_run(db)
    # Lambda: 5 offers; its first instance type alone has 2 (-60 %): allowed at a 0.9 limit
    report = refresh(
        db,
        FakeProviders(faults={"lambda": "one_gpu"}),
        at=Clock.next(),
        providers=["lambda"],
        settings={"max_shrink_fraction": 0.9},
    )
    run = latest_run(db, "lambda")
    assert report.ok and (run.offers_seen, run.offers_gone, run.baseline_offers) == (2, 3, 5)
    # the default (0.5) now compares with *that* run: 2 → 2 is no shrink
    again = refresh(db, FakeProviders(faults={"lambda": "one_gpu"}), at=Clock.next())
    assert again.ok and latest_run(db, "lambda").baseline_offers == 2


def test_cli_exit_code_for_suspect_and_accept_shrink(db: str) -> None:
    clean_run(db)
    fake = FakeProviders(faults={"vast": "one_gpu"})
    with fake.serve() as base:
        held = cli(db, base, "--provider", "vast")
        assert held.exit_code == EXIT_SUSPECT, held.output
        assert "held back: vast" in held.output and "--accept-shrink vast" in held.output
        assert latest_run(db, "vast").status == "suspect"
        applied = cli(db, base, "--provider", "vast", "--accept-shrink", "vast")
        assert applied.exit_code == EXIT_OK, applied.output
        assert latest_run(db, "vast").status == "ok"
        wrong = cli(db, base, "--accept-shrink", "nope")
        assert wrong.exit_code == 2 and "unknown provider" in wrong.output


# --- 2. secrets stay secret --------------------------------------------------------------------


def test_a_key_echoed_by_a_provider_error_appears_nowhere(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeProviders(faults={"vast": "echo401"})
    with fake.serve() as base:
        result = cli(db, base, GPUCOST_SCRAPER_VAST_API_KEY=VAST_KEY)
    assert result.exit_code == EXIT_PROVIDER_FAILED, result.output
    assert "HTTP 401" in result.output and "[REDACTED]" in result.output
    run = latest_run(db, "vast")
    assert run.status == "error" and "HTTP 401" in (run.error or "")
    assert '"Authorization": "[REDACTED]"' in (run.error or "")
    assert "api_key=[REDACTED]" in (run.error or "")
    with TestClient(create_app(Settings(database_url=db))) as client:
        api = client.get("/v1/refresh-runs").text
        pages = [client.get(p).text for p in ("/", "/gpus", "/benchmarks")]
    assert "invalid_api_key" in api  # the error is shown, only without the key
    outputs = {
        "cli": result.output,
        "db": f"{run.error} {run.warnings}",
        "api": api,
        **{f"page{i}": p for i, p in enumerate(pages)},
        "logs": caplog.text + " ".join(r.getMessage() for r in caplog.records),
    }
    for where, text_ in outputs.items():
        assert VAST_KEY not in text_, where
        assert "Bearer sk-" not in text_, where


# --- 3. bounded refresh ------------------------------------------------------------------------


def test_drip_fed_answer_is_given_up_at_the_provider_deadline(db: str) -> None:
    kept = offers(db, "lambda")
    fake = FakeProviders(faults={"lambda": "drip"}, drip_s=0.2)  # 1.9 kB: ~6 min to finish
    started = time.monotonic()
    report = refresh(db, fake, at=Clock.next(), settings={"provider_deadline_s": 1.5})
    elapsed = time.monotonic() - started
    lam = next(o for o in report.outcomes if o.slug == "lambda")
    assert lam.status == "error" and "the provider's deadline passed" in (lam.error or "")
    # the whole run (seeded catalog, five other providers applied) in a fraction of the drip
    assert elapsed < 60
    assert offers(db, "lambda") == kept and latest_run(db, "lambda").status == "error"
    assert all(o.status == "ok" for o in report.outcomes if o.slug != "lambda")


def test_drip_fed_answer_over_a_real_socket_is_given_up_at_the_deadline(db: str) -> None:
    # the case: a byte every 0.2 s never trips the 2 s per-read timeout, so without a
    # deadline each attempt would take ~6 min for Lambda's 1.9 kB answer (and be retried)
    kept = offers(db, "lambda")
    fake = FakeProviders(faults={"lambda": "drip"}, drip_s=0.2)
    with fake.serve() as base:
        started = time.monotonic()
        result = cli(db, base, "--provider", "lambda", GPUCOST_SCRAPER_PROVIDER_DEADLINE_S="2")
        elapsed = time.monotonic() - started
    assert result.exit_code == EXIT_PROVIDER_FAILED, result.output
    assert "gave up after" in result.output and "deadline passed" in result.output
    assert elapsed < 60
    assert offers(db, "lambda") == kept


def test_run_deadline_bounds_every_provider(db: str) -> None:
    fake = FakeProviders(faults={"lambda": "drip", "vultr": "drip"}, drip_s=0.2)
    started = time.monotonic()
    report = refresh(db, fake, at=Clock.next(), settings={"run_deadline_s": 1.0})
    late = {o.slug: o for o in report.outcomes if o.status == "error"}
    assert set(late) == {"lambda", "vultr"}
    assert all("deadline passed" in (o.error or "") for o in late.values())
    assert time.monotonic() - started < 60  # each drip alone would take minutes


def test_oversized_answer_is_refused_with_bounded_reading(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    kept = offers(db, "lambda")
    fake = FakeProviders(faults={"lambda": "huge"}, huge_bytes=64 * 2**20)
    report = refresh(db, fake, at=Clock.next(), settings={"max_response_mb": 1})
    lam = next(o for o in report.outcomes if o.slug == "lambda")
    assert lam.status == "error" and "larger than the cap of 1 MiB" in (lam.error or "")
    # read stopped at the cap: 1 MiB of 64 KiB chunks (+ the first), not the 64 MiB offered
    assert fake.chunks_sent <= 18
    assert offers(db, "lambda") == kept
    assert "larger than the cap" in caplog.text  # logged why


def test_oversized_stream_is_refused(db: str) -> None:
    kept = offers(db, "aws")
    fake = FakeProviders(faults={"aws": "huge"}, huge_bytes=32 * 2**20)
    report = refresh(
        db,
        fake,
        at=Clock.next(),
        providers=["aws"],
        settings={"max_response_mb": 4, "max_stream_mb": 2},
    )
    aws = report.outcomes[0]
    assert aws.status == "error" and "larger than the cap" in (aws.error or "")
    assert fake.chunks_sent <= 2 * 16 + 2 and offers(db, "aws") == kept


# --- interrupted runs --------------------------------------------------------------------------


def _running_row(url: str, slug: str) -> int:
    engine = create_engine_from_url(url)
    try:
        with create_session_factory(engine)() as s, s.begin():
            pid = s.scalar(select(Provider.id).where(Provider.slug == slug))
            assert pid is not None
            return open_run(s, pid, Clock.next()).id
    finally:
        engine.dispose()


def _status(url: str, run_id: int) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(
                select(RefreshRun.status).where(RefreshRun.id == run_id)
            ).scalar_one()
    finally:
        engine.dispose()


def test_running_row_of_a_dead_lock_holder_becomes_interrupted(db: str) -> None:
    run_id = _running_row(db, "azure")
    holder = create_engine(db)
    with TestClient(create_app(Settings(database_url=db))) as client:
        # a live refresh holds the lock: its row is really running
        with holder.connect() as conn:
            assert conn.execute(select(func.pg_try_advisory_lock(ADVISORY_LOCK_KEY))).scalar()
            runs = {r["provider"]: r for r in client.get("/v1/refresh-runs").json()}
            assert runs["azure"]["status"] == "running" and _status(db, run_id) == "running"
            conn.execute(select(func.pg_advisory_unlock(ADVISORY_LOCK_KEY)))
        # the holder is gone: the stale-lock check marks the row interrupted, stored
        runs = {r["provider"]: r for r in client.get("/v1/refresh-runs").json()}
        assert runs["azure"]["status"] == "interrupted" and "killed" in runs["azure"]["error"]
        assert runs["azure"]["finished_at"] is not None
    holder.dispose()
    assert _status(db, run_id) == "interrupted"
