"""Physics over a sweep (issue 23): every preset and a grid of custom shapes × every catalog
GPU with a tensor peak × precisions × GPU counts, through the served estimator on the seed
data (in-process, no database).

* no answer implies more MFU than the credible maximum of its family, size and precision
  (``mfu_range`` of app/model/calibration.json, docs/mfu_table.md), nor more HFU;
* fp8 rows never raise a bf16 answer (the same data without them gives no lower answer);
* activation checkpointing on is never faster than off;
* the same job with and without a preset agrees within 10 % where the fields are equal.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from app.calibrate.dataset import Dataset, load_dataset
from app.calibrate.validate import served_data
from app.model.mfu import credible_max
from app.model.pooled import PooledData, family
from app.model.stacks import Stack
from app.model.throughput import ThroughputModel
from app.model.types import (
    Architecture,
    GpuSpec,
    Method,
    Precision,
    Situation,
    ThroughputEstimate,
    Workload,
)
from app.settings import PROJECT_ROOT
from tests.unit.helpers import LLAMA_7B_SHAPE

PRECISIONS = (Precision.BF16_AMP, Precision.FP8, Precision.FP32)
COUNTS = (1, 8)

#: custom shapes people ask for (no preset): Llama-2 7B LoRA, a 1.3B full fine-tune, Qwen2.5
#: 7B QLoRA, a 27M decoder pre-training from scratch
SHAPES = {
    "llama2-7b-lora": {
        **LLAMA_7B_SHAPE, "method": Method.LORA, "seq_len": 512, "micro_batch_size": 2,
        "gradient_checkpointing": True,
    },
    "deepseek-1.3b-full": {
        "params": 1346471936, "layers": 24, "hidden_size": 2048, "heads": 16, "kv_heads": 16,
        "ffn_hidden_size": 5504, "vocab_size": 32256, "method": Method.FULL, "seq_len": 1024,
        "micro_batch_size": 4,
    },
    "qwen25-7b-qlora": {
        "params": 7615616512, "layers": 28, "hidden_size": 3584, "heads": 28, "kv_heads": 4,
        "ffn_hidden_size": 18944, "vocab_size": 152064, "method": Method.QLORA, "seq_len": 512,
        "micro_batch_size": 8, "gradient_checkpointing": True,
    },
    "minimind-27m": {
        "params": 26878976, "layers": 8, "hidden_size": 512, "heads": 16, "kv_heads": 8,
        "ffn_hidden_size": 1408, "vocab_size": 6400, "method": Method.FULL, "seq_len": 512,
        "micro_batch_size": 48,
    },
}  # fmt: skip


@cache
def _ds() -> Dataset:
    return load_dataset(PROJECT_ROOT / "seed_data")


@cache
def _data(without_fp8: bool = False) -> PooledData:
    ds = _ds()
    points = [p for p in ds.points if not (without_fp8 and p.precision == Precision.FP8)]
    return served_data(ds, points)


@cache
def _gpus() -> list[str]:
    """Catalog GPUs with a 16-bit tensor peak, one per architecture and market (datacenter,
    professional, consumer): the fastest of each (the README's test run stays fast; every
    GPU of the catalog takes minutes), plus the GPUs of the real-run cases."""
    pick: dict[tuple[str, str], str] = {}
    for name, g in sorted(_ds().catalog.items()):
        peak = g.bf16_tflops or g.fp16_fp32acc_tflops
        if not peak:
            continue
        key = (g.architecture, g.market or "")
        best = pick.get(key)
        if best is None or peak > (_ds().catalog[best].bf16_tflops or 0):
            pick[key] = name
    real = {"A10G", "GeForce RTX 3090", "RTX A4000", "V100 SXM2 16GB", "A100 SXM4 80GB"}
    return sorted({*pick.values(), *real, "H100 SXM 80GB", "B200", "L4"})


def _workloads() -> list[tuple[str, Workload, Workload | None]]:
    out: list[tuple[str, Workload, Workload | None]] = [
        (slug, p.workload(), None) for slug, p in sorted(_ds().presets.items())
    ]
    for name, fields in SHAPES.items():
        w = Workload(architecture=Architecture.TRANSFORMER_DECODER, **fields)  # type: ignore[arg-type]
        out.append((name, w, None))
    return out


def _model(w: Workload, data: PooledData | None = None) -> ThroughputModel:
    ds = _ds()
    return ThroughputModel(w, catalog=ds.catalog, flops_table=ds.flops_table, data=data or _data())


@pytest.mark.parametrize("name", [n for n, _, _ in _workloads()])
def test_no_answer_above_the_credible_mfu(name: str) -> None:
    w = next(x for n, x, _ in _workloads() if n == name)
    fam = family(w.architecture)
    ds = _ds()
    for precision in PRECISIONS:
        model = _model(replace(w, precision=precision))
        if not model.can_estimate():
            continue
        for gpu_name in _gpus():
            gpu = ds.catalog[gpu_name]
            for n in COUNTS:
                e = model.estimate(gpu, n)
                if e.mfu is None or e.situation == Situation.MEASURED:
                    continue
                if any("fp32 without TF32" in x for x in e.notes):
                    # counted against the FP32 vector peak: no cell was measured there (the
                    # cells' MFU are of the TF32 peak), the peak itself bounds it
                    assert (e.hfu or 0) <= 1.0 + 1e-9, (name, gpu_name, n, e.notes)
                    continue
                # LoRA/QLoRA also below the adapter cell (docs/mfu_table.md)
                top_mfu, top_hfu = credible_max(
                    fam, w.params, e.precision or precision, method=w.method.value
                )
                assert e.mfu <= top_mfu + 1e-9, (name, gpu_name, precision, n, e.notes)
                assert (e.hfu or 0) <= top_hfu + 1e-9, (name, gpu_name, precision, n)


@pytest.mark.parametrize(
    "slug", ["llama31-8b-pretrain", "llama31-70b-pretrain", "llama2-7b-pretrain", "mpt-3b-pretrain"]
)
def test_fp8_rows_never_raise_a_bf16_answer(slug: str) -> None:
    ds = _ds()
    w = ds.presets[slug].workload(precision="bf16_amp")
    with_fp8, without = _model(w), _model(w, _data(without_fp8=True))
    for gpu_name in _gpus():
        gpu = ds.catalog[gpu_name]
        a, b = with_fp8.estimate(gpu, 8), without.estimate(gpu, 8)
        if not b.samples_per_s:
            continue
        assert a.samples_per_s <= b.samples_per_s * 1.05, (slug, gpu_name, a.notes, b.notes)


@pytest.mark.parametrize(
    "name", [n for n, w, _ in _workloads() if w.architecture.value.startswith("transformer")]
)
def test_checkpointing_on_is_never_faster(name: str) -> None:
    w = next(x for n, x, _ in _workloads() if n == name)
    ds = _ds()
    on = _model(replace(w, gradient_checkpointing=True, matches_preset=False), None)
    off = _model(replace(w, gradient_checkpointing=False, matches_preset=False), None)
    for gpu_name in _gpus():
        gpu = ds.catalog[gpu_name]
        a, b = on.estimate(gpu, 1), off.estimate(gpu, 1)
        assert a.samples_per_s <= b.samples_per_s * (1 + 1e-9), (name, gpu_name)


@pytest.mark.parametrize(
    ("shape", "slug"),
    [("qwen25-7b-qlora", "llama3-8b-qlora"), ("llama2-7b-lora", "llama3-8b-lora")],
)
def test_same_job_with_and_without_a_preset(shape: str, slug: str) -> None:
    # issue 23: Qwen2.5-7B QLoRA (seq 512, micro-batch 8) came out 1.45-1.5× faster without a
    # preset than derived from llama3-8b-qlora; the same stack is stated on both sides
    ds = _ds()
    preset = ds.presets[slug].workload()
    fields = SHAPES[shape]
    custom = Workload(
        architecture=Architecture.TRANSFORMER_DECODER, stack=Stack.TORCHTUNE, **fields
    )  # type: ignore[arg-type]
    derived = replace(preset, **fields, preset=None, matches_preset=False, stack=Stack.TORCHTUNE)  # type: ignore[arg-type]
    plain = _model(custom)
    via = ThroughputModel(
        derived,
        catalog=ds.catalog,
        flops_table=ds.flops_table,
        data=_data(),
        reference=preset,
    )
    for gpu_name in ("A100 SXM4 80GB", "GeForce RTX 4090", "H100 SXM 80GB", "L4"):
        gpu = ds.catalog[gpu_name]
        a, b = plain.estimate(gpu, 1).samples_per_s, via.estimate(gpu, 1).samples_per_s
        assert 1 / 1.1 <= a / b <= 1.1, (shape, gpu_name, a, b)


def test_mfu_table_document_is_current() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "mfu_table.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "slug",
    ["llama31-8b-pretrain", "llama31-70b-pretrain", "llama2-13b-pretrain", "mpt-3b-pretrain"],
)
def test_fp8_gain_extrapolated_stays_within_the_measured_pairs(slug: str) -> None:
    # issue 23: fp8 on GPUs the workload was never measured on at fp8 came out up to 3.4× the
    # bf16 answer (llama2-13b-pretrain on an L40S); the seed's fp8/16-bit pairs of one job
    # gain 1.28 (median) and 1.70 at most (torchtitan Llama 3.1 405B on 128 H100s)
    from app.model.calibration import load_calibration

    _median, top, _pairs = load_calibration().fp8_gain
    ds = _ds()
    fp8 = _model(ds.presets[slug].workload(precision="fp8"))
    bf16 = _model(ds.presets[slug].workload(precision="bf16_amp"))
    checked = 0
    for gpu_name in _gpus():
        gpu = ds.catalog[gpu_name]
        if not gpu.fp8_tflops and not gpu.fp8_fp32acc_tflops:
            continue
        a = fp8.estimate(gpu, 1, precision=Precision.FP8)
        if a.fp8_gain is None:
            continue
        checked += 1
        b = bf16.estimate(gpu, 1)
        assert a.samples_per_s <= b.samples_per_s * top * (1 + 1e-9), (slug, gpu_name, a.notes)
        assert a.fp8_gain <= top * (1 + 1e-9)
        assert any("fp8 was never measured for this workload" in n for n in a.notes)
        # "held" is said exactly when the gain was held
        held = any("held to ×" in n and "bf16_amp answer" in n for n in a.notes)
        assert held == a.fp8_gain_held, (slug, gpu_name, a.notes)
    # the catalog's fp8 GPUs without this workload's fp8 rows (L40S, RTX 4090, ...): never none
    assert checked >= 2, (slug, checked)


@pytest.mark.parametrize(
    "name", [n for n, w, _ in _workloads() if w.architecture.value.startswith("transformer")]
)
def test_fp32_transformer_never_faster_than_16_bit_on_tensor_cores(name: str) -> None:
    w = next(x for n, x, _ in _workloads() if n == name)
    ds = _ds()
    fp32 = _model(replace(w, precision=Precision.FP32))
    checked = 0
    for gpu_name in _gpus():
        gpu = ds.catalog[gpu_name]
        half = Precision.BF16_AMP if gpu.bf16_tflops else Precision.FP16_AMP
        if not (gpu.bf16_tflops or gpu.fp16_fp32acc_tflops):
            continue
        sixteen = _model(replace(w, precision=half))
        a, b = fp32.estimate(gpu, 1), sixteen.estimate(gpu, 1)
        if b.precision != half or not b.samples_per_s:
            continue
        checked += 1
        assert a.samples_per_s <= b.samples_per_s * (1 + 1e-9), (name, gpu_name, a.notes)
    # every GPU of the sweep has 16-bit tensor cores: the comparison is never skipped whole
    assert checked >= len(_gpus()) // 2, (name, checked)


def _llama_lora_fp32_and_tf32() -> tuple[Workload, GpuSpec, ThroughputEstimate, ThroughputEstimate]:
    """The custom Llama-2 7B LoRA under HF Trainer, its A100 SXM4 80GB, and its estimates
    there at fp32 and at tf32 (one GPU)."""
    fields = SHAPES["llama2-7b-lora"]
    w = Workload(architecture=Architecture.TRANSFORMER_DECODER, stack=Stack.HF_TRAINER, **fields)  # type: ignore[arg-type]
    gpu = _ds().catalog["A100 SXM4 80GB"]
    fp32 = _model(replace(w, precision=Precision.FP32)).estimate(gpu, 1)
    tf32 = _model(replace(w, precision=Precision.TF32)).estimate(gpu, 1)
    return w, gpu, fp32, tf32


def test_fp32_without_tf32_runs_its_matmuls_at_the_fp32_rate() -> None:
    # PyTorch >= 1.12 multiplies fp32 matrices in full fp32 unless TF32 is enabled; the same
    # custom Llama-2 7B LoRA under HF Trainer (TrainingArguments.tf32 None keeps PyTorch's
    # default) and asked as tf32, on an A100 SXM4 80GB (bf16 312, TF32 156, FP32 19.5 TFLOPS:
    # R = 8): the width law's matmul share e16 (h / (h + h0), 16-bit) is k·e16 / (k·e16 + 1 −
    # e16) of the TF32 step (k = 312 / 156 = 2) and takes R times longer, 1 / (e·R + 1 − e)
    from app.model.throughput.rates import width_efficiency

    w, gpu, fp32, tf32 = _llama_lora_fp32_and_tf32()
    e16 = width_efficiency(replace(w, precision=Precision.FP32))
    e = 2 * e16 / (2 * e16 + 1 - e16)
    expected = 1 / (e * 8.0 + 1 - e)
    assert 0.1 < expected < 0.2
    assert fp32.samples_per_s / tf32.samples_per_s == pytest.approx(expected, rel=1e-6)
    # its MFU is counted against the FP32 vector peak it runs at, never above it
    assert any("of the 20 TFLOP/s dense fp32 peak" in n for n in fp32.notes), fp32.notes
    assert fp32.hfu is not None and fp32.hfu <= 1.0
    # a stack that enables TF32 (NVIDIA's containers) runs fp32 at the TF32 rate
    dle = _model(replace(w, precision=Precision.FP32, stack=Stack.NVIDIA_DLE)).estimate(gpu, 1)
    assert dle.samples_per_s / tf32.samples_per_s == pytest.approx(1 / 0.786, rel=0.01)


def test_every_stack_has_a_sourced_fp32_matmul_default() -> None:
    # review #1: Composer (llm-foundry) turns TF32 on (DeviceGPU allow_tf32=True), so MPT at
    # fp32 is no FP32-vector-rate job; each stack's default carries the source that shows it
    from app.model.throughput.checks import FP32_MATMUL_TF32, FULL_FP32_STACKS, TF32_STACKS

    for stack, (_on, source) in FP32_MATMUL_TF32.items():
        assert len(source) > 20, stack
    on = {Stack.LLM_FOUNDRY, Stack.TIMM, Stack.AXOLOTL, Stack.NVIDIA_DLE, Stack.MEGATRON,
          Stack.TENSORFLOW, Stack.LLM_C, Stack.PYTORCH_COMPILE}  # fmt: skip
    off = {Stack.PYTORCH, Stack.HF_TRAINER, Stack.LLAMA_FACTORY, Stack.UNSLOTH, Stack.TORCHTUNE,
           Stack.TORCHTITAN, Stack.DEEPSPEED, Stack.LIGHTNING}  # fmt: skip
    assert on == TF32_STACKS
    assert off == FULL_FP32_STACKS


def test_mpt_at_fp32_keeps_the_tf32_rate_of_its_stack() -> None:
    # mpt-1b-pretrain (llm_foundry) at fp32 on an A100: main served 5.835 samples/s, the
    # no-TF32 slowdown had taken it to 0.770; Composer runs it on TF32 tensor cores
    ds = _ds()
    gpu = ds.catalog["A100 SXM4 80GB"]
    fp32 = _model(ds.presets["mpt-1b-pretrain"].workload(precision="fp32")).estimate(gpu, 1)
    tf32 = _model(ds.presets["mpt-1b-pretrain"].workload(precision="tf32")).estimate(gpu, 1)
    assert fp32.samples_per_s == pytest.approx(tf32.samples_per_s, rel=1e-9)
    assert not any("without TF32" in n for n in fp32.notes), fp32.notes


def test_an_unverified_stack_keeps_the_tf32_rate_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a stack whose fp32 default no source settles gets no slowdown, only the sentence
    from app.model.throughput import checks

    monkeypatch.delitem(checks.FP32_MATMUL_TF32, Stack.HF_TRAINER)
    _, _, fp32, tf32 = _llama_lora_fp32_and_tf32()
    assert fp32.samples_per_s == pytest.approx(tf32.samples_per_s, rel=1e-9)
    assert any("TF32 default of stack hf_trainer is unverified" in n for n in fp32.notes)


def test_batch_law_keeps_one_unit_from_fit_to_answer() -> None:
    # review #7: b0 of the FLOPs model's batch law is fitted and used in the same unit. The
    # seed's CNN cells measured at several micro-batches are SSD300's (no FLOPs count), so
    # there is no CNN b0 in FLOPs: SD 1.5 uses the CNN law in samples as fitted (data.b0)
    ds = _ds()
    data = _data()
    assert "cnn" not in data.b0_work
    gpu = ds.catalog["A100 SXM4 80GB"]
    preset = ds.presets["sd15-unet-finetune"].workload()
    model = _model(replace(preset, micro_batch_size=1, matches_preset=False))
    assert model._b0_samples(model.w) == pytest.approx(data.b0["cnn"], rel=1e-12)
    # physical properties: samples/s per GPU never falls with the micro-batch, the step time
    # never falls below proportional (samples/s per sample-in-the-batch never rises), and
    # MFU stays below the family's credible maximum
    mbs = (1, 2, 4, 8, 16)
    rates = [
        _model(replace(preset, micro_batch_size=mb, matches_preset=False)).estimate(gpu, 1)
        for mb in mbs
    ]
    assert all(r.situation == Situation.FLOPS_MODEL for r in rates)
    for i in range(len(mbs) - 1):
        r1, r2 = rates[i].samples_per_s, rates[i + 1].samples_per_s
        assert r2 >= r1
        assert r2 / mbs[i + 1] <= r1 / mbs[i]
    top, _ = credible_max("cnn", preset.params, Precision.BF16_AMP)
    assert all(r.mfu is not None and r.mfu <= top for r in rates)


def test_lora_answers_held_to_the_adapter_cell() -> None:
    # torchtune's Llama 3.2 3B LoRA/QLoRA and NeMo AutoModel's LoRA rows (two sources) reach
    # MFU 0.44-0.49 (HFU up to 0.72) where full training of the same size reaches 0.69; the 3B
    # LoRA preset had come out at MFU 0.54, HFU 0.79 on an RTX 3090
    from app.model.calibration import load_calibration

    table = load_calibration().mfu_range
    cell = table["transformer|1B-20B|16|adapter"]
    assert cell[4] >= 3
    assert cell[2] == pytest.approx(0.486, abs=0.001)
    # the three Megatron-Bridge Llama 3 70B LoRA fp8 rows are one source: no cell
    assert "transformer|>=20B|8|adapter" not in table
    ds = _ds()
    e = _model(ds.presets["llama32-3b-lora"].workload()).estimate(ds.catalog["GeForce RTX 3090"], 1)
    assert e.mfu is not None and e.hfu is not None
    assert e.mfu <= cell[2] + 1e-9 and e.hfu <= cell[3] + 1e-9


def test_adapter_cells_need_two_sources() -> None:
    # review #8: the highest of one source's runs is one configuration, not a credible maximum
    from app.calibrate.mfu_fit import adapter_rows, fit_mfu_range, mfu_rows
    from app.model.mfu import MIN_ADAPTER_SOURCES

    ds = _ds()
    table = fit_mfu_range(ds)
    by: dict[str, list] = {}
    for r in mfu_rows(ds):
        if r.held is None:
            by.setdefault(r.key, []).append(r)
    formed = 0
    for key, rows in by.items():
        sources = {r.point.source for r in adapter_rows(key, rows)}
        assert (key + "|adapter" in table) == (len(sources) >= MIN_ADAPTER_SOURCES), key
        formed += key + "|adapter" in table
    assert formed >= 1


def test_derived_cnn_reads_the_batch_curve_at_the_same_flops_per_step() -> None:
    # a custom CNN of twice ResNet-50's forward GFLOPs (8.178 → 16.356) at micro-batch 64,
    # derived from resnet50-imagenet-tf, does the work of 128 ResNet-50 samples a step
    ds = _ds()
    preset = ds.presets["resnet50-imagenet-tf"].workload()
    custom = replace(
        preset, forward_gflops_per_sample=16.356, micro_batch_size=64, matches_preset=False
    )
    model = ThroughputModel(
        custom, catalog=ds.catalog, flops_table=ds.flops_table, data=_data(), reference=preset
    )
    assert model._batch() == pytest.approx(128.0, rel=1e-9)
