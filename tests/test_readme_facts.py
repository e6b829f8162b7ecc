"""The counts the README states are the seeded database's, read through the API."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.db

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _stated(pattern: str) -> int:
    m = re.search(pattern, README)
    assert m, pattern
    return int(m.group(1).replace(",", ""))


def test_readme_seed_counts_are_the_seeded_ones(client: Any) -> None:
    assert _stated(r"([\d,]+) GPU models") == len(client.get("/v1/gpus").json())
    benchmarks = client.get("/v1/benchmarks", params={"limit": 1}).json()["total"]
    assert _stated(r"([\d,]+) published training-throughput measurements") == benchmarks
    offers = client.get("/v1/offers", params={"limit": 1000}).json()
    assert _stated(r"([\d,]+) offers from") == offers["total"]
    providers = {o["provider"] for o in offers["items"]}
    assert _stated(r"offers from (\d+) providers") == len(providers)
    assert _stated(r"([\d,]+) workload presets") == len(client.get("/v1/workloads").json())
