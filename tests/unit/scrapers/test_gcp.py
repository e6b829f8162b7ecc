"""GCP: SKU pages summed per machine type (vCPU + RAM + GPU), spot SKUs, missing parts."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import gcp
from scrapers.http import ScraperError
from scrapers.records import ScrapedOffer
from tests.fake_providers import FakeProviders
from tests.unit.scrapers.helpers import fetch, load


def offers() -> dict[tuple[str, str, str], ScrapedOffer]:
    pages = [load("gcp/skus_page1.json"), load("gcp/skus_page2.json")]
    result = gcp.parse_skus(pages, source="x")
    return {(o.offer_key, o.region, o.billing): o for o in result.offers}


def test_instance_price_is_the_sum_of_its_skus() -> None:
    by_key = offers()
    a2 = by_key[("a2-highgpu-1g", "us-central1", "on_demand")]
    # 12 vCPU x 0.031611 + 85 GiB x 0.004237 + 1 A100 x 2.933908 (fixture SKUs)
    assert a2.price_per_hour == Decimal("3.673385")
    assert (a2.gpu_name_raw, a2.gpu_count, a2.vcpus, a2.ram_gib) == ("A100 SXM4 40GB", 1, 12, 85)
    spot = by_key[("a2-highgpu-1g", "us-east1", "spot")]
    assert spot.price_per_hour == Decimal("1.469366")  # 12 x 0.012644 + 85 x 0.001695 + 1.173563
    h100 = by_key[("a3-highgpu-8g", "us-central1", "on_demand")]
    # 208 x 0.029563 + 1872 x 0.003959 + 8 x 11.06125
    assert h100.price_per_hour == Decimal("102.050352") and h100.interconnect == "nvswitch"
    assert by_key[("a2-megagpu-16g", "us-east1", "on_demand")].gpu_count == 16


def test_only_complete_machines_and_plain_skus() -> None:
    by_key = offers()
    assert len(by_key) == 28  # a2 x 2 regions x 2 billings (20), a2-ultra (4), a3 (4)
    assert not any(k[0].startswith("a3") and k[2] == "spot" for k in by_key)  # no spot SKUs
    assert not any(k[1] == "europe-west4" for k in by_key)  # the H100 GPU alone is no machine
    assert not any(k[0] == "a3-megagpu-8g" for k in by_key)  # no A3Plus host SKU listed
    result = gcp.parse_skus([load("gcp/skus_page1.json"), load("gcp/skus_page2.json")], source="x")
    assert "gcp a3-megagpu-8g us-central1 OnDemand: no core SKU; skipped" in result.warnings


def test_fetch_walks_the_pages_with_the_key() -> None:
    fake = FakeProviders()
    assert len(fetch(gcp.SCRAPER, fake).offers) == 28
    assert [r[2] for r in fake.requests] == ["/gcp/v1/services/6F81-5844-456A/skus"] * 2
    with pytest.raises(ScraperError, match="HTTP 401"):
        fetch(gcp.SCRAPER, gcp_api_key="wrong")
    with pytest.raises(ScraperError, match="more than 1 pages"):
        fetch(gcp.SCRAPER, gcp_max_pages=1)
    with pytest.raises(ScraperError, match="GPUCOST_SCRAPER_GCP_API_KEY"):
        fetch(gcp.SCRAPER, gcp_api_key="")
