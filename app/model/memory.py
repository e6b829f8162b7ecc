"""Peak GPU memory per GPU for a training step, and the OOM risk it implies.

Method: ``../shared/docs/estimation.md`` §1 and §5.1 (restating EleutherAI "Transformer Math
101", HF "Model training anatomy", the ZeRO paper arXiv:1910.02054, Korthikanti et al.
arXiv:2205.05198 and Stas Bekman's ML Engineering book):

    M_peak = (weights + gradients + optimizer states [÷ sharding]
              + activations(b) + logits(b) + sharding buffers) × SLACK + CUDA context (+ NCCL)

All arithmetic is in bytes; results are GiB (2**30 bytes) and compared against the GPU's
*usable* GiB (``vram_gib × USABLE_VRAM_FRACTION``).

The terms live in :mod:`app.model.memory_states` (weights, gradients, optimizer states, frozen
base, adapters, sharding buffers), :mod:`app.model.memory_activations` (activations and logits
per sample), :mod:`app.model.memory_dtypes` (bytes per element, the frozen base's dtype),
:mod:`app.model.memory_notes` and :mod:`app.model.memory_fixes`; this module adds them up
(:func:`peak_memory_bytes`), rates the OOM risk and re-exports the names callers import.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from app.model import vram
from app.model.calibration import Calibration, MemoryParams, load_calibration
from app.model.memory_activations import (
    COPIES_GPT,
    _copies_per_layer,
    activation_bytes_per_sample,
    fused_copies_per_layer,
    implementation,
    last_layer_bytes_per_sample,
    logit_bytes_per_element,
    logits_bytes_per_sample,
    offloaded_activation_bytes,
    selective_saved_copies,
    transformer_tokens,
    unet_attention_scores_bytes,
)
from app.model.memory_dtypes import GIB, NF4_BYTES_PER_PARAM
from app.model.memory_fixes import _fix_candidates
from app.model.memory_notes import memory_notes
from app.model.memory_states import (
    ZERO_BUCKET_ELEMENTS,
    StateBytes,
    autocast_copy_bytes,
    ema_bytes,
    frozen_base_bytes,
    frozen_component_bytes,
    gradients_not_alive_at_peak,
    lora_trainable_params,
    model_state_bytes,
    optimizer_state_bytes,
    optimizer_step_excess_bytes,
    state_bytes,
)
from app.model.types import (
    MemoryBreakdown,
    MemoryEstimate,
    MemoryFix,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)

#: Fraction of the marketed VRAM that CUDA reports on a card without a measured row
#: (:mod:`app.model.vram`, where the cards with one are listed with their sources).
USABLE_VRAM_FRACTION = vram.DEFAULT_USABLE_FRACTION

#: CUDA context + kernels with lazy module loading (torch 2.x): Stas measured 0.47 GiB lazy,
#: 0.92 GiB eager on A100 (ML Engineering, training/performance/README.md).
CUDA_CONTEXT_GIB = 0.5

#: torch.distributed / NCCL initialisation per GPU when more than one GPU trains
#: (Stas: +1.5 GiB after the first barrier on 2 GPUs).
NCCL_GIB = 1.5

#: Caching-allocator and fragmentation slack on top of allocated bytes for static-shape
#: training (estimation.md §1.6: reserved ≈ 1.05-1.20 × peak allocated; §5.1 step 5).
SLACK = 1.10


#: Probability bands of the calibrated OOM model: ``high`` at P(OOM) ≥ 0.5 (the run is more
#: likely to fail than not), ``low`` below 0.1 (it fits); ``medium`` in between.
HIGH_RISK_PROBABILITY = 0.5
LOW_RISK_PROBABILITY = 0.1


def offloaded_bytes_per_param(w: Workload) -> float:
    """Host RAM per trained parameter under ``cpu_offload``, bytes: the weights the optimizer
    updates, their gradients and the optimizer states (:func:`optimizer_state_bytes`), at the
    dtype the optimizer step runs in on the CPU.

    Mixed precision and fp32 (ZeRO-Offload, arXiv:2101.06840 §4.1: the fp32 parameters,
    momentum and variance, 12 B with Adam, and the gradients live on the CPU; DeepSpeed's CPU
    partition keeps the gradients in fp32 too): 4 + 4 + states = 16 B with AdamW. Pure ``bf16``
    (torchtune ``dtype: bf16`` with ``fsdp_cpu_offload``: FSDP moves the sharded bf16
    parameters and gradients to the CPU, and the optimizer makes its states there in the
    parameters' dtype): 2 + 2 + bf16 states = 8 B with AdamW, the bytes per parameter of the
    pure-bf16 note (:func:`app.model.memory_notes.memory_notes`)."""
    pure_bf16 = w.precision == Precision.BF16
    moments_at = Precision.BF16 if pure_bf16 else Precision.FP32
    master = 2.0 if pure_bf16 else 4.0
    return master + master + optimizer_state_bytes(w.optimizer, moments_at)


def host_offload_bytes(w: Workload, gpu_count: int) -> float:
    """Host RAM the training states moved off the GPUs need, bytes, summed over the machine's
    ``gpu_count`` GPUs (each GPU's shard lives in the same host).

    ``cpu_offload``: :func:`offloaded_bytes_per_param` of every trained parameter (16 B with
    AdamW in mixed precision, 8 B in pure bf16), plus the frozen base under ZeRO-3/FSDP, whose
    parameter offload moves it too; paged 8-bit AdamW: its 2 B states per trained parameter, which
    unified memory evicts to host RAM under pressure; ``activation_offloading``: the
    checkpointed layer inputs of every GPU (:func:`offloaded_activation_bytes`). Never less
    with offloading than without.
    """
    n = max(int(gpu_count), 1)
    p = float(w.params or 0)
    lora = w.method in (Method.LORA, Method.QLORA)
    trained = float(lora_trainable_params(w)) if lora else p
    host = 0.0
    if w.optimizer == Optimizer.PAGED_ADAMW_8BIT:
        host += 2.0 * trained
    if w.cpu_offload:
        host += trained * offloaded_bytes_per_param(w)
        if lora and w.sharding in (Sharding.ZERO3, Sharding.FSDP):
            host += frozen_base_bytes(w)
    if w.activation_offloading and w.gradient_checkpointing:
        host += n * offloaded_activation_bytes(w) * w.micro_batch_size
    return host


def peak_memory_bytes(
    w: Workload, gpu_count: int, micro_batch_size: int, cal: Calibration | None = None
) -> MemoryBreakdown:
    """Memory breakdown per GPU for ``micro_batch_size`` samples per GPU, in GiB.

    ``allocated_gib`` is the training step's allocated bytes plus what initialisation left
    allocated (``full_model_init``); ``total_gib`` adds allocator slack and the CUDA context
    (+ NCCL with more than one GPU).
    """
    cal = cal or load_calibration()
    return _breakdown(w, _per_sample_parts(w, gpu_count, cal), gpu_count, micro_batch_size)


def _per_sample_parts(
    w: Workload, gpu_count: int, cal: Calibration
) -> tuple[StateBytes, float, float, float]:
    """What :func:`peak_memory_bytes` reads of ``w`` whatever the micro-batch: the states per
    GPU, and the activation, logits and last-layer bytes per sample."""
    return (
        state_bytes(w, gpu_count, cal),
        activation_bytes_per_sample(w, cal),
        logits_bytes_per_sample(w, cal),
        last_layer_bytes_per_sample(w, cal),
    )


def _breakdown(
    w: Workload,
    parts: tuple[StateBytes, float, float, float],
    gpu_count: int,
    micro_batch_size: int,
) -> MemoryBreakdown:
    """:func:`peak_memory_bytes` from :func:`_per_sample_parts` (one formula for both)."""
    states, act_per_sample, logits_per_sample, tail_per_sample = parts
    act = act_per_sample * micro_batch_size
    overhead = CUDA_CONTEXT_GIB * GIB + (NCCL_GIB * GIB if gpu_count > 1 else 0.0)
    tail = tail_per_sample * micro_batch_size
    freed = gradients_not_alive_at_peak(w, gpu_count, states, act, tail)
    gradients = states.gradients - freed
    step_extra = optimizer_step_excess_bytes(
        w, gpu_count, states.gradients, autocast_copy_bytes(w) + act + gradients + states.buffers
    )
    optimizer = states.optimizer + step_extra
    step = states.weights + gradients + optimizer + states.buffers + act
    allocated = step + states.init_peak
    total = allocated * SLACK + overhead
    slack = allocated * (SLACK - 1)
    init_extra = allocated - step
    return MemoryBreakdown(
        weights_gib=states.weights / GIB,
        gradients_gib=gradients / GIB,
        optimizer_gib=optimizer / GIB,
        activations_gib=act / GIB,
        overhead_gib=(overhead + slack + states.buffers + init_extra) / GIB,
        total_gib=total / GIB,
        allocated_gib=allocated / GIB,
        logits_gib=logits_per_sample * micro_batch_size / GIB,
        buffers_gib=states.buffers / GIB,
        init_extra_gib=init_extra / GIB,
        context_gib=overhead / GIB,
        allocator_slack_gib=slack / GIB,
        text_encoder_gib=states.text_encoder / GIB,
        vae_gib=states.vae / GIB,
        ema_gib=states.ema / GIB,
        gradients_freed_gib=freed / GIB,
        optimizer_step_gib=step_extra / GIB,
    )


def vram_per_gpu_gib(
    catalog_vram_gib: float, listed_vram_gib: float | None, gpu_count: float
) -> float:
    """VRAM one (possibly fractional) GPU of an offer gives a job.

    A listed figure wins when the offer states one. A fractional GPU (``gpu_count`` < 1: a
    vGPU or MIG-style slice, e.g. a third of an A10) gets its share of the card unless the
    listing already states the slice's memory (a listed figure below the catalog's).
    """
    if gpu_count >= 1:
        return listed_vram_gib or catalog_vram_gib
    if listed_vram_gib and listed_vram_gib < catalog_vram_gib * 0.95:
        return listed_vram_gib
    return catalog_vram_gib * gpu_count


def usable_vram_gib(vram_gib: float, gpu: str | None = None) -> float:
    """CUDA-reported capacity of ``vram_gib`` of card ``gpu`` (a catalog name; a fractional
    GPU's share keeps the card's ratio): what the driver reports where the card has a row in
    :mod:`app.model.vram`, else ``USABLE_VRAM_FRACTION`` of it."""
    return vram_gib * vram.usable_fraction(gpu)


def oom_probability(utilization: float, cal: Calibration | None = None) -> float:
    """Calibrated P(OOM) from ``utilization`` = predicted peak / usable VRAM (logistic in the
    log of the utilisation, fitted on the published fits/OOM cases)."""
    cal = cal or load_calibration()
    if utilization <= 0:
        return 0.0
    if not math.isfinite(utilization):
        return 1.0
    z = (math.log(utilization) - cal.memory.oom_center) / max(cal.memory.oom_scale, 1e-6)
    z = max(min(z, 60.0), -60.0)
    return 1.0 / (1.0 + math.exp(-z))


def oom_risk(utilization: float, cal: Calibration | None = None) -> OomRisk:
    """Risk band of ``utilization`` (peak / usable) by calibrated probability: ``high`` at
    P(OOM) ≥ 0.5, ``low`` below 0.1, else ``medium``."""
    cal = cal or load_calibration()
    prob = oom_probability(utilization, cal)
    if prob >= HIGH_RISK_PROBABILITY:
        return OomRisk.HIGH
    if prob >= LOW_RISK_PROBABILITY:
        return OomRisk.MEDIUM
    return OomRisk.LOW


def max_fitting_utilization(cal: Calibration | None = None) -> float:
    """Utilisation at which P(OOM) reaches 0.5: the same rule as ``high``."""
    cal = cal or load_calibration()
    return math.exp(cal.memory.oom_center)


def fixes_for(
    w: Workload,
    *,
    vram_gib: float,
    gpu_count: float = 1,
    cal: Calibration | None = None,
    limit: int = 5,
    gpu: str | None = None,
) -> tuple[MemoryFix, ...]:
    """The smallest changes predicted to take ``w`` out of ``high`` risk on this hardware.

    Tries a smaller micro-batch (same global batch through gradient accumulation), then each
    single change of :func:`_fix_candidates`, then pairs with activation checkpointing; keeps
    those whose risk is not ``high``, in that order, each with its predicted peak.
    """
    cal = cal or load_calibration()
    count = max(math.floor(gpu_count), 1)
    out: list[MemoryFix] = []

    def attempt(label: str, changes: dict[str, object]) -> None:
        if all(f.label != label for f in out):
            fix = _tried_fix(w, label, changes, vram_gib, gpu_count, cal, gpu)
            if fix is not None:
                out.append(fix)

    base = estimate_memory(
        w, vram_gib=vram_gib, gpu_count=gpu_count, cal=cal, with_fixes=False, gpu=gpu
    )
    if 1 <= base.max_micro_batch_size < w.micro_batch_size:
        b = base.max_micro_batch_size
        accum = math.ceil(w.micro_batch_size * w.grad_accum_steps / b)
        attempt(
            f"micro-batch {b} (gradient accumulation {accum})",
            {"micro_batch_size": b, "grad_accum_steps": accum},
        )
    singles = _fix_candidates(w, count)
    for label, changes in singles:
        attempt(label, changes)
    if not out and not w.gradient_checkpointing:
        for label, changes in singles[1:]:
            attempt(
                f"activation checkpointing + {label}", {"gradient_checkpointing": True, **changes}
            )
    return tuple(out[:limit])


def _tried_fix(
    w: Workload,
    label: str,
    changes: dict[str, object],
    vram_gib: float,
    gpu_count: float,
    cal: Calibration,
    gpu: str | None,
) -> MemoryFix | None:
    """``w`` with ``changes`` applied as a :class:`MemoryFix` with its predicted peak, or
    ``None`` when the changed job is still ``high`` risk (:func:`fixes_for`)."""
    candidate = replace(w, **changes)  # type: ignore[arg-type]
    est = estimate_memory(
        candidate, vram_gib=vram_gib, gpu_count=gpu_count, cal=cal, with_fixes=False, gpu=gpu
    )
    if est.oom_risk == OomRisk.HIGH:
        return None
    return MemoryFix(
        label=label,
        changes=tuple((k, str(getattr(v, "value", v)).lower()) for k, v in changes.items()),
        peak_memory_gib=est.peak_memory_gib,
        oom_risk=est.oom_risk,
        oom_probability=est.oom_probability,
    )


def estimate_memory(
    w: Workload,
    *,
    vram_gib: float,
    gpu_count: float = 1,
    cal: Calibration | None = None,
    with_fixes: bool = True,
    gpu: str | None = None,
    peaks: dict[tuple[int, int], MemoryBreakdown] | None = None,
) -> MemoryEstimate:
    """Peak memory per GPU for ``w`` on a GPU with ``vram_gib``, with calibrated OOM risk.

    ``max_micro_batch_size`` is the largest per-GPU micro-batch whose risk is ``low``
    (P(OOM) < 0.1, by :func:`oom_risk`), 0 when even one sample is not ``low``: a batch
    that is merely ``medium`` OOMs often enough that it is not offered as "fits". When the
    risk is ``high``, ``fixes`` lists changes predicted to leave ``high``
    (:func:`fixes_for`).

    ``peaks``: :func:`peak_memory_bytes` of this ``w`` and ``cal`` by (whole GPUs,
    micro-batch), filled and read here; a caller estimating one workload on many VRAM sizes
    passes one dict to all calls (the breakdown does not depend on the VRAM), the same
    figures as without it.
    """
    cal = cal or load_calibration()
    peak_at = _peaks_of(w, gpu_count, cal, peaks)
    breakdown = peak_at(w.micro_batch_size)
    usable = usable_vram_gib(vram_gib, gpu)

    def fits(b: int) -> bool:
        if usable <= 0:
            return False
        peak = peak_at(b).total_gib
        return oom_risk(peak / usable, cal) == OomRisk.LOW

    max_b = _largest_fitting(fits)
    utilization = _utilization(breakdown, usable)
    risk = oom_risk(utilization, cal)
    fixes: tuple[MemoryFix, ...] = ()
    if with_fixes and risk == OomRisk.HIGH:
        fixes = fixes_for(w, vram_gib=vram_gib, gpu_count=gpu_count, cal=cal, gpu=gpu)
    return MemoryEstimate(
        breakdown=breakdown,
        peak_memory_gib=breakdown.total_gib,
        usable_vram_gib=usable,
        memory_utilization=utilization,
        oom_risk=risk,
        max_micro_batch_size=max_b,
        oom_probability=oom_probability(utilization, cal),
        fixes=fixes,
        notes=memory_notes(w, cal),
    )


def memory_risk(
    w: Workload,
    *,
    vram_gib: float,
    gpu_count: float = 1,
    cal: Calibration | None = None,
    gpu: str | None = None,
    peaks: dict[tuple[int, int], MemoryBreakdown] | None = None,
) -> OomRisk:
    """The ``oom_risk`` of :func:`estimate_memory` with the same arguments, alone: one
    breakdown and one utilisation, without the micro-batch search and the notes (what a
    ranking needs of every hardware configuration; the full estimate is made only for the
    offers shown). Same arithmetic, so the same band."""
    cal = cal or load_calibration()
    breakdown = _peaks_of(w, gpu_count, cal, peaks)(w.micro_batch_size)
    return oom_risk(_utilization(breakdown, usable_vram_gib(vram_gib, gpu)), cal)


def _peaks_of(
    w: Workload,
    gpu_count: float,
    cal: Calibration,
    peaks: dict[tuple[int, int], MemoryBreakdown] | None,
) -> Callable[[int], MemoryBreakdown]:
    """micro-batch → :func:`peak_memory_bytes` of ``w`` on ``gpu_count`` GPUs (whole GPUs, at
    least one), read from and kept in ``peaks`` when given (:func:`estimate_memory`)."""
    count = max(math.floor(gpu_count), 1)
    parts: list[tuple[StateBytes, float, float, float]] = []  # read once, on the first breakdown

    def breakdown(b: int) -> MemoryBreakdown:
        if not parts:
            parts.append(_per_sample_parts(w, count, cal))
        return _breakdown(w, parts[0], count, b)

    def peak_at(b: int) -> MemoryBreakdown:
        if peaks is None:
            return breakdown(b)
        hit = peaks.get((count, b))
        if hit is None:
            hit = peaks[(count, b)] = breakdown(b)
        return hit

    return peak_at


def _utilization(breakdown: MemoryBreakdown, usable_gib: float) -> float:
    """Predicted peak ÷ usable VRAM (infinite without usable VRAM)."""
    return breakdown.total_gib / usable_gib if usable_gib > 0 else math.inf


def _largest_fitting(fits: Callable[[int], bool]) -> int:
    """The largest micro-batch ``b`` with ``fits(b)`` (``fits`` monotone: true up to some b),
    0 when not even 1 fits, capped at 1,000,000: doubling, then bisection."""
    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi < 1_000_000 and fits(hi):
        lo, hi = hi, hi * 2
    if hi >= 1_000_000 and fits(hi):
        return 1_000_000
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


__all__ = [
    "COPIES_GPT",
    "CUDA_CONTEXT_GIB",
    "GIB",
    "HIGH_RISK_PROBABILITY",
    "LOW_RISK_PROBABILITY",
    "NCCL_GIB",
    "NF4_BYTES_PER_PARAM",
    "SLACK",
    "USABLE_VRAM_FRACTION",
    "ZERO_BUCKET_ELEMENTS",
    "MemoryParams",
    "StateBytes",
    "_copies_per_layer",
    "activation_bytes_per_sample",
    "ema_bytes",
    "estimate_memory",
    "fixes_for",
    "frozen_base_bytes",
    "frozen_component_bytes",
    "fused_copies_per_layer",
    "host_offload_bytes",
    "implementation",
    "logit_bytes_per_element",
    "logits_bytes_per_sample",
    "lora_trainable_params",
    "max_fitting_utilization",
    "memory_notes",
    "memory_risk",
    "model_state_bytes",
    "offloaded_activation_bytes",
    "offloaded_bytes_per_param",
    "oom_probability",
    "oom_risk",
    "optimizer_state_bytes",
    "peak_memory_bytes",
    "selective_saved_copies",
    "state_bytes",
    "transformer_tokens",
    "unet_attention_scores_bytes",
    "usable_vram_gib",
    "vram_per_gpu_gib",
]
