"""``gpucost refresh`` on the zero-setup SQLite default: file lock, exit codes, dry run."""

from __future__ import annotations

import fcntl
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import EXIT_LOCKED, EXIT_OK, EXIT_PROVIDER_FAILED, EXIT_SETUP, main
from app.settings import get_settings
from tests.fake_providers import FakeProviders, scraper_env


@pytest.fixture
def sqlite_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working directory with no database URL set: the SQLite default applies."""
    monkeypatch.delenv("GPUCOST_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_refresh_on_the_sqlite_default(sqlite_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    fake = FakeProviders()
    with fake.serve() as base:
        for key, value in scraper_env(base).items():
            monkeypatch.setenv(key, value)
        not_migrated = runner.invoke(main, ["refresh"])
        assert not_migrated.exit_code == EXIT_SETUP
        assert "gpucost db upgrade" in " ".join(not_migrated.output.split())  # rich wraps
        assert runner.invoke(main, ["db", "upgrade"]).exit_code == 0
        assert runner.invoke(main, ["seed"]).exit_code == 0

        dry = runner.invoke(main, ["refresh", "--dry-run", "--provider", "vultr"])
        assert dry.exit_code == EXIT_OK and "dry run" in dry.output
        db = sqlite3.connect(sqlite_cwd / "gpucost.db")
        assert db.execute("SELECT count(*) FROM refresh_run").fetchone() == (0,)

        done = runner.invoke(main, ["refresh"])
        assert done.exit_code == EXIT_OK, done.output
        rows = dict(
            db.execute(
                "SELECT p.slug, r.status FROM refresh_run r JOIN provider p ON p.id = r.provider_id"
            ).fetchall()
        )
        assert rows == dict.fromkeys(("vast", "runpod", "azure", "aws", "lambda", "vultr"), "ok")
        assert (
            db.execute(
                "SELECT count(*) FROM instance_offer WHERE source LIKE 'live: %'"
            ).fetchone()[0]
            > 50
        )

        # a second run while the first holds the lock file is refused
        lock = (sqlite_cwd / "gpucost.db.refresh.lock").open("a+")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            locked = runner.invoke(main, ["refresh"])
            assert locked.exit_code == EXIT_LOCKED and "another refresh is running" in locked.output
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()

        fake.faults = {"vultr": "timeout"}
        monkeypatch.setenv("GPUCOST_SCRAPER_TIMEOUT_S", "0.3")
        failed = runner.invoke(main, ["refresh", "--provider", "vultr", "--provider", "aws"])
        assert failed.exit_code == EXIT_PROVIDER_FAILED
        assert "timed out" in failed.output
        assert runner.invoke(main, ["refresh", "--provider", "nope"]).exit_code == EXIT_SETUP
        db.close()


def test_lambda_without_a_key_is_skipped_with_a_message(
    sqlite_cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    with FakeProviders().serve() as base:
        for key, value in scraper_env(base).items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GPUCOST_SCRAPER_LAMBDA_API_KEY")
        monkeypatch.setenv("GPUCOST_SCRAPER_PROVIDERS", "vultr,lambda")
        monkeypatch.setenv("GPUCOST_SCRAPER_CATALOG_FALLBACK", "false")  # no public catalog
        assert runner.invoke(main, ["db", "upgrade"]).exit_code == 0
        result = runner.invoke(main, ["refresh"])
        assert result.exit_code == EXIT_OK, result.output
        assert "lambda: no API key: set GPUCOST_SCRAPER_LAMBDA_API_KEY" in result.output
        asked = runner.invoke(main, ["refresh", "--provider", "lambda"])
        assert asked.exit_code == EXIT_SETUP and "LAMBDA_API_KEY" in asked.output


def test_each_offer_write_bumps_the_sqlite_catalog_version_once(sqlite_cwd: Path) -> None:
    """Migration 0011 on SQLite: a written offer is stamped above every version a reader saw,
    and the stamp's own nested UPDATE does not bump the version a second time."""
    runner = CliRunner()
    assert runner.invoke(main, ["db", "upgrade"]).exit_code == 0
    assert runner.invoke(main, ["seed"]).exit_code == 0
    db = sqlite3.connect(sqlite_cwd / "gpucost.db")

    def version() -> int:
        return int(db.execute("SELECT version FROM catalog_version WHERE id = 1").fetchone()[0])

    offer_id = db.execute("SELECT min(id) FROM instance_offer").fetchone()[0]
    seen = version()
    db.execute(
        "UPDATE instance_offer SET price_per_hour = price_per_hour WHERE id = ?", (offer_id,)
    )
    db.commit()
    assert version() == seen + 1
    stamp = db.execute("SELECT row_version FROM instance_offer WHERE id = ?", (offer_id,))
    assert stamp.fetchone()[0] > seen
    seen = version()
    columns = [
        c[1]
        for c in db.execute("PRAGMA table_info(instance_offer)")
        if c[1] not in ("id", "offer_key", "row_version")
    ]
    listed = ", ".join(columns)
    db.execute(
        f"INSERT INTO instance_offer ({listed}, offer_key) "
        f"SELECT {listed}, 'bump-once' FROM instance_offer WHERE id = ?",
        (offer_id,),
    )
    db.commit()
    assert version() == seen + 1
    row = db.execute("SELECT row_version FROM instance_offer WHERE offer_key = 'bump-once'")
    assert row.fetchone()[0] > seen
