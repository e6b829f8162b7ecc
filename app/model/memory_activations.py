"""Saved-activation and loss-side bytes per sample: transformer layers (Korthikanti et al.
arXiv:2205.05198, Stas Bekman's measured copies), checkpointing, logits, fitted constants for
other families (``../shared/docs/estimation.md`` §1.4-1.5, §5.1.3); split out of
:mod:`app.model.memory`.
"""

from __future__ import annotations

from app.model.calibration import Calibration, load_calibration
from app.model.memory_dtypes import (
    _amp,
    _diffusion,
    _fit_key,
    activation_bytes,
    base_dtype,
    kbit_upcast,
    quantised_base,
)
from app.model.memory_vision import (
    UNET_LATENT_DOWNSAMPLE,
    assigner_bytes_per_sample,
    segmentation_loss_bytes_per_sample,
    unet_attention_scores_bytes,
)
from app.model.stacks import FUSED_KERNEL_STACKS, Stack
from app.model.types import (
    Architecture,
    Attention,
    BaseDtype,
    CheckpointGranularity,
    Implementation,
    Method,
    Precision,
    Sharding,
    VisionTask,
    Workload,
)

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
#: Stacks whose ``fp16_amp`` is apex amp O2, which casts the whole model to fp16 (LayerNorm
#: included) and keeps the fp32 master weights in the optimizer only, so the residual stream,
#: LayerNorm inputs and attention scores are 16-bit: NVIDIA DeepLearningExamples' BERT
#: (NVIDIA/DeepLearningExamples@0663b67c and @f8b3a63f
#: ``PyTorch/LanguageModeling/BERT/run_squad.py``: ``amp.initialize(model, optimizer,
#: opt_level="O2", keep_batchnorm_fp32=False, ...)``; the Lambda v0 log
#: lambdal/deeplearning-benchmark@e167f02c ``pytorch/results/3090/PyTorch_bert_base_squad_FP16/
#: 31-10-2020_15-59-55.txt`` prints "cast_model_type: torch.float16 ... keep_batchnorm_fp32:
#: False"). Lambda's v1 runs use Lambda's fork of the same examples (its README, Step 3).
APEX_O2_STACKS = frozenset({Stack.NVIDIA_DLE})
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

#: Diffusion transformers (a diffusion model given ``layers`` and ``hidden_size``): latent
#: patch side (DiT-XL/2, Peebles & Xie arXiv:2212.09748; SD3 and Flux also patch 2) and the
#: hidden-sized copies adaLN-Zero adds to a ViT block: each of the two modulations
#: (x·(1 + scale) + shift) keeps its normalised input and each of the two gates (gate · y)
#: keeps the gated output, one copy apiece (same paper, Fig. 3).
DIT_DEFAULT_PATCH = 2
DIT_ADALN_COPIES = 4.0


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


#: Stacks whose fused classifier writes the logits' gradient over the logits, so only the
#: logits at their dtype are alive at the loss: llm.c (karpathy/llm.c
#: ``llmc/fused_classifier.cuh``: "replaces logits with logit gradients", the kernel's
#: ``__stcs(logits + idx * P + i, (floatX)dlogit)``; train_gpt2.cu calls
#: ``fused_classifier(acts.output, acts.losses, dloss, model->targets, ...)`` on the
#: forward's output buffer).
IN_PLACE_LOGIT_GRADIENT_STACKS = frozenset({Stack.LLM_C})
#: Bytes per 16-bit logit under such a classifier: the logit itself (2 B), later its gradient.
IN_PLACE_LOGIT_BYTES = 2.0


def logits_fp32(w: Workload) -> bool:
    """Whether the LM head writes fp32 logits: fp32/tf32 training, or an LM head PEFT upcast
    to fp32 on a quantised base (:func:`kbit_upcast`)."""
    return activation_bytes(w.precision) == 4 or kbit_upcast(w)


def logit_bytes_per_element(w: Workload, cal: Calibration | None = None) -> float:
    """Bytes alive at the loss per logit element (one token × one vocabulary entry), by dtype.

    Unfused cross-entropy (``log_softmax`` + ``nll_loss``): when backward starts, four
    logit-sized tensors are alive at the logits' dtype: the logits, the log-softmax output
    (saved by ``LogSoftmaxBackward``), its dense gradient (``nll_loss_backward``) and the
    logits' gradient (``_log_softmax_backward_data`` allocates it): ``unfused_logit_bytes``
    (4 × 2 = 8) for 16-bit logits, twice that for fp32 logits (:func:`logits_fp32`: fp32
    training, or PEFT's fp32 LM head on a quantised base). Checked against the public
    long-context runs of ``../shared/real_runs``, where the logits are the largest term
    (C-7 at 2 × 8,192 tokens: Llama-3.1-8B LoRA 36 GiB, Phi-3-mini LoRA/full 17/40 GiB,
    predicted 38.7, 16.1/39.4; U-2: Mistral-7B QLoRA at 8,192 tokens OOMs a 4090 at
    micro-batch 4, fits at 2). A plain cross-entropy on 16-bit logits that drops them before
    backward keeps three (6 B), Hugging Face's loss upcasting them to fp32 2 + 3 × 4 = 14 B;
    8 B sits between. Chunked/fused loss: only the logits of every chunk, kept for backward,
    at their dtype: ``chunked_logit_bytes`` for 16-bit logits (a count, 4 B: the saved
    log-softmax of every chunk, :class:`app.model.calibration.MemoryParams`), × 2 for fp32; a
    stack whose fused classifier overwrites the logits with their gradient
    (:data:`IN_PLACE_LOGIT_GRADIENT_STACKS`) keeps the logits alone,
    ``IN_PLACE_LOGIT_BYTES`` (× 2 for fp32).
    """
    cal = cal or load_calibration()
    scale = 2.0 if logits_fp32(w) else 1.0
    if w.fused_cross_entropy and (w.stack or w.recipe_stack) in IN_PLACE_LOGIT_GRADIENT_STACKS:
        return IN_PLACE_LOGIT_BYTES * scale
    if w.fused_cross_entropy:
        return cal.memory.chunked_logit_bytes * scale
    return cal.memory.unfused_logit_bytes * scale


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
    if w.architecture in _BLOCK_ARCHITECTURES and w.hidden_size and w.layers:
        return _transformer_activation_bytes(w, cal)
    per_sample = _family_activation_bytes(w, cal)
    if w.gradient_checkpointing:
        per_sample *= CHECKPOINTING_ACTIVATION_FACTOR
    if w.method in (Method.LORA, Method.QLORA):
        per_sample *= cal.memory.lora_activation_factor
    return (
        per_sample
        + unet_attention_scores_bytes(w)
        + assigner_bytes_per_sample(w)
        + segmentation_loss_bytes_per_sample(w)
    )


#: Architectures whose activations the per-layer block formula counts when the workload gives
#: ``hidden_size`` and ``layers`` (:func:`activation_bytes_per_sample`).
_BLOCK_ARCHITECTURES = (
    Architecture.TRANSFORMER_ENCODER,
    Architecture.TRANSFORMER_DECODER,
    Architecture.VIT,
    Architecture.DIFFUSION_UNET,
    Architecture.DIFFUSION_TRANSFORMER,
)


def _transformer_activation_bytes(w: Workload, cal: Calibration) -> float:
    """Saved-activation bytes for one sample of a transformer-shaped block stack, loss
    included (the block formula of :func:`activation_bytes_per_sample`)."""
    nbytes = activation_bytes(w.precision)
    s = transformer_tokens(w)
    h = w.hidden_size or 0  # given: activation_bytes_per_sample checked it
    layers = w.layers or 0
    fp32_stream = _fp32_stream(w)
    c = _copies_per_layer(w, fp32_stream)
    if w.method in (Method.LORA, Method.QLORA):
        c *= cal.memory.lora_activation_factor
    per_layer = c * nbytes * s * h
    scores = _eager_score_bytes(w, s, nbytes, fp32_stream)
    logits = logits_bytes_per_sample(w, cal)
    if not w.gradient_checkpointing:
        return layers * (per_layer + scores) + logits
    if w.checkpoint_granularity == CheckpointGranularity.SELECTIVE:
        saved = selective_saved_copies(w) * nbytes * s * h
        return layers * saved + max(per_layer + scores, logits)
    # the loss runs after the last layer (only checkpoints alive) and the logits are
    # freed before layers are recomputed in backward: the two peaks do not add up
    kept = 4 if fp32_stream else nbytes
    stored = 2 * kept * s * h if w.activation_offloading else layers * kept * s * h
    return stored + max(per_layer + scores, logits)


def last_layer_bytes_per_sample(w: Workload, cal: Calibration | None = None) -> float:
    """Activation bytes of one sample still alive while backward writes the last gradients:
    the first block's saved (or, with checkpointing, recomputed) activations, ``c · bytes ·
    s · h`` plus its eager scores, for a transformer with its shape. Other nets (UNets,
    CNNs, detectors, a transformer without its shape) have no known per-layer split and
    their first, highest-resolution stage is among their largest, so the bound is all of
    their activations (:func:`activation_bytes_per_sample`): conservative, the gradients
    then never leave their peak."""
    cal = cal or load_calibration()
    if not (w.architecture in _BLOCK_ARCHITECTURES and w.hidden_size and w.layers):
        return activation_bytes_per_sample(w, cal)
    nbytes = activation_bytes(w.precision)
    s = transformer_tokens(w)
    fp32_stream = _fp32_stream(w)
    c = _copies_per_layer(w, fp32_stream)
    if w.method in (Method.LORA, Method.QLORA):
        c *= cal.memory.lora_activation_factor
    return c * nbytes * s * w.hidden_size + _eager_score_bytes(w, s, nbytes, fp32_stream)


def _eager_score_bytes(w: Workload, s: int, nbytes: int, fp32_stream: bool) -> float:
    """Attention-score bytes one layer keeps for ``s`` tokens under eager attention (0 with a
    fused kernel or without ``heads``): ``heads · s²`` × bytes per score
    (``AMP_EAGER_SCORE_BYTES`` under unsharded autocast, else ``2 · bytes + 1``; without
    dropout no mask and no dropped copy)."""
    if w.attention != Attention.EAGER or not w.heads:
        return 0.0
    per_score = AMP_EAGER_SCORE_BYTES if fp32_stream else 2 * nbytes + 1
    if not w.dropout:
        # no mask; unsharded autocast still keeps the fp32 softmax output and its
        # 16-bit copy, otherwise the one softmax output serves both backward ops
        per_score = AMP_EAGER_SCORE_BYTES - DROPOUT_SCORE_BYTES if fp32_stream else nbytes
    return w.heads * s * s * per_score


def _family_activation_bytes(w: Workload, cal: Calibration) -> float:
    """Per-sample activation bytes of a non-transformer net before checkpointing and LoRA:
    the slope measured for the preset's benchmark workload, scaled by pixels from its
    reference image, else :func:`_unfitted_activation_bytes`."""
    fit = cal.activation_bytes_per_sample.get(_fit_key(w))
    if fit is None:
        return _unfitted_activation_bytes(w, cal)
    slope, ref_image, _ = fit
    per_sample: float = slope
    ref_pixels = ref_image * ref_image if ref_image else None
    if ref_pixels and w.image_size:
        per_sample *= (w.image_size * w.image_size) / ref_pixels
    return per_sample


def _unfitted_activation_bytes(w: Workload, cal: Calibration) -> float:
    """One fitted constant per family (:class:`MemoryParams`), ×2 for fp32 activations:
    detectors by backbone GFLOPs × pixels / 224², CNNs by activation count or GFLOPs,
    diffusion UNets by GFLOPs; recommenders ~0; others a bytes-per-parameter guess."""
    wide = 2 if activation_bytes(w.precision) == 4 else 1
    if _detector(w) and w.backbone_gflops_224 and w.image_size:
        pixels = float(w.image_size * w.image_size)
        return (
            cal.memory.detection_activation_bytes_per_gflop
            * w.backbone_gflops_224
            * pixels
            / BACKBONE_REFERENCE_PIXELS
            * wide
        )
    if w.architecture == Architecture.CNN and w.forward_activations_per_sample:
        return (
            w.forward_activations_per_sample
            * 1e6
            * cal.memory.cnn_activation_bytes_per_element
            * wide
        )
    if (
        w.architecture in (Architecture.CNN, Architecture.DIFFUSION_UNET)
        and w.forward_gflops_per_sample
    ):
        per_gflop = (
            cal.memory.diffusion_activation_bytes_per_gflop
            if w.architecture == Architecture.DIFFUSION_UNET
            else cal.memory.cnn_activation_bytes_per_gflop
        )
        return w.forward_gflops_per_sample * per_gflop * wide
    if w.architecture == Architecture.RECOMMENDER or not w.params:
        return 0.0  # embedding lookups: negligible per sample
    return cal.default_activation_bytes_per_param * w.params


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


def _plain_mlp(w: Workload) -> bool:
    """Blocks with a two-matrix GELU MLP whatever its width: ViT (Dosovitskiy et al. §3.1)
    and diffusion transformers (DiT's ``Mlp`` with GELU-tanh, Peebles & Xie; SD3's and
    Flux's blocks alike)."""
    return w.architecture == Architecture.VIT or _diffusion(w)


def _apex_o2(w: Workload) -> bool:
    """Whether ``w`` runs apex amp O2: fp16 autocast (``fp16_amp``) on a stack of
    :data:`APEX_O2_STACKS` (the request's stack, else the preset's recipe stack). apex amp
    is DLE BERT's fp16 path (the constant's sources: the ``amp.initialize(...,
    opt_level="O2")`` call and the Lambda log of its FP16 run); apex O2 casts to fp16 only, so
    bf16 autocast or fp32 on that stack is native PyTorch (fp32 weights, fp32 stream)."""
    return w.precision == Precision.FP16_AMP and (w.stack or w.recipe_stack) in APEX_O2_STACKS


def _fp32_stream(w: Workload) -> bool:
    """Whether the residual stream (and checkpointed layer inputs) is fp32: autocast over fp32
    weights without ZeRO/FSDP (see ``AMP_FP32_STREAM_EXTRA_COPIES``), except on a stack whose
    mixed precision is apex amp O2 (:func:`_apex_o2`: the model itself is fp16). A
    LoRA run on a 16-bit base has 16-bit embeddings, so its stream stays 16-bit; a quantised
    base has an fp32 stream where its embeddings are fp32 (:func:`kbit_upcast`), with or
    without autocast: the fp32 embedding output promotes every 16-bit block output added to
    it."""
    if w.sharding != Sharding.NONE or _apex_o2(w):
        return False
    if w.method != Method.FULL and quantised_base(w):
        return kbit_upcast(w) and activation_bytes(w.precision) == 2
    if not _amp(w.precision):
        return False
    return w.method == Method.FULL or base_dtype(w) not in (BaseDtype.BF16, BaseDtype.FP16)


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


def _detector(w: Workload) -> bool:
    return w.architecture == Architecture.CNN and w.vision_task == VisionTask.DETECTION
