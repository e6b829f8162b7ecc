"""Latency of ``POST /v1/rank`` over 10,000 offers in PostgreSQL.

Run: ``python -m benchmarks.rank_latency [--requests 40]``. Prints p50/p95 of the request
(in-process ASGI client: routing, validation, query, estimation, ranking, JSON) for a few
presets, ``GET /v1/offers?limit=50``, and the time of a plain SELECT of the same offer rows
for comparison (the rank's p50 as a multiple of it).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from litestar.testing import TestClient
from sqlalchemy import select, text

from app.asgi import create_app
from app.db.models import InstanceOffer, Provider
from app.db.session import create_engine_from_url
from app.settings import Settings
from benchmarks.common import create_bench_database, drop_bench_database

PRESETS = ["resnet50-imagenet", "llama3-8b-qlora", "bert-base-squad"]


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--offers", type=int, default=10_000)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    url = create_bench_database(args.offers)
    print(
        f"setup: {args.offers} synthetic + seed offers loaded in {time.perf_counter() - t0:.1f} s"
    )
    try:
        engine = create_engine_from_url(url)
        with engine.connect() as conn:
            total = conn.execute(text("select count(*) from instance_offer")).scalar_one()
            selects = []
            for _ in range(args.requests):
                t = time.perf_counter()
                conn.execute(
                    select(InstanceOffer.__table__, Provider.slug)
                    .join(Provider)
                    .where(InstanceOffer.available.is_(True))
                ).all()
                selects.append((time.perf_counter() - t) * 1000)
        engine.dispose()
        select_p50, p95 = _percentiles(selects)
        print(f"offers in database: {total}")
        print(f"plain SELECT of all available offers: p50 {select_p50:.1f} ms  p95 {p95:.1f} ms")
        app = create_app(Settings(database_url=url))
        with TestClient(app) as client:
            client.get("/v1/offers", params={"limit": 50})  # warm caches
            times = []
            for _ in range(args.requests):
                t = time.perf_counter()
                r = client.get("/v1/offers", params={"limit": 50})
                times.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, r.text
            p50, p95 = _percentiles(times)
            print(
                f"GET /v1/offers?limit=50 of {r.json()['total']} offers: p50 {p50:.1f} ms  "
                f"p95 {p95:.1f} ms  (target p50 <= 20 ms)"
            )
            for preset in PRESETS:
                body = {"workload": {"preset": preset}, "limit": 50}
                client.post("/v1/rank", json=body)  # warm caches (reference data)
                times = []
                for _ in range(args.requests):
                    t = time.perf_counter()
                    r = client.post("/v1/rank", json=body)
                    times.append((time.perf_counter() - t) * 1000)
                    assert r.status_code == 200, r.text
                p50, p95 = _percentiles(times)
                n = r.json()["total_offers"]
                print(
                    f"POST /v1/rank {preset:<20} over {n} offers: "
                    f"p50 {p50:.1f} ms  p95 {p95:.1f} ms  = {p50 / select_p50:.2f}x the plain "
                    "SELECT (target <= 1.5x)"
                )
    finally:
        drop_bench_database(url)


if __name__ == "__main__":
    main()
