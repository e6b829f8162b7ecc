"""Load test on loopback: concurrent clients on ``GET /v1/offers`` and ``POST /v1/rank``.

Run: ``python -m benchmarks.load [--duration 60] [--connections 50] [--workers 2]``.

Creates a throwaway PostgreSQL database with 10,000 synthetic offers (benchmarks/common.py),
starts ``gpucost serve`` on it as a subprocess on 127.0.0.1 (one server process, and with
``--workers N`` also N uvicorn workers for comparison), then for each endpoint keeps
``--connections`` requests in flight for ``--duration`` seconds (at most ``--max-requests``)
while another client polls ``/healthz`` every ``--healthz-every`` seconds. Prints requests/s,
errors (non-2xx), client timeouts, latency p50/p95/max, and the slowest ``/healthz`` poll.
Nothing leaves 127.0.0.1; the server and the database are removed at the end.

``--client wrk`` drives the same requests with wrk (a C load generator, Debian package
``wrk``: one client thread, so the server keeps most of the CPUs; the Python client above
needs about a core of its own, which on a 2-CPU machine leaves a second worker nothing to
run on). wrk reports requests/s, non-2xx answers, socket errors and latency percentiles;
``/healthz`` is still polled by the Python poller during the run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.common import drop_bench_database, load_bench_database, percentile
from benchmarks.serving import free_port, serve_process, stop, wait_healthy

RANK_BODY = {"workload": {"preset": "resnet50-imagenet"}, "limit": 50}
SCENARIOS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "offers": ("GET", "/v1/offers", {"params": {"limit": 50}}),
    "rank": ("POST", "/v1/rank", {"json": RANK_BODY}),
}


@dataclass
class Result:
    """What one scenario measured (latencies in ms)."""

    duration_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    timeouts: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    healthz_ms: list[float] = field(default_factory=list)
    healthz_failed: int = 0
    #: latency percentiles as a load generator reported them (wrk), when it gives no samples
    reported_ms: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> int:
        """Requests answered 2xx."""
        return len(self.latencies_ms)

    @property
    def rps(self) -> float:
        """Successful requests per second."""
        return self.ok / self.duration_s if self.duration_s else 0.0


async def _poll_healthz(
    base: str, result: Result, done: asyncio.Event, *, every_s: float, timeout_s: float
) -> None:
    """Poll ``/healthz`` every ``every_s`` until ``done``, into ``result.healthz_*``."""
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s) as client:
        while not done.is_set():
            t0 = time.perf_counter()
            try:
                r = await client.get("/healthz")
                if not r.is_success:
                    result.healthz_failed += 1
            except httpx.HTTPError:
                result.healthz_failed += 1
            result.healthz_ms.append((time.perf_counter() - t0) * 1000)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), every_s)


async def _run_scenario(
    base: str,
    name: str,
    *,
    connections: int,
    duration_s: float,
    max_requests: int,
    timeout_s: float,
    healthz_every_s: float,
) -> Result:
    method, path, kwargs = SCENARIOS[name]
    result = Result()
    budget = max_requests
    stop_at = time.monotonic() + duration_s
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal budget
        while time.monotonic() < stop_at and budget > 0:
            budget -= 1
            t0 = time.perf_counter()
            try:
                r = await client.request(method, path, **kwargs)
            except httpx.TimeoutException:
                result.timeouts += 1
                continue
            except httpx.TransportError as exc:
                result.errors += 1
                kind = type(exc).__name__
                result.error_kinds[kind] = result.error_kinds.get(kind, 0) + 1
                continue
            if r.is_success:
                result.latencies_ms.append((time.perf_counter() - t0) * 1000)
            else:
                result.errors += 1
                kind = str(r.status_code)
                result.error_kinds[kind] = result.error_kinds.get(kind, 0) + 1

    done = asyncio.Event()
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits) as client:
        poller = asyncio.create_task(
            _poll_healthz(base, result, done, every_s=healthz_every_s, timeout_s=timeout_s)
        )
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(connections)))
        result.duration_s = time.perf_counter() - t0
        done.set()
        await poller
    return result


_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}


def _wrk_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    return float(match.group(1)) * _WRK_UNITS[match.group(2)] if match else float("nan")


async def _run_wrk(
    base: str,
    name: str,
    *,
    connections: int,
    duration_s: float,
    timeout_s: float,
    healthz_every_s: float,
) -> Result:
    """One scenario driven by wrk (one thread): its request count, errors and percentiles
    (``reported_ms``); wrk reports no per-request latencies."""
    method, path, kw = SCENARIOS[name]
    url = str(httpx.URL(base + path, params=kw.get("params")))
    result = Result()
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        if method == "POST":
            body = json.dumps(kw["json"])  # a Lua long string needs no escaping
            script.write(
                f'wrk.method = "POST"\nwrk.body = [[{body}]]\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
            )
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{duration_s:g}s",
        f"--timeout={timeout_s:g}s",
        "--latency",
        "-s",
        script.name,
        url,
    ]
    stop = asyncio.Event()
    poller = asyncio.create_task(
        _poll_healthz(base, result, stop, every_s=healthz_every_s, timeout_s=timeout_s)
    )
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out = (await proc.communicate())[0].decode()
    result.duration_s = time.perf_counter() - t0
    stop.set()
    await poller
    os.unlink(script.name)
    total = re.search(r"(\d+) requests in", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = int(non2xx.group(1)) if non2xx else 0
    if sock:
        errors += sum(int(sock.group(i)) for i in (1, 2, 3))
        result.timeouts = int(sock.group(4))
    result.errors = errors
    n_ok = (int(total.group(1)) if total else 0) - errors - result.timeouts
    pct = {q: _wrk_ms(v) for q, v in re.findall(r"^\s+(50|90|99)%\s+(\S+)", out, re.M)}
    # wrk reports rates and percentiles, not each request: keep its count (``ok``/``rps``)
    # and its percentiles (``reported_ms``)
    result.latencies_ms = [pct.get("50", float("nan"))] * max(n_ok, 0)
    if rps and float(rps.group(1)):
        result.duration_s = n_ok / float(rps.group(1))
    result.reported_ms = {f"p{q}": v for q, v in sorted(pct.items())}
    return result


@contextlib.contextmanager
def serve(url: str, workers: int) -> Iterator[str]:
    """``gpucost serve --workers N`` on ``url`` and a free loopback port; yields its base URL."""
    port = free_port()
    env = {**os.environ, "GPUCOST_DATABASE_URL": url}
    proc = serve_process(port, "--workers", str(workers), env=env, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, base)
        # warm every worker's reference-data cache before measuring
        for _ in range(4 * workers):
            httpx.post(f"{base}/v1/rank", json=RANK_BODY, timeout=60)
        yield base
    finally:
        stop(proc)


def _report(workers: int, name: str, r: Result) -> str:
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(r.error_kinds.items()))
    if r.reported_ms:
        latency = "  ".join(f"{k} {v:7.1f} ms" for k, v in r.reported_ms.items()) + " (wrk)"
    else:
        latency = (
            f"p50 {percentile(r.latencies_ms, 0.5):7.1f} ms  "
            f"p95 {percentile(r.latencies_ms, 0.95):7.1f} ms"
            f"  max {max(r.latencies_ms, default=0):7.1f} ms"
        )
    return (
        f"workers={workers} {name:<6} {r.ok:>6} ok in {r.duration_s:5.1f} s = "
        f"{r.rps:6.1f} req/s  errors {r.errors}{f' ({kinds})' if kinds else ''}  "
        f"timeouts {r.timeouts}  {latency}"
        f"  | healthz {len(r.healthz_ms)} polls, {r.healthz_failed} failed, "
        f"p50 {percentile(r.healthz_ms, 0.5):.0f} ms, p95 {percentile(r.healthz_ms, 0.95):.0f} ms, "
        f"max {max(r.healthz_ms, default=0):.0f} ms, "
        f"{sum(ms > 100 for ms in r.healthz_ms)} over 100 ms"
    )


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per scenario")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument(
        "--workers", type=int, default=1, help="also run with this many uvicorn workers"
    )
    parser.add_argument("--offers", type=int, default=10_000)
    parser.add_argument("--max-requests", type=int, default=100_000, help="per scenario")
    parser.add_argument("--timeout", type=float, default=30.0, help="client timeout, s")
    parser.add_argument("--healthz-every", type=float, default=0.5, help="seconds")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), action="append")
    parser.add_argument(
        "--client",
        choices=("python", "wrk"),
        default="python",
        help="load generator: the asyncio/httpx client, or wrk (one C thread)",
    )
    args = parser.parse_args()
    if args.client == "wrk" and not shutil.which("wrk"):
        parser.error("--client wrk needs wrk on PATH (apt-get install wrk)")
    if not 1 <= args.connections <= 500 or not 0 < args.duration <= 600:
        parser.error("--connections must be 1..500 and --duration 0..600 s")
    scenarios = args.scenario or list(SCENARIOS)
    url, setup_s = load_bench_database(args.offers)
    print(
        f"setup: {args.offers} synthetic + seed offers in PostgreSQL in "
        f"{setup_s:.1f} s; {args.connections} connections, "
        f"{args.duration:g} s per scenario, client timeout {args.timeout:g} s, "
        f"{os.cpu_count()} CPUs (client and server share them)"
    )
    rps: dict[tuple[int, str], float] = {}
    runner = (
        _run_wrk
        if args.client == "wrk"
        else functools.partial(_run_scenario, max_requests=args.max_requests)
    )
    try:
        for workers in sorted({1, args.workers}):
            with serve(url, workers) as base:
                for name in scenarios:
                    run = runner(
                        base,
                        name,
                        connections=args.connections,
                        duration_s=args.duration,
                        timeout_s=args.timeout,
                        healthz_every_s=args.healthz_every,
                    )
                    r = asyncio.run(run)
                    rps[(workers, name)] = r.rps
                    print(_report(workers, name, r), flush=True)
    finally:
        drop_bench_database(url)
    if args.workers > 1:
        for name in scenarios:
            base_rps = rps[(1, name)]
            ratio = rps[(args.workers, name)] / base_rps if base_rps else float("nan")
            print(f"{name}: {args.workers} workers / 1 worker = {ratio:.2f}x requests/s")


if __name__ == "__main__":
    main()
