"""Peak GPU memory per GPU for a training step, and the OOM risk it implies.

Method: ``../shared/docs/estimation.md`` §1 and §5.1 (restating EleutherAI "Transformer Math
101", HF "Model training anatomy", the ZeRO paper arXiv:1910.02054, Korthikanti et al.
arXiv:2205.05198 and Stas Bekman's ML Engineering book):

    M_peak = (weights + gradients + optimizer states [÷ sharding]
              + activations(b) + logits(b) + sharding buffers) × SLACK + CUDA context (+ NCCL)

All arithmetic is in bytes; results are GiB (2**30 bytes) and compared against the GPU's
*usable* GiB (``vram_gb × USABLE_VRAM_FRACTION``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.estimate import fitted
from app.estimate.types import (
    Architecture,
    Attention,
    MemoryBreakdown,
    MemoryEstimate,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)

GIB = 2**30

#: Fraction of the marketed VRAM that CUDA reports as total capacity: an "80GB" A100/H100
#: reports ~79.2 GiB and a 24 GB card ~23.6-23.7 GiB (estimation.md "Units"; FastChat#1637).
USABLE_VRAM_FRACTION = 0.985

#: CUDA context + kernels with lazy module loading (torch 2.x): Stas measured 0.47 GiB lazy,
#: 0.92 GiB eager on A100 (ML Engineering, training/performance/README.md).
CUDA_CONTEXT_GIB = 0.5

#: torch.distributed / NCCL initialisation per GPU when more than one GPU trains
#: (Stas: +1.5 GiB after the first barrier on 2 GPUs).
NCCL_GIB = 1.5

#: Caching-allocator and fragmentation slack on top of allocated bytes for static-shape
#: training (estimation.md §1.6: reserved ≈ 1.05-1.20 × peak allocated; §5.1 step 5).
SLACK = 1.10

#: bitsandbytes quantisation overhead, fraction of the quantised base (gpu_poor App.js, §5.1.4).
BNB_OVERHEAD = 0.06

#: NF4 with double quantisation: ~4.127 bits per parameter (QLoRA paper; PEFT PR #476 "4.5 →
#: 4.1 bits"), i.e. 0.516 bytes.
NF4_BYTES_PER_PARAM = 4.127 / 8

#: DeepSpeed all-gather bucket, 5e8 elements (EleutherAI cookbook calc_transformer_mem.py).
ZERO_BUCKET_ELEMENTS = 5e8

#: OOM bands (estimation.md §5.1 step 6). ``memory_utilization`` = peak (allocated × SLACK
#: + context) / usable: < 0.85 is ``low``. ``high`` means even the allocated bytes plus the
#: CUDA context exceed usable VRAM (no allocator can make it fit); in between, whether it
#: fits depends on fragmentation: ``medium``.
LOW_RISK_MAX = 0.85
HIGH_RISK_MIN = 1.0

#: Hidden-state-sized copies saved per transformer layer (bytes = c × bytes × b × s × h).
#: GPT/BERT blocks: Korthikanti's 34·s·b·h bytes at 2-byte activations = 17 copies;
#: Llama-style SwiGLU blocks: Stas measured c = 28 (Llama-3.1-8B, Mistral-7B).
COPIES_GPT = 17.0
COPIES_SWIGLU = 28.0
#: Activation checkpointing of non-transformer nets keeps this fraction of activations:
#: Chen et al. 2016 (arXiv:1604.06174) trained a 1,000-layer ResNet in 7 GB instead of 48 GB
#: (estimation.md §1.5); an optimistic bound for shallower nets.
CHECKPOINTING_ACTIVATION_FACTOR = 7.0 / 48.0

#: LoRA keeps fewer activations (frozen linears need no inputs for weight gradients):
#: LitGPT's Llama-2-7B mb1→mb2 delta gives c ≈ 23 vs 28 (estimation.md §5.2b C-2).
LORA_ACTIVATION_FACTOR = 23.0 / 28.0


def activation_bytes(precision: Precision) -> int:
    """Bytes per activation element: 4 for fp32/tf32 training, 2 for 16-bit/fp8 regimes."""
    return 4 if precision in (Precision.FP32, Precision.TF32) else 2


def optimizer_state_bytes(optimizer: Optimizer, precision: Precision) -> float:
    """Optimizer state bytes per trainable parameter, excluding fp32 master weights.

    AdamW/LAMB: two moments (8 B fp32, 4 B in pure bf16); 8-bit AdamW: 2 B (Dettmers et al.
    arXiv:2110.02861); SGD momentum: one moment (4 B / 2 B); Adafactor: ~4 B (Stas, §1.2).
    """
    if optimizer == Optimizer.ADAMW_8BIT:
        return 2.0
    if optimizer == Optimizer.ADAFACTOR:
        return 4.0
    per_moment = 2.0 if precision == Precision.BF16 else 4.0
    moments = 1 if optimizer == Optimizer.SGD_MOMENTUM else 2
    return per_moment * moments


@dataclass(frozen=True, slots=True)
class StateBytes:
    """Model-state bytes per GPU: weights, gradients, optimizer (incl. master copies)."""

    weights: float
    gradients: float
    optimizer: float
    buffers: float


def lora_trainable_params(w: Workload) -> int:
    """LoRA adapter parameters: rank × (d_in + d_out) for every adapted linear, all layers.

    Decoders: all seven linears of a Llama block (q, k, v, o, gate, up, down), as in QLoRA
    (arXiv:2305.14314 §4: "LoRA on all linear layers"); other transformers: q and v (LoRA
    paper arXiv:2106.09685 §7.1). Without layer shapes: 0.2 % of params (QLoRA appendix:
    "LoRA params (0.2%)").
    """
    r = w.lora_rank or 8
    h, layers = w.hidden_size, w.layers
    if not h or not layers:
        return int((w.params or 0) * 0.002)
    heads = w.heads or 1
    kv = w.kv_heads or heads
    kv_dim = h * kv // heads
    ffn = w.ffn_hidden_size or 4 * h
    if w.architecture == Architecture.TRANSFORMER_DECODER:
        dims = [(h, h), (h, kv_dim), (h, kv_dim), (h, h), (h, ffn), (h, ffn), (ffn, h)]
    else:
        dims = [(h, h), (h, kv_dim)]
    return r * layers * sum(a + b for a, b in dims)


def embedding_params(w: Workload) -> int:
    """Input embedding + untied LM head parameters (kept in 16-bit under QLoRA)."""
    if not w.vocab_size or not w.hidden_size:
        return 0
    n = w.vocab_size * w.hidden_size
    return 2 * n if w.architecture == Architecture.TRANSFORMER_DECODER else n


def state_bytes(w: Workload, gpu_count: int) -> StateBytes:
    """Weights/gradients/optimizer bytes per GPU (estimation.md §1.2-1.3).

    Unsharded mixed precision (``*_amp``, ``fp8``) follows HF AMP: fp32 weights + 16-bit copy
    (6 B), fp32 gradients (4 B), optimizer states (AdamW 8 B) = 18 B/param. Sharded (ZeRO/FSDP)
    mixed precision follows the ZeRO paper: 2 B weights, 2 B gradients, K = 4 B master +
    states, each divided by the data-parallel degree per stage. fp32: 4 + 4 + states. Pure
    bf16: 2 + 2 + bf16 states. LoRA/QLoRA: the frozen base is stored once per GPU at 2 B
    (LoRA, 16-bit) / 4 B (LoRA, fp32) / NF4 (QLoRA) and is *not* sharded (PEFT caveat,
    xtuner#88); the adapters carry full fp32 Adam states (16 B/param).
    """
    n = max(int(gpu_count), 1)
    if not w.params:
        # no parameter count: the fixed memory measured with the workload's benchmark
        fixed = fitted.ACTIVATION_BYTES_PER_SAMPLE.get(_fit_key(w))
        return StateBytes(
            weights=fixed[2] if fixed else 0.0, gradients=0.0, optimizer=0.0, buffers=0.0
        )
    p = float(w.params)
    opt = optimizer_state_bytes(w.optimizer, w.precision)
    buffers = 0.0
    if w.method in (Method.LORA, Method.QLORA):
        pt = float(lora_trainable_params(w))
        if w.method == Method.QLORA:
            emb = float(embedding_params(w))
            base = (p - emb) * NF4_BYTES_PER_PARAM * (1 + BNB_OVERHEAD) + emb * 2
        else:
            base = p * (4 if w.precision in (Precision.FP32, Precision.TF32) else 2)
        div = n if w.sharding != Sharding.NONE else 1
        optim = 0.0 if w.cpu_offload else pt * 8 / div
        # FSDP shards frozen base weights too (16-bit, or NF4 with FSDP2/torchao, as in
        # torchtune's 405B QLoRA); DeepSpeed ZeRO-3 does not shard bitsandbytes 4-bit weights
        # (xtuner#88), 16-bit LoRA bases it does.
        shard_base = w.sharding == Sharding.FSDP or (
            w.sharding == Sharding.ZERO3 and w.method == Method.LORA
        )
        if shard_base:
            largest_unit = base / (w.layers or 1)
            base = 2 * largest_unit if w.cpu_offload else base / n + 2 * largest_unit
        return StateBytes(weights=base + pt * 4, gradients=pt * 4, optimizer=optim, buffers=0.0)

    if w.precision in (Precision.FP32, Precision.TF32):
        weights, grads, optim = 4.0, 4.0, opt
    elif w.precision == Precision.BF16:
        weights, grads, optim = 2.0, 2.0, opt
    elif w.sharding == Sharding.NONE:
        weights, grads, optim = 6.0, 4.0, opt
    else:
        weights, grads, optim = 2.0, 2.0, 4.0 + opt

    if w.sharding == Sharding.ZERO1:
        optim /= n
    elif w.sharding == Sharding.ZERO2:
        optim /= n
        grads /= n
    elif w.sharding in (Sharding.ZERO3, Sharding.FSDP):
        optim /= n
        grads /= n
        weights /= n
        # all-gathered full parameters of the unit being computed plus one prefetched unit
        largest_unit = max(p / (w.layers or 1), float(embedding_params(w)) / 2)
        buffers += 2 * largest_unit * 2
    if w.sharding in (Sharding.ZERO1, Sharding.ZERO2, Sharding.ZERO3):
        buffers += ZERO_BUCKET_ELEMENTS * 2
    if w.cpu_offload:
        # ZeRO-Offload / FSDP CPU offload: optimizer states and fp32 master weights live in
        # host RAM; with ZeRO-3/FSDP the sharded parameters and gradients too, so the GPU
        # holds only the gathered units (buffers above).
        optim = 0.0
        if w.sharding in (Sharding.ZERO3, Sharding.FSDP):
            weights = grads = 0.0
        elif w.precision not in (Precision.FP32, Precision.TF32, Precision.BF16):
            weights = 2.0
    return StateBytes(
        weights=weights * p, gradients=grads * p, optimizer=optim * p, buffers=buffers
    )


def transformer_tokens(w: Workload) -> int:
    """Tokens per sample: ``seq_len``; ViT: (image_size / 16)² + 1 (ViT-B/16 patches + CLS)."""
    if w.architecture == Architecture.VIT and w.image_size:
        return (w.image_size // 16) ** 2 + 1
    return w.seq_len or 1


def activation_bytes_per_sample(w: Workload) -> float:
    """Saved-activation bytes for one sample (micro-batch 1), logits included.

    Transformers (Korthikanti et al. Table 2, Stas's measured c, estimation.md §5.1.3):
    without checkpointing ``L · c · bytes · s · h`` plus the decoder's logits ``6 · s · V``
    (fp32 plus the 16-bit copy it is upcast from; 0 with fused cross-entropy); with full
    checkpointing ``L · bytes · s · h + max(c · bytes · s · h, logits)`` (layer inputs, then
    whichever is larger of one layer's recompute and the loss, which are never alive
    together); eager attention adds ``a · s² · (2·bytes + 1)`` per stored layer. LoRA scales
    c by 23/28.

    Other families: the per-sample slope fitted from measured peak memory at several batch
    sizes (:mod:`app.estimate.fitted`), scaled by pixels for vision inputs; CNNs without a fit
    use ResNet-50's bytes per forward GFLOP (×2 for fp32); others a fitted bytes per
    parameter; recommenders (embedding lookups) ~0.
    """
    nbytes = activation_bytes(w.precision)
    if (
        w.architecture
        in (Architecture.TRANSFORMER_ENCODER, Architecture.TRANSFORMER_DECODER, Architecture.VIT)
        and w.hidden_size
        and w.layers
    ):
        s = transformer_tokens(w)
        h = w.hidden_size
        swiglu = bool(w.ffn_hidden_size) and w.ffn_hidden_size != 4 * h
        c = COPIES_SWIGLU if swiglu else COPIES_GPT
        if w.method in (Method.LORA, Method.QLORA):
            c *= LORA_ACTIVATION_FACTOR
        per_layer = c * nbytes * s * h
        scores = 0.0
        if w.attention == Attention.EAGER and w.heads:
            scores = w.heads * s * s * (2 * nbytes + 1)
        logits = 0.0
        if (
            w.architecture == Architecture.TRANSFORMER_DECODER
            and w.vocab_size
            and not w.fused_cross_entropy
        ):
            logits = 6 * s * w.vocab_size
        if w.gradient_checkpointing:
            # the loss runs after the last layer (only checkpoints alive) and the logits are
            # freed before layers are recomputed in backward: the two peaks do not add up
            return w.layers * nbytes * s * h + max(per_layer + scores, logits)
        return w.layers * (per_layer + scores) + logits

    fit = fitted.ACTIVATION_BYTES_PER_SAMPLE.get(_fit_key(w))
    ref_pixels = None
    per_sample: float
    if fit is not None:
        per_sample, ref_image, _ = fit
        ref_pixels = ref_image * ref_image if ref_image else None
    elif (
        w.architecture in (Architecture.CNN, Architecture.DIFFUSION_UNET)
        and w.forward_gflops_per_sample
    ):
        per_sample = w.forward_gflops_per_sample * fitted.CNN_ACTIVATION_BYTES_PER_GFLOP
        if nbytes == 4:
            per_sample *= 2
    elif w.architecture == Architecture.RECOMMENDER or not w.params:
        per_sample = 0.0  # embedding lookups: negligible per sample
    else:
        per_sample = fitted.DEFAULT_ACTIVATION_BYTES_PER_PARAM * w.params
    if ref_pixels and w.image_size:
        per_sample *= (w.image_size * w.image_size) / ref_pixels
    if w.gradient_checkpointing:
        per_sample *= CHECKPOINTING_ACTIVATION_FACTOR
    if w.method in (Method.LORA, Method.QLORA):
        per_sample *= LORA_ACTIVATION_FACTOR
    return per_sample


def _fit_key(w: Workload) -> str:
    label = w.benchmark_workloads[0] if w.benchmark_workloads else (w.preset or "")
    regime = "32" if activation_bytes(w.precision) == 4 else "16"
    return f"{label}|{regime}"


def peak_memory_bytes(w: Workload, gpu_count: int, micro_batch_size: int) -> MemoryBreakdown:
    """Memory breakdown per GPU for ``micro_batch_size`` samples per GPU, in GiB."""
    states = state_bytes(w, gpu_count)
    act = activation_bytes_per_sample(w) * micro_batch_size
    overhead = CUDA_CONTEXT_GIB * GIB + (NCCL_GIB * GIB if gpu_count > 1 else 0.0)
    allocated = states.weights + states.gradients + states.optimizer + states.buffers + act
    total = allocated * SLACK + overhead
    slack = allocated * (SLACK - 1)
    return MemoryBreakdown(
        weights_gib=states.weights / GIB,
        gradients_gib=states.gradients / GIB,
        optimizer_gib=states.optimizer / GIB,
        activations_gib=act / GIB,
        overhead_gib=(overhead + slack + states.buffers) / GIB,
        total_gib=total / GIB,
        allocated_gib=allocated / GIB,
    )


def vram_per_gpu_gb(
    catalog_vram_gb: float, listed_vram_gb: float | None, gpu_count: float
) -> float:
    """VRAM one (possibly fractional) GPU of an offer gives a job.

    A listed figure wins when the offer states one. A fractional GPU (``gpu_count`` < 1: a
    vGPU or MIG-style slice, e.g. a third of an A10) gets its share of the card unless the
    listing already states the slice's memory (a listed figure below the catalog's).
    """
    if gpu_count >= 1:
        return listed_vram_gb or catalog_vram_gb
    if listed_vram_gb and listed_vram_gb < catalog_vram_gb * 0.95:
        return listed_vram_gb
    return catalog_vram_gb * gpu_count


def usable_vram_gib(vram_gb: float) -> float:
    """CUDA-reported capacity of a card marketed as ``vram_gb`` (see USABLE_VRAM_FRACTION)."""
    return vram_gb * USABLE_VRAM_FRACTION


def oom_risk(utilization: float, floor_utilization: float | None = None) -> OomRisk:
    """Risk band: ``utilization`` = peak / usable, ``floor_utilization`` = (allocated +
    context) / usable (defaults to ``utilization``); thresholds above."""
    floor = utilization if floor_utilization is None else floor_utilization
    if floor > HIGH_RISK_MIN:
        return OomRisk.HIGH
    if utilization >= LOW_RISK_MAX:
        return OomRisk.MEDIUM
    return OomRisk.LOW


def estimate_memory(w: Workload, *, vram_gb: float, gpu_count: float = 1) -> MemoryEstimate:
    """Peak memory per GPU for ``w`` on a GPU with ``vram_gb``, with OOM risk.

    ``max_micro_batch_size`` is the largest per-GPU micro-batch whose peak stays within usable
    VRAM (activations are linear in the micro-batch), 0 when even one sample does not fit.
    """
    count = max(math.floor(gpu_count), 1)
    breakdown = peak_memory_bytes(w, count, w.micro_batch_size)
    usable = usable_vram_gib(vram_gb)
    one = peak_memory_bytes(w, count, 1).total_gib
    two = peak_memory_bytes(w, count, 2).total_gib
    per_sample = two - one
    fixed = one - per_sample
    if one > usable:
        max_b = 0
    elif per_sample <= 0:
        max_b = 1_000_000
    else:
        max_b = int((usable - fixed) // per_sample)
    utilization = breakdown.total_gib / usable if usable > 0 else math.inf
    context = breakdown.total_gib - breakdown.allocated_gib * SLACK
    floor = (breakdown.allocated_gib + context) / usable if usable > 0 else math.inf
    return MemoryEstimate(
        breakdown=breakdown,
        peak_memory_gib=breakdown.total_gib,
        usable_vram_gib=usable,
        memory_utilization=utilization,
        oom_risk=oom_risk(utilization, floor),
        max_micro_batch_size=max_b,
    )
