"""RunPod: per-GPU prices × count, secure and community tiers, spot as estimates."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import runpod
from scrapers.http import ScraperError
from tests.unit.scrapers.helpers import fetch, load

SOURCE = "https://api.runpod.io/graphql"


def test_prices_are_per_gpu_times_count() -> None:
    one = runpod.parse_offers(
        load("runpod/lowest_1_secure.json"), gpu_count=1, secure=True, source=SOURCE
    )
    two = runpod.parse_offers(
        load("runpod/lowest_2_secure.json"), gpu_count=2, secure=True, source=SOURCE
    )
    key = ("NVIDIA H100 80GB HBM3|1x|secure", "on_demand")
    first = {(o.offer_key, o.billing): o for o in one.offers}[key]
    assert first.price_per_hour == Decimal("2.5") and first.gpu_name_raw == "H100 SXM"
    assert first.vram_gib_per_gpu == 80 and first.interconnect == "sxm"
    pair = {(o.offer_key, o.billing): o for o in two.offers}
    assert pair[("NVIDIA H100 80GB HBM3|2x|secure", "on_demand")].price_per_hour == Decimal("5")
    spot = pair[("NVIDIA H100 80GB HBM3|2x|secure", "spot")]
    assert spot.price_per_hour == Decimal("3.4") and spot.price_is_estimate
    assert spot.vcpus == 32 and spot.ram_gib == 250


def test_community_tier_counts_and_stock() -> None:
    two = runpod.parse_offers(
        load("runpod/lowest_2_community.json"), gpu_count=2, secure=False, source=SOURCE
    )
    names = {o.gpu_name_raw for o in two.offers}
    assert "A100 PCIe" not in names  # maxGpuCountCommunityCloud = 1
    assert "H200 SXM" not in names  # not on community cloud
    one = runpod.parse_offers(
        load("runpod/lowest_1_community.json"), gpu_count=1, secure=False, source=SOURCE
    )
    a100 = [o for o in one.offers if o.gpu_name_raw == "A100 PCIe"]
    assert [o.billing for o in a100] == ["on_demand"]  # communitySpotPrice 0 → no spot offer
    secure = runpod.parse_offers(
        load("runpod/lowest_1_secure.json"), gpu_count=1, secure=True, source=SOURCE
    )
    mi300x = [o for o in secure.offers if o.gpu_name_raw == "MI300X"]
    assert len(mi300x) == 1 and not mi300x[0].available  # stockStatus null: listed, no stock


def test_graphql_errors_fail_the_provider() -> None:
    with pytest.raises(ScraperError, match="GraphQL error: bad input"):
        runpod.parse_offers(
            {"errors": [{"message": "bad input"}], "data": None},
            gpu_count=1,
            secure=True,
            source=SOURCE,
        )
    with pytest.raises(ScraperError, match="data"):
        runpod.parse_offers({"x_data": {}}, gpu_count=1, secure=True, source=SOURCE)


def test_fetch_sends_the_lowest_price_variables() -> None:
    result = fetch(runpod.SCRAPER, runpod_gpu_counts="1,2", runpod_min_cuda="12.8")
    keys = {o.offer_key for o in result.offers}
    assert "NVIDIA GeForce RTX 4090|2x|community" in keys
    assert all("CUDA >= 12.8" in (o.notes or "") for o in result.offers)
    assert runpod.variables(2, False, "12.8") == {
        "lowestPriceInput": {"gpuCount": 2, "secureCloud": False, "minCudaVersion": "12.8"}
    }
