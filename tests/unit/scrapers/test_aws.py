"""AWS: the streamed per-region price list, the family table and the spot feed."""

from __future__ import annotations

import csv
from decimal import Decimal

import pytest

from scrapers import aws
from scrapers.base import ScrapeResult
from scrapers.http import ScraperError
from tests.fake_providers import FIXTURES
from tests.unit.scrapers.helpers import fetch, load


def lines() -> list[str]:
    return (FIXTURES / "aws" / "us-east-1.csv").read_text(encoding="utf-8").splitlines()


def test_price_list_keeps_linux_shared_on_demand_gpu_rows() -> None:
    rows = aws.parse_price_list(lines())
    by_type = {r.instance_type: r for r in rows}
    assert sorted(by_type) == [
        "g5.48xlarge",
        "g5.xlarge",
        "g6e.xlarge",
        "g6f.4xlarge",
        "g6f.large",
        "p4d.24xlarge",
        "p5.48xlarge",
        "p6-b200.48xlarge",
    ]
    assert len(rows) == 8  # Windows, Reserved, Dedicated, SQL and unused-reservation rows out
    p4d = by_type["p4d.24xlarge"]
    assert p4d.price == "30.1234000000" and p4d.gpu_count == 8 and p4d.vcpus == 96
    assert p4d.ram_gib == 1152 and p4d.disk_gb == 8000
    assert by_type["g5.xlarge"].disk_gb == 250


def test_gpu_family_missing_from_the_table_is_reported() -> None:
    result = ScrapeResult()
    rows = aws.parse_price_list(lines(), result)
    assert "g4ad.xlarge" not in {r.instance_type for r in rows}
    assert result.warnings == [
        "aws instance family g4ad has GPUs but is not in AWS_FAMILIES "
        "(GPU model unknown): not stored"
    ]
    assert aws.keep_line('"X","g4ad.xlarge"') and not aws.keep_line('"X","m5.large"')
    assert not aws.keep_line('"BoxUsage:g5.xlarge"')


def test_offers_with_spot_and_unknown_prices() -> None:
    result = ScrapeResult()
    spot = aws.parse_spot(load("aws/spot.json"), result)
    assert spot[("us-east-1", "g5.xlarge")] == "0.4444"
    assert ("us-east-1", "m5.large") not in spot  # not a GPU family
    offers = aws.build_offers(
        aws.parse_price_list(lines()),
        spot,
        price_list_base="https://pricing.us-east-1.amazonaws.com",
        spot_source="https://example/spot.json",
    ).offers
    got = {(o.offer_key, o.billing): o for o in offers}
    assert got[("p4d.24xlarge", "on_demand")].gpu_name_raw == "A100 SXM4 40GB"
    assert got[("p4d.24xlarge", "on_demand")].interconnect == "nvswitch"
    assert ("p4d.24xlarge", "spot") not in got  # "N/A*"
    assert ("g6e.xlarge", "spot") not in got  # "0" is no price
    assert got[("g5.xlarge", "spot")].price_per_hour == Decimal("0.4444")
    assert got[("g5.xlarge", "on_demand")].gpu_name_raw == "A10G"  # not A10
    assert got[("g5.xlarge", "on_demand")].interconnect is None  # one GPU
    assert got[("p6-b200.48xlarge", "on_demand")].price_per_hour is None  # listed at 0
    assert got[("p4d.24xlarge", "on_demand")].source.endswith("/current/us-east-1/index.csv")


def test_price_list_without_header_fails() -> None:
    with pytest.raises(ScraperError, match="header"):
        aws.parse_price_list(lines()[:5])
    broken = [line.replace('"PricePerUnit"', '"Price"') for line in lines()]
    with pytest.raises(ScraperError, match="PricePerUnit"):
        aws.parse_price_list(broken)


def test_spot_feed_may_be_wrapped_in_a_callback() -> None:
    assert aws.decode_spot('callback({"config": {"regions": []}});') == {"config": {"regions": []}}
    with pytest.raises(ScraperError, match="malformed JSON"):
        aws.decode_spot("<html>")


def test_fetch_streams_the_region_file() -> None:
    result = fetch(aws.SCRAPER)
    assert len(result.offers) == 11 and result.skipped == 1  # g4ad reported
    assert {o.region for o in result.offers} == {"us-east-1"}


def test_capacity_block_rows_are_not_on_demand_offers() -> None:
    # Capacity Block prices are dynamic and not in the bulk price list; where a row names
    # them (MarketOption CapacityBlock, $0) it must not become an on-demand offer
    text = lines()
    header = next(csv.reader([next(line for line in text if line.startswith('"SKU"'))]))
    p5 = next(i for i, line in enumerate(text) if '"50.5050000000"' in line)
    fields = next(csv.reader([text[p5]]))
    fields[header.index("MarketOption")] = "CapacityBlock"
    fields[header.index("PricePerUnit")] = "0.0000000000"
    text[p5] = ",".join(f'"{f}"' for f in fields)
    rows = aws.parse_price_list(text)
    assert "p5.48xlarge" not in {r.instance_type for r in rows}
    assert len(rows) == 7


def test_g6f_slices_of_one_l4_are_fractional_gpus() -> None:
    # fixture rows: g6f.large lists GPU 0.125 (the price list's fractional GPU cell, which
    # broke gpuhunt's int() parse: dstackai/gpuhunt@731c951, PR #164); g6f.4xlarge lists GPU 1
    # with 12 GiB of GPU memory (the "Count 1 with scaled memory" shape, providers.md §5)
    rows = {r.instance_type: r for r in aws.parse_price_list(lines())}
    assert rows["g6f.large"].gpu_count == 0.125 and rows["g6f.large"].gpu_memory_gib == 3
    assert rows["g6f.4xlarge"].gpu_count == 1 and rows["g6f.4xlarge"].gpu_memory_gib == 12
    offers = aws.build_offers(
        list(rows.values()), {}, price_list_base="https://p", spot_source="s"
    ).offers
    got = {o.offer_key: o for o in offers}
    eighth, half = got["g6f.large"], got["g6f.4xlarge"]
    assert eighth.gpu_name_raw == "L4" and eighth.gpu_count == 0.125  # the GPU cell itself
    assert half.gpu_count == 0.5  # 12 GiB / 24 GB card (scrapers.records.card_share)
    # the whole card's VRAM, as every fractional offer (ScrapedOffer contract)
    assert eighth.vram_gib_per_gpu == half.vram_gib_per_gpu == 24
    assert eighth.interconnect is None and "0.125 of one L4" in (eighth.notes or "")


def test_a_slice_whose_share_is_not_listed_is_reported_not_stored() -> None:
    row = aws.OnDemandRow("gr6f.4xlarge", "us-east-1", "0.5", 16, 128, None, 1, None)
    result = aws.build_offers([row], {}, price_list_base="https://p", spot_source="s")
    assert result.offers == []
    assert result.warnings == [
        "aws gr6f.4xlarge us-east-1: a slice of one L4 whose share the price list does not "
        "give (GPU Memory missing); skipped"
    ]
    # a GPU column below one is the share itself
    row = aws.OnDemandRow("gr6f.4xlarge", "us-east-1", "0.5", 16, 128, None, 0.5, None)
    (offer,) = aws.build_offers([row], {}, price_list_base="https://p", spot_source="s").offers
    assert offer.gpu_count == 0.5 and offer.vram_gib_per_gpu == 24


def test_the_network_between_machines_is_the_stated_network_performance() -> None:
    # the price list's "Network Performance": 3200 Gigabit (EFA) on p5/p6-b200, 400 on p4d,
    # 100 on g5.48xlarge; "Up to 10 Gigabit" (g5.xlarge) is a burst ceiling, no stated rate
    offers = aws.build_offers(
        aws.parse_price_list(lines()),
        {},
        price_list_base="https://pricing.us-east-1.amazonaws.com",
        spot_source="https://example/spot.json",
    ).offers
    got = {o.offer_key: o.network_gbps for o in offers}
    assert got["p5.48xlarge"] == got["p6-b200.48xlarge"] == 3200.0
    assert got["p4d.24xlarge"] == 400.0 and got["g5.48xlarge"] == 100.0
    assert got["g5.xlarge"] is None and got["g6e.xlarge"] is None


@pytest.mark.parametrize(
    ("text", "gbps"),
    [
        ("3200 Gigabit", 3200.0),
        ("400 Gigabit", 400.0),
        ("400 Gbps", 400.0),
        ("100 Gb/s", 100.0),
        ("3.2 Tbps", 3200.0),
        ("25 gigabit", 25.0),
        ("100 Gbit/s", 100.0),
        ("100 GBit/s", 100.0),  # bit spelled out: gigabits whatever its case
        ("200 gb/s", 200.0),
        ("1.6 Terabit", 1600.0),
        # bytes are 8 bits: NVLink's "900 GB/s" is 7,200 Gbit/s, "3.2 TB/s" 25,600
        ("900 GB/s", 7200.0),
        ("900 GBps", 7200.0),
        ("50 gigabytes per second", 400.0),
        ("3.2 TB/s", 25600.0),
        # all capitals say neither bit nor byte: not read rather than 8x off
        ("100 GBPS", None),
        ("100 Gx", None),
        ("100 G", None),
        ("Up to 25 Gigabit", None),
        ("High", None),
        ("Moderate", None),
        ("0 Gigabit", None),
        ("", None),
        (None, None),
    ],
)
def test_one_rule_reads_a_stated_network(text: str | None, gbps: float | None) -> None:
    from scrapers.records import network_gbps

    assert network_gbps(text) == gbps
