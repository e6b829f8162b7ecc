"""The zero-setup path: ``gpucost serve`` on the embedded SQLite default, end to end."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from app.cli import main
from app.settings import get_settings
from benchmarks.serving import free_port, serve_process, wait_healthy


def test_serve_on_sqlite_default_answers_rank(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GPUCOST_DATABASE_URL"}
    port = free_port()
    proc = serve_process(
        port, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(proc, base, timeout_s=60)
        assert (tmp_path / "gpucost.db").exists()
        r = httpx.post(
            f"{base}/v1/rank",
            json={"workload": {"preset": "resnet50-imagenet"}, "limit": 3},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert len(results) == 3
        assert all(x["estimate"]["cost_per_epoch"] > 0 for x in results)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_cli_upgrade_and_seed_are_idempotent_on_sqlite(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUCOST_DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        assert runner.invoke(main, ["db", "upgrade"]).exit_code == 0
        first = runner.invoke(main, ["seed"])
        assert first.exit_code == 0, first.output
        assert "instance_offer:" in first.output
        second = runner.invoke(main, ["seed"])
        assert second.exit_code == 0
        assert "nothing to change" in second.output
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize(
    "url", ["notaurl", "mysql://x@y/z", "postgresql+psycopg://postgres@127.0.0.1:1/nodb"]
)
def test_cli_bad_database_url_is_one_clear_line(url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUCOST_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        for args in (["db", "upgrade"], ["seed"]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 2, result.output
            assert "Traceback" not in result.output
            assert "database" in result.output
    finally:
        get_settings.cache_clear()
