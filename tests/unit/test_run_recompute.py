"""Measured rates counted at the activation checkpointing their runs used (issue 23, item 1:
"measured rates are normalised by their own checkpointing before they are pooled"): the
sources' wordings, torchtitan's op-level selective recompute in FLOPs, and the pooled rows
carried to their preset's checkpointing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.data.load import load_points, read_benchmarks, stated_checkpointing
from app.model.evidence import at_preset_recompute
from app.model.flops import RunRecompute, selective_recompute_params, training_flops_per_sample
from app.model.types import CheckpointGranularity, Method, Precision, Workload
from app.model.vocabulary import Architecture
from tests.unit.helpers import bench_point

SEED = Path(__file__).resolve().parents[2] / "seed_data"
SELECTIVE = RunRecompute(True, CheckpointGranularity.SELECTIVE)

#: Llama 2 70B as torchtitan's docs/performance.md ran it (seq 4096, pretraining)
LLAMA2_70B = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    params=68_976_648_192,
    layers=80,
    hidden_size=8192,
    heads=64,
    kv_heads=8,
    ffn_hidden_size=28672,
    vocab_size=32000,
    seq_len=4096,
    micro_batch_size=2,
    precision=Precision.BF16_AMP,
    samples_per_epoch=1000,
    benchmark_workloads=("Llama 2 70B",),
    benchmark_method="pretrain",
    units_per_sample=4096,
)


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        # llm-foundry's column, as the notes quote it
        ("seq 2048; activation checkpointing True; torch.compile False", RunRecompute(True)),
        ("activation checkpointing False: the table adds it later", RunRecompute(False)),
        # torchtitan docs/performance.md's column
        ("MFU 50.5%; local batch 2; activation checkpointing: full; 1D", RunRecompute(True)),
        ("MFU 53.8%; activation checkpointing: selective op; 1D", SELECTIVE),
        ("MFU 54.1%; activation checkpointing: selective layer; 1D", SELECTIVE),
        ("MFU 61.1%; local batch 2; activation checkpointing: no; 1D", RunRecompute(False)),
        # torchtitan benchmarks/llama3_h100_202412_torchtitan.md captions
        ("Local batch size 1. Full activation checkpointing.; configuration", RunRecompute(True)),
        ("global batch size 16. Selective activation checkpointing.; FSDP", SELECTIVE),
        # benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md
        ("FSDP=32, TP=8, torch.compile, full AC,  local batch size 16", RunRecompute(True)),
        ("FSDP=8, TP=8, torch.compile, per op SAC, local batch size 12", SELECTIVE),
        ("'56% model flops utilization' without activation checkpointing", RunRecompute(False)),
        ("activation checkpointing not stated in the log", None),
        ("Grand Teton hosts; TPS/GPU read at iteration 90", None),
    ],
)
def test_the_sources_wordings(notes: str, expected: RunRecompute | None) -> None:
    assert stated_checkpointing(notes) == expected


def test_every_torchtitan_row_that_states_it_carries_its_checkpointing() -> None:
    # 23 full (12 captions "Full activation checkpointing", 6 "full AC", 5 "activation
    # checkpointing: full"), 17 selective (6 captions, 6 "per op SAC", 3 "selective op",
    # 2 "selective layer") and Llama 2 13B's one row without; the two Trainy H200 rows
    # state none
    rows = [r for r in read_benchmarks(SEED) if r.source == "torchtitan"]
    stated = [stated_checkpointing(r.notes or "") for r in rows]
    assert stated.count(RunRecompute(True)) == 23
    assert stated.count(SELECTIVE) == 17
    assert stated.count(RunRecompute(False)) == 1
    assert stated.count(None) == 2
    points, checkpointing = load_points(SEED)
    seventy = {
        p.throughput_total / p.gpu_count: checkpointing[p.id]
        for p in points
        if p.source == "torchtitan" and p.workload == "Llama 2 70B"
    }
    assert seventy == {353.0: RunRecompute(True), 355.0: SELECTIVE}


def test_selective_recompute_is_the_even_numbered_matmuls_of_a_llama_block() -> None:
    # k (8,192 × 1,024) + o (8,192²) + w3 (8,192 × 28,672) per layer, 80 layers
    assert selective_recompute_params(LLAMA2_70B) == 80 * (8_388_608 + 67_108_864 + 234_881_024)
    assert selective_recompute_params(LLAMA2_70B) == 24_830_279_680
    assert selective_recompute_params(replace(LLAMA2_70B, layers=None)) is None


def test_training_flops_with_each_checkpointing() -> None:
    n, attention = 68_976_648_192, 80 * 8192 * 4096  # per token: N and L·h·s
    none = (6 * n + 12 * attention) * 4096
    full = (8 * n + 16 * attention) * 4096
    selective = (6 * n + 2 * 24_830_279_680 + 12 * attention) * 4096
    assert training_flops_per_sample(LLAMA2_70B) == none
    assert training_flops_per_sample(RunRecompute(True).of(LLAMA2_70B)) == full
    assert training_flops_per_sample(SELECTIVE.of(LLAMA2_70B)) == selective
    # granularity says nothing without checkpointing
    off = replace(LLAMA2_70B, checkpoint_granularity=CheckpointGranularity.SELECTIVE)
    assert training_flops_per_sample(off) == none
    # torchtitan's Llama 2 13B rows (A100 × 64, seq 4096): no AC 2,162 tokens/s, selective op
    # 1,904: measured 1.136× the time, counted 1.112× the FLOPs
    thirteen = replace(
        LLAMA2_70B, params=13_015_864_320, layers=40, hidden_size=5120, heads=40,
        kv_heads=40, ffn_hidden_size=13824,
    )  # fmt: skip
    ratio = training_flops_per_sample(SELECTIVE.of(thirteen)) / training_flops_per_sample(thirteen)
    measured = 2162 / 1904
    assert ratio == pytest.approx(1.112, abs=5e-4)
    assert measured == pytest.approx(1.1355, abs=5e-5)
    assert measured / ratio == pytest.approx(1.021, abs=5e-4)  # the count 2 % short


def test_pooled_rows_stand_at_their_presets_checkpointing() -> None:
    # torchtitan's full-AC row (353 tokens/s per GPU × 64) for the preset without AC:
    # × (8N + 16·L·h·s) / (6N + 12·L·h·s) = 4/3 (one more forward: 2N + 4·L·h·s)
    workloads = {("Llama 2 70B", "pretrain"): LLAMA2_70B}
    row = replace(
        bench_point("A100 SXM4 80GB", 353 * 64, 2, count=64, workload="Llama 2 70B",
                    seq_len=4096, unit="tokens/s", precision=Precision.BF16_AMP),
        method="pretrain",
    )  # fmt: skip
    other = replace(row, id=2)
    moved, kept = at_preset_recompute([row, other], workloads, {1: RunRecompute(True)})
    assert moved.throughput_total / 64 == pytest.approx(353 * 4 / 3)  # 470.67
    assert kept == other
    # a run stating its preset's own setting, or a label with no preset, stays as published
    assert at_preset_recompute([row], workloads, {1: RunRecompute(False)}) == [row]
    assert at_preset_recompute([replace(row, workload="?")], workloads, {1: SELECTIVE}) == [
        replace(row, workload="?")
    ]
    # a LoRA row is carried at the LoRA count (4N + 2R): no weight gradients of the base
    lora = replace(LLAMA2_70B, method=Method.LORA)
    (lora_row,) = at_preset_recompute(
        [replace(row, method="lora")], {("Llama 2 70B", "lora"): lora}, {1: SELECTIVE}
    )
    expected = training_flops_per_sample(SELECTIVE.of(lora)) / training_flops_per_sample(lora)
    assert lora_row.throughput_total == pytest.approx(353 * 64 * expected)


def test_the_same_network_measured_under_another_label_decides_alone() -> None:
    # nanoGPT's GPT-2 124M preset has no measured rows; llm.c's GPT-2 124M (the same 12
    # layers × 768, 12 heads, FFN 3,072, vocabulary 50,304) has, so the FLOPs model borrows
    # that network's rate alone, not a mean over every other decoder's
    from app.calibrate.dataset import load_dataset
    from app.calibrate.validate import served_data
    from app.model.throughput import ThroughputModel
    from app.model.throughput.flops_model import same_network

    ds = load_dataset(SEED)
    nanogpt = ds.presets["gpt2-124m-pretrain"].workload()
    llmc = ds.presets["gpt2-124m-pretrain-llmc"].workload()
    assert same_network(nanogpt, llmc)
    assert (nanogpt.params, llmc.params) == (124_373_760, 124_475_904)  # 0.08 % apart
    assert not same_network(nanogpt, replace(llmc, layers=24))
    assert not same_network(nanogpt, replace(llmc, params=2 * 124_475_904))
    # Transformer-XL large with its adaptive softmax is not Lambda's full-softmax run of it
    txl = ds.presets["transformer-xl-large-wt103"].workload()
    assert not same_network(txl, ds.presets["transformer-xl-large-wt103-lambda"].workload())
    assert not same_network(replace(nanogpt, kv_heads=None), replace(llmc, kv_heads=None))
    model = ThroughputModel(
        nanogpt, catalog=ds.catalog, flops_table=ds.flops_table, data=served_data(ds, ds.points)
    )
    _, situation, _, notes = model.single_gpu(ds.catalog["A100 SXM4 80GB"])
    assert situation.value == "flops_model"
    assert "from 1 measured transformer workload(s): GPT-2 124M" in notes[0]


def test_a_donors_rate_is_held_to_the_hardware_bound() -> None:
    # the FLOPs model borrows the FLOP rate a GPU executes: a donor without checkpointing is
    # held to its cell's highest HFU (transformer ≥20B 16-bit: 0.7523, llm-foundry's MPT-30B
    # with AC, whose MFU is 0.5642), not to the MFU checkpointed runs keep
    from app.model.calibration import load_calibration
    from app.model.throughput.rates import credible_rate
    from tests.unit.helpers import A100_80_SXM as A100

    cal = load_calibration()
    mfu_max, hfu_max = cal.mfu_range["transformer|>=20B|16"][2:4]
    both = credible_rate(LLAMA2_70B, A100, Precision.BF16_AMP, cal)
    hardware = credible_rate(LLAMA2_70B, A100, Precision.BF16_AMP, cal, hardware=True)
    assert both is not None and hardware is not None
    assert hardware[0] / both[0] == pytest.approx(hfu_max / mfu_max)  # 0.7523 / 0.5642
    flops = training_flops_per_sample(LLAMA2_70B)
    assert hardware[0] * flops == pytest.approx(hfu_max * 312e12)
    # with full checkpointing the two bounds are one (HFU = 4/3 MFU here, 0.7523 ≈ 4/3 × 0.5642)
    full = RunRecompute(True).of(LLAMA2_70B)
    hw_full = credible_rate(full, A100, Precision.BF16_AMP, cal, hardware=True)
    assert hw_full is not None
    assert hw_full[0] * training_flops_per_sample(full) == pytest.approx(hfu_max * 312e12)


def test_the_granularity_departs_from_the_preset_only_where_it_recomputes() -> None:
    from app.model.job import resolve
    from tests.unit.helpers import LLAMA3_8B, preset_reference

    presets = preset_reference("llama", dict(LLAMA3_8B)).presets  # full checkpointing
    w, reference, _ = resolve({"preset": "llama", "checkpoint_granularity": "selective"}, presets)
    assert reference is not None and not w.matches_preset
    # Llama 3 8B (seq 2048): 6N + 2R against 8N per token, R = 32 × (4,096 × 1,024 + 4,096²
    # + 4,096 × 14,336) = 2,550,136,832, N 8,030,261,248: the selective job does less
    assert training_flops_per_sample(w) < training_flops_per_sample(reference)
    assert selective_recompute_params(w) == 2_550_136_832
    off = preset_reference("llama", {**LLAMA3_8B, "gradient_checkpointing": False}).presets
    w, reference, _ = resolve({"preset": "llama", "checkpoint_granularity": "selective"}, off)
    assert reference is None and w.matches_preset


def test_the_same_network_unmeasured_at_fp8_stands_at_its_16_bit_rate() -> None:
    # llm.c measured GPT-2 124M at bf16 only: nanoGPT's preset at fp8 keeps that network's
    # 16-bit rate (fp8's gain unmeasured for it) rather than a mean over other fp8 decoders,
    # which had put it below its own bf16 answer on an L4
    from app.calibrate.dataset import load_dataset
    from app.calibrate.validate import served_data
    from app.model.throughput import ThroughputModel

    ds = load_dataset(SEED)
    nanogpt = ds.presets["gpt2-124m-pretrain"].workload()
    model = ThroughputModel(
        nanogpt, catalog=ds.catalog, flops_table=ds.flops_table, data=served_data(ds, ds.points)
    )
    l4 = ds.catalog["L4"]
    bf16 = model.flops_rate(nanogpt, l4, Precision.BF16_AMP)
    fp8 = model.flops_rate(replace(nanogpt, precision=Precision.FP8), l4, Precision.FP8)
    assert fp8[0] == bf16[0]
    assert fp8[3][-1] == "this network was not measured at fp8: estimated at bf16_amp's rate"
