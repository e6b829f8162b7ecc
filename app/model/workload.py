"""The training job as the estimator sees it (:class:`Workload`), its bad-input error
(:class:`JobError`) and the table of its outside-given fields (:data:`WORKLOAD_INPUTS`).

Each given field's :class:`~app.model.workload_inputs.InputSpec` lives in
:data:`app.model.workload_inputs.INPUTS`. Re-exported by :mod:`app.model.types`; no I/O.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from app.model.enums import (
    Attention,
    BaseDtype,
    CheckpointGranularity,
    Implementation,
    Method,
    Optimizer,
    QuantBackend,
    Sharding,
    VisionTask,
)
from app.model.stacks import Stack
from app.model.vocabulary import Architecture, Precision
from app.model.workload_inputs import INPUT_KEY, INPUTS, InputSpec


class JobError(ValueError):
    """Bad job input; ``field`` names the offending field (dotted path).

    ``errors`` lists every (field, reason) found at once, the first being (field, reason):
    a custom job missing several required fields names them all in one answer.
    """

    def __init__(self, field: str, reason: str, more: tuple[tuple[str, str], ...] = ()):
        super().__init__("; ".join(f"{f}: {r}" for f, r in ((field, reason), *more)))
        self.field = field
        self.reason = reason
        self.errors: list[tuple[str, str]] = [(field, reason), *more]


@dataclass(frozen=True, slots=True)
class WorkloadInput:
    """One outside-given field of :class:`Workload` (:data:`WORKLOAD_INPUTS`).

    ``kind`` is its value type without ``None``: ``int``, ``float``, ``bool``, ``str``, one of
    the enums above, or ``tuple`` (of text).
    """

    name: str
    kind: type
    spec: InputSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A training job, flat, with units in the names.

    ``params`` is the total parameter count; ``seq_len`` tokens per sample (transformers,
    seq2seq); ``image_size`` pixels per side (the
    side of a square with the same pixels for non-square inputs); ``micro_batch_size`` per GPU;
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

    The fields whose metadata is an entry of :data:`app.model.workload_inputs.INPUTS` are
    those given from outside; their :class:`InputSpec` (description, bounds) is the one
    statement of them that the API's ``WorkloadIn``, the ranking form and the seed loader
    are built from (:data:`WORKLOAD_INPUTS`).
    """

    preset: str | None = field(default=None, metadata=INPUTS["preset"])
    architecture: Architecture = field(metadata=INPUTS["architecture"])
    params: int | None = field(default=None, metadata=INPUTS["params"])
    layers: int | None = field(default=None, metadata=INPUTS["layers"])
    hidden_size: int | None = field(default=None, metadata=INPUTS["hidden_size"])
    heads: int | None = field(default=None, metadata=INPUTS["heads"])
    kv_heads: int | None = field(default=None, metadata=INPUTS["kv_heads"])
    ffn_hidden_size: int | None = field(default=None, metadata=INPUTS["ffn_hidden_size"])
    vocab_size: int | None = field(default=None, metadata=INPUTS["vocab_size"])
    seq_len: int | None = field(default=None, metadata=INPUTS["seq_len"])
    image_size: int | None = field(default=None, metadata=INPUTS["image_size"])
    micro_batch_size: int = field(default=1, metadata=INPUTS["micro_batch_size"])
    grad_accum_steps: int = field(default=1, metadata=INPUTS["grad_accum_steps"])
    precision: Precision = field(default=Precision.BF16_AMP, metadata=INPUTS["precision"])
    optimizer: Optimizer = field(default=Optimizer.ADAMW, metadata=INPUTS["optimizer"])
    method: Method = field(default=Method.FULL, metadata=INPUTS["method"])
    lora_rank: int | None = field(default=None, metadata=INPUTS["lora_rank"])
    gradient_checkpointing: bool = field(default=False, metadata=INPUTS["gradient_checkpointing"])
    attention: Attention = field(default=Attention.SDPA, metadata=INPUTS["attention"])
    sharding: Sharding = field(default=Sharding.NONE, metadata=INPUTS["sharding"])
    fused_cross_entropy: bool = field(default=False, metadata=INPUTS["fused_cross_entropy"])
    cpu_offload: bool = field(default=False, metadata=INPUTS["cpu_offload"])
    # -- memory set-up (issue 9): optional, defaults describe a plain PyTorch loop --
    #: optimizer step fused into backward (torchtune ``optimizer_in_bwd``): gradients are
    #: applied and freed per parameter, so no full gradient buffer exists
    optimizer_in_backward: bool = field(default=False, metadata=INPUTS["optimizer_in_backward"])
    #: checkpointed activations offloaded to host RAM (torchtune activation offloading)
    activation_offloading: bool = field(default=False, metadata=INPUTS["activation_offloading"])
    checkpoint_granularity: CheckpointGranularity = field(
        default=CheckpointGranularity.FULL, metadata=INPUTS["checkpoint_granularity"]
    )
    #: LoRA/QLoRA: the dtype the frozen base is loaded in; ``None``: the method's default
    #: (:func:`app.model.memory_dtypes.base_dtype`: nf4 for QLoRA, fp32 for a fp32/tf32 LoRA run,
    #: else 16-bit)
    base_dtype: BaseDtype | None = field(default=None, metadata=INPUTS["base_dtype"])
    #: the transformer block's implementation; ``None``: eager (the training stack's default
    #: when one is named: :func:`app.model.memory_activations.implementation`)
    implementation: Implementation | None = field(default=None, metadata=INPUTS["implementation"])
    #: QLoRA: the library holding the quantised base; ``None``: bitsandbytes
    quant_backend: QuantBackend | None = field(default=None, metadata=INPUTS["quant_backend"])
    #: QLoRA NF4 with double quantisation (~4.127 bits/param) instead of plain NF4 (~4.5)
    double_quant: bool = field(default=True, metadata=INPUTS["double_quant"])
    #: every rank materialises the full 16-bit model on its GPU before FSDP shards it and
    #: keeps it allocated (no meta-device init / ``cpu_ram_efficient_loading``)
    full_model_init: bool = field(default=False, metadata=INPUTS["full_model_init"])
    #: the transformer trains with dropout p > 0 (Korthikanti's 1-byte masks are kept); false:
    #: p = 0 or no dropout layers (PyTorch's dropout at p = 0 returns its input, no mask)
    dropout: bool = field(default=True, metadata=INPUTS["dropout"])
    #: ``zero_grad`` releases the gradients between steps (``set_to_none=True``, PyTorch 2.0's
    #: default); false: they are zeroed in place and stay allocated through the next forward
    #: (PyTorch 1.x's default, diffusers examples without ``--set_grads_to_none``)
    set_grads_to_none: bool = field(default=True, metadata=INPUTS["set_grads_to_none"])
    # -- vision and diffusion memory (issue 9): optional --
    #: conv nets: classification or detection (a detector's activations per backbone GFLOP
    #: are fitted apart from a classifier's)
    vision_task: VisionTask = field(
        default=VisionTask.CLASSIFICATION, metadata=INPUTS["vision_task"]
    )
    #: detectors: the backbone's forward GFLOPs per 224×224 image (2 × torchvision's GMACs:
    #: ResNet-50 8.178); activations scale it by the input pixels
    backbone_gflops_224: float | None = field(default=None, metadata=INPUTS["backbone_gflops_224"])
    #: detectors: the most ground-truth boxes one training image carries (after mosaic and
    #: other augmentation): a task-aligned assigner (YOLOv8/11) allocates per box × anchor
    max_boxes_per_image: int | None = field(default=None, metadata=INPUTS["max_boxes_per_image"])
    #: segmentation: classes of the per-pixel logits (ADE20K 150, Cityscapes 19)
    num_classes: int | None = field(default=None, metadata=INPUTS["num_classes"])
    #: ViT patch side in pixels (tokens = (image_size / patch_size)² + 1); default 16
    patch_size: int | None = field(default=None, metadata=INPUTS["patch_size"])
    #: diffusion: parameters of the frozen text encoder(s) and of the frozen VAE, held on
    #: the GPU next to the UNet (``params`` counts the UNet only)
    text_encoder_params: int | None = field(default=None, metadata=INPUTS["text_encoder_params"])
    vae_params: int | None = field(default=None, metadata=INPUTS["vae_params"])
    #: an fp32 exponential-moving-average copy of the trained parameters kept on the GPU
    #: (diffusers ``--use_ema``, torchvision/timm ``--model-ema``)
    ema_weights: bool = field(default=False, metadata=INPUTS["ema_weights"])
    #: the training software (:mod:`app.model.stacks`); ``None``: the preset's recipe, or
    #: HF Trainer + PEFT for a custom job
    stack: Stack | None = field(default=None, metadata=INPUTS["stack"])
    samples_per_epoch: int = field(default=1, metadata=INPUTS["samples_per_epoch"])
    epochs: float = field(default=1.0, metadata=INPUTS["epochs"])
    dataset_gb: float | None = field(default=None, metadata=INPUTS["dataset_gb"])
    cpu_ms_per_sample: float | None = field(default=None, metadata=INPUTS["cpu_ms_per_sample"])
    min_cuda: str | None = field(default=None, metadata=INPUTS["min_cuda"])
    forward_gflops_per_sample: float | None = field(
        default=None, metadata=INPUTS["forward_gflops_per_sample"]
    )
    #: millions of activation elements of one sample's forward pass at ``image_size``: the
    #: output elements of every convolution and matrix product (fvcore's
    #: ``ActivationCountAnalysis``, the ``infer_macts`` column of timm's benchmark CSVs)
    forward_activations_per_sample: float | None = field(
        default=None, metadata=INPUTS["forward_activations_per_sample"]
    )
    #: transformers: parameters inside ``params`` that a token only looks up and does not
    #: multiply every step (untied token-embedding tables; an adaptive softmax's tail
    #: clusters, Grave et al. 2017, arXiv:1609.04309, which only the tokens whose target
    #: falls in them are projected onto); the FLOPs count leaves them out
    #: (:func:`app.model.throughput.matmul_params`)
    lookup_params: int | None = field(default=None, metadata=INPUTS["lookup_params"])
    benchmark_workloads: tuple[str, ...] = ()
    benchmark_method: str | None = None
    #: the stack of the preset's recipe (from its source), the default of ``stack``
    recipe_stack: Stack | None = None
    units_per_sample: float | None = None
    throughput_unit: str | None = None
    #: True when every throughput-relevant field equals the preset's (measurements apply as is).
    matches_preset: bool = False
    #: what was done with the given fields before estimating (e.g. a field that does not
    #: apply to the architecture, ignored); shown in the answer's notes
    input_notes: tuple[str, ...] = ()
    # -- run cost (issue 10): epoch in tokens, software the job needs, checkpoints ----------
    #: real (non-padding) tokens in one pass over the dataset; with ``packed`` the epoch is
    #: ``tokens_per_epoch / seq_len`` sequences of ``seq_len`` tokens
    tokens_per_epoch: int | None = field(default=None, metadata=INPUTS["tokens_per_epoch"])
    #: mean real tokens per sample; resolved into ``tokens_per_epoch`` = samples × this
    #: (:func:`app.services.workloads.resolve_workload`), so packing applies
    tokens_per_sample: float | None = field(default=None, metadata=INPUTS["tokens_per_sample"])
    #: samples packed into ``seq_len`` sequences (True) or each padded to ``seq_len``
    #: (False); ``None``: packed when ``tokens_per_epoch`` is given, else padded
    packed: bool | None = field(default=None, metadata=INPUTS["packed"])
    #: CUDA version the framework build targets (a ``cu121`` PyTorch wheel → ``"12.1"``)
    cuda_build: str | None = field(default=None, metadata=INPUTS["cuda_build"])
    #: libraries with CUDA-only builds the job imports (``bitsandbytes``, ``flash-attn``)
    cuda_only_libraries: tuple[str, ...] = field(default=(), metadata=INPUTS["cuda_only_libraries"])
    #: lowest compute capability the build supports (``"8.0"`` for FlashAttention-2)
    min_compute_capability: str | None = field(
        default=None, metadata=INPUTS["min_compute_capability"]
    )
    #: full checkpoints kept on disk at once
    checkpoints_kept: int = field(default=1, metadata=INPUTS["checkpoints_kept"])


def unwrap_optional(annotation: Any) -> Any:
    """The type an optional annotation holds when given: ``int | None`` and
    ``Optional[int]`` → ``int``, ``list[str] | None`` → ``list[str]``; any other annotation
    (``int``, ``int | str``, ``int | str | None``) as is. The one unwrapping of optional
    types: the inputs' kinds here, the query parameters' scalar kinds
    (:func:`app.interface.query.scalar_kind`), list fields of request models
    (:func:`app.interface.schemas.state_openapi_bounds`)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _value_type(annotation: Any) -> type:
    """``int | None`` → ``int``; ``tuple[str, ...]`` → ``tuple``; a plain type as is."""
    inner = unwrap_optional(annotation)
    return typing.cast(type, typing.get_origin(inner) or inner)


#: Every outside-given field of :class:`Workload` by name, in declaration order (the order of
#: the API's ``WorkloadIn`` and of the flat query parameters).
WORKLOAD_INPUTS: dict[str, WorkloadInput] = {
    f.name: WorkloadInput(
        f.name, _value_type(typing.get_type_hints(Workload)[f.name]), f.metadata[INPUT_KEY]
    )
    for f in fields(Workload)
    if INPUT_KEY in f.metadata
}
