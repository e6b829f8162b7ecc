"""Lambda Cloud: cents, capacity per region, labels, and the API key."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from scrapers import lambda_cloud
from scrapers.http import ScraperError
from tests.unit.scrapers.helpers import fetch, load


def test_cents_regions_and_labels() -> None:
    result = lambda_cloud.parse_offers(load("lambda/instance-types.json"), source="x")
    offers = {(o.offer_key, o.region): o for o in result.offers}
    a10 = offers[("gpu_1x_a10", "us-east-1")]
    assert a10.price_per_hour == Decimal("0.77") and a10.gpu_name_raw == "A10 PCIe"
    assert a10.vram_gib_per_gpu == 24 and a10.vcpus == 30 and a10.ram_gib == 200
    assert ("gpu_1x_a10", "us-west-1") in offers
    h100 = offers[("gpu_8x_h100_sxm5", "us-south-1")]
    assert h100.gpu_count == 8 and h100.interconnect == "nvswitch"
    assert h100.price_per_hour == Decimal("22.22")
    assert offers[("gpu_1x_rtx6000", "us-west-1")].gpu_name_raw == "RTX 6000"
    assert not any(o.offer_key == "gpu_1x_gh200" for o in result.offers)  # sold out everywhere
    a100 = offers[("gpu_1x_a100_sxm4", "us-east-1")]  # newer, shorter description
    assert a100.gpu_name_raw == "A100" and a100.vram_gib_per_gpu is None
    assert a100.interconnect == "sxm"  # from the instance type name


def test_no_key_is_a_clear_error() -> None:
    with pytest.raises(ScraperError, match="GPUCOST_SCRAPER_LAMBDA_API_KEY"):
        fetch(lambda_cloud.SCRAPER, lambda_api_key="")


def test_fetch_sends_the_key() -> None:
    assert len(fetch(lambda_cloud.SCRAPER).offers) == 5
    with pytest.raises(ScraperError, match="HTTP 401"):
        fetch(lambda_cloud.SCRAPER, lambda_api_key="wrong")


def test_cpu_only_types_are_no_offers_and_no_warning() -> None:
    # the 2026-05 cpu_4x_generalx type (skypilot PR #9556): same entry shape, no GPUs
    payload = load("lambda/instance-types.json")
    entry = copy.deepcopy(payload["data"]["gpu_1x_a10"])
    entry["instance_type"].update(
        name="cpu_4x_generalx", description="4x CPU", gpu_description="", price_cents_per_hour=20
    )
    entry["instance_type"]["specs"].update(gpus=0, vcpus=4, memory_gib=16)
    payload["data"]["cpu_4x_generalx"] = entry
    result = lambda_cloud.parse_offers(payload, source="x")
    assert result.skipped == 0 and not result.warnings
    assert "cpu_4x_generalx" not in {o.offer_key for o in result.offers}
    assert len(result.offers) == 5  # the GPU types as before
