"""The long schemathesis run: the served OpenAPI against the real validation, ≥ 5,000 requests.

Run: ``python -m benchmarks.schemathesis_run [--max-examples 400] [--offers 500]``.

Creates a throwaway PostgreSQL database (migrated, seeded, plus ``--offers`` synthetic offers
from :mod:`benchmarks.common`), starts ``gpucost serve`` on a free loopback port, and runs
``schemathesis run`` over ``/schema/openapi.json`` with the checks ``not_a_server_error``,
``status_code_conformance``, ``content_type_conformance``, ``response_schema_conformance``
and ``negative_data_rejection`` (what the schema forbids is a 4xx) in the examples,
coverage and fuzzing phases (fixed seed).
Prints schemathesis' summary, then the number of HTTP requests it sent (counted from its
NDJSON event report), the server errors (5xx) among them and the failed checks. Exits
non-zero when any check failed or fewer than ``--min-requests`` requests were sent. The
bounded version of the same run is ``tests/test_schemathesis.py``; figures: docs/load.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import create_bench_database, drop_bench_database
from benchmarks.load import serve

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
)


def _walk(obj: Any) -> Any:
    """Every dict nested in ``obj`` (the NDJSON events nest their records)."""
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


def count_report(path: Path) -> tuple[int, Counter[int], Counter[str]]:
    """(requests sent, answers by status code, failed checks by name) from an NDJSON report.

    A request is a recorded interaction with a response (``response.status_code``); a check
    counts as failed when its ``status`` is ``failure``.
    """
    statuses: Counter[int] = Counter()
    failed: Counter[str] = Counter()
    seen: set[str] = set()
    with path.open() as fh:
        for line in fh:
            for d in _walk(json.loads(line)):
                resp = d.get("response")
                req = d.get("request")
                if isinstance(resp, dict) and isinstance(req, dict) and "status_code" in resp:
                    # an interaction may be repeated in later events: count it once
                    key = json.dumps([req, resp.get("status_code"), resp.get("elapsed")])
                    if key not in seen:
                        seen.add(key)
                        statuses[int(resp["status_code"])] += 1
                if d.get("status") == "failure" and isinstance(d.get("name"), str):
                    failed[d["name"]] += 1
    return sum(statuses.values()), statuses, failed


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-examples", type=int, default=400)
    parser.add_argument("--offers", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-requests", type=int, default=5000)
    parser.add_argument(
        "--workers",
        default="1",
        help="schemathesis workers (with 2, hypothesis once failed on a race in its own "
        "lambda-source cache: 'AST constructor recursion depth mismatch')",
    )
    args = parser.parse_args()
    st = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if st is None:
        sys.exit("schemathesis is a dev dependency: pip install -e '.[dev]'")
    t0 = time.monotonic()
    url = create_bench_database(args.offers)
    report_dir = Path(tempfile.mkdtemp(prefix="gpucost-schemathesis-"))
    ndjson = report_dir / "events.ndjson"
    try:
        with serve(url, 1) as base:
            cmd = [
                st,
                "run",
                f"{base}/schema/openapi.json",
                "--max-examples",
                str(args.max_examples),
                "--seed",
                str(args.seed),
                "--checks",
                ",".join(CHECKS),
                "--phases",
                "examples,coverage,fuzzing",
                "--workers",
                args.workers,
                "--request-timeout",
                "60",
                "--report",
                "ndjson",
                "--report-ndjson-path",
                str(ndjson),
            ]
            print("$", " ".join(cmd), flush=True)
            run = subprocess.run(cmd, env={**os.environ, "NO_COLOR": "1"})
    finally:
        drop_bench_database(url)
    requests, statuses, failed = count_report(ndjson)
    server_errors = sum(n for code, n in statuses.items() if code >= 500)
    print(f"\nschemathesis exit code {run.returncode}; {time.monotonic() - t0:.0f} s in all")
    print(f"requests sent: {requests}")
    print("answers by status:", ", ".join(f"{c}: {n}" for c, n in sorted(statuses.items())))
    print(f"server errors (5xx): {server_errors}")
    print("failed checks:", dict(failed) or "none")
    print(f"NDJSON report: {ndjson}")
    if run.returncode != 0 or failed or server_errors or requests < args.min_requests:
        sys.exit(1)


if __name__ == "__main__":
    main()
