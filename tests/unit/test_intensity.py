"""Arithmetic intensity in the FLOPs model: forward FLOPs per activation element."""

from __future__ import annotations

import csv
import dataclasses
import math

import pytest

from app.calibrate.validate import shrunk_slope
from app.model.calibration import Calibration, load_calibration
from app.model.throughput import (
    ThroughputModel,
    donor_weight,
    forward_intensity,
    training_flops_per_sample,
)
from app.model.types import BenchmarkPoint, Situation
from app.settings import PROJECT_ROOT
from tests.unit.helpers import A100_80_SXM, DLE_MEASURED, RTX_4090, bench_point, resnet50

#: ResNet-50 at 224 px: 8.178 forward GFLOPs (torchvision), 11.11 M activations (timm)
RESNET = resnet50(
    micro_batch_size=256,
    samples_per_epoch=1,
    forward_activations_per_sample=11.11,
    benchmark_workloads=("ResNet-50 v1.5",),
    **DLE_MEASURED,
)


def test_forward_intensity_is_flops_per_activation_element() -> None:
    # 8.178e9 FLOPs / 11.11e6 elements = 736.1
    assert forward_intensity(RESNET) == pytest.approx(736.09, abs=0.01)
    assert (
        forward_intensity(dataclasses.replace(RESNET, forward_activations_per_sample=None)) is None
    )
    assert forward_intensity(dataclasses.replace(RESNET, forward_gflops_per_sample=None)) is None


def test_cnn_donor_weight_is_intensity_similarity_when_both_are_known() -> None:
    # VGG-16: 30.94 GFLOPs / 13.56 M = 2281.7 per element, 3.0997 × ResNet-50's 736.1:
    # 1 / (0.25 + ln 3.0997) = 1 / 1.3813 = 0.7239 (by FLOPs size it would be 0.6327)
    vgg = dataclasses.replace(
        RESNET, forward_gflops_per_sample=30.94, forward_activations_per_sample=13.56
    )
    entry = ("cnn", 3 * 30.94e9, 3 * 30.94e9, 138_357_544)
    own = training_flops_per_sample(RESNET)
    assert own is not None
    assert donor_weight("cnn", entry, RESNET, own, vgg) == pytest.approx(0.7239, abs=1e-4)
    # a donor without an activation count falls back to FLOPs-size similarity
    no_acts = dataclasses.replace(vgg, forward_activations_per_sample=None)
    assert donor_weight("cnn", entry, RESNET, own, no_acts) == pytest.approx(0.6327, abs=1e-4)


def _row(gpu: str, total: float, pid: int) -> BenchmarkPoint:
    return bench_point(
        gpu, total, 256, pid=pid, workload="ResNet-50 v1.5", seq_len=None, unit="images/s"
    )


def test_flops_model_moves_the_donor_rate_along_the_intensity_slope() -> None:
    # One donor, ResNet-50 (intensity 736.1), measured on two GPUs. A never-measured CNN with
    # the same FLOPs and a quarter of the activations has 4 × the intensity: at slope 0.5 its
    # FLOP rate is 4 ** 0.5 = 2 × the donor's; without an activation count it is the donor's.
    half = dataclasses.replace(load_calibration(), intensity_slope={"cnn": 0.5})
    flops = training_flops_per_sample(RESNET)
    assert flops is not None
    table = {("ResNet-50 v1.5", "full"): ("cnn", flops, flops, RESNET.params)}
    catalog = {g.name: g for g in (A100_80_SXM, RTX_4090)}
    rows = [_row("A100 SXM4 80GB", 2500, 1), _row("GeForce RTX 4090", 1400, 2)]
    donors = {("ResNet-50 v1.5", "full"): RESNET}

    def rate(acts: float | None, cal: Calibration = half) -> float:
        target = dataclasses.replace(
            RESNET,
            forward_activations_per_sample=acts,
            benchmark_workloads=(),
            benchmark_method=None,
        )
        model = ThroughputModel(
            target, points=rows, catalog=catalog, flops_table=table, workloads=donors, cal=cal
        )
        value, situation, _, _ = model.single_gpu(A100_80_SXM)
        assert situation == Situation.FLOPS_MODEL
        return value

    model = ThroughputModel(
        dataclasses.replace(RESNET, benchmark_workloads=(), benchmark_method=None),
        points=rows,
        catalog=catalog,
        flops_table=table,
        workloads=donors,
        cal=half,
    )
    note = model.single_gpu(A100_80_SXM)[3][0]
    assert "arithmetic intensity (736 forward FLOPs per activation element" in note
    assert "(0.50)" in note
    plain = rate(None)
    assert rate(11.11) == pytest.approx(plain)
    # the smooth credible-MFU bound (issue 23) takes up to 0.1 % off a rate near half the
    # CNN maximum
    assert rate(11.11 / 4) == pytest.approx(2 * plain, rel=2e-3)
    flat = dataclasses.replace(half, intensity_slope={})
    assert rate(11.11 / 4, flat) == pytest.approx(plain)


def test_shrunk_slope_hand_worked() -> None:
    # (0,0), (1,1), (2,1): OLS slope 1/2, residual variance (1/36 + 1/9 + 1/36) / 1 = 1/6;
    # prior sd 0.5: 1 / (2 + (1/6) / 0.25) = 0.375
    assert shrunk_slope([(0, 0), (1, 1), (2, 1)], 0.5) == pytest.approx(0.375)
    # an exact line of slope 2 has no residual: 2, clipped to the roofline's 1
    assert shrunk_slope([(0, 0), (1, 2), (2, 4)], 0.5) == 1.0
    # a falling trend is clipped to 0; equal x carry no slope
    assert shrunk_slope([(0, 1), (1, 0), (2, -1.5)], 0.5) == 0.0
    assert shrunk_slope([(1, 0), (1, 1), (1, 2)], 0.5) == 0.0
    # a tight prior keeps a noisy slope at the rule without intensity (0)
    assert math.isclose(shrunk_slope([(0, 0), (1, 1), (2, 1)], 1e-6), 0.0, abs_tol=1e-9)


def test_alexnet_activation_count_is_torchvision_alexnets_conv_and_linear_outputs() -> None:
    # fvcore counts the output elements of every convolution and linear layer; torchvision's
    # AlexNet at 224: conv1 64 x 55 x 55, conv2 192 x 27 x 27, conv3 384 x 13 x 13, conv4 and
    # conv5 256 x 13 x 13, fc6/fc7/fc8 4096 + 4096 + 1000 = 494,184 elements
    outputs = [64 * 55**2, 192 * 27**2, 384 * 13**2, 256 * 13**2, 256 * 13**2, 4096, 4096, 1000]
    assert sum(outputs) == 494_184
    with (PROJECT_ROOT / "seed_data" / "workloads.csv").open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["preset"] == "alexnet-imagenet-tf")
    assert float(row["forward_activations_per_sample"]) == pytest.approx(0.494184, abs=5e-4)
    # 1.428 GFLOPs / 0.494 M elements = 2,890.7 FLOPs per element: above VGG-16's 2,281.7
    alexnet = dataclasses.replace(
        RESNET, forward_gflops_per_sample=1.428, forward_activations_per_sample=0.494
    )
    assert forward_intensity(alexnet) == pytest.approx(2890.7, abs=0.1)
