"""Model-state bytes per GPU: weights, gradients, optimizer states, the frozen base and LoRA
adapters, sharding buffers (``../shared/docs/estimation.md`` §1.2-1.3: EleutherAI "Transformer
Math 101", the ZeRO paper arXiv:1910.02054); split out of :mod:`app.model.memory`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.model.calibration import Calibration, load_calibration
from app.model.memory_dtypes import (
    BASE_DTYPE_BYTES,
    NF4_NO_DQ_BYTES_PER_PARAM,
    _diffusion,
    _fit_key,
    activation_bytes,
    base_dtype,
    kbit_upcast,
    quantised_base,
)
from app.model.stacks import Stack
from app.model.types import (
    Architecture,
    BaseDtype,
    Method,
    Optimizer,
    Precision,
    QuantBackend,
    Sharding,
    Workload,
)

#: bitsandbytes quantisation overhead, fraction of the quantised base (gpu_poor App.js, §5.1.4).
BNB_OVERHEAD = 0.06
#: LLM.int8 (``load_in_8bit``) row scales: bitsandbytes ``Int8Params._quantize``
#: (bitsandbytes-foundation/bitsandbytes ``bitsandbytes/nn/modules.py``: ``CB, SCB, _ =
#: bnb.functional.int8_vectorwise_quant(B)``; ``self.data = CB``, ``self.SCB = SCB``) keeps
#: the int8 weight (1 B a parameter) and one fp32 absmax per output row, 4 B per row of
#: ``in_features`` parameters; the outlier columns are taken out of the input and multiplied
#: with dequantised weight columns at matmul time (Dettmers et al. arXiv:2208.07339 §3.2),
#: a transient the dequantisation buffer of :func:`_adapter_state_bytes` covers.
INT8_ROW_SCALE_BYTES = 4.0


#: DeepSpeed all-gather bucket, 5e8 elements (EleutherAI cookbook calc_transformer_mem.py).
ZERO_BUCKET_ELEMENTS = 5e8
#: DeepSpeed ZeRO-3 ``stage3_max_live_parameters`` default, 1e9 (same source).
ZERO3_MAX_LIVE_PARAMETERS = 1e9


#: GPU bytes per parameter charged for paged optimizer states (unified memory, evicted to
#: host under pressure: see optimizer_state_bytes).
PAGED_STATE_GPU_BYTES = 0.0


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


def frozen_base_bytes(w: Workload, cal: Calibration | None = None) -> float:
    """Bytes of the whole frozen base (unsharded), by :func:`base_dtype`.

    Quantised bases (bitsandbytes/torchao) keep the token embeddings and LM head in 16-bit
    (:func:`embedding_params`); NF4 adds ``qlora_overhead`` of the quantised bytes
    (quantisation state, absmax blocks; fitted on the NF4 runs), without double quantisation
    at ``NF4_NO_DQ_BYTES_PER_PARAM``; LLM.int8 adds its fp32 row scales,
    ``INT8_ROW_SCALE_BYTES / hidden_size`` a parameter (:data:`INT8_ROW_SCALE_BYTES`).
    """
    cal = cal or load_calibration()
    p = float(w.params or 0)
    dtype = base_dtype(w)
    if dtype not in (BaseDtype.INT8, BaseDtype.NF4):
        return p * BASE_DTYPE_BYTES[dtype]
    per = BASE_DTYPE_BYTES[dtype]
    emb = float(embedding_params(w))
    emb_bytes = 4.0 if kbit_upcast(w) else 2.0
    if dtype == BaseDtype.INT8:
        scales = INT8_ROW_SCALE_BYTES / w.hidden_size if w.hidden_size else 0.0
        return (p - emb) * (per + scales) + emb * emb_bytes
    if not w.double_quant:
        per = NF4_NO_DQ_BYTES_PER_PARAM
    overhead = (
        cal.memory.qlora_overhead_torchao
        if w.quant_backend == QuantBackend.TORCHAO
        else cal.memory.qlora_overhead
    )
    return (p - emb) * per * (1 + overhead) + emb * emb_bytes


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
    init = 0.0
    if w.full_model_init and w.sharding in (Sharding.ZERO3, Sharding.FSDP) and n > 1:
        # the full 16-bit model each rank materialised stays allocated next to its shard
        # (LitGPT's 2-4 GPU LoRA rows grow with the micro-batch on top of it)
        init = 2.0 * float(w.params)
    if w.method in (Method.LORA, Method.QLORA):
        return _adapter_state_bytes(w, n, cal, init)
    return _full_state_bytes(w, n, init)


def _full_bytes_per_param(w: Workload) -> tuple[float, float, float]:
    """(weight, gradient, optimizer) bytes per parameter of a full fine-tune, unsharded
    (the precision regimes of :func:`model_state_bytes`)."""
    opt = optimizer_state_bytes(w.optimizer, w.precision)
    if w.precision in (Precision.FP32, Precision.TF32):
        return 4.0, 4.0, opt
    if w.precision == Precision.BF16:
        return 2.0, 2.0, opt
    if w.sharding == Sharding.NONE:
        return 6.0, 4.0, opt
    return 2.0, 2.0, 4.0 + opt


def _full_buffer_bytes(w: Workload) -> float:
    """Sharding buffers of a full fine-tune per GPU: ZeRO-3/FSDP's all-gathered units (the
    one being computed plus one prefetched), ZeRO-1/2's reduce bucket, ZeRO-3's working
    buffers (:func:`zero3_buffer_bytes`)."""
    p = float(w.params or 0)
    layers = max(w.layers or 1, 1)
    buffers = 0.0
    if w.sharding in (Sharding.ZERO3, Sharding.FSDP):
        # all-gathered full parameters of the unit being computed plus one prefetched unit
        largest_unit = max(p / layers, float(embedding_params(w)) / 2)
        buffers += 2 * largest_unit * 2
    if w.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        buffers += ZERO_BUCKET_ELEMENTS * 2
    elif w.sharding == Sharding.ZERO3:
        buffers += zero3_buffer_bytes(w)
    return buffers


def _full_state_bytes(w: Workload, n: int, init: float) -> StateBytes:
    """Full fine-tune model states per GPU over ``n`` GPUs (see :func:`model_state_bytes`):
    ZeRO-1 shards the optimizer states, ZeRO-2 also the gradients, ZeRO-3/FSDP the weights
    too."""
    p = float(w.params or 0)
    sharded3 = w.sharding in (Sharding.ZERO3, Sharding.FSDP)
    weights, grads, optim = _full_bytes_per_param(w)
    grad_bytes = grads
    if w.sharding != Sharding.NONE:
        optim /= n
    if w.sharding in (Sharding.ZERO2, Sharding.ZERO3, Sharding.FSDP):
        grads /= n
    if sharded3:
        weights /= n
    if w.cpu_offload:
        # ZeRO-Offload / FSDP CPU offload: optimizer states and fp32 master weights live in
        # host RAM; with ZeRO-3/FSDP the sharded parameters and gradients too, so the GPU
        # holds only the gathered units (buffers).
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
        buffers=_full_buffer_bytes(w),
        init_peak=init,
    )


#: Optimizers whose PyTorch step allocates a moment-sized temporary per parameter: the
#: default ``foreach`` AdamW on CUDA (``fused`` unset; ``_default_to_fused_or_foreach``
#: picks foreach for CUDA tensors). pytorch/pytorch ``torch/optim/adam.py``
#: (``_multi_tensor_adam``, commit dc80ccde; AdamW is Adam with decoupled weight decay):
#: ``exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`` allocates one tensor per
#: parameter at the states' dtype, then ``_foreach_div_``/``_foreach_add_`` work in place
#: and ``_foreach_addcdiv_`` writes the parameters; the L2 weight-decay copy of the
#: gradients (``device_grads = torch._foreach_add(...)``) is deleted before it (``del
#: device_grads``), so the step's own transient is one moment: 4 B per parameter with fp32
#: states, 2 B in pure bf16. Fused kernels (``fused=True``, bitsandbytes 8-bit, paged)
#: allocate none; other optimizers are not examined (0).
FOREACH_TRANSIENT_OPTIMIZERS = frozenset({Optimizer.ADAMW})
#: Stacks whose AdamW is a fused kernel (no per-parameter temporary): torchtune's configs
#: pass ``fused: True`` to ``torch.optim.AdamW`` (pytorch/torchtune
#: ``recipes/configs/llama3_2/3B_full.yaml``: ``_component_: torch.optim.AdamW ... fused:
#: True``; its single-device configs use bitsandbytes' PagedAdamW8bit); llm.c updates each
#: parameter and its moments in place in one kernel (karpathy/llm.c ``llmc/adamw.cuh``:
#: ``adamw_kernel3`` → ``adamw_update`` writes ``m_memory``, ``v_memory`` and the
#: parameter per index).
FUSED_OPTIMIZER_STACKS = frozenset({Stack.TORCHTUNE, Stack.LLM_C})


def optimizer_step_transient_bytes(w: Workload, gpu_count: int) -> float:
    """Bytes per GPU the optimizer step allocates on top of weights, gradients and states:
    one moment-sized tensor per parameter the GPU steps for
    :data:`FOREACH_TRANSIENT_OPTIMIZERS` (4 B per parameter, 2 B in pure bf16; a full
    fine-tune's parameters, ÷ GPUs when ZeRO/FSDP shards the optimizer states, LoRA's
    adapters); 0 for other optimizers, a stack whose AdamW is fused
    (:data:`FUSED_OPTIMIZER_STACKS`), ``optimizer_in_backward`` (one parameter at a time)
    and CPU offload (the step runs on the host)."""
    if (
        w.optimizer not in FOREACH_TRANSIENT_OPTIMIZERS
        or (w.stack or w.recipe_stack) in FUSED_OPTIMIZER_STACKS
        or w.optimizer_in_backward
        or w.cpu_offload
    ):
        return 0.0
    per_moment = 2.0 if w.precision == Precision.BF16 else 4.0
    if w.method in (Method.LORA, Method.QLORA):
        return per_moment * float(lora_trainable_params(w))
    shards = max(int(gpu_count), 1) if w.sharding != Sharding.NONE else 1
    return per_moment * float(w.params or 0) / shards


def optimizer_step_excess_bytes(
    w: Workload, gpu_count: int, gradients: float, copy_and_activations: float
) -> float:
    """Bytes by which the optimizer step's peak exceeds the forward/backward peak.

    The step runs after backward with every gradient (``gradients``: the gradient bytes per
    GPU) and its temporaries (:func:`optimizer_step_transient_bytes`) alive and no
    activation, 16-bit weight copy or sharding buffer (ZeRO-3/FSDP free each gathered unit
    after its backward; the ZeRO-1/2 reduce bucket is a backward buffer); the
    forward/backward peak holds ``copy_and_activations`` (the 16-bit copy of unsharded mixed
    precision, the saved activations, the gradients alive with them,
    :func:`gradients_not_alive_at_peak`, and those buffers).
    The peak is weights + states + max(that, gradients + step temporaries); this returns the
    second's excess over the first (0 when the activations dominate), charged to the
    optimizer."""
    step = gradients + optimizer_step_transient_bytes(w, gpu_count)
    return max(step - copy_and_activations, 0.0)


def autocast_copy_bytes(w: Workload) -> float:
    """The 16-bit weight copy of an unsharded mixed-precision full fine-tune (2 B a
    parameter of its 6, :func:`_full_bytes_per_param`): alive from the forward's casts to
    each layer's backward, not at the optimizer step; 0 otherwise."""
    mixed = w.precision not in (Precision.FP32, Precision.TF32, Precision.BF16)
    if w.method != Method.FULL or w.sharding != Sharding.NONE or not mixed:
        return 0.0
    return 2.0 * float(w.params or 0)


def gradients_not_alive_at_peak(
    w: Workload, gpu_count: int, states: StateBytes, activations: float, tail: float = 0.0
) -> float:
    """Gradient bytes of a full fine-tune that are never alive next to the saved activations.

    ``optimizer.zero_grad()`` sets gradients to ``None`` (the default since PyTorch 2.0,
    ``set_to_none=True``; HF Trainer's ``model.zero_grad()`` and torchtune's recipes alike),
    so without gradient accumulation no gradient exists when the forward pass ends with every
    activation saved (and, under autocast, the 16-bit weight copies autograd saved for
    backward: the autocast cast cache lives until the forward's autocast region exits, the
    saved copies until each layer's backward). Backward frees activations and copies layer by
    layer while it writes the gradients, and the optimizer step runs with gradients and states
    but no activation, after the first block's backward ran with nearly every gradient
    written and that block's activations (``tail``: saved, or recomputed under checkpointing,
    :func:`app.model.memory_activations.last_layer_bytes_per_sample`, the whole activations
    where no per-layer split is known: a conservative bound) alive. The forward/backward
    peak is therefore weights + states + max(copy + activations, gradients + tail), not the
    sum of all: ``copy + activations + gradients - max(copy + activations, gradients +
    tail)`` less. The optimizer step's own peak (gradients + its temporaries) is
    :func:`optimizer_step_excess_bytes`, which holds in every regime.
    Not when the gradients are zeroed in place (``set_grads_to_none`` false: PyTorch 1.x's
    default, diffusers examples without ``--set_grads_to_none``), on more than one GPU (DDP
    keeps gradient buckets of the gradients' size for the whole run), under ZeRO/FSDP
    (gradients reduce-scattered into persistent shards), with gradient accumulation
    (gradients are kept across micro-batches), with ``optimizer_in_backward`` (no gradient
    buffer to begin with) or for LoRA (adapter gradients are negligible).
    """
    if (
        w.method != Method.FULL
        or gpu_count > 1
        or w.sharding != Sharding.NONE
        or w.grad_accum_steps > 1
        or w.optimizer_in_backward
        or not w.set_grads_to_none
    ):
        return 0.0
    alive = autocast_copy_bytes(w) + activations
    return alive + states.gradients - max(alive, states.gradients + min(tail, activations))
