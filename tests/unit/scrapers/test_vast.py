"""Vast.ai: parse the recorded bundles answer, and fetch one query per GPU name."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from scrapers import vast
from scrapers.http import ScraperError
from tests.fake_providers import FakeProviders
from tests.unit.scrapers.helpers import fetch, load

SOURCE = "https://console.vast.ai/api/v0/bundles/"


def by_key(result):  # type: ignore[no-untyped-def]
    return {(o.offer_key, o.billing): o for o in result.offers}


def test_parse_units_keys_and_spot() -> None:
    result = vast.parse_offers(load("vast/bundles.json"), source=SOURCE, storage_gb=50)
    offers = by_key(result)
    one = offers[("m41001-1x", "on_demand")]
    assert one.gpu_name_raw == "RTX 4090" and one.gpu_count == 1
    assert one.vram_gib_per_gpu == pytest.approx(23.99)  # 24564 MiB
    assert one.vcpus == 16 and one.ram_gib == pytest.approx(257000 * 16 / 64 / 1024, abs=0.01)
    assert one.max_cuda == "12.8" and one.driver_version == "570.133.07"
    assert one.price_per_hour == Decimal("0.3125") and one.region == "Texas, US"
    assert one.network_down_mbps == pytest.approx(1650.2)
    bid = offers[("m41001-1x", "spot")]
    assert bid.price_per_hour == Decimal("0.18") and bid.price_is_estimate
    # cpu_cores null: RAM cannot be prorated; min_bid 0: no spot offer
    assert offers[("m41002-2x", "on_demand")].ram_gib is None
    assert ("m41002-2x", "spot") not in offers
    # a 48 GB modded 4090 keeps its listed VRAM (the ingest layer flags it)
    assert offers[("m41003-1x", "on_demand")].vram_gib_per_gpu == pytest.approx(47.99)
    h100 = offers[("m52001-8x", "on_demand")]
    assert h100.interconnect == "nvlink" and h100.gpu_count == 8
    assert offers[("m52002-1x", "on_demand")].region == "unknown"  # geolocation null
    assert offers[("m52002-1x", "on_demand")].interconnect == "sxm"
    # dph_total 0 is an unknown price, never 0
    assert offers[("m52005-1x", "on_demand")].price_per_hour is None
    assert "50 GB disk" in (one.notes or "")
    assert "NVLink 452.1 GB/s" in (h100.notes or "")


def test_null_prices_are_unknown_not_zero() -> None:
    payload = load("vast/bundles.json")
    first = payload["offers"][0]
    first["dph_total"] = first["dph_base"] = first["min_bid"] = None
    offers = by_key(vast.parse_offers(payload, source=SOURCE))
    assert offers[("m41001-1x", "on_demand")].price_per_hour is None
    assert ("m41001-1x", "spot") not in offers


def test_parse_keeps_only_the_queried_name() -> None:
    result = vast.parse_offers(load("vast/bundles.json"), source=SOURCE, only_gpu_name="H100 SXM")
    assert {o.gpu_name_raw for o in result.offers} == {"H100 SXM"}


def test_row_missing_a_required_field_is_skipped_and_reported() -> None:
    payload = load("vast/bundles.json")
    del payload["offers"][0]["gpu_name"]
    result = vast.parse_offers(payload, source=SOURCE)
    assert result.skipped == 1 and "gpu_name" in result.warnings[0]
    assert "m41001-1x" not in {o.offer_key for o in result.offers}
    assert len(result.offers) == 11


def test_payload_without_offers_is_a_provider_error() -> None:
    with pytest.raises(ScraperError, match="offers"):
        vast.parse_offers({"offerz": []}, source=SOURCE)


def test_fetch_queries_each_gpu_name_with_a_limit() -> None:
    fake = FakeProviders()
    seen: list[dict] = []
    original = fake.handle

    def spy(method, path, query, body, headers):  # type: ignore[no-untyped-def]
        seen.append(json.loads(body))
        return original(method, path, query, body, headers)

    fake.handle = spy  # type: ignore[method-assign]
    result = fetch(
        vast.SCRAPER,
        fake,
        vast_gpu_names="RTX 4090,H100 SXM",
        vast_limit=250,
        vast_other_gpus=False,
    )
    assert [q["gpu_name"] for q in seen] == [{"eq": "RTX 4090"}, {"eq": "H100 SXM"}]
    assert all(q["limit"] == 250 and q["rentable"] == {"eq": True} for q in seen)
    assert {o.gpu_name_raw for o in result.offers} == {"RTX 4090", "H100 SXM"}


def test_catch_all_query_brings_in_the_other_models_once() -> None:
    fake = FakeProviders()
    result = fetch(vast.SCRAPER, fake, vast_gpu_names="RTX 4090")
    assert len([r for r in fake.requests if r[0] == "vast"]) == 2
    names = [o.gpu_name_raw for o in result.offers if o.billing == "on_demand"]
    assert names.count("RTX 4090") == 3 and "GTX 1660 S" in names and "H100 SXM" in names


def test_query_uses_the_bundles_endpoint_without_the_removed_filters() -> None:
    # /search/asks → /bundles/, and external, dlperf_usd, flops_usd, has_avx were removed
    # (vast-cli PR #282 and #283, 2025-10): a query naming them would be rejected
    fake = FakeProviders()
    fetch(vast.SCRAPER, fake, vast_gpu_names="RTX 4090", vast_other_gpus=False)
    assert {path for _, _, path in fake.requests} == {"/vast/api/v0/bundles/"}
    body = vast.query_body("RTX 4090", limit=10, storage_gb=50)
    assert not {"external", "dlperf_usd", "flops_usd", "has_avx"} & body.keys()
