"""Data-parallel scaling efficiency of a workload over several GPUs in one instance.

Communication model (estimation.md §4.6): a ring all-reduce moves ``2(n-1)/n × gradient
bytes`` per GPU per optimizer step; DDP overlaps it with the backward pass, so only the part
longer than ``overlap × step compute time`` is exposed:

    η = (1 - κ)^log2(n) · t_step / (t_step + max(0, t_comm - overlap · t_step))

κ is a per-doubling loss for everything the bandwidth term does not see (synchronisation,
stragglers, input pipeline contention, PCIe host-bridge sharing); the link efficiency, the
overlap fraction and κ are fitted per interconnect class (NVLink, PCIe, GeForce PCIe without
peer-to-peer) from the 2-16-GPU measurements (``tools/fit_constants.py`` →
:mod:`app.estimate.fitted`).
"""

from __future__ import annotations

import math

from app.estimate import fitted
from app.estimate.memory import lora_trainable_params
from app.estimate.types import GpuSpec, Interconnect, Method, Precision, Sharding, Workload

#: PCIe x16 per-direction bandwidth in GB/s by generation (Stas Bekman, ML Engineering,
#: network chapter; estimation.md §4.6).
PCIE_GBS = {3: 15.75, 4: 31.5, 5: 63.0}


def pcie_generation(gpu: GpuSpec) -> int:
    """PCIe generation by GPU architecture (Hopper/Blackwell 5, Ampere/Ada/CDNA 4, older 3)."""
    arch = gpu.architecture.lower()
    if arch in ("hopper", "blackwell"):
        return 5
    if arch in ("ampere", "ada lovelace", "cdna 2", "cdna 3", "rdna 3"):
        return 4
    return 3


def effective_interconnect(gpu: GpuSpec, interconnect: Interconnect | None) -> Interconnect | None:
    """The link between ``gpu``'s GPUs in one instance: as listed, else NVLink for SXM modules.

    SXM modules only come on NVLink/NVSwitch baseboards, so an offer that lists none is NVLink;
    other unlisted links stay ``None`` (treated as PCIe). The throughput estimate and the
    ``no_nvlink`` warning both use this rule.
    """
    if interconnect is None and (gpu.form_factor or "").upper() == "SXM":
        return Interconnect.NVLINK
    return interconnect


def link_class(gpu: GpuSpec, interconnect: Interconnect | None) -> str:
    """``nvlink``, ``pcie`` or ``pcie_consumer`` (GeForce: no peer-to-peer, via the host)."""
    if interconnect == Interconnect.NVLINK and gpu.nvlink and gpu.nvlink_bandwidth_gbs:
        return "nvlink"
    return "pcie_consumer" if gpu.market == "consumer" else "pcie"


def link_bytes_per_s(gpu: GpuSpec, interconnect: Interconnect | None) -> float:
    """Achievable all-reduce bus bandwidth per GPU and direction, bytes/s.

    NVLink: half the catalog's bidirectional per-GPU figure; PCIe: x16 of the GPU's
    generation. Each times the fitted efficiency of its link class
    (``fitted.LINK_EFFICIENCY``; GeForce cards route through the host, tinygrad/
    open-gpu-kernel-modules#17).
    """
    cls = link_class(gpu, interconnect)
    if cls == "nvlink":
        gbs = (gpu.nvlink_bandwidth_gbs or 0.0) / 2
    else:
        gbs = PCIE_GBS[pcie_generation(gpu)]
    return gbs * 1e9 * fitted.LINK_EFFICIENCY[cls]


def gradient_bytes(w: Workload) -> float:
    """Bytes all-reduced per optimizer step: trainable params × gradient bytes on the wire.

    4 B under DDP with autocast (fp32 parameters, so fp32 gradients are all-reduced); 2 B for
    pure bf16 and for ZeRO/FSDP, whose mixed-precision engines reduce in 16 bits by default
    (DeepSpeed's fp16/bf16 engines keep 16-bit gradients and communicate in the gradient
    dtype unless ``communication_data_type`` says otherwise; HF Trainer's FSDP builds
    ``MixedPrecision(param_dtype=bf16, reduce_dtype=bf16)``, seed_data/memory_cases.md).
    torchtitan's FSDP2 reduces in fp32 instead; the workload fields cannot say which trainer
    runs, and no measured multi-GPU pair here is sharded at 16-bit AMP, so this default is
    unvalidated. ZeRO-3/FSDP move 1.5× the DDP volume (ZeRO paper, arXiv:1910.02054 §7).
    Without a parameter count: 0 (no estimate).
    """
    if w.method in (Method.LORA, Method.QLORA):
        trainable = float(lora_trainable_params(w)) if w.params else 0.0
    else:
        trainable = float(w.params or 0)
    per_param = 2.0 if w.precision == Precision.BF16 or w.sharding != Sharding.NONE else 4.0
    volume = trainable * per_param
    if w.sharding in (Sharding.ZERO3, Sharding.FSDP):
        volume *= 1.5
    return volume


def multi_gpu_efficiency(
    w: Workload,
    gpu: GpuSpec,
    gpu_count: float,
    interconnect: Interconnect | None,
    per_gpu_samples_per_s: float,
    *,
    micro_batch: float | None = None,
) -> float:
    """Data-parallel scaling efficiency η in (0, 1] (1 for one GPU); see module docstring.

    ``micro_batch`` overrides the workload's micro-batch (the harness uses a benchmark's).
    """
    n = int(gpu_count)
    if n <= 1 or per_gpu_samples_per_s <= 0:
        return 1.0
    loss: float = (
        1.0 - fitted.SCALING_LOSS_PER_DOUBLING[link_class(gpu, interconnect)]
    ) ** math.log2(n)
    volume = gradient_bytes(w)
    if volume <= 0:
        return loss
    t_comm = 2 * (n - 1) / n * volume / link_bytes_per_s(gpu, interconnect)
    batch = micro_batch if micro_batch is not None else w.micro_batch_size
    t_step = batch * w.grad_accum_steps / per_gpu_samples_per_s
    exposed = max(0.0, t_comm - fitted.COMM_OVERLAP * t_step)
    return loss * t_step / (t_step + exposed)
