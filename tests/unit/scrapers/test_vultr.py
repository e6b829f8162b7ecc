"""Vultr: GPU plans only, total VRAM → count (slices), bare-metal ids, cursor paging."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import vultr
from tests.fake_providers import FakeProviders
from tests.unit.scrapers.helpers import fetch, load


def test_cloud_gpu_plans() -> None:
    pages = [load("vultr/plans_page1.json"), load("vultr/plans_page2.json")]
    offers = {
        (o.offer_key, o.region): o for o in vultr.parse_plans(pages, source="x", metal=False).offers
    }
    assert not any(k[0].startswith("vc2") for k in offers)  # CPU plans are not offers
    slice_ = offers[("vcg-a100-1c-6g-4vram", "ewr")]
    assert slice_.gpu_count == pytest.approx(0.05) and slice_.vram_gib_per_gpu == 80
    full = offers[("vcg-a100-12c-120g-80vram", "ord")]
    assert full.gpu_count == 1 and full.ram_gib == 120 and full.disk_gb == 1400
    assert full.price_per_hour == Decimal("2.222")
    assert ("vcg-a100-12c-120g-80vram", "") not in offers  # empty location skipped
    a40 = offers[("vcg-a40-24c-120g-48vram", "blr")]  # no gpu_* fields: read from the id
    assert a40.gpu_name_raw == "A40" and a40.gpu_count == 1 and a40.vram_gib_per_gpu == 48


def test_bare_metal_plans() -> None:
    result = vultr.parse_plans([load("vultr/plans_metal.json")], source="x", metal=True)
    offers = {(o.offer_key, o.billing): o for o in result.offers}
    h100 = offers[("vbm-112c-2048gb-8-h100-gpu", "on_demand")]
    assert h100.gpu_name_raw == "H100 SXM" and h100.gpu_count == 8
    assert h100.interconnect == "nvswitch" and h100.vcpus == 224 and h100.ram_gib == 2048
    assert offers[("vbm-112c-2048gb-8-h100-gpu", "spot")].price_per_hour == Decimal("17.77")
    assert offers[("vbm-256c-2048gb-8-mi300x-gpu", "on_demand")].gpu_name_raw == "MI300X"
    assert not any(k[0] == "vbm-4c-32gb" for k in offers)


def test_fetch_follows_the_cursor() -> None:
    fake = FakeProviders()
    result = fetch(vultr.SCRAPER, fake)
    assert [r[2] for r in fake.requests] == [
        "/vultr/v2/plans",
        "/vultr/v2/plans",
        "/vultr/v2/plans-metal",
    ]
    assert len(result.offers) == 7
