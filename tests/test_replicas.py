"""Several replicas on one fresh PostgreSQL database: migrations and seeding happen once."""

from __future__ import annotations

import os
import signal
import subprocess

import httpx
import pytest
from sqlalchemy import func, select

from app.db.models import GpuModel, InstanceOffer
from app.db.session import create_engine_from_url
from benchmarks.serving import free_port, gpucost_command, serve_process, wait_healthy

pytestmark = pytest.mark.db


def test_concurrent_upgrade_and_seed_on_a_fresh_database(fresh_url: str) -> None:
    """Two ``gpucost seed`` (migrate + seed) and a ``gpucost serve --workers 2`` (migrate +
    seed when empty) started at once on one fresh database: no ``IntegrityError``, the data
    is loaded once, and both workers serve it."""
    env = {**os.environ, "GPUCOST_DATABASE_URL": fresh_url}
    port = free_port()
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "env": env}
    seeds = [subprocess.Popen([*gpucost_command(), "seed"], **out) for _ in range(2)]  # type: ignore[call-overload]
    server = serve_process(
        port, "--workers", "2", env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        outputs = [p.communicate(timeout=180)[0].decode() for p in seeds]
        for p, text in zip(seeds, outputs, strict=True):
            assert p.returncode == 0, text
            assert "Error" not in text, text
        wait_healthy(server, f"http://127.0.0.1:{port}")
        for _ in range(4):  # a few requests, so both workers answer some
            r = httpx.get(f"http://127.0.0.1:{port}/v1/offers", params={"limit": 1}, timeout=30)
            assert r.status_code == 200 and r.json()["total"] > 100
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server_out = server.communicate(timeout=20)[0].decode()
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server_out = server.communicate()[0].decode()
    assert "Error" not in server_out, server_out
    # exactly one of the three loaded the seed data; the others found it in place
    loaders = sum("nothing to change" not in text for text in outputs) + (
        "empty database" in server_out
    )
    assert loaders == 1, (outputs, server_out)
    engine = create_engine_from_url(fresh_url)
    try:
        with engine.connect() as conn:
            gpus = conn.scalar(select(func.count()).select_from(GpuModel))
            offers = conn.scalar(select(func.count()).select_from(InstanceOffer))
    finally:
        engine.dispose()
    assert gpus and gpus > 20 and offers and offers > 100
