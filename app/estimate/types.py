"""Plain data types of the estimation core: enums, GPU specs, workloads, hardware, results.

Everything here is a frozen dataclass or a string enum; no I/O, no ORM, no framework.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Precision(StrEnum):
    """Numeric regime of training.

    ``fp16_amp``/``bf16_amp``: autocast mixed precision with fp32 master weights;
    ``bf16``: pure bf16 weights, gradients and optimizer states; ``fp8``: FP8 matmuls on top of
    bf16 mixed precision (torchao/Transformer Engine style).
    """

    FP32 = "fp32"
    TF32 = "tf32"
    FP16_AMP = "fp16_amp"
    BF16_AMP = "bf16_amp"
    BF16 = "bf16"
    FP8 = "fp8"


def precision_class(p: Precision) -> str:
    """``32`` for the fp32/tf32 regimes, ``16`` for 16-bit and fp8 (fits are kept per class)."""
    return "32" if p in (Precision.FP32, Precision.TF32) else "16"


def version_tuple(text: str | None, parts: int | None = None) -> tuple[int, ...] | None:
    """A dotted version's first ``parts`` numbers (``"12.4"`` → ``(12, 4)``; all by default);
    ``None`` when empty or not numeric."""
    if not text:
        return None
    try:
        return tuple(int(x) for x in str(text).split(".")[:parts])
    except ValueError:
        return None


class Optimizer(StrEnum):
    """Optimizer, as it matters for state memory."""

    ADAMW = "adamw"
    ADAMW_8BIT = "adamw_8bit"
    SGD_MOMENTUM = "sgd_momentum"
    ADAFACTOR = "adafactor"
    LAMB = "lamb"


class Method(StrEnum):
    """Which parameters are trained: all (``full``), LoRA adapters, or LoRA on an NF4 base."""

    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Architecture(StrEnum):
    """Model family; selects the activation-memory and FLOPs formulas."""

    CNN = "cnn"
    VIT = "vit"
    TRANSFORMER_ENCODER = "transformer_encoder"
    TRANSFORMER_DECODER = "transformer_decoder"
    DIFFUSION_UNET = "diffusion_unet"
    RNN_SEQ2SEQ = "rnn_seq2seq"
    TTS = "tts"
    VOCODER = "vocoder"
    RECOMMENDER = "recommender"


class Attention(StrEnum):
    """Attention kernel: ``eager`` materialises the s×s score matrix, ``sdpa`` (Flash) does not."""

    EAGER = "eager"
    SDPA = "sdpa"


class Sharding(StrEnum):
    """Data-parallel state sharding: DeepSpeed ZeRO stages or PyTorch FSDP (full shard)."""

    NONE = "none"
    ZERO1 = "zero1"
    ZERO2 = "zero2"
    ZERO3 = "zero3"
    FSDP = "fsdp"


class Interconnect(StrEnum):
    """GPU-to-GPU link inside one instance (``nvlink`` includes NVSwitch/SXM boards)."""

    NVLINK = "nvlink"
    PCIE = "pcie"


class OomRisk(StrEnum):
    """Out-of-memory risk band; thresholds in :mod:`app.estimate.memory`."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Basis(StrEnum):
    """Where a throughput figure comes from, most to least trustworthy."""

    MEASURED = "measured"
    SCALED = "scaled"
    FLOPS_MODEL = "flops_model"


TRANSFORMER_ARCHITECTURES = frozenset(
    {Architecture.TRANSFORMER_ENCODER, Architecture.TRANSFORMER_DECODER, Architecture.VIT}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    """Catalog figures of one GPU model (datasheet units).

    ``vram_gb`` as marketed (treated as GiB of physical memory, as nvidia-smi shows it);
    bandwidth in GB/s; all TFLOPS dense. ``fp16_fp32acc_tflops`` is the FP32-accumulate tensor
    rate that mixed-precision training runs at (half the FP16-accumulate rate on GeForce).
    """

    name: str
    vendor: str = "NVIDIA"
    architecture: str = ""
    vram_gb: float
    memory_bandwidth_gbs: float | None = None
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    fp16_fp32acc_tflops: float | None = None
    fp8_fp32acc_tflops: float | None = None
    nvlink: bool = False
    nvlink_bandwidth_gbs: float | None = None
    form_factor: str | None = None
    market: str | None = None
    release_year: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A training job, flat, with units in the names.

    ``params`` is the total parameter count; ``seq_len`` tokens per sample (transformers,
    seq2seq); ``image_size`` pixels per side; ``micro_batch_size`` per GPU;
    ``samples_per_epoch`` training samples per epoch; ``dataset_gb`` dataset on disk in GB;
    ``cpu_ms_per_sample`` CPU milliseconds of data loading per sample on one core;
    ``min_cuda`` lowest CUDA version the software needs (``"12.1"``).

    Memory-regime defaults (estimation.md §1, §6): ``precision`` ``bf16_amp`` (fp32 master
    weights and gradients, AdamW states fp32: 18 B/param unsharded); ``attention`` ``sdpa``
    (no s×s score matrices); ``gradient_checkpointing`` off; ``fused_cross_entropy`` off
    (fp32 logits 6·s·V bytes per sample are materialised); ``optimizer`` ``adamw``;
    ``sharding`` ``none``; ``cpu_offload`` off (ZeRO-Offload / FSDP CPU offload keeps
    optimizer states and fp32 master weights in host RAM when on).

    The ``benchmark_*``/``units_per_sample``/``forward_gflops_per_sample`` fields come from the
    preset and tie the workload to its measurements.
    """

    preset: str | None = None
    architecture: Architecture
    params: int | None = None
    layers: int | None = None
    hidden_size: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn_hidden_size: int | None = None
    vocab_size: int | None = None
    seq_len: int | None = None
    image_size: int | None = None
    micro_batch_size: int = 1
    grad_accum_steps: int = 1
    precision: Precision = Precision.BF16_AMP
    optimizer: Optimizer = Optimizer.ADAMW
    method: Method = Method.FULL
    lora_rank: int | None = None
    gradient_checkpointing: bool = False
    attention: Attention = Attention.SDPA
    sharding: Sharding = Sharding.NONE
    fused_cross_entropy: bool = False
    cpu_offload: bool = False
    samples_per_epoch: int = 1
    epochs: float = 1.0
    dataset_gb: float | None = None
    cpu_ms_per_sample: float | None = None
    min_cuda: str | None = None
    forward_gflops_per_sample: float | None = None
    benchmark_workloads: tuple[str, ...] = ()
    benchmark_method: str | None = None
    units_per_sample: float | None = None
    throughput_unit: str | None = None
    #: True when every throughput-relevant field equals the preset's (measurements apply as is).
    matches_preset: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Hardware:
    """A machine to run on: GPU model × count plus host resources.

    ``vram_gib_per_gpu`` overrides the catalog VRAM (memory-modded cards, MIG slices);
    ``disk_gb`` is system + data disk; ``max_cuda`` the driver's highest CUDA version.
    """

    gpu: GpuSpec
    gpu_count: float = 1
    interconnect: Interconnect | None = None
    vcpus: float | None = None
    ram_gib: float | None = None
    disk_gb: float | None = None
    max_cuda: str | None = None
    vram_gib_per_gpu: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkPoint:
    """One measured throughput, normalised: ``throughput_total`` over ``gpu_count`` GPUs."""

    id: int
    gpu: str
    gpu_count: int
    interconnect: str | None
    workload: str
    method: str
    precision: Precision
    batch_size_per_gpu: int | None
    seq_len: int | None
    throughput_total: float
    throughput_unit: str
    peak_memory_gib: float | None = None
    framework_version: str | None = None
    source: str = ""
    source_ref: str = ""
    suspect: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBreakdown:
    """Peak memory per GPU by component, in GiB."""

    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    overhead_gib: float
    total_gib: float
    #: bytes the framework allocates (states, activations, buffers), before allocator slack
    #: and CUDA context: comparable with torch.cuda.max_memory_allocated
    allocated_gib: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEstimate:
    """Peak memory per GPU against usable VRAM."""

    breakdown: MemoryBreakdown
    peak_memory_gib: float
    usable_vram_gib: float
    memory_utilization: float
    oom_risk: OomRisk
    max_micro_batch_size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """A measurement an estimate used, with its role."""

    benchmark_id: int
    gpu: str
    gpu_count: int
    workload: str
    precision: str
    batch_size_per_gpu: int | None
    samples_per_s: float
    source: str
    source_ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThroughputEstimate:
    """Predicted training throughput of the whole GPU set, before the data-loader cap."""

    samples_per_s: float
    samples_per_s_low: float
    samples_per_s_high: float
    basis: Basis
    multi_gpu_efficiency: float
    evidence: tuple[Evidence, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimate:
    """The full answer for a workload on a hardware configuration (optionally priced)."""

    samples_per_s: float
    samples_per_s_low: float
    samples_per_s_high: float
    tokens_per_s: float | None
    basis: Basis
    epoch_hours: float
    epoch_hours_low: float
    epoch_hours_high: float
    total_hours: float
    cost_per_epoch: float | None
    cost_per_epoch_low: float | None
    cost_per_epoch_high: float | None
    total_cost: float | None
    currency: str
    memory: MemoryEstimate
    multi_gpu_efficiency: float
    data_loader_samples_per_s: float | None
    warnings: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def version_key(p: BenchmarkPoint) -> float:
    """A measurement's framework version as a sortable number (1.13 → 1.13, 2.3 → 2.03); 0 when
    unknown or without a minor version."""
    v = version_tuple(p.framework_version, 2)
    return v[0] + v[1] / 100 if v is not None and len(v) == 2 else 0.0
