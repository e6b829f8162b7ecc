"""Latency of ``POST /v1/rank`` over 10,000 offers in PostgreSQL.

Run: ``python -m benchmarks.rank_latency [--requests 40]``. Prints p50/p95 of the request
(in-process ASGI client: routing, validation, query, estimation, ranking, JSON) for a few
presets, ``GET /v1/offers?limit=50``, and the time of a plain SELECT of the same offer rows
(all available offers; the first 50 for the offers page) for comparison (the rank's p50 as a
multiple of it). Each round times every measurement once, so a change in the machine's load
hits them alike. The presets' estimates are reused across requests (as a server does for a
repeated workload); the last line ranks a workload never seen before each time (a new
micro-batch size), so every configuration is estimated afresh.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

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
    load = os.getloadavg()
    print(
        f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)"
    )
    engine = create_engine_from_url(url)
    try:
        with engine.connect() as conn:
            total = conn.execute(text("select count(*) from instance_offer")).scalar_one()
        print(f"offers in database: {total}")
        app = create_app(Settings(database_url=url))
        rank_bodies = {p: {"workload": {"preset": p}, "limit": 50} for p in PRESETS}
        with TestClient(app) as client, engine.connect() as conn:

            def timed(fn: Callable[[], Any]) -> float:
                t = time.perf_counter()
                fn()
                return (time.perf_counter() - t) * 1000

            def select_all() -> None:
                conn.execute(
                    select(InstanceOffer.__table__, Provider.slug)
                    .join(Provider)
                    .where(InstanceOffer.available.is_(True))
                ).all()

            def select_page() -> None:
                conn.execute(
                    select(InstanceOffer.__table__, Provider.slug)
                    .join(Provider)
                    .where(InstanceOffer.available.is_(True))
                    .order_by(InstanceOffer.id)
                    .limit(50)
                ).all()

            def call(method: str, path: str, **kw: Any) -> Callable[[], None]:
                def go() -> None:
                    r = client.request(method, path, **kw)
                    assert r.status_code == 200, r.text

                return go

            series: dict[str, list[float]] = {}
            offers = call("GET", "/v1/offers", params={"limit": 50})
            ranks = {p: call("POST", "/v1/rank", json=b) for p, b in rank_bodies.items()}
            offers()  # warm caches (reference data, the estimates of each preset)
            for fn in ranks.values():
                fn()
            # rounds: every measurement once per round, so load changes hit all alike
            for i in range(args.requests):
                series.setdefault("select", []).append(timed(select_all))
                series.setdefault("select50", []).append(timed(select_page))
                series.setdefault("offers", []).append(timed(offers))
                for p, fn in ranks.items():
                    series.setdefault(p, []).append(timed(fn))
                # a workload never ranked before: every configuration estimated afresh
                cold = {"workload": {"preset": PRESETS[0], "micro_batch_size": 200 + i}}
                series.setdefault("cold", []).append(
                    timed(call("POST", "/v1/rank", json={**cold, "limit": 50}))
                )
        n = client.post("/v1/rank", json=rank_bodies[PRESETS[0]]).json()["total_offers"]
    finally:
        engine.dispose()
        drop_bench_database(url)
    select_p50, p95 = _percentiles(series["select"])
    print(f"plain SELECT of all available offers: p50 {select_p50:.1f} ms  p95 {p95:.1f} ms")
    page_p50, p95 = _percentiles(series["select50"])
    print(f"plain SELECT of the first 50 (by id): p50 {page_p50:.1f} ms  p95 {p95:.1f} ms")
    p50, p95 = _percentiles(series["offers"])
    print(
        f"GET /v1/offers?limit=50 of {total} offers: p50 {p50:.1f} ms  p95 {p95:.1f} ms  "
        f"(target p50 <= 20 ms)"
    )
    for name in (*PRESETS, "cold"):
        p50, p95 = _percentiles(series[name])
        label = name if name != "cold" else f"{PRESETS[0]}, a new micro-batch each time"
        print(
            f"POST /v1/rank {label} over {n} offers: p50 {p50:.1f} ms  p95 {p95:.1f} ms  "
            f"= {p50 / select_p50:.2f}x the plain SELECT"
            + (" (target <= 1.5x)" if name != "cold" else " (no estimate reused)")
        )


if __name__ == "__main__":
    main()
