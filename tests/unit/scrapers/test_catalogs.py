"""The public-catalog fallback: gpuhunt's versioned catalog.zip and SkyPilot's vms.csv."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from scrapers import SCRAPERS, catalogs
from scrapers.http import ScraperError
from tests.fake_providers import FIXTURES, FakeProviders
from tests.unit.scrapers.helpers import fetch


def test_gpuhunt_rows_are_labelled_catalog_offers_with_their_date() -> None:
    text = (FIXTURES / "gpuhunt" / "nebius" / "nebius.csv").read_text(encoding="utf-8")
    result = catalogs.parse_gpuhunt(text, provider="nebius", version="20261201-4211", source="u")
    by_key = {(o.offer_key, o.region, o.billing): o for o in result.offers}
    assert len(by_key) == 5  # CPU-only and flagged rows are no offers
    h100 = by_key[("gpuhunt:gpu-h100-sxm_8gpu-128vcpu-1600gb", "eu-north1", "spot")]
    assert h100.price_per_hour == Decimal("11.9") and h100.gpu_count == 8
    assert (h100.vcpus, h100.ram_gib, h100.vram_gib_per_gpu) == (128, 1600, 80)
    assert h100.source_kind == "catalog" and h100.seen_on == dt.date(2026, 12, 1)
    assert "not a first-hand price" in (h100.notes or "")
    assert result.warnings == ["gpuhunt nebius.csv row 9: spot 'maybe'"]


def test_skypilot_rows_one_per_instance_and_region() -> None:
    text = (FIXTURES / "skypilot" / "cudo" / "vms.csv").read_text(encoding="utf-8")
    result = catalogs.parse_skypilot(text, provider="cudo", cloud="cudo", source="u")
    by_key = {(o.offer_key, o.region): o for o in result.offers}
    assert len(by_key) == 9 and all(o.billing == "on_demand" for o in result.offers)
    h100 = by_key[("skypilot:sapphire-rapids-h100_2x8v16gb", "ca-montreal-3")]
    assert h100.price_per_hour == Decimal("5.1416") and h100.vram_gib_per_gpu == 80
    assert h100.gpu_count == 2 and h100.seen_on is None and h100.source_kind == "catalog"
    # the v8 shadeform file writes GB into SizeInMiB: read as GB below 1024
    gb_as_mib = (
        text.splitlines()[0]
        + "\nx,A6000,1,8,58,0.5,r1,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 48}}]}\",0.3\n"
    )
    odd = catalogs.parse_skypilot(gb_as_mib, provider="cudo", cloud="cudo", source="u").offers
    assert {(o.billing, o.vram_gib_per_gpu) for o in odd} == {("on_demand", 48), ("spot", 48)}


def test_gcp_zones_are_read_as_regions() -> None:
    result = fetch(SCRAPERS["gcp"].fallback)  # type: ignore[arg-type]
    assert {(o.instance_type, o.region, o.billing) for o in result.offers} == {
        ("a2-highgpu-1g", "us-central1", "on_demand"),
        ("a2-highgpu-1g", "us-central1", "spot"),
        ("g2-standard-4", "us-central1", "on_demand"),
    }  # the DWS calendar-mode row is flagged: not an offer
    assert catalogs.zone_region("europe-west4-b") == "europe-west4"
    assert catalogs.zone_region("eu-north1") == "eu-north1"


def test_versions() -> None:
    assert catalogs.version_date("20261130-4188") == dt.date(2026, 11, 30)
    assert catalogs.version_date("latest") is None and catalogs.version_date("20261340-1") is None


def test_fetch_reads_the_latest_zip() -> None:
    fake = FakeProviders()
    result = fetch(SCRAPERS["nebius"], fake)
    assert len(result.offers) == 5
    assert [r[2] for r in fake.requests] == [
        "/gpuhunt/v3/nebius/version",
        "/gpuhunt/v3/nebius/20261201-4211/catalog.zip",
    ]
    assert len(fetch(SCRAPERS["cudo"]).offers) == 9
    assert SCRAPERS["gcp"].fallback is not None
    assert SCRAPERS["gcp"].fallback.source_kind == "catalog"


@pytest.mark.parametrize(
    ("fault", "message"),
    [("garbage", "unexpected version"), ("missing_field", "instance_name")],
)
def test_malformed_catalogs_fail_the_provider(fault: str, message: str) -> None:
    with pytest.raises(ScraperError, match=message):
        fetch(SCRAPERS["nebius"], FakeProviders(faults={"nebius": fault}))
