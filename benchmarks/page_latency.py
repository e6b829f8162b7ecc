"""Latency of the web page ``GET /?preset=…`` over 10,000 offers in PostgreSQL.

Run: ``python -m benchmarks.page_latency [--requests 40]``. Prints p50/p95 of the full page
request (in-process ASGI client: parsing, ranking every offer, banner queries, chart layout,
template rendering) next to its JSON twin ``GET /v1/rank`` with the same parameters, and of
an offer page. Target: ``/`` with a preset under 300 ms.
"""

from __future__ import annotations

import time

from litestar.testing import TestClient

from app.asgi import create_app
from app.settings import Settings
from benchmarks.common import drop_bench_database, latency_args, load_bench_database, percentiles

PAGES = [
    "/?preset=resnet50-imagenet",
    "/v1/rank?preset=resnet50-imagenet",
    "/?preset=llama3-8b-qlora&currency=CNY",
    "/?preset=bert-base-squad&sort=epoch_hours&order=-vcpus&limit=200",
]
TARGET_MS = 300.0


def _time(client: TestClient, path: str, n: int) -> tuple[float, float, int]:
    client.get(path)  # warm caches (reference data, compiled templates)
    times = []
    size = 0
    for _ in range(n):
        t = time.perf_counter()
        r = client.get(path)
        times.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200, r.text[:500]
        size = len(r.content)
    p50, p95 = percentiles(times)
    return p50, p95, size


def main() -> None:
    """Entry point."""
    args = latency_args(__doc__ or "", requests=40)
    url, setup_s = load_bench_database(args.offers)
    print(f"setup: {args.offers} synthetic + seed offers loaded in {setup_s:.1f} s")
    try:
        app = create_app(Settings(database_url=url))
        with TestClient(app) as client:
            first = client.get(
                "/v1/rank", params={"preset": "resnet50-imagenet", "limit": 1}
            ).json()
            print(f"offers ranked per request: {first['total_offers']}")
            offer_id = first["results"][0]["offer"]["id"]
            for path in [*PAGES, f"/offers/{offer_id}?preset=resnet50-imagenet"]:
                p50, p95, size = _time(client, path, args.requests)
                target = (
                    f"  (target p50 < {TARGET_MS:.0f} ms)" if not path.startswith("/v1") else ""
                )
                print(
                    f"GET {path:<70} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  "
                    f"{size / 1024:6.0f} KiB{target}"
                )
    finally:
        drop_bench_database(url)


if __name__ == "__main__":
    main()
