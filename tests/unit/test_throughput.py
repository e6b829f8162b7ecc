"""Throughput model: measured lookup, spec scaling, FLOPs model, multi-GPU efficiency."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from app.calibrate.baselines import blend_speedup
from app.model.calibration import load_calibration
from app.model.flops import matmul_params, peak_tflops
from app.model.multigpu import multi_gpu_comm
from app.model.pooled import PooledData, rate_class
from app.model.throughput import (
    ThroughputModel,
    donor_weight,
    estimate_throughput,
    flops_peak_tflops,
    training_flops_per_sample,
)
from app.model.types import (
    Architecture,
    Basis,
    GpuSpec,
    Interconnect,
    Method,
    Precision,
    Situation,
    Workload,
)
from tests.unit.helpers import A100_80_SXM, BERT, GPT2, RTX_4090, bench_point, resnet50

point = bench_point


def test_peak_uses_fp32_accumulate_rate_on_geforce() -> None:
    assert peak_tflops(RTX_4090, Precision.FP16_AMP) == 165.2  # not the 330.3 FP16-acc peak
    assert peak_tflops(A100_80_SXM, Precision.BF16_AMP) == 312
    assert peak_tflops(A100_80_SXM, Precision.TF32) == 156
    assert peak_tflops(A100_80_SXM, Precision.FP32) == 19.5


def test_measured_picks_nearest_batch() -> None:
    pts = [
        point("A100 SXM4 80GB", 443, 320, pid=1),
        point("A100 SXM4 80GB", 374, 176, pid=2, version="1.10"),
    ]
    tp = estimate_throughput(BERT, A100_80_SXM, points=pts)
    assert tp.basis == Basis.MEASURED and tp.situation == Situation.MEASURED
    # the newest software level (1.13) is the reference; the 1.10 row is another suite
    assert tp.samples_per_s == pytest.approx(443, rel=0.01)
    assert 1 in [e.benchmark_id for e in tp.evidence]


def test_blend_speedup_hand_worked() -> None:
    # t_B/t_A = 0.3 * 312/165.2 + 0.7 * 2039/1008 = 0.5666 + 1.4160 = 1.9825 -> 0.5044x
    assert blend_speedup(A100_80_SXM, RTX_4090, Precision.FP16_AMP, 0.3) == pytest.approx(
        1 / (0.3 * 312 / 165.2 + 0.7 * 2039 / 1008)
    )


def _card(name: str, arch: str, vram_gib: float, bw: float, **fields: Any) -> GpuSpec:
    """A made-up GPU: ``vram_gib`` GiB at ``bw`` GB/s, ``fields`` (peaks, market) added."""
    return GpuSpec(
        name=name, architecture=arch, vram_gib=vram_gib, memory_bandwidth_gbs=bw, **fields
    )


def _gpu(name: str, arch: str, peak: float, bw: float) -> GpuSpec:
    """A 24 GiB card whose mixed-precision peak is ``peak`` TFLOPS (fp32 1/8, tf32 1/2)."""
    return _card(
        name, arch, 24, bw, fp32_tflops=peak / 8, tf32_tflops=peak / 2, fp16_fp32acc_tflops=peak
    )


def test_pooled_model_recovers_a_spec_law_on_an_unmeasured_gpu() -> None:
    # synthetic "measurements" following throughput = 2 * peak^0.3 * bandwidth^0.6 on six
    # GPUs of two architectures; an unmeasured Ampere GPU is predicted from its siblings
    specs = [
        ("a", "Ampere", 70, 900),
        ("b", "Ampere", 125, 600),
        ("c", "Ampere", 312, 2000),
        ("d", "Hopper", 989, 3350),
        ("e", "Hopper", 756, 2000),
        ("f", "Ampere", 165, 1000),
    ]
    gpus = [_gpu(*s) for s in specs]

    def truth(g: GpuSpec) -> float:
        return 0.2 * g.fp16_fp32acc_tflops**0.3 * g.memory_bandwidth_gbs**0.6  # type: ignore[operator]

    pts = [point(g.name, truth(g), 320, pid=i) for i, g in enumerate(gpus)]
    catalog = {g.name: g for g in gpus}
    new = _gpu("new", "Ampere", 400, 1500)
    tp = estimate_throughput(BERT, new, points=pts, catalog=catalog)
    assert tp.situation == Situation.SIBLING and tp.basis == Basis.SCALED
    assert tp.samples_per_s == pytest.approx(truth(new), rel=0.05)
    assert tp.samples_per_s_low < tp.samples_per_s < tp.samples_per_s_high


def test_training_flops_per_sample_gpt2() -> None:
    # PaLM: 6N + 12 L h s per token, times s tokens
    expected = (6 * 124_373_760 + 12 * 12 * 768 * 1024) * 1024
    assert training_flops_per_sample(GPT2) == expected
    lora = dataclasses.replace(GPT2, method=Method.LORA)
    assert training_flops_per_sample(lora) == (4 * 124_373_760 + 12 * 12 * 768 * 1024) * 1024


def test_training_flops_per_sample_encoder_leaves_out_the_embedding_lookup() -> None:
    # BERT-base on SQuAD: the 30,522 x 768 token table is a lookup and there is no
    # vocabulary head, so N = 109,483,778 - 23,440,896 = 86,042,882 (Kaplan et al. 2020)
    bert = dataclasses.replace(BERT, vocab_size=30522)
    assert matmul_params(bert) == 86_042_882
    expected = (6 * 86_042_882 + 12 * 12 * 768 * 384) * 384
    assert training_flops_per_sample(bert) == expected
    # without a vocabulary size nothing is left out; a decoder keeps its head's parameters
    assert matmul_params(BERT) == 109_483_778
    assert matmul_params(dataclasses.replace(GPT2, vocab_size=50257)) == GPT2.params
    # a table larger than the model (an adaptive embedding the fields cannot express)
    big = dataclasses.replace(bert, vocab_size=300_000)
    assert matmul_params(big) == 109_483_778


def test_donor_weight_is_size_similarity_params_for_transformers_flops_for_cnns() -> None:
    # a transformer donor twice the size: 1 / (0.25 + ln 2) = 1.0603
    donor = ("transformer", 1.0, 1.0, 2 * GPT2.params)  # type: ignore[operator]
    assert donor_weight("transformer", donor, GPT2, 123.0) == pytest.approx(
        1 / (0.25 + math.log(2))
    )
    # a CNN donor: its FLOPs per sample, not its parameters (VGG-16 30.94 vs ResNet-50
    # 8.178 forward GFLOPs: 1 / (0.25 + ln 3.783) = 1 / 1.5806 = 0.6327)
    resnet = resnet50(micro_batch_size=256, samples_per_epoch=1)
    vgg = ("cnn", 3 * 30.94e9, 3 * 30.94e9, 138_357_544)
    own = training_flops_per_sample(resnet)
    assert own == pytest.approx(3 * 8.178e9)
    assert donor_weight("cnn", vgg, resnet, own) == pytest.approx(0.6327, abs=1e-4)
    # the same size weighs 4; an unknown size weighs 1
    assert donor_weight("cnn", ("cnn", 1.0, own, None), resnet, own) == pytest.approx(4.0)
    assert donor_weight("transformer", ("transformer", 1.0, 1.0, None), GPT2, 1.0) == 1.0


def test_flops_model_uses_fitted_flop_rate_without_any_measurement() -> None:
    a, b, c = load_calibration().flops_rate_model["transformer|16"]
    # log FLOP/s = a + b log(peak) + c log(bandwidth): 312 TFLOPS, 2039 GB/s
    rate = math.exp(a + b * math.log(312) + c * math.log(2039))
    # micro-batch law b / (b + b0), b0 = 1024 tokens at width 1024 (no data) = 1024 × 1024 /
    # (1024 tokens × GPT-2's width √(124,373,760 / 144) = 929.36) = 1.1018 samples;
    # micro-batch 1: 1 / 2.1018 = 0.47577
    expected = rate / training_flops_per_sample(GPT2) / (1 + 1024 / math.sqrt(124_373_760 / 144))
    tp = estimate_throughput(GPT2, A100_80_SXM)
    assert tp.basis == Basis.FLOPS_MODEL
    assert tp.samples_per_s == pytest.approx(expected)


def test_flops_model_transfers_achieved_flops_of_other_workloads() -> None:
    # BERT measured on four GPUs; GPT-2 (no measurement) gets the FLOP rate BERT reaches on
    # the A100 it was measured on: 443 * flops(BERT) / flops(GPT-2). On an unmeasured GPU the
    # donor's own time model supplies BERT's rate, so GPUs keep a consistent order.
    v100 = dataclasses.replace(
        A100_80_SXM,
        name="V",
        architecture="Volta",
        memory_bandwidth_gbs=900,
        fp16_fp32acc_tflops=125,
        bf16_tflops=None,
        tf32_tflops=None,
        fp32_tflops=15.7,
    )
    h100 = dataclasses.replace(
        A100_80_SXM,
        name="H",
        architecture="Hopper",
        memory_bandwidth_gbs=3350,
        fp16_fp32acc_tflops=989.5,
        bf16_tflops=989.5,
        tf32_tflops=494.5,
        fp32_tflops=67,
    )
    bert_flops = training_flops_per_sample(BERT)
    table = {("BERT-base uncased", "full"): ("transformer", bert_flops, bert_flops, 109_483_778)}
    pts = [
        point("A100 SXM4 80GB", 443, 320, pid=1),
        point("GeForce RTX 4090", 255, 320, pid=2),
        point("V", 189, 320, pid=3),
        point("H", 870, 320, pid=4),
    ]
    catalog = {g.name: g for g in (A100_80_SXM, RTX_4090, v100, h100)}
    model = ThroughputModel(GPT2, points=pts, catalog=catalog, flops_table=table)
    rate, basis, _evidence, _ = model.single_gpu(A100_80_SXM)
    assert basis == Basis.FLOPS_MODEL
    # BERT's saturated rate (÷ 320 / (320 + 1024/384): no preset workload is given for the
    # donor, so its own group's law and no width shift), GPT-2 at micro-batch 1: 0.47577
    # (test above)
    saturated = 443 / (320 / (320 + 1024 / 384))
    expected = saturated * bert_flops / training_flops_per_sample(GPT2) * 0.47577
    assert rate == pytest.approx(expected, rel=0.05)
    unmeasured = dataclasses.replace(A100_80_SXM, name="A100 PCIe", memory_bandwidth_gbs=1935)
    slower = model.single_gpu(unmeasured)[0]
    assert model.single_gpu(v100)[0] < slower < rate


def test_multi_gpu_efficiency_hand_worked() -> None:
    # 1e9 params, fp32 grads (4 B) = 4e9 B over 8 GPUs on PCIe P2P; t_step = 32 / 100 = 0.32 s;
    # exposed = t_comm - overlap * backward share (2/3) * 0.32; eta = 0.32 / (0.32 + exposed)
    gpu = _card("X", "Ampere", 48, 768, market="professional")
    w = Workload(
        architecture=Architecture.CNN,
        params=1_000_000_000,
        micro_batch_size=32,
        precision=Precision.FP16_AMP,
        samples_per_epoch=1,
    )
    # and the per-doubling loss: (1 - kappa)^log2(8); the PCIe P2P bus bandwidth is the
    # published 0.762 of x16 gen4 (seed_data/link_bandwidth.csv), 42 us per 25 MiB bucket
    busbw = 0.762 * 31.5e9
    t_comm = 2 * 7 / 8 * 4e9 / busbw + 153 * 42e-6
    exposed = max(0.0, t_comm - load_calibration().comm_overlap * 2 / 3 * 0.32)
    loss = (1 - load_calibration().scaling_loss_per_doubling) ** 3
    eta = multi_gpu_comm(w, gpu, 8, Interconnect.PCIE, 100.0).efficiency
    assert eta == pytest.approx(loss * 0.32 / (0.32 + exposed))
    # a 30-second step hides the 0.3 s all-reduce entirely (overlap > 0.05): the loss alone
    if load_calibration().comm_overlap > 0.05:
        assert multi_gpu_comm(w, gpu, 8, Interconnect.PCIE, 32 / 30).efficiency == pytest.approx(
            loss
        )
    assert multi_gpu_comm(w, gpu, 1, Interconnect.PCIE, 100.0).efficiency == 1.0


def test_multi_gpu_measured_row_is_used_for_same_count() -> None:
    pts = [
        point("A100 SXM4 80GB", 443, 320, pid=1),
        point("A100 SXM4 80GB", 3000, 320, count=8, pid=2, interconnect="nvlink"),
    ]
    tp = estimate_throughput(
        BERT, A100_80_SXM, gpu_count=8, interconnect=Interconnect.NVLINK, points=pts
    )
    assert tp.basis == Basis.MEASURED
    assert tp.samples_per_s == pytest.approx(3000, rel=0.01)
    assert tp.multi_gpu_efficiency == pytest.approx(3000 / (443 * 8), rel=0.01)


def test_rates_are_the_figures_of_the_estimate() -> None:
    # the measured 8-GPU NVLink row (3,000/s), the link model elsewhere, fractional counts,
    # NVLink asked of a card without it, an SXM board listed without a link
    pts = [
        point("A100 SXM4 80GB", 443, 320, pid=1),
        point("A100 SXM4 80GB", 3000, 320, count=8, pid=2, interconnect="nvlink"),
    ]
    catalog = {g.name: g for g in (A100_80_SXM, RTX_4090)}
    a = ThroughputModel(BERT, points=pts, catalog=catalog)
    b = ThroughputModel(BERT, points=pts, catalog=catalog)
    seen = set()
    for gpu in (A100_80_SXM, RTX_4090):
        for n in (0.5, 1, 1.5, 2, 3, 8, 16):
            for link in (None, Interconnect.PCIE, Interconnect.NVLINK):
                tp = b.estimate(gpu, n, link)
                figures = (tp.samples_per_s, tp.samples_per_s_low, tp.samples_per_s_high)
                assert a.rates(gpu, n, link) == (*figures, tp.precision)
                seen.add(tp.multi_gpu_basis)
    assert a.rates(A100_80_SXM, 8, Interconnect.NVLINK)[0] == pytest.approx(3000, rel=0.01)
    assert seen == {None, "measured", "model"}


def test_departing_from_preset_scales_by_flops() -> None:
    pts = [point("A100 SXM4 80GB", 443, 320)]
    longer = dataclasses.replace(BERT, seq_len=512, matches_preset=False)
    cal = dataclasses.replace(load_calibration(), width_h0={"transformer": 1000.0})
    tp = estimate_throughput(longer, A100_80_SXM, points=pts, reference=BERT, cal=cal)
    assert tp.basis == Basis.SCALED and tp.situation == Situation.DERIVED

    # time-weighted FLOPs per sample: 6N per token at width efficiency h / (h + 1000)
    # (h = √(109,483,778 / 144) = 871.95) plus attention 12·L·h·s per token, × s tokens
    def weighted(s: int) -> float:
        return (6 * 109_483_778 * (1 + 1000 / 871.95) + 12 * 12 * 768 * s) * s

    assert tp.samples_per_s == pytest.approx(443 * weighted(384) / weighted(512), rel=0.01)
    # faster than the plain FLOPs ratio says: the longer sequence adds attention FLOPs,
    # which carry none of the memory-bound work charged to the 6N part
    plain = training_flops_per_sample(BERT) / training_flops_per_sample(longer)
    assert tp.samples_per_s > 443 * plain


def test_a_gpu_without_16_bit_units_runs_mixed_precision_at_its_fp32_rate() -> None:
    # GeForce Pascal: no tensor cores, fp16 arithmetic at 1/64 rate; the catalog lists no
    # 16-bit figure, so mixed precision runs its matmuls in fp32
    pascal = _card("pascal", "Pascal", 11, 484, fp32_tflops=11.3)
    assert rate_class(pascal, Precision.FP16_AMP) == "32"
    assert rate_class(pascal, Precision.FP32) == "32"
    assert rate_class(A100_80_SXM, Precision.FP16_AMP) == "16"
    specs = [("a", "Ampere", 70, 900), ("b", "Ampere", 125, 600), ("c", "Hopper", 989, 3350)]
    gpus = [_gpu(*s) for s in specs]
    pts = [
        point(g.name, 100.0 * (i + 1) * k, 320, pid=2 * i + j, precision=p)
        for i, g in enumerate(gpus)
        for j, (p, k) in enumerate(((Precision.FP16_AMP, 2.0), (Precision.FP32, 1.0)))
    ]
    catalog = {g.name: g for g in [*gpus, pascal]}
    half = estimate_throughput(BERT, pascal, points=pts, catalog=catalog)
    full = estimate_throughput(BERT, pascal, points=pts, catalog=catalog, precision=Precision.FP32)
    # same features, same class: the 16-bit estimate is the fp32 one, not a tensor-core one
    assert half.samples_per_s == pytest.approx(full.samples_per_s, rel=1e-9)
    assert any("no fast 16-bit math" in n for n in half.notes)
    assert not any("no fast 16-bit math" in n for n in full.notes)


def test_a_precision_never_measured_is_named_a_precision_switch() -> None:
    specs = [("a", "Ampere", 70, 900), ("b", "Ampere", 125, 600), ("c", "Hopper", 989, 3350)]
    gpus = [_gpu(*s) for s in specs]
    pts = [point(g.name, 100.0 * (i + 1), 320, pid=i) for i, g in enumerate(gpus)]
    catalog = {g.name: g for g in gpus}
    fp16 = estimate_throughput(BERT, gpus[0], points=pts, catalog=catalog)
    assert fp16.situation == Situation.MEASURED
    fp32 = estimate_throughput(BERT, gpus[0], points=pts, catalog=catalog, precision=Precision.FP32)
    assert fp32.situation == Situation.PRECISION_SWITCH and fp32.basis == Basis.SCALED
    assert "only at another precision" in fp32.notes[0]
    low, high = load_calibration().range_factors["precision_switch"]
    assert fp32.samples_per_s_low == pytest.approx(fp32.samples_per_s * low)
    # the high end stops at the datasheet peak (this made-up GPU's fp32 rate sits near it)
    ceiling = flops_peak_tflops(gpus[0], Precision.FP32) * 1e12 / training_flops_per_sample(BERT)
    assert fp32.samples_per_s * high > ceiling
    assert fp32.samples_per_s_high == pytest.approx(ceiling)


def test_a_gpu_measured_only_on_several_sxm_boards_is_converted_over_nvlink() -> None:
    # an SXM board only comes on an NVLink baseboard: an unlisted link is NVLink, as served
    rows = [
        point("A100 SXM4 80GB", 6e3, 32, count=8, interconnect=x) for x in (None, "nvlink", "pcie")
    ]
    single = [
        PooledData([r], {"A100 SXM4 80GB": A100_80_SXM}, {("BERT-base uncased", "full"): BERT})
        .obs_by_family["transformer"][0]
        .y
        for r in rows
    ]
    assert single[0] == pytest.approx(single[1], rel=1e-12)
    # (the link matters where the all-reduce is exposed: 6,000 sequences/s on 8 GPUs, a
    # plausible rate (issue 23 holds the 3e6/s this test used as implausible), at micro-batch
    # 32 is a 43 ms step, too short to hide BERT-base's 220 MB of gradients over PCIe)
    assert single[2] > single[1] + 0.1


def test_another_version_of_a_measured_suite_is_predicted_at_that_suites_level() -> None:
    specs = [("a", "Ampere", 70, 900), ("b", "Ampere", 125, 600), ("c", "Hopper", 989, 3350)]
    gpus = [_gpu(*s) for s in specs]
    pts = [point(g.name, 100.0 * (i + 1), 320, pid=i) for i, g in enumerate(gpus)]
    pts.append(
        dataclasses.replace(point("b", 50.0, 320, pid=9), source="other", framework_version="2.0")
    )
    data = PooledData(pts, {g.name: g for g in gpus}, {("BERT-base uncased", "full"): BERT})
    group = ("BERT-base uncased", "full")
    assert data.level_of(group, "other@2.0").source == "other"
    # a version the data lacks: the source's level (its version deviation is unknown, 0)
    newer = data.level_of(group, "other@2.5")
    assert (newer.source, newer.suite) == ("other", "other@2.5")
    # a source the data lacks: the reference level (the suite that measured most GPUs)
    assert data.level_of(group, "unknown@1.0").source == point("a", 1, 1).source


def test_fp8_stands_at_the_measured_16_bit_precision_when_never_measured_at_fp8() -> None:
    fp8 = dataclasses.replace(BERT, precision=Precision.FP8)
    catalog = {"A100 SXM4 80GB": A100_80_SXM}
    half = [point("A100 SXM4 80GB", 443, 32, pid=1), point("A100 SXM4 80GB", 450, 32, pid=2)]
    fp32 = [point("A100 SXM4 80GB", 150, 32, pid=3, precision=Precision.FP32)]
    # two fp16_amp rows and one fp32 row: the estimate stands at fp16_amp
    model = ThroughputModel(fp8, points=half + fp32, catalog=catalog)
    assert model.stand_in_precision(Precision.FP8) == Precision.FP16_AMP
    assert model.stand_in_precision(Precision.FP32) == Precision.FP32
    # an fp8 row of the workload: fp8 is estimated as fp8
    own = [point("A100 SXM4 80GB", 600, 32, pid=4, precision=Precision.FP8)]
    with_fp8 = ThroughputModel(fp8, points=half + own, catalog=catalog)
    assert with_fp8.stand_in_precision(Precision.FP8) == Precision.FP8
    # fp32 rows only: no 16-bit rate to stand on; without FLOPs (no params) nothing to estimate
    no_flops = dataclasses.replace(fp8, params=None)
    only32 = ThroughputModel(no_flops, points=fp32, catalog=catalog)
    assert only32.stand_in_precision(Precision.FP8) == Precision.FP8
    assert not only32.can_estimate()
    assert ThroughputModel(no_flops, points=half + fp32, catalog=catalog).can_estimate()
