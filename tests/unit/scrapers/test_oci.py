"""OCI: shapes x price list, per-GPU vs per-OCPU billing, preemptible at half price."""

from __future__ import annotations

from decimal import Decimal

from scrapers import oci
from tests.unit.scrapers.helpers import fetch, load


def test_gpu_shapes_are_priced_from_their_part() -> None:
    result = oci.parse_offers(load("oci/shapes.json"), load("oci/products.json"), source="x")
    by_key = {(o.offer_key, o.billing): o for o in result.offers}
    assert set(by_key) == {
        ("BM.GPU.H100.8", "on_demand"),
        ("VM.GPU.A10.1", "on_demand"),
        ("VM.GPU.A10.1", "spot"),
        ("VM.GPU.A10.2", "on_demand"),
        ("VM.GPU.A10.2", "spot"),
        ("BM.GPU.A100-v2.8", "on_demand"),
    }  # the deprecated BM.GPU4.8 and the CPU shape are no offers
    h100 = by_key[("BM.GPU.H100.8", "on_demand")]
    assert h100.price_per_hour == Decimal("76") and h100.gpu_count == 8  # 8 x 9.5 GPU Per Hour
    assert (h100.vcpus, h100.ram_gib, h100.vram_gib_per_gpu) == (224, 2048, 80)
    assert h100.region == oci.REGION and h100.interconnect == "nvswitch"
    a10 = by_key[("VM.GPU.A10.1", "on_demand")]
    assert a10.vcpus == 30  # 15 OCPUs: the A10 hosts are x86 although the estimator says Arm
    spot = by_key[("VM.GPU.A10.2", "spot")]
    assert spot.price_per_hour == Decimal("1.75") and spot.price_is_estimate  # 2 x 1.75 / 2
    assert by_key[("BM.GPU.A100-v2.8", "on_demand")].gpu_name_raw == "A100 SXM4 80GB"
    assert result.warnings == [
        "oci BM.GPU.GB200.4 (NVL72): no USD pay-as-you-go price for its part; skipped"
    ]


def test_shape_names() -> None:
    assert oci.shape_gpu("BM.GPU.GB200.4 (NVL72)") == ("GB200", "GB200", 4)
    assert oci.shape_gpu("VM.GPU3.1") == ("V100", "GPU3", 1)
    assert oci.shape_gpu("VM.Standard.E5.Flex") is None


def test_fetch_needs_no_key() -> None:
    assert len(fetch(oci.SCRAPER).offers) == 6
