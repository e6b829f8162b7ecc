"""FluidStack: per-GPU price x count, one offer per plan x count x region."""

from __future__ import annotations

from decimal import Decimal

from scrapers import fluidstack
from tests.unit.scrapers.helpers import fetch, load


def test_plans() -> None:
    result = fluidstack.parse_plans(load("fluidstack/configurations.json"), source="x")
    by_key = {(o.offer_key, o.region): o for o in result.offers}
    assert len(by_key) == 9
    h100 = by_key[("H100_SXM5_80GB::8", "norway_4_eu")]
    assert h100.price_per_hour == Decimal("22") and h100.interconnect == "nvswitch"
    assert (h100.gpu_name_raw, h100.vram_gib_per_gpu, h100.vcpus) == ("H100 SXM5 80GB", 80, None)
    assert by_key[("A100_PCIE_80GB::1", "norway_4_eu")].price_per_hour == Decimal("1.55")
    assert ("RTX_A6000_48GB::2", "canada_1_na") in by_key


def test_fetch() -> None:
    assert len(fetch(fluidstack.SCRAPER).offers) == 9
