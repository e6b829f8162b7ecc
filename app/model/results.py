"""The estimator's machines and answers: GPU specs, hardware, benchmark points, memory and
throughput estimates, run warnings and the full :class:`Estimate`.

Frozen dataclasses; re-exported by :mod:`app.model.types`; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from app.model.enums import Interconnect, OomRisk, WarningCode
from app.model.vocabulary import Basis, Precision, Situation

#: where a multi-GPU scaling efficiency comes from: this GPU's measured rows at that count and
#: link, or the link model fitted per interconnect class (:mod:`app.model.multigpu`)
MultiGpuBasis = Literal["measured", "model"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    """Catalog figures of one GPU model (datasheet units).

    ``vram_gib`` as marketed (treated as GiB of physical memory, as nvidia-smi shows it);
    bandwidth in GB/s; all TFLOPS dense. ``fp16_fp32acc_tflops`` is the FP32-accumulate tensor
    rate that mixed-precision training runs at (half the FP16-accumulate rate on GeForce).
    """

    name: str
    vendor: str = "NVIDIA"
    architecture: str = ""
    vram_gib: float
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
    #: NVIDIA compute capability (``"9.0"``); ``None`` for AMD and unknown cards
    compute_capability: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Hardware:
    """A machine to run on: GPU model × count plus host resources.

    ``vram_gib_per_gpu`` overrides the catalog VRAM (memory-modded cards, MIG slices);
    ``disk_gb`` is system + data disk; ``max_cuda`` the driver's highest CUDA version;
    ``gpus_per_node`` the GPUs one machine holds and ``network_gbps`` the network between
    machines (Gbit/s per machine) where stated (else :mod:`app.model.comm`'s defaults).
    """

    gpu: GpuSpec
    gpu_count: float = 1
    interconnect: Interconnect | None = None
    vcpus: float | None = None
    ram_gib: float | None = None
    disk_gb: float | None = None
    max_cuda: str | None = None
    vram_gib_per_gpu: float | None = None
    #: ``hdd``, ``ssd`` or ``nvme`` where the offer says it
    disk_type: str | None = None
    gpus_per_node: int | None = None
    network_gbps: float | None = None


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
    #: the GPU as the source names it (``A100 (variant not stated)`` where ``gpu`` is blank)
    gpu_label: str = ""


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
    #: components inside the figures above (issue 9): loss-side logits (in activations),
    #: sharding/dequantisation buffers, initialisation peak above the step, CUDA context +
    #: NCCL, allocator slack (the last four make up ``overhead_gib``)
    logits_gib: float = 0.0
    buffers_gib: float = 0.0
    init_extra_gib: float = 0.0
    context_gib: float = 0.0
    allocator_slack_gib: float = 0.0
    #: diffusion: frozen text encoder(s) and VAE weights (inside ``weights_gib``)
    text_encoder_gib: float = 0.0
    vae_gib: float = 0.0
    #: fp32 EMA copy of the trained parameters (inside ``optimizer_gib``)
    ema_gib: float = 0.0
    #: gradient bytes not alive at the peak (zero_grad(set_to_none=True), no accumulation,
    #: 1 GPU unsharded): ``gradients_gib`` + this = the gradients' full size
    gradients_freed_gib: float = 0.0
    #: the optimizer step's temporaries above the forward/backward peak (foreach AdamW's
    #: ``exp_avg_sq`` sqrt; inside ``optimizer_gib``)
    optimizer_step_gib: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFix:
    """One change to a workload that is predicted to fit: ``changes`` maps field → new value."""

    label: str
    changes: tuple[tuple[str, str], ...]
    peak_memory_gib: float
    oom_risk: OomRisk
    oom_probability: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEstimate:
    """Peak memory per GPU against usable VRAM."""

    breakdown: MemoryBreakdown
    peak_memory_gib: float
    usable_vram_gib: float
    memory_utilization: float
    oom_risk: OomRisk
    #: largest per-GPU micro-batch whose ``oom_risk`` would be ``low`` (0: not even one)
    max_micro_batch_size: int
    #: calibrated probability that the run runs out of memory (calibration.json oom_center/scale)
    oom_probability: float | None = None
    #: when ``oom_risk`` is high: the smallest changes predicted to fit on this hardware
    fixes: tuple[MemoryFix, ...] = ()
    #: what the memory model does not cover for this workload
    notes: tuple[str, ...] = ()


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
class MultiGpuSummary:
    """How the GPUs of a multi-GPU answer talk (:mod:`app.model.comm`).

    ``link_class``: the named link the collectives cross (``nvswitch``, ``nvlink_bridge``,
    ``infinity_fabric``, ``pcie_p2p``, ``pcie_host_bridge``, ``network``), ``unknown`` when
    the offer names none and the form factor implies none (then modelled as ``modelled_as``);
    ``nodes`` machines of ``gpus_per_node``; ``bytes_per_step`` bus bytes per GPU per optimizer
    step; ``comm_time_share`` the share of the step spent waiting on communication (0–1);
    ``bus_bandwidth_gbs`` the link's all-reduce bus bandwidth (GB/s); ``network_gbps`` the
    network per machine (Gbit/s, several machines only) and whether the offer stated it.
    """

    link_class: str
    modelled_as: str
    nodes: int
    gpus_per_node: int
    bytes_per_step: float
    comm_time_share: float
    bus_bandwidth_gbs: float
    network_gbps: float | None = None
    network_stated: bool = False


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
    situation: Situation | None = None
    #: the precision the estimate assumes the GPU runs at
    precision: Precision | None = None
    #: where ``multi_gpu_efficiency`` comes from for more than one GPU: ``"measured"`` (the
    #: median of this GPU's measured rows at that GPU count and link), ``"model"`` (the link
    #: model fitted per interconnect class, :mod:`app.model.multigpu`); ``None`` for one GPU
    multi_gpu_basis: MultiGpuBasis | None = None
    #: link class, machines, bytes per step and communication share; ``None`` for one GPU
    multi_gpu: MultiGpuSummary | None = None
    #: model-FLOPs utilisation per GPU (no recompute) over the dense peak at ``precision``
    #: (:mod:`app.model.mfu`); ``None`` without a FLOPs count
    mfu: float | None = None
    #: hardware-FLOPs utilisation (recompute counted); equals ``mfu`` without checkpointing
    hfu: float | None = None
    #: the training stack the estimate assumes (asked, or the default)
    stack: str | None = None
    #: fp8 ÷ bf16_amp answer of the same job and GPU where the fp8 answer stands on no fp8
    #: measurement of this GPU (its gain extrapolated); ``None`` otherwise
    fp8_gain: float | None = None
    #: whether that gain was held to the highest measured one (it had gone above it)
    fp8_gain_held: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RunWarning:
    """Why a run may fail, be slower or cost more than its headline figure.

    ``code`` is stable (:class:`WarningCode`); ``message`` a sentence for the user;
    ``values`` the numbers behind it, with units in the keys (``disk_gb``, ``needed_gb``).
    """

    code: WarningCode
    message: str
    values: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"


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
    #: the epochs ``total_hours`` and ``total_cost`` count (the workload's ``epochs``)
    epochs: float
    #: all epochs at the high / low end of the throughput range (hours; cost in ``currency``,
    #: ``None`` without a price): the range of ``total_hours`` and ``total_cost``
    total_hours_low: float
    total_hours_high: float
    total_cost_low: float | None
    total_cost_high: float | None
    multi_gpu_efficiency: float
    data_loader_samples_per_s: float | None
    warnings: tuple[RunWarning, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: which evidence the throughput stands on (:class:`Situation` value)
    situation: str | None = None
    #: the precision the throughput was estimated at (see ``ThroughputEstimate.precision``)
    precision: str | None = None
    #: what one epoch is, in words (samples, or tokens packed into sequences)
    epoch_definition: str = ""
    #: samples (as ``samples_per_s`` counts them) in one epoch
    epoch_samples: float = 0.0
    #: tokens in one epoch (token workloads), padding included when samples are padded
    epoch_tokens: float | None = None
    #: spot/preemptible offer: the run can be interrupted
    interruptible: bool = False
    #: spot only: wall-clock hours and cost of all epochs with interruptions and restarts
    expected_total_hours: float | None = None
    expected_total_cost: float | None = None
    #: ``"measured"`` / ``"model"``: where the multi-GPU efficiency comes from
    #: (:attr:`ThroughputEstimate.multi_gpu_basis`); ``None`` for one GPU
    multi_gpu_basis: MultiGpuBasis | None = None
    #: :attr:`ThroughputEstimate.multi_gpu`
    multi_gpu: MultiGpuSummary | None = None
    #: implied model-FLOPs utilisation per GPU of ``samples_per_s`` (ThroughputEstimate.mfu)
    mfu: float | None = None
    #: implied hardware-FLOPs utilisation (recompute counted)
    hfu: float | None = None
    #: the training stack assumed (ThroughputEstimate.stack)
    stack: str | None = None
