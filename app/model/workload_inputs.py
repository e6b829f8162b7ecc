"""How each outside-given :class:`~app.model.workload.Workload` field may be given: its
:class:`InputSpec` (group, description with unit, bounds, examples), one table
(:data:`INPUTS`) keyed by field name that the workload's fields take as metadata.

Re-exported by :mod:`app.model.types`; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: A CUDA or compute-capability version as listings, presets and requests write it (``12.4``).
VERSION_PATTERN = r"^\d{1,3}(\.\d{1,3})?$"


class FieldGroup(StrEnum):
    """The part of a job an outside-given :class:`Workload` field describes: the network's
    ``shape`` (architecture, sizes, published per-sample counts), how it is ``training``
    (batch, precision, optimizer, method, memory savers), the ``data`` (epoch, dataset,
    loader, checkpoints on disk), the ``software`` it needs, or the ``preset`` it starts
    from. Every field's group is in its metadata (:data:`WORKLOAD_INPUTS`)."""

    PRESET = "preset"
    SHAPE = "shape"
    TRAINING = "training"
    DATA = "data"
    SOFTWARE = "software"


@dataclass(frozen=True, slots=True, kw_only=True)
class InputSpec:
    """How a :class:`Workload` field may be given from outside (API body, flat query
    parameter, web form, seed row).

    ``description`` says what the value is, with its unit (the API documents it as is);
    ``gt``/``ge``/``le`` bound a number (exclusive / inclusive); ``pattern`` (a regex) a text;
    ``max_items`` the longest list; ``count``: a count people write as ``7B`` or ``25.6M`` in a
    form or a query string; ``tokens``: a length in tokens people write as ``4k`` (k = 1024
    here: 4k = 4096, as sequence lengths are powers of two) or ``2048``; ``examples`` values
    for the API document.

    ``group`` is the part of the job the field describes (:class:`FieldGroup`);
    ``throughput``: a change of it means the preset's measurements no longer describe the
    job (:data:`app.model.job.THROUGHPUT_FIELDS`); ``required``: needed when no preset
    supplies it (:data:`app.model.job.REQUIRED_WITHOUT_PRESET`).
    """

    group: FieldGroup
    description: str
    count: bool = False
    tokens: bool = False
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    pattern: str | None = None
    max_items: int | None = None
    examples: tuple[Any, ...] = ()
    throughput: bool = False
    required: bool = False


#: The dataclass-field metadata key of a field's :class:`InputSpec`.
INPUT_KEY = "input"


def _given(group: FieldGroup, description: str, **spec: Any) -> dict[str, InputSpec]:
    """The metadata of a :class:`~app.model.workload.Workload` field that requests, forms and
    seed rows may give: its :class:`InputSpec` of ``group``, ``description`` and ``spec``."""
    return {INPUT_KEY: InputSpec(group=group, description=description, **spec)}


def _size(description: str, most: float, example: int) -> dict[str, InputSpec]:
    """The metadata of one of the network's sizes (layers, widths, heads, vocabulary, image
    side): a :data:`FieldGroup.SHAPE` count above 0 and at most ``most`` that changes the
    throughput, with ``example`` for the API document."""
    return _given(
        FieldGroup.SHAPE, description, gt=0, le=most, examples=(example,), throughput=True
    )


def _part_params(description: str, **spec: Any) -> dict[str, InputSpec]:
    """The metadata of the parameter count of one part of the network (frozen encoders, the
    VAE, lookup tables): a :data:`FieldGroup.SHAPE` count people may write as ``1.2B``, 0 when
    the part is not there, at most 10^13; ``spec``: more :class:`InputSpec` settings."""
    return _given(FieldGroup.SHAPE, description, count=True, ge=0, le=10**13, **spec)


def _version(description: str, **spec: Any) -> dict[str, InputSpec]:
    """The metadata of a :data:`FieldGroup.SOFTWARE` version (CUDA or compute capability,
    :data:`VERSION_PATTERN`); ``spec``: more :class:`InputSpec` settings."""
    return _given(FieldGroup.SOFTWARE, description, pattern=VERSION_PATTERN, **spec)


#: Field name → the metadata of that :class:`~app.model.workload.Workload` field (its
#: :class:`InputSpec` under :data:`INPUT_KEY`), in the workload's declaration order.
INPUTS: dict[str, dict[str, InputSpec]] = {
    "preset": _given(
        FieldGroup.PRESET,
        "workload preset slug (GET /v1/workloads lists them); it supplies every field not given",
        examples=("resnet50-imagenet",),
    ),
    "architecture": _given(
        FieldGroup.SHAPE,
        "model family; selects the activation-memory and FLOPs formulas",
        examples=("transformer_decoder",),
        throughput=True,
        required=True,
    ),
    "params": _given(
        FieldGroup.SHAPE,
        "trainable plus frozen model parameters (count)",
        count=True,
        gt=0,
        le=10**14,
        examples=(7_000_000_000,),
        throughput=True,
        required=True,
    ),
    "layers": _size("transformer blocks (count; Hugging Face num_hidden_layers)", 10_000, 32),
    "hidden_size": _size("model (embedding) width (Hugging Face hidden_size)", 10**6, 4096),
    "heads": _size("attention heads per layer (Hugging Face num_attention_heads)", 10**5, 32),
    "kv_heads": _size(
        "key/value heads per layer for grouped-query attention (Hugging Face "
        "num_key_value_heads; default: heads)",
        10**5,
        8,
    ),
    "ffn_hidden_size": _size(
        "feed-forward inner width (Hugging Face intermediate_size)", 10**7, 14336
    ),
    "vocab_size": _size("tokenizer vocabulary (tokens; sizes the logits)", 10**8, 128256),
    "seq_len": _given(
        FieldGroup.SHAPE,
        "tokens per sample (sequence length); as people write it: 2048, 4k, 8K, 32k, where "
        "k is 1024 (4k = 4096, 32k = 32768), as context lengths are powers of two",
        tokens=True,
        gt=0,
        le=10**8,
        examples=(2048,),
        throughput=True,
    ),
    "image_size": _size("image side, pixels (224 for 224×224)", 100_000, 224),
    "micro_batch_size": _given(
        FieldGroup.TRAINING,
        "samples per GPU per forward/backward step",
        gt=0,
        le=10**9,
        examples=(256,),
    ),
    "grad_accum_steps": _given(
        FieldGroup.TRAINING,
        "micro-batches accumulated per optimizer step (count)",
        gt=0,
        le=10**6,
        examples=(1,),
    ),
    "precision": _given(
        FieldGroup.TRAINING,
        "numeric regime: fp32, tf32, fp16_amp/bf16_amp (autocast with fp32 master "
        "weights), bf16 (pure bf16 states) or fp8",
        examples=("bf16_amp",),
    ),
    "optimizer": _given(
        FieldGroup.TRAINING, "optimizer, as it sizes the optimizer state", examples=("adamw",)
    ),
    "method": _given(
        FieldGroup.TRAINING,
        "parameters trained: full, lora (adapters) or qlora (adapters on an NF4 base)",
        examples=("full",),
        throughput=True,
    ),
    "lora_rank": _given(
        FieldGroup.TRAINING, "LoRA/QLoRA adapter rank r", gt=0, le=10**5, examples=(16,)
    ),
    "gradient_checkpointing": _given(
        FieldGroup.TRAINING,
        "activation checkpointing on (activations recomputed)",
        throughput=True,
    ),
    "attention": _given(
        FieldGroup.TRAINING,
        "attention kernel: eager materialises the seq_len × seq_len scores, sdpa "
        "(Flash/memory-efficient) does not",
    ),
    "sharding": _given(
        FieldGroup.TRAINING,
        "data-parallel state sharding: none, DeepSpeed ZeRO stage 1/2/3, or FSDP full shard",
    ),
    "fused_cross_entropy": _given(
        FieldGroup.TRAINING, "chunked/fused cross-entropy: no full fp32 logits tensor"
    ),
    "cpu_offload": _given(
        FieldGroup.TRAINING, "optimizer states and master weights offloaded to CPU RAM"
    ),
    "optimizer_in_backward": _given(
        FieldGroup.TRAINING,
        "optimizer step fused into backward (torchtune optimizer_in_bwd): no full gradient buffer",
    ),
    "activation_offloading": _given(
        FieldGroup.TRAINING, "checkpointed activations offloaded to CPU RAM"
    ),
    "checkpoint_granularity": _given(
        FieldGroup.TRAINING,
        "with gradient_checkpointing: full (block inputs only) or selective "
        "(op level, as torchtitan: every second matmul's output saved, the rest recomputed)",
        throughput=True,
    ),
    "base_dtype": _given(
        FieldGroup.TRAINING,
        "LoRA/QLoRA: dtype the frozen base weights are loaded in (fp32, bf16, fp16, int8, "
        "nf4; int8 is bitsandbytes LLM.int8, also written 8bit or load_in_8bit; torch dtypes "
        "as written, torch.bfloat16); default nf4 "
        "for qlora, fp32 for an fp32/tf32 lora run, else 16-bit",
    ),
    "implementation": _given(
        FieldGroup.TRAINING,
        "transformers: eager PyTorch modules (Hugging Face, torchtune, LitGPT; default) or "
        "fused kernels (Megatron/Transformer Engine, Liger, Unsloth), as it decides the "
        "activations kept",
    ),
    "quant_backend": _given(
        FieldGroup.TRAINING,
        "QLoRA: the library holding the quantised base, bitsandbytes (default) or torchao "
        "(torchtune)",
    ),
    "double_quant": _given(
        FieldGroup.TRAINING, "QLoRA: NF4 with double quantisation (default true)"
    ),
    "full_model_init": _given(
        FieldGroup.TRAINING,
        "FSDP: every rank loads the full 16-bit model on its GPU before sharding",
    ),
    "dropout": _given(
        FieldGroup.TRAINING,
        "transformers: dropout with p > 0 in training (default true: its masks are kept); "
        "false for p = 0 or no dropout layers",
    ),
    "set_grads_to_none": _given(
        FieldGroup.TRAINING,
        "optimizer.zero_grad releases the gradients between steps (default true: PyTorch 2.0's "
        "set_to_none default); false for PyTorch 1.x or a script that zeroes them in place "
        "(diffusers examples without --set_grads_to_none)",
    ),
    "vision_task": _given(
        FieldGroup.SHAPE,
        "conv nets: classification (default), detection (FPN/SSD/YOLO heads) or "
        "segmentation (per-pixel class logits at the input size)",
    ),
    "backbone_gflops_224": _given(
        FieldGroup.SHAPE,
        "detectors: backbone forward GFLOPs per 224x224 image (ResNet-50: 8.178)",
        ge=1e-6,
        le=10**6,
    ),
    "max_boxes_per_image": _given(
        FieldGroup.SHAPE,
        "detectors: most ground-truth boxes in one training image after augmentation "
        "(the assigner's box × anchor tensors grow with it)",
        gt=0,
        le=100_000,
    ),
    "num_classes": _given(
        FieldGroup.SHAPE,
        "segmentation: classes of the per-pixel logits (ADE20K 150, Cityscapes 19)",
        gt=0,
        le=1_000_000,
    ),
    "patch_size": _given(
        FieldGroup.SHAPE, "ViT patch side in pixels (default 16)", gt=0, le=100_000
    ),
    "text_encoder_params": _part_params(
        "diffusion: frozen text encoder(s) parameters held on the GPU (params counts the "
        "UNet); 0 when the encoders are not on the GPU (embeddings cached or offloaded)",
    ),
    "vae_params": _part_params(
        "diffusion: frozen VAE parameters held on the GPU; 0 when it is not there (latents cached)"
    ),
    "ema_weights": _given(
        FieldGroup.TRAINING, "an fp32 EMA copy of the trained parameters on the GPU (--use_ema)"
    ),
    "stack": _given(
        FieldGroup.SOFTWARE,
        "training software: hf_trainer (HF Trainer/PEFT/TRL), axolotl, llama_factory, "
        "unsloth, torchtune, deepspeed, lightning, megatron (Megatron/NeMo), torchtitan, "
        "llm_foundry, llm_c, timm, nvidia_dle, pytorch (a plain loop), pytorch_compile (a "
        "plain loop under torch.compile, nanoGPT), tensorflow, or as people name them "
        "(HF Trainer, composer, NeMo, llm.c); default: "
        "the preset's recipe, else hf_trainer",
        examples=("hf_trainer",),
    ),
    "samples_per_epoch": _given(
        FieldGroup.DATA,
        "samples in one pass over the dataset (count)",
        count=True,
        gt=0,
        le=10**15,
        examples=(1_281_167,),
        required=True,
    ),
    "epochs": _given(
        FieldGroup.DATA,
        "passes over the dataset (may be fractional)",
        gt=0,
        le=10**6,
        examples=(90,),
    ),
    "dataset_gb": _given(
        FieldGroup.DATA,
        "dataset size on disk, GB (10^9 bytes)",
        ge=0,
        le=10**9,
        examples=(150,),
    ),
    "cpu_ms_per_sample": _given(
        FieldGroup.DATA,
        "CPU milliseconds of data loading per sample on one core (at least 0.001 ms = 1 µs)",
        ge=1e-3,
        le=10**7,
        examples=(3.5,),
    ),
    "min_cuda": _version(
        "lowest CUDA version the job needs (offers whose driver supports less are warned about)",
        examples=("12.1",),
    ),
    "forward_gflops_per_sample": _given(
        FieldGroup.SHAPE,
        "forward-pass GFLOPs per sample, 2 per multiply-accumulate (ResNet-50 at 224 px: "
        "8.18); fvcore, thop and most vision papers print multiply-accumulates as FLOPs: "
        "double those (non-transformers without a preset need it for a FLOPs-based "
        "throughput estimate)",
        ge=1e-6,
        le=10**9,
        throughput=True,
    ),
    "forward_activations_per_sample": _given(
        FieldGroup.SHAPE,
        "forward-pass activations per sample at image_size, millions of elements (outputs "
        "of every convolution and matrix product, fvcore's count as timm's benchmark "
        "publishes it in infer_macts); sizes CNN activation memory when given",
        ge=1e-6,
        le=10**7,
        examples=(11.11,),
    ),
    "lookup_params": _part_params(
        "transformers: parameters a token only looks up instead of multiplying (untied "
        "embedding tables, adaptive-softmax tail clusters), left out of the FLOPs count; "
        "default: an encoder's vocab_size x hidden_size table, none for a decoder",
        throughput=True,
    ),
    "tokens_per_epoch": _given(
        FieldGroup.DATA,
        "real (non-padding) tokens in one pass over the dataset; with packing the epoch is "
        "tokens_per_epoch / seq_len sequences and epoch_hours = tokens / tokens_per_s",
        count=True,
        gt=0,
        le=10**15,
    ),
    "tokens_per_sample": _given(
        FieldGroup.DATA,
        "mean real (non-padding) tokens per sample; the epoch's tokens are "
        "samples_per_epoch × this, packed into seq_len sequences unless packed is false",
        gt=0,
        le=10**9,
        examples=(92.4,),
    ),
    "packed": _given(
        FieldGroup.DATA,
        "samples packed into seq_len sequences (true) or each padded to seq_len (false); "
        "default: packed when tokens_per_epoch is given",
    ),
    "cuda_build": _version(
        "CUDA version the framework build targets (a cu121 PyTorch wheel: 12.1)"
    ),
    "cuda_only_libraries": _given(
        FieldGroup.SOFTWARE, "libraries with CUDA-only builds the job uses", max_items=8
    ),
    "min_compute_capability": _version("lowest compute capability of the build"),
    "checkpoints_kept": _given(
        FieldGroup.DATA, "full checkpoints kept on disk at once", ge=0, le=10_000
    ),
}
