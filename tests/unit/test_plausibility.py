"""The plausibility rules (app/plausibility.py): bands from history, thin history, each rule."""

from __future__ import annotations

import dataclasses
import math

import pytest

from app.plausibility import K, OfferFacts, PriceBands, PricePoint, check_offer

# H100: five on-demand offers at 2, 2, 2.5, 3, 4 USD per GPU-hour (median 2.5)
H100 = [PricePoint("H100", "on_demand", p, ("p", i)) for i, p in enumerate((2, 2, 2.5, 3, 4))]


def test_band_is_median_and_mad_in_log_space() -> None:
    bands = PriceBands.build(H100)
    band = bands.band("H100", "on_demand")
    assert band is not None and band.n == 5
    logs = sorted(math.log(p) for p in (2, 2, 2.5, 3, 4))
    med = logs[2]
    mad = sorted(abs(x - med) for x in logs)[2]  # deviations 0, .18, .22, .22, .47
    assert mad == pytest.approx(math.log(2.5 / 2))
    sigma = max(1.4826 * mad, bands.floor_sigma)
    assert band.low == pytest.approx(2.5 * math.exp(-K * sigma))
    assert band.high == pytest.approx(2.5 * math.exp(K * sigma))


def test_sub_cent_gpu_hour_and_per_gpu_confusion() -> None:
    bands = PriceBands.build(H100)
    one_cent = OfferFacts(gpu="H100", gpu_count=8, billing="on_demand", price_per_hour=0.01)
    (reason,) = check_offer(one_cent, bands)
    assert "$0.00125 per GPU-hour is far below" in reason
    per_gpu = OfferFacts(gpu="H100", gpu_count=8, billing="on_demand", price_per_hour=2.5)
    (reason,) = check_offer(per_gpu, bands)
    assert "looks like a per-GPU price listed as the instance price" in reason
    fine = OfferFacts(gpu="H100", gpu_count=8, billing="on_demand", price_per_hour=20.0)
    assert check_offer(fine, bands) == []


def test_thin_history_falls_back_to_pooled_bands_and_none_means_no_check() -> None:
    # only 2 spot points: the GPU's pooled band is used, shifted by the measured spot discount
    spot = [PricePoint("H100", "spot", 1.0, ("p", 0)), PricePoint("H100", "spot", 1.5, ("p", 1))]
    bands = PriceBands.build([*H100, *spot])
    assert bands.discount["spot"] == pytest.approx(math.log(((1 / 2) * (1.5 / 2)) ** 0.5))
    band = bands.band("H100", "spot")
    assert band is not None and "every billing" in band.basis
    # an unknown GPU falls back to every GPU's offers
    assert bands.band("B300", "on_demand").basis == "offers of every GPU"  # type: ignore[union-attr]
    # no history: nothing to compare with, so no price-band reason
    lone = OfferFacts(gpu="H100", gpu_count=1, billing="on_demand", price_per_hour=0.0001)
    assert check_offer(lone, PriceBands.build([])) == []


def test_spot_vram_ram_and_non_positive_rules() -> None:
    bands = PriceBands.build([])
    spot = OfferFacts(
        gpu="H100", gpu_count=1, billing="spot", price_per_hour=3.0, on_demand_price_per_hour=3.0
    )
    assert "is not below the on-demand price 3/h" in check_offer(spot, bands)[0]
    big = OfferFacts(
        gpu="GeForce RTX 4090",
        gpu_count=1,
        billing="on_demand",
        price_per_hour=None,
        vram_gib_per_gpu=80,
        catalog_vram_gib=24,
    )
    assert "impossible for the GeForce RTX 4090" in check_offer(big, bands)[0]
    modded = dataclasses.replace(big, vram_gib_per_gpu=48)
    assert check_offer(modded, bands) == []  # the 48 GB memory-modded card exists
    ram = OfferFacts(gpu=None, gpu_count=1, billing="on_demand", price_per_hour=1.0, ram_gib=1e6)
    assert "host RAM" in check_offer(ram, bands)[0]
    for bad in (0.0, -1.0, math.nan):
        zero = OfferFacts(gpu=None, gpu_count=1, billing="on_demand", price_per_hour=bad)
        assert "not a positive number" in check_offer(zero, bands)[0]
