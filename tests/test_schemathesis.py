"""The served OpenAPI schema against the real validation (schemathesis, bounded).

Runs ``schemathesis run`` against ``gpucost serve`` on the seeded database: generated valid
and invalid requests for every operation; checks: no 5xx, every answer matches the
documented status codes, content type and response schema, and what the schema forbids is
rejected. A few hundred requests here; the long run (≥ 5,000 requests, the same checks) is
``python -m benchmarks.schemathesis_run`` (docs/load.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.serving import free_port, serve_process, stop, wait_healthy

pytestmark = pytest.mark.db

CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
    )
)


def test_api_matches_its_openapi_schema(seeded_url: str) -> None:
    bindir = Path(sys.executable).parent
    st = shutil.which("schemathesis", path=str(bindir))
    assert st, "schemathesis is a dev dependency: pip install -e '.[dev]'"
    port = free_port()
    env = {**os.environ, "GPUCOST_DATABASE_URL": seeded_url}
    server = serve_process(port, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(server, base, timeout_s=60)
        run = subprocess.run(
            [
                st,
                "run",
                f"{base}/schema/openapi.json",
                "--max-examples",
                "20",
                "--seed",
                "1",
                "--checks",
                CHECKS,
                "--phases",
                "examples,fuzzing",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        stop(server)
    summary = run.stdout[-3000:]
    assert run.returncode == 0, summary
    assert " passed" in summary and "failed" not in summary.split("Test cases:")[-1], summary
