"""Shadeform: cents per hour, the underlying cloud kept, per-region availability."""

from __future__ import annotations

from decimal import Decimal

from scrapers import shadeform
from tests.unit.scrapers.helpers import fetch, load


def test_types() -> None:
    result = shadeform.parse_types(load("shadeform/instance-types.json"), source="x")
    by_key = {(o.offer_key, o.region): o for o in result.offers}
    a6000 = by_key[("hyperstack/n3-RTX-A6000x1", "hyperstack:canada-1")]
    assert a6000.price_per_hour == Decimal("0.48") and a6000.available
    assert a6000.gpu_name_raw == "A6000" and a6000.vram_gib_per_gpu == 48
    assert not by_key[("hyperstack/n3-RTX-A6000x1", "hyperstack:norway-1")].available
    h100 = by_key[("lambdalabs/gpu_8x_h100_sxm5", "lambdalabs:us-east-1")]
    assert h100.price_per_hour == Decimal("23.92") and h100.interconnect == "nvswitch"
    assert "resold by Shadeform from lambdalabs" in (h100.notes or "")
    assert by_key[("crusoe/a100-80gb.1x", "crusoe:us-northcentral1-a")].gpu_name_raw == "A100 80G"


def test_fetch() -> None:
    assert len(fetch(shadeform.SCRAPER).offers) == 5
