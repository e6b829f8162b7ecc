"""The form of an estimate on an unmeasured architecture (app/model/throughput/extrapolate.py):
the anchored forms' arithmetic, the nearest measured GPU, the served path's use of the
calibration's form, and the choice by leave-one-architecture-out."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from app.calibrate.dataset import Dataset, load_dataset
from app.calibrate.validate import served_data
from app.model.calibration import load_calibration
from app.model.flops import flops_peak_tflops
from app.model.pooled import PooledData
from app.model.throughput import ThroughputModel
from app.model.throughput.extrapolate import FORMS, NEAR, choose_forms, form_log_rates, nearest_k
from app.model.types import Precision, Situation
from app.settings import PROJECT_ROOT

GROUP = ("ResNet-50 v1.5", "full")


@pytest.fixture(scope="module")
def ds() -> Dataset:
    return load_dataset(PROJECT_ROOT / "seed_data")


@pytest.fixture(scope="module")
def no_hopper(ds: Dataset) -> PooledData:
    """The seed data without any Hopper row of ResNet-50 v1.5: H100 is a new architecture."""
    points = [
        p
        for p in ds.points
        if not (p.workload == GROUP[0] and ds.catalog[p.gpu].architecture == "Hopper")
    ]
    return served_data(ds, points)


def test_anchored_forms_carry_the_nearest_measured_gpu_by_peak_and_bandwidth(
    ds: Dataset, no_hopper: PooledData
) -> None:
    h100, a100 = ds.catalog["H100 SXM 80GB"], ds.catalog["A100 SXM4 80GB"]
    level = no_hopper.level_of(GROUP, None, False)
    assert level is not None and not no_hopper.has_sibling(GROUP, h100)
    got = form_log_rates(no_hopper, GROUP, h100, Precision.BF16_AMP, 256, level)
    assert got is not None
    rates, ref = got
    # the nearest measured GPU in (peak, bandwidth) of another architecture
    assert ref.name == "A100 SXM4 80GB" and ref.architecture == "Ampere"
    anchor = no_hopper.predict(GROUP, a100, Precision.BF16_AMP, 256, level)[0]
    bw = math.log(3350 / 2039)  # H100 SXM vs A100 SXM4 80GB, GB/s (seed catalog)
    peak = math.log(
        flops_peak_tflops(h100, Precision.BF16_AMP) / flops_peak_tflops(a100, Precision.BF16_AMP)
    )
    assert rates["ratio:0"] == pytest.approx(anchor + bw)  # the bandwidth-ratio baseline
    assert rates["ratio:1"] == pytest.approx(anchor + peak)
    assert rates["ratio:0.5"] == pytest.approx(anchor + 0.5 * (bw + peak))
    assert set(rates) == set(FORMS)


def test_near_forms_average_the_ratio_form_over_the_three_nearest_anchors(
    ds: Dataset, no_hopper: PooledData
) -> None:
    h100 = ds.catalog["H100 SXM 80GB"]
    level = no_hopper.level_of(GROUP, None, False)
    assert level is not None
    refs = nearest_k(no_hopper, GROUP, h100, Precision.BF16_AMP, "Hopper")
    # |ln peak ratio| + |ln bandwidth ratio| to H100 SXM (312 vs 989.5 TFLOP/s bf16 for all
    # four A100s; 2039, 1935, 1555, 1555 GB/s vs 3350): the three nearest are A100s, by
    # bandwidth, the 1555 GB/s tie broken by name
    assert NEAR == 3
    assert [g.name for g in refs[:4]] == [
        "A100 SXM4 80GB",
        "A100 PCIe 80GB",
        "A100 PCIe 40GB",
        "A100 SXM4 40GB",
    ]
    got = form_log_rates(no_hopper, GROUP, h100, Precision.BF16_AMP, 256, level)
    assert got is not None
    rates, ref = got
    assert ref.name == "A100 SXM4 80GB"
    peak = math.log(989.5 / 312)  # dense bf16 TFLOP/s, H100 SXM over A100 (seed catalog)
    carried = []
    for g in refs[:3]:
        anchor = no_hopper.predict(GROUP, g, Precision.BF16_AMP, 256, level)[0]
        carried.append((anchor, math.log(3350 / g.memory_bandwidth_gbs)))
    assert rates["near:0"] == pytest.approx(sum(a + bw for a, bw in carried) / 3)
    assert rates["near:1"] == pytest.approx(sum(a + peak for a, _ in carried) / 3)
    assert rates["near:0.25"] == pytest.approx(
        sum(a + 0.25 * peak + 0.75 * bw for a, bw in carried) / 3
    )
    # one anchor: the ratio forms stand on the nearest alone
    assert rates["ratio:0"] == pytest.approx(carried[0][0] + carried[0][1])


def test_the_served_path_uses_the_calibrations_form_only_where_extrapolated(
    ds: Dataset, no_hopper: PooledData
) -> None:
    preset = ds.presets["resnet50-imagenet"]
    h100, a100 = ds.catalog["H100 SXM 80GB"], ds.catalog["A100 SXM4 80GB"]
    cal = load_calibration()

    def estimate(forms: dict[str, str], gpu_name: str) -> tuple[float, tuple[str, ...]]:
        model = ThroughputModel(
            preset.workload(precision="bf16_amp"),
            catalog=ds.catalog,
            flops_table=ds.flops_table,
            data=no_hopper,
            cal=replace(cal, extrapolation_form=forms),
        )
        est = model.estimate(ds.catalog[gpu_name])
        # H100 stands on no Hopper measurement of the workload; A100 on its own rows
        assert (est.situation == Situation.EXTRAPOLATED) == (gpu_name == h100.name)
        return est.samples_per_s, est.notes

    bw_only, notes = estimate({"cnn": "ratio:0"}, h100.name)
    peak_only, _ = estimate({"cnn": "ratio:1"}, h100.name)
    pooled, pooled_notes = estimate({}, h100.name)
    # ratio:1 / ratio:0 is the peak ratio over the bandwidth ratio (no cap binds here)
    expected = (
        flops_peak_tflops(h100, Precision.BF16_AMP)
        / flops_peak_tflops(a100, Precision.BF16_AMP)
        / (3350 / 2039)
    )
    assert peak_only / bw_only == pytest.approx(expected, rel=1e-6)
    assert any("nearest measured GPU, A100 SXM4 80GB" in n for n in notes)
    assert not any("nearest measured GPU" in n for n in pooled_notes)
    assert pooled not in (bw_only, peak_only)
    # a GPU whose architecture was measured is untouched by the form
    assert estimate({"cnn": "ratio:0"}, a100.name)[0] == estimate({}, a100.name)[0]


def test_the_form_is_chosen_per_family_and_pooled_without_enough_inner_rows(
    no_hopper: PooledData,
) -> None:
    chosen = choose_forms(no_hopper, ["cnn", "no such family"])
    assert chosen["no such family"] == "pooled"  # no observations: never another form
    assert chosen["cnn"] in FORMS
