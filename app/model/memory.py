"""Peak GPU memory per GPU for a training step, and the OOM risk it implies.

Method: ``../shared/docs/estimation.md`` §1 and §5.1 (restating EleutherAI "Transformer Math
101", HF "Model training anatomy", the ZeRO paper arXiv:1910.02054, Korthikanti et al.
arXiv:2205.05198 and Stas Bekman's ML Engineering book):

    M_peak = (weights + gradients + optimizer states [÷ sharding]
              + activations(b) + logits(b) + sharding buffers) × SLACK + CUDA context (+ NCCL)

All arithmetic is in bytes; results are GiB (2**30 bytes) and compared against the GPU's
*usable* GiB (``vram_gib × USABLE_VRAM_FRACTION``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from app.model import vram
from app.model.calibration import Calibration, MemoryParams, load_calibration
from app.model.memory_vision import (
    assigner_bytes_per_sample,
    segmentation_loss_bytes_per_sample,
    task_notes,
)
from app.model.stacks import FUSED_KERNEL_STACKS
from app.model.types import (
    Architecture,
    Attention,
    BaseDtype,
    CheckpointGranularity,
    Implementation,
    MemoryBreakdown,
    MemoryEstimate,
    MemoryFix,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    QuantBackend,
    Sharding,
    VisionTask,
    Workload,
)

GIB = 2**30

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

#: bitsandbytes quantisation overhead, fraction of the quantised base (gpu_poor App.js, §5.1.4).
BNB_OVERHEAD = 0.06

#: NF4 with double quantisation: ~4.127 bits per parameter (QLoRA paper; PEFT PR #476 "4.5 →
#: 4.1 bits"), i.e. 0.516 bytes; without double quantisation ~4.5 bits (same sources).
NF4_BYTES_PER_PARAM = 4.127 / 8
NF4_NO_DQ_BYTES_PER_PARAM = 4.5 / 8

#: DeepSpeed all-gather bucket, 5e8 elements (EleutherAI cookbook calc_transformer_mem.py).
ZERO_BUCKET_ELEMENTS = 5e8
#: DeepSpeed ZeRO-3 ``stage3_max_live_parameters`` default, 1e9 (same source).
ZERO3_MAX_LIVE_PARAMETERS = 1e9

#: Hidden-state-sized copies saved per transformer layer (bytes = c × bytes × b × s × h).
#: GPT/BERT blocks: Korthikanti's 34·s·b·h bytes at 2-byte activations = 17 copies;
#: Llama-style SwiGLU blocks: Stas measured c = 28 (Llama-3.1-8B, Mistral-7B).
#: Of Korthikanti's 34·s·b·h bytes, the MLP keeps its input (2 B) and dropout mask (1 B) plus
#: 2 × 2 B per element of its hidden width f (GeLU input, fc2 input): 3 + 4·f/h. With f ≠ 4·h
#: in a non-gated MLP (ViT-g/14: f = 48/11 · h) the copies are 9 + 2·f/h (17 at f = 4·h).
COPIES_GPT_BASE = 9.0
COPIES_GPT = COPIES_GPT_BASE + 2.0 * 4  # 17: f = 4·h
COPIES_SWIGLU = 28.0
#: Autocast over fp32 weights without ZeRO/FSDP (``*_amp``, unsharded): autocast runs
#: layer_norm and softmax in float32 (PyTorch amp docs, autocast op reference, "CUDA Ops that
#: can autocast to float32") and the residual stream stays fp32, since the fp32 embeddings
#: added to it promote every 16-bit block output (timm VisionTransformer: ``x + pos_embed``;
#: HF models: fp32 ``nn.Embedding`` outputs). So the two LayerNorm inputs of a layer are kept at
#: 4 B, not 2 (Korthikanti's 4·s·b·h LayerNorm term doubles: 2 more hidden-sized copies at
#: 2 B), checkpointed layer inputs are fp32, and an eager attention score is kept as the fp32
#: softmax output (4 B) and its 16-bit copy for the product with V (2 B) next to the dropout
#: mask (1 B): 7 B instead of 2·2 + 1. FSDP MixedPrecision and DeepSpeed cast the weights to
#: 16 bits, so the stream is 16-bit there. Stas's measured SwiGLU constant is left as measured.
AMP_FP32_STREAM_EXTRA_COPIES = 2.0
AMP_EAGER_SCORE_BYTES = 7
#: Korthikanti's per-layer count keeps two 1-byte dropout masks of s·b·h (attention output and
#: MLP output) and one of a·s²·b per eager score; a layer without dropout (``dropout`` false:
#: PyTorch's dropout returns its input at p = 0, ATen Dropout.cpp, and stores no mask) keeps
#: neither, nor the dropped copy of the scores (the product with V saves the softmax output).
DROPOUT_MASK_BYTES_PER_LAYER = 2
DROPOUT_SCORE_BYTES = 1
#: Activation checkpointing of non-transformer nets keeps this fraction of activations:
#: Chen et al. 2016 (arXiv:1604.06174) trained a 1,000-layer ResNet in 7 GB instead of 48 GB
#: (estimation.md §1.5); an optimistic bound for shallower nets.
CHECKPOINTING_ACTIVATION_FACTOR = 7.0 / 48.0

#: ViT patch side when the workload gives none (ViT-B/16, Dosovitskiy et al. arXiv:2010.11929).
DEFAULT_PATCH_SIZE = 16

#: Side of the square image a detector backbone's ``backbone_gflops_224`` refers to.
BACKBONE_REFERENCE_PIXELS = 224 * 224

#: Stable Diffusion's VAE downsamples the image 8× per side (Rombach et al. arXiv:2112.10752,
#: f = 8): a 512×512 image is a 64×64 latent.
UNET_LATENT_DOWNSAMPLE = 8
#: SD 1.x UNet (UNet2DConditionModel config of stable-diffusion v1: attention_head_dim 8,
#: i.e. 8 heads in diffusers' naming; CrossAttnDownBlock2D first; layers_per_block 2):
#: self-attention over every latent pixel runs in 2 down + 3 up transformer blocks.
UNET_TOP_ATTENTION_HEADS = 8
#: Diffusion transformers (a diffusion model given ``layers`` and ``hidden_size``): latent
#: patch side (DiT-XL/2, Peebles & Xie arXiv:2212.09748; SD3 and Flux also patch 2) and the
#: hidden-sized copies adaLN-Zero adds to a ViT block: each of the two modulations
#: (x·(1 + scale) + shift) keeps its normalised input and each of the two gates (gate · y)
#: keeps the gated output, one copy apiece (same paper, Fig. 3).
DIT_DEFAULT_PATCH = 2
DIT_ADALN_COPIES = 4.0
UNET_TOP_ATTENTION_LAYERS = 5

#: GPU bytes per parameter charged for paged optimizer states (unified memory, evicted to
#: host under pressure: see optimizer_state_bytes).
PAGED_STATE_GPU_BYTES = 0.0

#: Probability bands of the calibrated OOM model: ``high`` at P(OOM) ≥ 0.5 (the run is more
#: likely to fail than not), ``low`` below 0.1 (it fits); ``medium`` in between.
HIGH_RISK_PROBABILITY = 0.5
LOW_RISK_PROBABILITY = 0.1


__all__ = ["MemoryParams"]  # the memory section of the calibration, re-exported


def activation_bytes(precision: Precision) -> int:
    """Bytes per activation element: 4 for fp32/tf32 training, 2 for 16-bit/fp8 regimes."""
    return 4 if precision in (Precision.FP32, Precision.TF32) else 2


def optimizer_state_bytes(optimizer: Optimizer, precision: Precision) -> float:
    """Optimizer state bytes per trainable parameter, excluding fp32 master weights.

    AdamW/LAMB: two moments (8 B fp32, 4 B in pure bf16); 8-bit AdamW: 2 B (Dettmers et al.
    arXiv:2110.02861); bitsandbytes PagedAdamW8bit: its states live in CUDA unified memory,
    outside PyTorch's allocator, and are evicted to host RAM when the GPU runs short (QLoRA
    paper arXiv:2305.14314 §3 "paged optimizers"), so they do not count against the peak
    (``PAGED_STATE_GPU_BYTES``); SGD momentum and Lion (arXiv:2302.06675): one
    moment; plain SGD: none; Adafactor (arXiv:1804.04235, HF defaults: factored second
    moment, no first moment): row + column factors, ~0 per parameter.
    """
    if optimizer == Optimizer.PAGED_ADAMW_8BIT:
        return PAGED_STATE_GPU_BYTES
    if optimizer == Optimizer.ADAMW_8BIT:
        return 2.0
    if optimizer in (Optimizer.ADAFACTOR, Optimizer.SGD):
        return 0.0
    per_moment = 2.0 if precision == Precision.BF16 else 4.0
    moments = 1 if optimizer in (Optimizer.SGD_MOMENTUM, Optimizer.LION) else 2
    return per_moment * moments


@dataclass(frozen=True, slots=True)
class StateBytes:
    """Model-state bytes per GPU: weights, gradients, optimizer (incl. master copies)."""

    weights: float
    gradients: float
    optimizer: float
    buffers: float
    #: bytes left allocated by model initialisation (``full_model_init``: the full 16-bit
    #: model each rank loaded before sharding), on top of the training step
    init_peak: float = 0.0
    #: diffusion: frozen text encoder(s) and VAE (part of ``weights``)
    text_encoder: float = 0.0
    vae: float = 0.0
    #: fp32 EMA copy of the trained parameters (part of ``optimizer``)
    ema: float = 0.0


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


def largest_tensor_params(w: Workload) -> float:
    """Parameters of the largest single tensor: the embedding or one MLP matrix."""
    p = float(w.params or 0)
    if w.hidden_size:
        ffn = w.ffn_hidden_size or 4 * w.hidden_size
        return float(max(embedding_params(w) / 2, w.hidden_size * ffn))
    return p / max(w.layers or 10, 1)


def zero3_buffer_bytes(w: Workload) -> float:
    """DeepSpeed ZeRO-3 working buffers: the all-gather bucket (5e8 elements, 16-bit) and up to
    ``stage3_max_live_parameters`` (1e9) gathered parameters at the parameter dtype (EleutherAI
    cookbook calc_transformer_mem.py, estimation.md §1.3), capped at the model size."""
    live = min(ZERO3_MAX_LIVE_PARAMETERS, float(w.params or 0))
    return ZERO_BUCKET_ELEMENTS * 2 + live * activation_bytes(w.precision)


def _amp(precision: Precision) -> bool:
    return precision in (Precision.FP16_AMP, Precision.BF16_AMP, Precision.FP8)


def frozen_component_bytes(w: Workload) -> tuple[float, float]:
    """Diffusion: bytes of the frozen text encoder(s) and of the frozen VAE on each GPU.

    diffusers' training scripts move both to the GPU cast to the training's weight dtype
    (``weight_dtype``: fp16/bf16 under mixed precision, fp32 otherwise;
    huggingface/diffusers examples/text_to_image/train_text_to_image.py and
    examples/dreambooth/train_dreambooth.py), so 2 bytes per parameter unless the run is
    fp32/tf32 (4 bytes). They are not wrapped by ZeRO/FSDP, so no sharding applies.
    Returns ``(text_encoder_bytes, vae_bytes)``; ``(0, 0)`` for other architectures.
    """
    if not _diffusion(w):
        return 0.0, 0.0
    per = 4.0 if w.precision in (Precision.FP32, Precision.TF32) else 2.0
    return float(w.text_encoder_params or 0) * per, float(w.vae_params or 0) * per


def ema_bytes(w: Workload, gpu_count: int) -> float:
    """Bytes per GPU of an EMA copy of the trained parameters (``ema_weights``): 4 per
    trainable parameter (diffusers' EMAModel and torchvision's ExponentialMovingAverage keep
    fp32 shadow parameters), the LoRA adapters only under LoRA/QLoRA, divided over the GPUs
    under ZeRO-3/FSDP; 0 without ``ema_weights`` or a parameter count."""
    if not w.ema_weights or not w.params:
        return 0.0
    trainable = (
        float(lora_trainable_params(w))
        if w.method in (Method.LORA, Method.QLORA)
        else float(w.params)
    )
    sharded = w.sharding in (Sharding.ZERO3, Sharding.FSDP)
    return 4.0 * trainable / (max(int(gpu_count), 1) if sharded else 1)


def state_bytes(w: Workload, gpu_count: int, cal: Calibration | None = None) -> StateBytes:
    """Weights/gradients/optimizer bytes per GPU, frozen diffusion components and an EMA copy
    included (:func:`model_state_bytes`, plus :func:`frozen_component_bytes` in ``weights``
    and :func:`ema_bytes` in ``optimizer``)."""
    cal = cal or load_calibration()
    states = model_state_bytes(w, gpu_count, cal)
    text, vae = frozen_component_bytes(w)
    ema = ema_bytes(w, gpu_count)
    if not text and not vae and not ema:
        return states
    return replace(
        states,
        weights=states.weights + text + vae,
        optimizer=states.optimizer + ema,
        text_encoder=text,
        vae=vae,
        ema=ema,
    )


#: Bytes per parameter of a frozen base held in each dtype (quantised formats without their
#: quantisation-state overhead, which :class:`MemoryParams` ``qlora_overhead`` adds).
BASE_DTYPE_BYTES: dict[BaseDtype, float] = {
    BaseDtype.FP32: 4.0,
    BaseDtype.BF16: 2.0,
    BaseDtype.FP16: 2.0,
    # LLM.int8: int8 weights (1 B) + fp32 row scales (negligible; Dettmers et al. 2208.07339)
    BaseDtype.INT8: 1.0,
    BaseDtype.NF4: NF4_BYTES_PER_PARAM,
}


def base_dtype(w: Workload) -> BaseDtype:
    """The dtype the frozen base of a LoRA/QLoRA run is held in: ``base_dtype`` when given,
    else NF4 for QLoRA, fp32 for a LoRA run in fp32/tf32 and 16-bit otherwise (PEFT's
    ``from_pretrained(torch_dtype=...)`` as axolotl, LLaMA-Factory, H2O LLM Studio and
    torchtune's LoRA recipes load it; fp16 under ``fp16_amp``)."""
    if w.base_dtype is not None:
        return w.base_dtype
    if w.method == Method.QLORA:
        return BaseDtype.NF4
    if w.precision in (Precision.FP32, Precision.TF32):
        return BaseDtype.FP32
    return BaseDtype.FP16 if w.precision == Precision.FP16_AMP else BaseDtype.BF16


def quantised_base(w: Workload) -> bool:
    """Whether the frozen base is quantised (int8 or NF4)."""
    return base_dtype(w) in (BaseDtype.INT8, BaseDtype.NF4)


def frozen_base_bytes(w: Workload, cal: Calibration | None = None) -> float:
    """Bytes of the whole frozen base (unsharded), by :func:`base_dtype`.

    Quantised bases (bitsandbytes/torchao) keep the token embeddings and LM head in 16-bit
    (:func:`embedding_params`) and add ``qlora_overhead`` of the quantised bytes (quantisation
    state, absmax blocks); NF4 without double quantisation takes ``NF4_NO_DQ_BYTES_PER_PARAM``.
    """
    cal = cal or load_calibration()
    p = float(w.params or 0)
    dtype = base_dtype(w)
    if dtype not in (BaseDtype.INT8, BaseDtype.NF4):
        return p * BASE_DTYPE_BYTES[dtype]
    per = BASE_DTYPE_BYTES[dtype]
    if dtype == BaseDtype.NF4 and not w.double_quant:
        per = NF4_NO_DQ_BYTES_PER_PARAM
    emb = float(embedding_params(w))
    overhead = (
        cal.memory.qlora_overhead_torchao
        if w.quant_backend == QuantBackend.TORCHAO
        else cal.memory.qlora_overhead
    )
    return (p - emb) * per * (1 + overhead) + emb * 2


def adapter_bytes_per_param(w: Workload) -> tuple[float, float, float]:
    """(weight, gradient, optimizer) bytes per LoRA adapter parameter, unsharded.

    Under fp32/tf32 and autocast (``*_amp``, ``fp8``) the adapters are fp32 (PEFT's
    ``autocast_adapter_dtype`` casts them to fp32 on a 16-bit base; their gradients follow)
    with fp32 optimizer states; in pure ``bf16`` (torchtune, LitGPT ``bf16-true``) adapters,
    gradients and states are bf16 (:func:`optimizer_state_bytes`).
    """
    wb = 2.0 if w.precision == Precision.BF16 else 4.0
    return wb, wb, optimizer_state_bytes(w.optimizer, w.precision)


def _adapter_state_bytes(w: Workload, n: int, cal: Calibration, init: float) -> StateBytes:
    """LoRA/QLoRA model states per GPU (see :func:`model_state_bytes`)."""
    pt = float(lora_trainable_params(w))
    layers = max(w.layers or 1, 1)
    base = frozen_base_bytes(w, cal)
    wb, gb, ob = adapter_bytes_per_param(w)
    sharded3 = w.sharding in (Sharding.ZERO3, Sharding.FSDP)
    # ZeRO-1 shards optimizer states, ZeRO-2 also gradients, ZeRO-3/FSDP everything
    div_opt = n if w.sharding != Sharding.NONE else 1
    div_grad = n if w.sharding in (Sharding.ZERO2, Sharding.ZERO3, Sharding.FSDP) else 1
    div_w = n if sharded3 else 1
    optim = 0.0 if w.cpu_offload else pt * ob / div_opt
    buffers = 0.0
    if quantised_base(w) and w.hidden_size:
        # one quantised linear dequantised to 16-bit for its matmul (forward and backward)
        buffers += 2 * 2 * w.hidden_size * (w.ffn_hidden_size or 4 * w.hidden_size)
    if sharded3 and (n > 1 or w.cpu_offload):
        unit = base / layers
        buffers += 2 * unit
        base = 0.0 if w.cpu_offload else base / n
    if w.sharding == Sharding.ZERO3:
        buffers += zero3_buffer_bytes(w)
    return StateBytes(
        weights=base + pt * wb / div_w,
        gradients=pt * gb / div_grad,
        optimizer=optim,
        buffers=buffers,
        init_peak=init,
    )


def model_state_bytes(w: Workload, gpu_count: int, cal: Calibration | None = None) -> StateBytes:
    """Weights/gradients/optimizer bytes per GPU of the trained model (estimation.md §1.2-1.3).

    Full fine-tuning: unsharded mixed precision (``*_amp``, ``fp8``) follows HF AMP: fp32
    weights + 16-bit copy (6 B), fp32 gradients (4 B), optimizer states (AdamW 8 B) =
    18 B/param; sharded (ZeRO/FSDP) mixed precision follows the ZeRO paper: 2 B weights, 2 B
    gradients, K = 4 B master + states, each divided per stage; fp32 4 + 4 + states; pure
    bf16 2 + 2 + bf16 states. ``optimizer_in_backward`` keeps no gradient buffer: only the
    largest tensor's gradient is alive at once (torchtune ``optimizer_in_bwd``).

    LoRA/QLoRA: the frozen base in the dtype it is loaded in (:func:`frozen_base_bytes`,
    :func:`base_dtype`); adapters, their gradients and optimizer states at
    :func:`adapter_bytes_per_param`, sharded as the strategy shards them (ZeRO-1 the states,
    ZeRO-2 also the gradients, ZeRO-3/FSDP all three). FSDP and ZeRO-3 shard the
    frozen base too (FSDP with ``use_orig_params=False`` / FSDP2, PEFT accelerate docs;
    ZeRO-3 shards bitsandbytes 4-bit weights packed in ``bnb_4bit_quant_storage``), and keep
    two gathered units. CPU offload leaves only the gathered units on the GPU.
    ``full_model_init`` (every rank loads the whole 16-bit model before FSDP shards it) leaves
    the full 16-bit model allocated next to the shard (``init_peak``).
    """
    cal = cal or load_calibration()
    n = max(int(gpu_count), 1)
    if not w.params:
        # no parameter count: the fixed memory measured with the workload's benchmark
        fixed = cal.activation_bytes_per_sample.get(_fit_key(w))
        return StateBytes(
            weights=fixed[2] if fixed else 0.0, gradients=0.0, optimizer=0.0, buffers=0.0
        )
    p = float(w.params)
    opt = optimizer_state_bytes(w.optimizer, w.precision)
    sharded3 = w.sharding in (Sharding.ZERO3, Sharding.FSDP)
    layers = max(w.layers or 1, 1)
    init = 0.0
    if w.full_model_init and sharded3 and n > 1:
        # the full 16-bit model each rank materialised stays allocated next to its shard
        # (LitGPT's 2-4 GPU LoRA rows grow with the micro-batch on top of it)
        init = 2.0 * p
    if w.method in (Method.LORA, Method.QLORA):
        return _adapter_state_bytes(w, n, cal, init)

    if w.precision in (Precision.FP32, Precision.TF32):
        weights, grads, optim = 4.0, 4.0, opt
    elif w.precision == Precision.BF16:
        weights, grads, optim = 2.0, 2.0, opt
    elif w.sharding == Sharding.NONE:
        weights, grads, optim = 6.0, 4.0, opt
    else:
        weights, grads, optim = 2.0, 2.0, 4.0 + opt

    buffers = 0.0
    grad_bytes = grads
    if w.sharding == Sharding.ZERO1:
        optim /= n
    elif w.sharding == Sharding.ZERO2:
        optim /= n
        grads /= n
    elif sharded3:
        optim /= n
        grads /= n
        weights /= n
        # all-gathered full parameters of the unit being computed plus one prefetched unit
        largest_unit = max(p / layers, float(embedding_params(w)) / 2)
        buffers += 2 * largest_unit * 2
    if w.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        buffers += ZERO_BUCKET_ELEMENTS * 2
    elif w.sharding == Sharding.ZERO3:
        buffers += zero3_buffer_bytes(w)
    if w.cpu_offload:
        # ZeRO-Offload / FSDP CPU offload: optimizer states and fp32 master weights live in
        # host RAM; with ZeRO-3/FSDP the sharded parameters and gradients too, so the GPU
        # holds only the gathered units (buffers above).
        optim = 0.0
        if sharded3:
            weights = grads = 0.0
        elif w.precision not in (Precision.FP32, Precision.TF32, Precision.BF16):
            weights = 2.0
    gradients = grads * p
    if w.optimizer_in_backward:
        gradients = min(gradients, grad_bytes * largest_tensor_params(w))
    return StateBytes(
        weights=weights * p,
        gradients=gradients,
        optimizer=optim * p,
        buffers=buffers,
        init_peak=init,
    )


def host_offload_bytes(w: Workload, gpu_count: int) -> float:
    """Host RAM the training states moved off the GPUs need, bytes, summed over the machine's
    ``gpu_count`` GPUs (each GPU's shard lives in the same host).

    ``cpu_offload`` (ZeRO-Offload, FSDP CPU offload): fp32 master weights (4 B), fp32 gradients
    (4 B) and the optimizer states (:func:`optimizer_state_bytes` at fp32) of every trained
    parameter (ZeRO-Offload paper arXiv:2101.06840 §4: "fp32 parameters, gradients and
    optimizer states on CPU"), plus the frozen base under ZeRO-3/FSDP, whose parameter
    offload moves it too; paged 8-bit AdamW: its 2 B states per trained parameter, which
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
        host += trained * (4.0 + 4.0 + optimizer_state_bytes(w.optimizer, Precision.FP32))
        if lora and w.sharding in (Sharding.ZERO3, Sharding.FSDP):
            host += frozen_base_bytes(w)
    if w.activation_offloading and w.gradient_checkpointing:
        host += n * offloaded_activation_bytes(w) * w.micro_batch_size
    return host


def offloaded_activation_bytes(w: Workload) -> float:
    """Checkpointed layer inputs of one sample moved to host RAM by activation offloading:
    ``layers × bytes × s × h`` for a transformer with its shape, else 0."""
    if not (w.hidden_size and w.layers):
        return 0.0
    kept = 4 if _fp32_stream(w) else activation_bytes(w.precision)
    return float(w.layers * kept * transformer_tokens(w) * w.hidden_size)


def transformer_tokens(w: Workload) -> int:
    """Tokens per sample: ``seq_len``; ViT: (image_size / patch_size)² + 1 (patches + CLS
    token, Dosovitskiy et al. arXiv:2010.11929 §3.1; patch 16 unless given); a diffusion
    transformer (``diffusion_transformer``, or a ``diffusion_unet`` given ``layers`` and
    ``hidden_size``): the latent patches of :func:`dit_image_tokens`, plus for a
    ``diffusion_transformer`` the ``seq_len`` text tokens its blocks attend jointly with
    them (SD3's MMDiT: 77 + 77 CLIP + 256 T5 = 333, Esser et al. arXiv:2403.03206 §2.2 and
    Fig. 2; Flux: 512 T5 tokens; class-conditional DiT: none, seq_len unset)."""
    if w.architecture == Architecture.VIT and w.image_size:
        return (w.image_size // (w.patch_size or DEFAULT_PATCH_SIZE)) ** 2 + 1
    if w.architecture == Architecture.DIFFUSION_TRANSFORMER and w.image_size:
        return dit_image_tokens(w) + (w.seq_len or 0)
    if w.architecture == Architecture.DIFFUSION_UNET and w.image_size:
        return dit_image_tokens(w)
    return w.seq_len or 1


def dit_image_tokens(w: Workload) -> int:
    """Image tokens of a diffusion transformer: the VAE latent (``image_size / 8`` per side,
    :data:`UNET_LATENT_DOWNSAMPLE`) cut in ``patch_size`` patches (2 unless given:
    DiT-XL/2, SD3, Flux), ``((image_size / 8) / patch)²``, at least 1: 256 at 256 px
    (DiT-XL/2), 4,096 at 1,024 px (SD3, Flux)."""
    latent = (w.image_size or 0) // UNET_LATENT_DOWNSAMPLE
    return max((latent // (w.patch_size or DIT_DEFAULT_PATCH)) ** 2, 1)


def logit_bytes_per_element(w: Workload, cal: Calibration | None = None) -> float:
    """Bytes alive at the loss per logit element (one token × one vocabulary entry), by dtype.

    Unfused cross-entropy: the LM head's logits at the activation dtype plus the fp32 copy the
    loss works on (upcast, log-softmax output, then its gradient in its place):
    ``unfused_logit_bytes`` at 16-bit activations (2 + 4 = 6, Stas Bekman's "factor of 6"),
    2 more when the logits themselves are fp32 (4 + 4: no 16-bit copy, the LM head writes
    fp32). Chunked/fused loss: only the logits of every chunk, kept for backward, at the
    activation dtype: the fitted ``chunked_logit_bytes`` at 16-bit, × 2 at fp32.
    """
    cal = cal or load_calibration()
    wide = activation_bytes(w.precision) == 4
    if w.fused_cross_entropy:
        return cal.memory.chunked_logit_bytes * (2.0 if wide else 1.0)
    return cal.memory.unfused_logit_bytes + (2.0 if wide else 0.0)


def logits_bytes_per_sample(w: Workload, cal: Calibration | None = None) -> float:
    """Loss-side bytes for one sample of a decoder: ``s · V`` ×
    :func:`logit_bytes_per_element` (grows with sequence × vocabulary)."""
    cal = cal or load_calibration()
    if w.architecture != Architecture.TRANSFORMER_DECODER or not w.vocab_size:
        return 0.0
    return logit_bytes_per_element(w, cal) * transformer_tokens(w) * w.vocab_size


def activation_bytes_per_sample(w: Workload, cal: Calibration | None = None) -> float:
    """Saved-activation bytes for one sample (micro-batch 1), logits included.

    Transformers (Korthikanti et al. Table 2, Stas's measured c, estimation.md §5.1.3):
    without checkpointing ``L · c · bytes · s · h`` plus the decoder's loss-side bytes
    (:func:`logits_bytes_per_sample`); with full checkpointing ``L · bytes · s · h +
    max(c · bytes · s · h, logits)`` (layer inputs, then whichever is larger of one layer's
    recompute and the loss, which are never alive together), the layer inputs moving to host
    RAM with ``activation_offloading``; selective checkpointing (torchtitan's op-level policy)
    keeps :func:`selective_saved_copies` per layer and recomputes the rest, one layer at a
    time in backward. c per layer:
    :func:`_copies_per_layer`; under unsharded autocast the stream, LayerNorm inputs and
    checkpoints are fp32 and a score costs ``AMP_EAGER_SCORE_BYTES``; without dropout
    (``dropout`` false) a layer keeps none of Korthikanti's masks and a score only its softmax
    output(s) (``DROPOUT_MASK_BYTES_PER_LAYER``, ``DROPOUT_SCORE_BYTES``). LoRA scales c by the
    fitted ``lora_activation_factor``.

    Other families: the per-sample slope fitted from measured peak memory at several batch
    sizes for a preset's benchmark workload (:attr:`Calibration.activation_bytes_per_sample`),
    scaled by pixels for vision inputs; else one fitted constant per family
    (:class:`MemoryParams`), ×2 for fp32 activations: detectors (``vision_task`` detection)
    ``detection_activation_bytes_per_gflop``
    × ``backbone_gflops_224`` × pixels / 224²; classification CNNs
    ``cnn_activation_bytes_per_element`` × ``forward_activations_per_sample`` × 10⁶ where the
    activation count is given, else ``cnn_activation_bytes_per_gflop`` ×
    ``forward_gflops_per_sample``; diffusion UNets
    ``diffusion_activation_bytes_per_gflop`` × ``forward_gflops_per_sample`` plus the eager
    attention scores of :func:`unet_attention_scores_bytes`; others a fitted bytes per
    parameter; recommenders (embedding lookups) ~0. Checkpointing keeps
    ``CHECKPOINTING_ACTIVATION_FACTOR`` of the non-transformer activations. A detector given
    ``max_boxes_per_image`` adds its assigner's box × anchor tensors
    (:func:`app.model.memory_vision.assigner_bytes_per_sample`), a segmentation net given
    ``num_classes`` its full-resolution loss
    (:func:`app.model.memory_vision.segmentation_loss_bytes_per_sample`); checkpointing
    keeps both.
    """
    cal = cal or load_calibration()
    nbytes = activation_bytes(w.precision)
    lora = w.method in (Method.LORA, Method.QLORA)
    if (
        w.architecture
        in (
            Architecture.TRANSFORMER_ENCODER,
            Architecture.TRANSFORMER_DECODER,
            Architecture.VIT,
            Architecture.DIFFUSION_UNET,
            Architecture.DIFFUSION_TRANSFORMER,
        )
        and w.hidden_size
        and w.layers
    ):
        s = transformer_tokens(w)
        h = w.hidden_size
        fp32_stream = _fp32_stream(w)
        c = _copies_per_layer(w, fp32_stream)
        if lora:
            c *= cal.memory.lora_activation_factor
        per_layer = c * nbytes * s * h
        scores = 0.0
        if w.attention == Attention.EAGER and w.heads:
            per_score = AMP_EAGER_SCORE_BYTES if fp32_stream else 2 * nbytes + 1
            if not w.dropout:
                # no mask; unsharded autocast still keeps the fp32 softmax output and its
                # 16-bit copy, otherwise the one softmax output serves both backward ops
                per_score = AMP_EAGER_SCORE_BYTES - DROPOUT_SCORE_BYTES if fp32_stream else nbytes
            scores = w.heads * s * s * per_score
        logits = logits_bytes_per_sample(w, cal)
        if w.gradient_checkpointing:
            if w.checkpoint_granularity == CheckpointGranularity.SELECTIVE:
                saved = selective_saved_copies(w) * nbytes * s * h
                return w.layers * saved + max(per_layer + scores, logits)
            # the loss runs after the last layer (only checkpoints alive) and the logits are
            # freed before layers are recomputed in backward: the two peaks do not add up
            kept = 4 if fp32_stream else nbytes
            stored = 2 * kept * s * h if w.activation_offloading else w.layers * kept * s * h
            return stored + max(per_layer + scores, logits)
        return w.layers * (per_layer + scores) + logits

    fit = cal.activation_bytes_per_sample.get(_fit_key(w))
    ref_pixels = None
    per_sample: float
    if fit is not None:
        per_sample, ref_image, _ = fit
        ref_pixels = ref_image * ref_image if ref_image else None
    elif _detector(w) and w.backbone_gflops_224 and w.image_size:
        pixels = float(w.image_size * w.image_size)
        per_sample = (
            cal.memory.detection_activation_bytes_per_gflop
            * w.backbone_gflops_224
            * pixels
            / BACKBONE_REFERENCE_PIXELS
        )
        if nbytes == 4:
            per_sample *= 2
    elif w.architecture == Architecture.CNN and w.forward_activations_per_sample:
        per_sample = (
            w.forward_activations_per_sample * 1e6 * cal.memory.cnn_activation_bytes_per_element
        )
        if nbytes == 4:
            per_sample *= 2
    elif (
        w.architecture in (Architecture.CNN, Architecture.DIFFUSION_UNET)
        and w.forward_gflops_per_sample
    ):
        per_gflop = (
            cal.memory.diffusion_activation_bytes_per_gflop
            if w.architecture == Architecture.DIFFUSION_UNET
            else cal.memory.cnn_activation_bytes_per_gflop
        )
        per_sample = w.forward_gflops_per_sample * per_gflop
        if nbytes == 4:
            per_sample *= 2
    elif w.architecture == Architecture.RECOMMENDER or not w.params:
        per_sample = 0.0  # embedding lookups: negligible per sample
    else:
        per_sample = cal.default_activation_bytes_per_param * w.params
    if ref_pixels and w.image_size:
        per_sample *= (w.image_size * w.image_size) / ref_pixels
    if w.gradient_checkpointing:
        per_sample *= CHECKPOINTING_ACTIVATION_FACTOR
    if lora:
        per_sample *= cal.memory.lora_activation_factor
    return (
        per_sample
        + unet_attention_scores_bytes(w)
        + assigner_bytes_per_sample(w)
        + segmentation_loss_bytes_per_sample(w)
    )


def selective_saved_copies(w: Workload) -> float:
    """Hidden-state-sized copies one layer keeps under op-level selective checkpointing.

    torchtitan's policy (``selective_ac_option = "op"``, pytorch/torchtitan
    ``torchtitan/distributed/activation_checkpoint.py``; earlier in
    ``parallelize_llama.py``: "save output of all ops in save list, except every second mm")
    saves the outputs of the attention kernel and of the odd-numbered matmuls of a block and
    recomputes everything else: with a
    Llama block's seven matmuls in order (q, k, v, o, w1, w3, w2) it keeps q (h), v
    (h·kv/heads), w1 (f) and w2 (h), plus the attention output (h) and the block input (h):
    ``4 + kv/heads + f/h`` copies (Llama 3.1 8B: 7.75 of the 28 kept without checkpointing).
    """
    h = w.hidden_size or 1
    f = w.ffn_hidden_size or 4 * h
    heads = w.heads or 1
    kv = (w.kv_heads or heads) / heads
    return 4.0 + kv + f / h


def implementation(w: Workload) -> Implementation:
    """The block implementation ``w`` runs: ``implementation`` when given, else the asked
    stack's default (``fused`` for :data:`app.model.stacks.FUSED_KERNEL_STACKS`: Megatron/NeMo,
    Unsloth), else eager (HF Trainer, axolotl, LLaMA-Factory, torchtune, LitGPT; the memory
    constants were fitted on eager cases, so only a stack the request names moves this)."""
    if w.implementation is not None:
        return w.implementation
    if w.stack in FUSED_KERNEL_STACKS:
        return Implementation.FUSED
    return Implementation.EAGER


def fused_copies_per_layer(w: Workload) -> float:
    """Hidden-state-sized copies one transformer layer keeps with fused kernels.

    Counted from what each kernel saves for backward, at the activation dtype: a fused
    RMSNorm/LayerNorm its input (Liger ``LigerRMSNormFunction``, Apex/TE fused norms; the
    per-row statistics are negligible), the q/k/v projections their input (the norm output),
    FlashAttention q, k, v and its output (Dao et al. arXiv:2205.14135 §3.1; the output is
    also the o-projection's input), the second norm its input, the MLP its input (the norm
    output); a gated MLP with a fused SwiGLU keeps its two inputs (gate and up outputs, Liger
    ``LigerSiLUMulFunction`` recomputes SiLU) and the down projection's input, a GELU MLP its
    fc1 output and the fc2 input: ``6 + 2·kv/heads + 3·f/h`` gated, ``6 + 2·kv/heads + 2·f/h``
    otherwise (Llama-2-7B: 16.1 copies against the 28 measured with eager modules).
    """
    h = w.hidden_size or 1
    f = w.ffn_hidden_size or 4 * h
    heads = w.heads or 1
    kv = (w.kv_heads or heads) / heads
    gated = not _plain_mlp(w) and f != 4 * h
    return 6.0 + 2.0 * kv + (3.0 if gated else 2.0) * f / h


def _diffusion(w: Workload) -> bool:
    """A diffusion model (UNet or transformer): frozen text encoders and VAE, adaLN blocks."""
    return w.architecture in (Architecture.DIFFUSION_UNET, Architecture.DIFFUSION_TRANSFORMER)


def _plain_mlp(w: Workload) -> bool:
    """Blocks with a two-matrix GELU MLP whatever its width: ViT (Dosovitskiy et al. §3.1)
    and diffusion transformers (DiT's ``Mlp`` with GELU-tanh, Peebles & Xie; SD3's and
    Flux's blocks alike)."""
    return w.architecture == Architecture.VIT or _diffusion(w)


def _fp32_stream(w: Workload) -> bool:
    """Whether the residual stream (and checkpointed layer inputs) is fp32: autocast over fp32
    weights without ZeRO/FSDP (see ``AMP_FP32_STREAM_EXTRA_COPIES``). A LoRA run on a 16-bit
    base has 16-bit embeddings, so its stream stays 16-bit; a quantised base keeps fp32
    embeddings and norms under autocast (PEFT ``prepare_model_for_kbit_training`` upcasts
    every non-quantised parameter to fp32)."""
    if not _amp(w.precision) or w.sharding != Sharding.NONE:
        return False
    if w.method == Method.FULL:
        return True
    return base_dtype(w) not in (BaseDtype.BF16, BaseDtype.FP16)


def _copies_per_layer(w: Workload, fp32_stream: bool) -> float:
    """Hidden-state-sized copies (at the activation dtype) one transformer layer keeps.

    Gated decoder MLPs (a decoder or encoder whose ``ffn_hidden_size`` is not 4·h: SwiGLU,
    T5's gated GELU): Stas's measured ``COPIES_SWIGLU``. ViTs and diffusion transformers
    keep a two-layer GELU MLP whatever its width (:func:`_plain_mlp`):
    ``COPIES_GPT_BASE + 2·f/h`` (17 at f = 4·h), as do GPT/BERT blocks. Unsharded autocast adds
    ``AMP_FP32_STREAM_EXTRA_COPIES`` to the Korthikanti-derived count (fp32 LayerNorm inputs);
    without dropout (``dropout`` false) that count loses its two 1-byte masks
    (``DROPOUT_MASK_BYTES_PER_LAYER``). Stas's measured SwiGLU constant is left as measured.
    A diffusion transformer's block adds adaLN-Zero's ``DIT_ADALN_COPIES`` and has no
    dropout (DiT's blocks, Peebles & Xie's reference ``models.py``: timm ``Attention`` and
    ``Mlp`` at drop 0), so its masks are never charged.
    """
    h = w.hidden_size or 1
    f = w.ffn_hidden_size or 4 * h
    if implementation(w) == Implementation.FUSED:
        return fused_copies_per_layer(w)
    dit = DIT_ADALN_COPIES if _diffusion(w) else 0.0
    if not _plain_mlp(w) and f != 4 * h:
        return COPIES_SWIGLU + dit
    c = COPIES_GPT_BASE + 2.0 * f / h + dit
    if not w.dropout or _diffusion(w):  # DiT/SD3/Flux blocks have no dropout layers
        # the two 1-byte masks, in copies at the activation dtype
        c -= DROPOUT_MASK_BYTES_PER_LAYER / activation_bytes(w.precision)
    return c + (AMP_FP32_STREAM_EXTRA_COPIES if fp32_stream else 0.0)


def unet_attention_scores_bytes(w: Workload) -> float:
    """Eager attention score tensors of a diffusion UNet for one sample, in bytes.

    Without a memory-efficient kernel (``attention`` ``eager``: no xformers/SDPA) each
    self-attention over the ``s = (image_size / 8)²`` latent pixels materialises ``heads · s²``
    scores. The UNet's attention has no dropout, so autograd keeps only the softmax output for
    backward (``bytes`` per element: softmax and the following matmul both save that one
    tensor): all ``UNET_TOP_ATTENTION_LAYERS`` full-resolution layers keep it without
    checkpointing. With checkpointing only the block being recomputed holds scores, and its
    backward has the softmax output, its gradient and the gradient of the scores alive at once
    (``3 · bytes`` per element). Layout of the SD 1.x UNet (constants above); 0 for other
    architectures, SDPA or without ``image_size``.
    """
    if (
        w.architecture != Architecture.DIFFUSION_UNET
        or w.attention != Attention.EAGER
        or not w.image_size
        or (w.hidden_size and w.layers)  # a diffusion transformer: the block formula's scores
    ):
        return 0.0
    s = (w.image_size // UNET_LATENT_DOWNSAMPLE) ** 2
    nbytes = activation_bytes(w.precision)
    per_element = 3 * nbytes if w.gradient_checkpointing else UNET_TOP_ATTENTION_LAYERS * nbytes
    return float(UNET_TOP_ATTENTION_HEADS * s * s * per_element)


def _detector(w: Workload) -> bool:
    return w.architecture == Architecture.CNN and w.vision_task == VisionTask.DETECTION


def _fit_key(w: Workload) -> str:
    label = w.benchmark_workloads[0] if w.benchmark_workloads else (w.preset or "")
    regime = "32" if activation_bytes(w.precision) == 4 else "16"
    return f"{label}|{regime}"


def peak_memory_bytes(
    w: Workload, gpu_count: int, micro_batch_size: int, cal: Calibration | None = None
) -> MemoryBreakdown:
    """Memory breakdown per GPU for ``micro_batch_size`` samples per GPU, in GiB.

    ``allocated_gib`` is the training step's allocated bytes plus what initialisation left
    allocated (``full_model_init``); ``total_gib`` adds allocator slack and the CUDA context
    (+ NCCL with more than one GPU).
    """
    cal = cal or load_calibration()
    states = state_bytes(w, gpu_count, cal)
    act = activation_bytes_per_sample(w, cal) * micro_batch_size
    overhead = CUDA_CONTEXT_GIB * GIB + (NCCL_GIB * GIB if gpu_count > 1 else 0.0)
    step = states.weights + states.gradients + states.optimizer + states.buffers + act
    allocated = step + states.init_peak
    total = allocated * SLACK + overhead
    slack = allocated * (SLACK - 1)
    init_extra = allocated - step
    return MemoryBreakdown(
        weights_gib=states.weights / GIB,
        gradients_gib=states.gradients / GIB,
        optimizer_gib=states.optimizer / GIB,
        activations_gib=act / GIB,
        overhead_gib=(overhead + slack + states.buffers + init_extra) / GIB,
        total_gib=total / GIB,
        allocated_gib=allocated / GIB,
        logits_gib=logits_bytes_per_sample(w, cal) * micro_batch_size / GIB,
        buffers_gib=states.buffers / GIB,
        init_extra_gib=init_extra / GIB,
        context_gib=overhead / GIB,
        allocator_slack_gib=slack / GIB,
        text_encoder_gib=states.text_encoder / GIB,
        vae_gib=states.vae / GIB,
        ema_gib=states.ema / GIB,
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


def memory_notes(w: Workload, cal: Calibration | None = None) -> tuple[str, ...]:
    """What the memory model does not describe for ``w`` (shown in the answer's notes), with
    ``cal``'s constants (default: the served calibration)."""
    cal = cal or load_calibration()
    out: list[str] = []
    transformer = w.architecture in (
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.VIT,
    )
    if transformer and not (w.hidden_size and w.layers):
        out.append(
            "memory: activations need hidden_size and layers for a transformer; without them "
            "they are a fitted bytes-per-parameter guess"
        )
    if w.base_dtype is not None and w.method == Method.FULL:
        out.append("memory: base_dtype applies to lora/qlora; ignored for a full fine-tune")
    if w.quant_backend is not None and not (
        w.method in (Method.LORA, Method.QLORA) and quantised_base(w)
    ):
        out.append("memory: quant_backend applies to a quantised (int8/nf4) base; ignored")
    if w.method in (Method.LORA, Method.QLORA):
        dtype = base_dtype(w)
        given = "as given" if w.base_dtype is not None else "the default; set base_dtype"
        adapters = "bf16" if w.precision == Precision.BF16 else "fp32"
        out.append(
            f"memory: frozen base counted in {dtype.value} ({given}); adapters, their "
            f"gradients and optimizer states in {adapters}"
        )
    out += _vision_notes(w, cal)
    if w.precision == Precision.FP8:
        out.append("memory: fp8 is modelled as bf16 mixed precision (no fp8 weight savings)")
    if w.cpu_offload and w.sharding in (Sharding.NONE,) and w.method == Method.FULL:
        out.append("memory: CPU offload without ZeRO/FSDP is modelled as ZeRO-Offload")
    if w.activation_offloading and not w.gradient_checkpointing:
        out.append("memory: activation offloading without checkpointing is not modelled")
    if w.optimizer_in_backward and w.sharding != Sharding.NONE:
        out.append("memory: optimizer-in-backward with sharding is modelled as unsharded grads")
    if w.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        out.append(
            f"memory: ZeRO-1/2 counts DeepSpeed's reduce bucket ({ZERO_BUCKET_ELEMENTS:,.0f} "
            f"16-bit elements, {ZERO_BUCKET_ELEMENTS * 2 / GIB:.2f} GiB per GPU); a trainer "
            "that reduce-scatters the gradients in place (llm.c -z 1) has none"
        )
    if (
        w.fused_cross_entropy
        and w.architecture == Architecture.TRANSFORMER_DECODER
        and w.vocab_size
    ):
        out.append(
            f"memory: the fused/chunked loss is counted at the fitted "
            f"{cal.memory.chunked_logit_bytes:g} bytes per logit; a classifier that "
            "overwrites its 16-bit logits with their gradient in place (llm.c "
            "fused_classifier) keeps 2"
        )
    return tuple(out)


def _vision_notes(w: Workload, cal: Calibration) -> list[str]:
    """Notes on what the vision/diffusion activation and state model leaves out for ``w``."""
    out: list[str] = []
    arch = w.architecture
    measured = cal.activation_bytes_per_sample.get(_fit_key(w)) is not None
    if w.vision_task == VisionTask.DETECTION and arch != Architecture.CNN:
        out.append(f"memory: vision_task applies to cnn; ignored for {arch.value}")
    out += task_notes(w)
    if _detector(w) and not measured:
        if w.backbone_gflops_224 and w.image_size:
            out.append(
                "memory: detector activations use one fitted bytes-per-backbone-GFLOP constant "
                "(FPN two-stage, RetinaNet and YOLO heads with a frozen stem, as in "
                "mmdetection/detectron2 defaults); C4/DC5 heads, segmentation decoders and "
                "per-batch padding beyond image_size are not described"
            )
        else:
            out.append(
                "memory: detector activations need backbone_gflops_224 and image_size; "
                "without them they are a bytes-per-parameter guess"
            )
    elif arch == Architecture.CNN and not measured:
        if w.forward_activations_per_sample:
            out.append(
                "memory: CNN activations use one fitted bytes-per-activation-element constant "
                "on the given forward activation count (conv and matmul outputs); "
                "per-layer transients (the largest layer's gradients, max-pool indices) are "
                "not counted separately"
            )
        elif w.forward_gflops_per_sample:
            out.append(
                "memory: CNN activations use one fitted bytes-per-forward-GFLOP constant for "
                "classification nets; depthwise/inverted-residual nets (MobileNet, "
                "EfficientNet) keep more activations per FLOP"
            )
        else:
            out.append(
                "memory: CNN activations need forward_gflops_per_sample; without it they are "
                "a bytes-per-parameter guess"
            )
    elif arch in (Architecture.RNN_SEQ2SEQ, Architecture.TTS, Architecture.VOCODER) and not (
        measured
    ):
        out.append(
            f"memory: {arch.value} activations are not modelled per architecture "
            "(bytes-per-parameter fallback)"
        )
    if arch == Architecture.VIT:
        if not w.patch_size:
            out.append("memory: ViT tokens assume 16-pixel patches ((image/16)² + 1)")
        out.append(
            "memory: ViT activations use the GPT block formula on patch tokens; windowed or "
            "hierarchical ViTs (Swin) and ViT detection backbones are not described"
        )
    if _diffusion(w):
        out += _diffusion_notes(w, measured)
    return out


def _diffusion_notes(w: Workload, measured: bool) -> list[str]:
    """What the diffusion (UNet or transformer) memory model assumes or leaves out for ``w``."""
    out: list[str] = []
    if w.architecture == Architecture.DIFFUSION_TRANSFORMER or (w.hidden_size and w.layers):
        text = f" + {w.seq_len} text tokens" if w.seq_len else ""
        out.append(
            "memory: a diffusion transformer: DiT blocks (ViT block + adaLN-Zero, no dropout) "
            f"on {dit_image_tokens(w)} latent tokens{text}"
            + ("" if w.patch_size else " (patch 2 assumed)")
            + (
                "; architecture diffusion_transformer also counts its FLOPs from the shape"
                if w.architecture == Architecture.DIFFUSION_UNET
                else ""
            )
        )
    elif not measured and not w.forward_gflops_per_sample:
        out.append(
            "memory: UNet activations need forward_gflops_per_sample; without it they "
            "are a bytes-per-parameter guess"
        )
    if w.text_encoder_params is None or w.vae_params is None:
        out.append(
            "memory: frozen text encoder(s) / VAE not counted (give text_encoder_params "
            "and vae_params)"
        )
    out.append(
        "memory: a trained text encoder is counted as UNet-like parameters (put it in "
        "params); SDXL scripts keep the VAE in fp32, modelled at the training dtype"
    )
    return out


def _fix_candidates(w: Workload, gpu_count: int) -> list[tuple[str, dict[str, object]]]:
    """Single changes to try, least intrusive first."""
    out: list[tuple[str, dict[str, object]]] = []
    transformer = w.architecture in (
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.VIT,
    )
    if not w.gradient_checkpointing:
        out.append(("activation checkpointing", {"gradient_checkpointing": True}))
    if _diffusion(w) and w.attention == Attention.EAGER:
        # the UNet's full-resolution score matrices (unet_attention_scores_bytes), a DiT's
        # latent-token scores
        out.append(("memory-efficient attention (SDPA/xformers)", {"attention": Attention.SDPA}))
    if (
        w.architecture == Architecture.TRANSFORMER_DECODER
        and w.vocab_size
        and not w.fused_cross_entropy
    ):
        out.append(("chunked/fused cross-entropy", {"fused_cross_entropy": True}))
    if w.method == Method.FULL and w.optimizer not in (
        Optimizer.ADAMW_8BIT,
        Optimizer.PAGED_ADAMW_8BIT,
        Optimizer.SGD,
        Optimizer.ADAFACTOR,
    ):
        out.append(("paged 8-bit AdamW", {"optimizer": Optimizer.PAGED_ADAMW_8BIT}))
    if w.method == Method.FULL and not w.optimizer_in_backward and w.sharding == Sharding.NONE:
        out.append(("optimizer step in backward", {"optimizer_in_backward": True}))
    if gpu_count > 1 and w.sharding == Sharding.NONE:
        out.append((f"FSDP over the {gpu_count} GPUs", {"sharding": Sharding.FSDP}))
        out.append(
            (
                f"FSDP over the {gpu_count} GPUs with CPU offload",
                {"sharding": Sharding.FSDP, "cpu_offload": True},
            )
        )
    if w.method == Method.FULL and transformer and w.sharding == Sharding.NONE:
        # torchtune's single-device full fine-tune recipe (llama3_1/8B_full_single_device)
        out.append(
            (
                "pure bf16 + paged 8-bit AdamW + step in backward + checkpointing",
                {
                    "precision": Precision.BF16,
                    "optimizer": Optimizer.PAGED_ADAMW_8BIT,
                    "optimizer_in_backward": True,
                    "gradient_checkpointing": True,
                    **(
                        {"fused_cross_entropy": True}
                        if w.architecture == Architecture.TRANSFORMER_DECODER and w.vocab_size
                        else {}
                    ),
                },
            )
        )
    # adapters on the base in its default dtype (16-bit for LoRA, NF4 for QLoRA: base_dtype)
    if transformer and w.method == Method.FULL:
        out.append(("LoRA", {"method": Method.LORA, "lora_rank": w.lora_rank or 8}))
    if transformer and w.method != Method.QLORA:
        out.append(("QLoRA", {"method": Method.QLORA, "lora_rank": w.lora_rank or 8}))
    return out


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
        candidate = replace(w, **changes)  # type: ignore[arg-type]
        est = estimate_memory(
            candidate,
            vram_gib=vram_gib,
            gpu_count=gpu_count,
            cal=cal,
            with_fixes=False,
            gpu=gpu,
        )
        if est.oom_risk != OomRisk.HIGH and all(f.label != label for f in out):
            out.append(
                MemoryFix(
                    label=label,
                    changes=tuple(
                        (k, str(getattr(v, "value", v)).lower()) for k, v in changes.items()
                    ),
                    peak_memory_gib=est.peak_memory_gib,
                    oom_risk=est.oom_risk,
                    oom_probability=est.oom_probability,
                )
            )

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
    count = max(math.floor(gpu_count), 1)

    def peak_at(b: int) -> MemoryBreakdown:
        if peaks is None:
            return peak_memory_bytes(w, count, b, cal)
        hit = peaks.get((count, b))
        if hit is None:
            hit = peaks[(count, b)] = peak_memory_bytes(w, count, b, cal)
        return hit

    breakdown = peak_at(w.micro_batch_size)
    usable = usable_vram_gib(vram_gib, gpu)

    def fits(b: int) -> bool:
        if usable <= 0:
            return False
        peak = peak_at(b).total_gib
        return oom_risk(peak / usable, cal) == OomRisk.LOW

    if not fits(1):
        max_b = 0
    else:
        lo, hi = 1, 2
        while hi < 1_000_000 and fits(hi):
            lo, hi = hi, hi * 2
        if hi >= 1_000_000 and fits(hi):
            lo = 1_000_000
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        max_b = lo
    utilization = breakdown.total_gib / usable if usable > 0 else math.inf
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
