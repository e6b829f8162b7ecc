"""Several replicas on one fresh PostgreSQL database: migrations and seeding happen once."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from app.db.models import GpuModel, InstanceOffer
from app.db.session import create_engine_from_url

pytestmark = pytest.mark.db


def _gpucost() -> list[str]:
    exe = shutil.which("gpucost", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "app.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).is_success:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"gpucost serve on port {port} did not come up:\n{out}")
        time.sleep(0.3)


def test_concurrent_upgrade_and_seed_on_a_fresh_database(fresh_url: str) -> None:
    """Two ``gpucost seed`` (migrate + seed) and a ``gpucost serve --workers 2`` (migrate +
    seed when empty) started at once on one fresh database: no ``IntegrityError``, the data
    is loaded once, and both workers serve it."""
    env = {**os.environ, "GPUCOST_DATABASE_URL": fresh_url}
    port = _free_port()
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "env": env}
    seeds = [subprocess.Popen([*_gpucost(), "seed"], **out) for _ in range(2)]  # type: ignore[call-overload]
    server = subprocess.Popen(
        [*_gpucost(), "serve", "--port", str(port), "--workers", "2"],
        start_new_session=True,
        **out,
    )
    try:
        outputs = [p.communicate(timeout=180)[0].decode() for p in seeds]
        for p, text in zip(seeds, outputs, strict=True):
            assert p.returncode == 0, text
            assert "Error" not in text, text
        _wait_healthy(server, port)
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
