"""Shared setup for the speed benchmarks: a PostgreSQL database with 10,000 synthetic offers,
their command line, and the timing and percentile helpers they print with."""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlalchemy import create_engine, insert, select, text
from sqlalchemy.engine import make_url

from app.db.migrate import upgrade
from app.db.models import GpuModel, InstanceOffer, Provider, utcnow
from app.db.seed import seed_all
from app.db.session import create_engine_from_url, create_session_factory
from app.settings import PROJECT_ROOT

ADMIN_URL = os.environ.get(
    "GPUCOST_BENCH_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REGIONS = ["us-east-1", "us-west-2", "eu-central-1", "ap-northeast-1", "华北", "华东"]


def create_bench_database(n_offers: int = 10_000, seed: int = 7) -> str:
    """Create a fresh database, migrate, seed, add ``n_offers`` synthetic offers; return URL.

    Synthetic offers are random shapes (catalog GPU × 1/2/4/8, vCPUs, RAM, price) under one
    provider ``synthetic``; they exist only to measure speed and are never in seed data. The
    database is vacuumed and analysed afterwards (the state autovacuum reaches on its own).
    """
    name = f"gpucost_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    engine = create_engine_from_url(url)
    upgrade(engine)
    factory = create_session_factory(engine)
    rng = random.Random(seed)
    with factory() as s, s.begin():
        seed_all(s, PROJECT_ROOT / "seed_data")
        provider = Provider(
            slug="synthetic",
            name="Synthetic (benchmark only)",
            kind="cloud",
            source="benchmarks/common.py (random, not real offers)",
        )
        s.add(provider)
        s.flush()
        gpus = s.execute(select(GpuModel.id, GpuModel.canonical_name, GpuModel.vram_gib)).all()
        now = utcnow()
        rows = []
        for i in range(n_offers):
            gid, gname, vram = rng.choice(gpus)
            count = rng.choice([1, 1, 2, 4, 8])
            rows.append(
                {
                    "provider_id": provider.id,
                    "offer_key": f"syn-{i}",
                    "instance_type": f"syn.{count}x",
                    "region": rng.choice(REGIONS),
                    "gpu_model_id": gid,
                    "gpu_name_raw": gname,
                    "gpu_count": float(count),
                    "vram_gib_per_gpu": vram,
                    "vcpus": float(rng.choice([4, 8, 16, 32, 64]) * count),
                    "ram_gib": float(rng.choice([16, 32, 64, 128]) * count),
                    "system_disk_gb": 100.0,
                    "data_disk_gb": float(rng.choice([0, 200, 1000])),
                    "interconnect": rng.choice([None, "pcie", "nvlink"]) if count > 1 else None,
                    "billing": rng.choice(["on_demand", "spot"]),
                    "price_per_hour": Decimal(str(round(rng.uniform(0.1, 4.0) * count, 4))),
                    "currency": rng.choice(["USD", "USD", "USD", "CNY"]),
                    "price_is_estimate": False,
                    "available": True,
                    "first_seen_at": now,
                    "last_seen_at": now,
                    "source": "synthetic (benchmarks/common.py)",
                }
            )
        s.execute(insert(InstanceOffer), rows)
    engine.dispose()
    # Planner statistics and the visibility map, as autovacuum leaves them shortly after a
    # bulk load (it analyses a table once 10 % of its rows changed, within a minute by
    # default). Without them PostgreSQL guesses ~160 rows for 10,000 and sorts the whole
    # table for ``ORDER BY id LIMIT 50`` instead of reading the primary key's first entries.
    maintenance = create_engine(url, isolation_level="AUTOCOMMIT")
    with maintenance.connect() as conn:
        conn.execute(text("VACUUM ANALYZE"))
    maintenance.dispose()
    return url


def drop_bench_database(url: str) -> None:
    """Drop a database made by :func:`create_bench_database`."""
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


def latency_args(description: str, requests: int) -> argparse.Namespace:
    """The command line of a latency benchmark: ``--requests`` (per measurement, default
    ``requests``) and ``--offers`` (synthetic offers, default 10,000)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--requests", type=int, default=requests)
    parser.add_argument("--offers", type=int, default=10_000)
    return parser.parse_args()


def load_bench_database(n_offers: int) -> tuple[str, float]:
    """:func:`create_bench_database` with the app's logging below errors silenced.

    Returns:
        The database URL and the seconds the setup took (wall clock).
    """
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    url = create_bench_database(n_offers)
    return url, time.perf_counter() - t0


def timed_ms(fn: Callable[[], Any]) -> float:
    """Milliseconds (wall clock) one call of ``fn`` took."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def percentile(samples: list[float], q: float) -> float:
    """The sample at rank ``round(q × (n − 1))`` of the sorted ``samples`` (nearest rank,
    no interpolation); NaN when there are none."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(median, 95th percentile) of ``samples``: the median interpolates between the two
    middle samples, the 95th is :func:`percentile`."""
    return statistics.median(samples), percentile(samples, 0.95)
