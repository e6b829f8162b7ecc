"""Small builders for core unit tests (specs copied from seed_data/gpus.csv rows)."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any, cast

from app.gpu_names import CatalogGpu, GpuNameNormaliser
from app.model.stacks import Stack
from app.model.types import Architecture, BenchmarkPoint, GpuSpec, Precision, Workload
from app.services.reference import Preset, ReferenceData
from app.settings import PROJECT_ROOT

A100_80_SXM = GpuSpec(
    name="A100 SXM4 80GB",
    architecture="Ampere",
    vram_gib=80,
    memory_bandwidth_gbs=2039,
    fp32_tflops=19.5,
    tf32_tflops=156,
    fp16_tflops=312,
    bf16_tflops=312,
    fp16_fp32acc_tflops=312,
    nvlink=True,
    nvlink_bandwidth_gbs=600,
    form_factor="SXM",
    market="datacenter",
)
RTX_4090 = GpuSpec(
    name="GeForce RTX 4090",
    architecture="Ada Lovelace",
    vram_gib=24,
    memory_bandwidth_gbs=1008,
    fp32_tflops=82.6,
    tf32_tflops=82.6,
    fp16_tflops=330.3,
    bf16_tflops=165.2,
    fp8_tflops=660.6,
    fp16_fp32acc_tflops=165.2,
    fp8_fp32acc_tflops=330.3,
    nvlink=False,
    form_factor="consumer",
    market="consumer",
)

#: seed_data/gpus.csv's Instinct MI300X (dense matrix peaks; Infinity Fabric, no NVLink)
MI300X = GpuSpec(
    name="Instinct MI300X",
    vendor="AMD",
    architecture="CDNA 3",
    vram_gib=192,
    fp32_tflops=163.4,
    tf32_tflops=653.7,
    fp16_tflops=1307.4,
    bf16_tflops=1307.4,
    fp8_tflops=2614.9,
    form_factor="OAM",
    market="datacenter",
)

GPT2 = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    params=124_373_760,
    layers=12,
    hidden_size=768,
    heads=12,
    kv_heads=12,
    ffn_hidden_size=3072,
    vocab_size=50304,
    seq_len=1024,
    micro_batch_size=1,
    precision=Precision.BF16_AMP,
    samples_per_epoch=1000,
    # a tuned suite: the FLOPs model's laws at the measured rows' rate (issue 23 stacks)
    stack=Stack.LLM_C,
)

#: The fields of a preset's workload as NVIDIA's Deep Learning Examples suite measures it: full
#: training, one sample per unit, the preset's own shape; a tuned suite: the FLOPs model's
#: laws at the measured rows' rate (issue 23 stacks)
DLE_MEASURED: dict[str, Any] = {
    "benchmark_method": "full",
    "units_per_sample": 1,
    "matches_preset": True,
    "stack": Stack.NVIDIA_DLE,
}

#: BERT-base uncased on SQuAD in plain numbers (seed_data/workloads.csv bert-base-squad: 12
#: layers, hidden 768, 12 heads, 109,483,778 parameters with the span head, 384 tokens)
BERT_SQUAD_SHAPE: dict[str, int] = {
    "params": 109_483_778,
    "layers": 12,
    "hidden_size": 768,
    "heads": 12,
    "seq_len": 384,
}

#: BERT-base uncased fine-tuning on SQuAD (seq 384, micro-batch 320, fp16 AMP): the
#: NVIDIA Deep Learning Examples suite's measured rows (seed_data/benchmarks.csv)
BERT = Workload(
    architecture=Architecture.TRANSFORMER_ENCODER,
    **BERT_SQUAD_SHAPE,
    micro_batch_size=320,
    precision=Precision.FP16_AMP,
    samples_per_epoch=87599,
    benchmark_workloads=("BERT-base uncased",),
    **DLE_MEASURED,
)


def bench_point(
    gpu: str,
    total: float,
    bs: int = 320,
    *,
    count: int = 1,
    pid: int = 1,
    precision: Precision = Precision.FP16_AMP,
    version: str = "1.13",
    interconnect: str | None = None,
    workload: str = "BERT-base uncased",
    seq_len: int | None = 384,
    unit: str = "sequences/s",
) -> BenchmarkPoint:
    """A measured row of ``total`` samples/s (all GPUs) on ``gpu``: BERT-base uncased at seq
    384 unless ``workload``, ``seq_len`` and ``unit`` say otherwise (the one builder of
    benchmark points for the unit tests)."""
    return BenchmarkPoint(
        id=pid,
        gpu=gpu,
        gpu_count=count,
        interconnect=interconnect,
        workload=workload,
        method="full",
        precision=precision,
        batch_size_per_gpu=bs,
        seq_len=seq_len,
        throughput_total=total,
        throughput_unit=unit,
        framework_version=version,
    )


#: LLaMA-7B / Llama-2-7B's shape (meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096,
#: 32 heads with as many KV heads, FFN 11008, vocabulary 32,000; 6,738,415,616 parameters) in
#: plain numbers, which a request body and a :class:`Workload` both take
LLAMA_7B_SHAPE: dict[str, int] = {
    "params": 6_738_415_616,
    "layers": 32,
    "hidden_size": 4096,
    "heads": 32,
    "kv_heads": 32,
    "ffn_hidden_size": 11008,
    "vocab_size": 32000,
}

#: Llama 3 8B's shape (meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32
#: heads over 8 KV heads, FFN 14336, vocabulary 128,256; Meta's published count 8,030,261,248
#: parameters, norms included, no biases) in plain numbers
LLAMA3_8B_SHAPE: dict[str, int] = {
    "params": 8_030_261_248,
    "layers": 32,
    "hidden_size": 4096,
    "heads": 32,
    "kv_heads": 8,
    "ffn_hidden_size": 14336,
    "vocab_size": 128256,
}

LLAMA3_8B = {
    "architecture": Architecture.TRANSFORMER_DECODER,
    **LLAMA3_8B_SHAPE,
    "seq_len": 2048,
    "micro_batch_size": 2,
    "samples_per_epoch": 51760,
    "gradient_checkpointing": True,
}


def resnet50(**fields: Any) -> Workload:
    """ResNet-50 at 224 px in fp16 AMP: 25,557,032 parameters and 8.178 forward GFLOPs per
    sample (torchvision's model card), with ``fields`` added or replaced (the one builder of
    this workload for the unit tests)."""
    base: dict[str, Any] = {
        "architecture": Architecture.CNN,
        "params": 25_557_032,
        "precision": Precision.FP16_AMP,
        "forward_gflops_per_sample": 8.178,
    }
    return Workload(**{**base, **fields})


@functools.cache
def seed_normaliser() -> GpuNameNormaliser:
    """The GPU name normaliser over ``seed_data/gpus.csv`` and ``gpu_aliases.csv``, as
    ingestion builds it (built once per test process)."""
    from app.data.load import load_extra_aliases, read_gpus

    seed = PROJECT_ROOT / "seed_data"
    gpus = [
        CatalogGpu(r.canonical_name, r.vram_gib or 0.0, r.form_factor, r.aliases)
        for r in read_gpus(seed)
    ]
    return GpuNameNormaliser(gpus, load_extra_aliases(seed))


def preset_reference(slug: str, fields: dict[str, Any]) -> ReferenceData:
    """Reference data holding one preset ``slug`` of flat ``fields`` and no measurements,
    for resolving custom workloads against it (app/services/workloads.py)."""
    preset = Preset(
        slug=slug,
        name=slug,
        fields=fields,
        benchmark_workloads=(),
        benchmark_method=None,
        units_per_sample=None,
        throughput_unit=None,
        source="test",
        seen_on=None,
        notes=None,
    )
    return cast(ReferenceData, SimpleNamespace(presets={slug: preset}))
