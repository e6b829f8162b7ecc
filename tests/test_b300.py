"""Every B300 seed offer is estimable: the catalog has a sourced B300 row
(``seed_data/gpus_manual.csv``), so the three seed offers (AWS p6-b300.48xlarge on demand and
spot, Verda 1B300.30V) are ranked instead of listed as unestimable.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.db


def test_b300_seed_offers_are_matched_to_the_catalog(client: Any) -> None:
    r = client.get("/v1/offers", params={"gpu": "B300", "limit": 100, "available_only": False})
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    keys = {(o["provider"], o["offer_key"], o["billing"]) for o in items}
    assert keys >= {
        ("aws", "p6-b300.48xlarge", "on_demand"),
        ("aws", "p6-b300.48xlarge", "spot"),
    }
    assert any(o["offer_key"] == "1B300.30V" for o in items)
    assert {o["gpu"] for o in items} == {"B300"}


def test_b300_offers_are_ranked_with_the_catalog_flops(client: Any) -> None:
    body = {
        "workload": {"preset": "llama3-8b-lora"},
        "filters": {"gpu": "B300", "available_only": False},
        "limit": 100,
    }
    r = client.post("/v1/rank", json=body)
    assert r.status_code == 200, r.text[:500]
    answer = r.json()
    assert answer["unestimable"] == []
    ranked = {x["offer"]["offer_key"] for x in answer["results"]}
    assert {"p6-b300.48xlarge", "1B300.30V"} <= ranked
    for x in answer["results"]:
        est = x["estimate"]
        assert est["samples_per_s"] > 0 and est["epoch_hours"] > 0
    # the 8-GPU AWS board is faster than Verda's single B300
    by_key = {x["offer"]["offer_key"]: x["estimate"] for x in answer["results"]}
    assert by_key["p6-b300.48xlarge"]["samples_per_s"] > by_key["1B300.30V"]["samples_per_s"]
