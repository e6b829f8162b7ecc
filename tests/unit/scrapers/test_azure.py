"""Azure Retail Prices: meter filtering, spot rows, the size table, NextPageLink paging."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import azure
from scrapers.http import ScraperError
from tests.fake_providers import FakeProviders
from tests.unit.scrapers.helpers import fetch, load

SOURCE = "https://prices.azure.com/api/retail/prices"


def parsed():  # type: ignore[no-untyped-def]
    pages = [load("azure/eastus_page1.json"), load("azure/eastus_page2.json")]
    return azure.parse_items(pages, source=SOURCE)


def test_linux_consumption_and_spot_rows_only() -> None:
    result = parsed()
    offers = {(o.offer_key, o.billing): o for o in result.offers}
    a100 = offers[("Standard_NC24ads_A100_v4", "on_demand")]
    assert a100.price_per_hour == Decimal("3.1111")  # not the Windows/DevTest/Low Priority rows
    assert a100.gpu_name_raw == "A100 PCIe 80GB" and a100.vcpus == 24 and a100.ram_gib == 220
    assert offers[("Standard_NC24ads_A100_v4", "spot")].price_per_hour == Decimal("1.2222")
    # the same size on two pages: the row with the latest effectiveStartDate wins
    assert offers[("Standard_ND96isr_H100_v5", "on_demand")].price_per_hour == Decimal("88.88")
    assert offers[("Standard_ND96isr_H100_v5", "on_demand")].interconnect == "nvswitch"
    assert offers[("Standard_NV6ads_A10_v5", "on_demand")].gpu_count == pytest.approx(
        1 / 6, abs=1e-4
    )
    # retailPrice 0 on a spot meter: stored as an unknown price
    assert offers[("Standard_NC40ads_H100_v5", "spot")].price_per_hour is None
    assert all(o.region == "eastus" for o in result.offers)


def test_gpu_size_missing_from_the_table_is_reported() -> None:
    result = parsed()
    assert any("Standard_NC8ads_A10_v4" in w for w in result.warnings)
    assert "Standard_NC8ads_A10_v4" not in {o.offer_key for o in result.offers}


def test_next_page_link_is_reapplied_to_the_configured_url() -> None:
    link = load("azure/eastus_page1.json")["NextPageLink"]
    url, params = azure.next_url("http://mirror.local/prices", link)  # type: ignore[misc]
    assert url == "http://mirror.local/prices" and params["$skip"] == "1000"
    assert "armRegionName eq 'eastus'" in params["$filter"]
    assert azure.next_url("http://x", None) is None


def test_fetch_walks_both_pages_through_the_mirror() -> None:
    fake = FakeProviders()
    result = fetch(azure.SCRAPER, fake)
    assert [r for r in fake.requests if r[0] == "azure"] == [
        ("azure", "GET", "/azure/api/retail/prices")
    ] * 2
    assert len(result.offers) == 6


def test_page_cap_fails_instead_of_truncating() -> None:
    with pytest.raises(ScraperError, match="truncated"):
        fetch(azure.SCRAPER, azure_max_pages=1)


def test_page_without_items_is_a_provider_error() -> None:
    with pytest.raises(ScraperError, match="Items"):
        azure.parse_items([{"x_Items": []}], source=SOURCE)
