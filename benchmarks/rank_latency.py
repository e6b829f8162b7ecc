"""Latency of ``POST /v1/rank`` over 10,000 offers in PostgreSQL, from the catalog snapshot.

Run: ``python -m benchmarks.rank_latency [--requests 30] [--offers 10000]``. Prints, in one
run, p50/p95 of (in-process ASGI client: routing, validation, the catalog-version check,
ranking, JSON):

* the **SELECT floor**: ``SELECT *`` of every offer joined with its provider through the
  driver (psycopg, no SQLAlchemy, no ORM): what a request that reads the rows pays at least;
* ``GET /v1/offers?limit=50``;
* **warm**: the same rank request again (its answer kept for the catalog version), and the
  same request with the answer cache emptied first (ranking the snapshot with the
  workload's estimates kept);
* **new workload**: a micro-batch never ranked before on every request (every hardware
  configuration estimated afresh);
* **cold**: the first rank after a version change (one offer's price updated, as a refresh
  writes it: the worker reads the new version's offers, then ranks);
* the worker's memory: resident set (``/healthz``) and the snapshot's own bytes.

Each round times every measurement once, so a change in the machine's load hits them alike.
The server checks the catalog version on every request here (``catalog_poll_s`` 0: one
``SELECT`` each; served default 0.5 s), so the cold case is the request right after the write.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import psycopg
from litestar.testing import TestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.asgi import create_app
from app.db.session import create_engine_from_url
from app.settings import Settings
from benchmarks.common import (
    drop_bench_database,
    latency_args,
    load_bench_database,
    percentiles,
    timed_ms,
)

PRESET = "resnet50-imagenet"
RANK = {"workload": {"preset": PRESET}, "limit": 50}
SELECT_ALL = "SELECT * FROM instance_offer o JOIN provider p ON p.id = o.provider_id"


def _libpq_url(url: str) -> str:
    u = make_url(url)
    return f"host={u.host} port={u.port or 5432} user={u.username} dbname={u.database}"


def _measure(url: str, requests: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    app = create_app(Settings(database_url=url, catalog_poll_s=0.0))
    series: dict[str, list[float]] = {}
    info: dict[str, Any] = {"cold_of_new_version": 0}
    with (
        TestClient(app) as client,
        psycopg.connect(_libpq_url(url), autocommit=True) as raw,
    ):

        def call(method: str, path: str, **kw: Any) -> Callable[[], None]:
            def go() -> None:
                r = client.request(method, path, **kw)
                assert r.status_code == 200, r.text

            return go

        def select_all() -> None:
            with raw.cursor() as cur:
                cur.execute(SELECT_ALL)
                cur.fetchall()

        def uncached() -> None:
            for kind in ("rank", "rank_json"):  # the answers; the estimates stay
                app.state.reference.current.offers._caches.pop(kind, None)
            call("POST", "/v1/rank", json=RANK)()

        def write() -> int:  # what a refresh does to one offer: a new price, committed
            raw.execute(
                "UPDATE instance_offer SET price_per_hour = price_per_hour + 0.0001 "
                "WHERE id = (SELECT max(id) FROM instance_offer)"
            )
            row = raw.execute("SELECT version FROM catalog_version").fetchone()
            return int(row[0]) if row else 0

        offers = call("GET", "/v1/offers", params={"limit": 50})
        rank = call("POST", "/v1/rank", json=RANK)
        offers()
        rank()  # warm: the snapshot, the preset's estimates, the answer
        for i in range(requests):
            for name, fn in (
                ("select", select_all),
                ("offers", offers),
                ("warm", rank),
                ("uncached", uncached),
            ):
                series.setdefault(name, []).append(timed_ms(fn))
            new = {"workload": {"preset": PRESET, "micro_batch_size": 200 + i}, "limit": 50}
            series.setdefault("new", []).append(timed_ms(call("POST", "/v1/rank", json=new)))
            version = write()
            series.setdefault("cold", []).append(timed_ms(rank))
            # the answer came from the new version unless its read outlasted the request's wait
            info["cold_of_new_version"] += app.state.reference.current.version == version
            while app.state.reference.current.version != version:  # next round: built
                time.sleep(0.05)
                client.get("/v1/workloads")  # a request that checks the version
            series.setdefault("build", []).append(app.state.reference.current.offers.build_ms)
        health = client.get("/healthz").json()
        total = client.post("/v1/rank", json=RANK).json()["total_offers"]
    return series, {**info, "health": health, "ranked": total}


def main() -> None:
    """Entry point."""
    args = latency_args(__doc__ or "", requests=30)
    url, setup_s = load_bench_database(args.offers)
    print(f"setup: {args.offers} synthetic + seed offers in {setup_s:.1f} s")
    load = os.getloadavg()
    print(
        f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)"
    )
    engine = create_engine_from_url(url)
    try:
        with engine.connect() as conn:
            total = conn.execute(text("select count(*) from instance_offer")).scalar_one()
        print(f"offers in database: {total}")
        series, info = _measure(url, args.requests)
    finally:
        engine.dispose()
        drop_bench_database(url)
    floor, p95 = percentiles(series["select"])
    print(
        f"SELECT floor (psycopg, SELECT * of {total} offers + provider): "
        f"p50 {floor:.1f} ms  p95 {p95:.1f} ms"
    )
    p50, p95 = percentiles(series["offers"])
    print(f"GET /v1/offers?limit=50: p50 {p50:.1f} ms  p95 {p95:.1f} ms")
    ranked = info["ranked"]
    rows = (
        ("warm", "warm, same request (answer kept for the version)", 0.3),
        ("uncached", "warm, answer cache emptied (snapshot + kept estimates)", 0.3),
        ("new", "new workload each request (new micro-batch)", 0.6),
        ("cold", "first rank after a version change (one price written)", 1.2),
    )
    for key, label, target in rows:
        p50, p95 = percentiles(series[key])
        verdict = "ok" if p50 <= target * floor else "MISSED"
        print(
            f"POST /v1/rank {label}, {ranked} offers ranked: p50 {p50:.1f} ms  p95 {p95:.1f} ms"
            f"  = {p50 / floor:.2f}x the SELECT floor (target <= {target}x: {verdict})"
        )
    print(
        f"first ranks after a version change answered from the new version: "
        f"{info['cold_of_new_version']} of {len(series['cold'])} (the others waited 2 s for "
        "the read and got the version before)"
    )
    build, _ = percentiles(series["build"])
    worker = info["health"]["worker"]
    print(
        f"snapshot build per version: p50 {build:.1f} ms; worker memory: RSS "
        f"{worker['rss_mib']} MiB, snapshot {worker['snapshot_mib']} MiB of {worker['offers']} "
        f"offers, {worker['cached_answers']} cached answers, "
        f"{worker['versions_loaded']} versions loaded"
    )


if __name__ == "__main__":
    main()
