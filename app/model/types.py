"""Plain data types of the estimation core: enums, GPU specs, workloads, hardware, results.

Everything here is a frozen dataclass or a string enum; no I/O, no ORM, no framework.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal

from app.model.stacks import Stack
from app.model.vocabulary import (
    SITUATION_BASIS,
    SITUATION_TEXT,
    TRANSFORMER_ARCHITECTURES,
    Architecture,
    Basis,
    Precision,
    Situation,
    range_situation,
)

__all__ = [  # the vocabulary, re-exported where the core's types were always imported from
    "SITUATION_BASIS",
    "SITUATION_TEXT",
    "TRANSFORMER_ARCHITECTURES",
    "Architecture",
    "Basis",
    "Precision",
    "Situation",
    "range_situation",
]


class Optimizer(StrEnum):
    """Optimizer, as it matters for state memory."""

    ADAMW = "adamw"
    ADAMW_8BIT = "adamw_8bit"
    SGD_MOMENTUM = "sgd_momentum"
    ADAFACTOR = "adafactor"
    LAMB = "lamb"
    #: bitsandbytes PagedAdamW8bit: 8-bit states in paged (unified) memory
    PAGED_ADAMW_8BIT = "paged_adamw_8bit"
    #: Lion (Chen et al. 2023, arXiv:2302.06675): one momentum buffer
    LION = "lion"
    #: plain SGD without momentum: no state
    SGD = "sgd"


class Method(StrEnum):
    """Which parameters are trained: all (``full``), LoRA adapters, or LoRA on an NF4 base."""

    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Attention(StrEnum):
    """Attention kernel: ``eager`` materialises the s×s score matrix, ``sdpa`` (Flash) does not."""

    EAGER = "eager"
    SDPA = "sdpa"


class VisionTask(StrEnum):
    """What a convolutional vision net is trained for; selects its activation constant.

    ``classification``: an image-classification CNN (ResNet/VGG/Inception);
    ``detection``: a detector with an FPN/SSD/YOLO neck and heads on a CNN backbone
    (Faster/Mask R-CNN, RetinaNet, SSD, YOLO); ``segmentation``: a semantic-segmentation
    net whose per-pixel class logits are scored at the input resolution (FCN, Semantic FPN,
    UPerNet, DeepLab in mmsegmentation).
    """

    CLASSIFICATION = "classification"
    DETECTION = "detection"
    SEGMENTATION = "segmentation"


class CheckpointGranularity(StrEnum):
    """What activation checkpointing recomputes when ``gradient_checkpointing`` is on.

    ``full``: every transformer block keeps only its input (Chen et al. 2016);
    ``selective``: op-level selective checkpointing as torchtitan implements it (matmul
    and attention outputs saved, the rest recomputed:
    :func:`app.model.memory.selective_saved_copies`).
    """

    FULL = "full"
    SELECTIVE = "selective"


class BaseDtype(StrEnum):
    """What the frozen base weights of a LoRA/QLoRA run are held in on the GPU.

    ``fp32``/``bf16``/``fp16``: 4 or 2 bytes per parameter as loaded (PEFT, axolotl,
    LLaMA-Factory, torchtune and H2O LLM Studio load LoRA bases in 16-bit); ``int8``:
    bitsandbytes LLM.int8 (1 byte plus per-row scales, Dettmers et al. arXiv:2208.07339);
    ``nf4``: 4-bit NormalFloat (QLoRA, arXiv:2305.14314).
    """

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"
    NF4 = "nf4"


class Implementation(StrEnum):
    """How the transformer block is implemented, as it decides its saved activations.

    ``eager``: PyTorch modules op by op (Hugging Face transformers/PEFT, axolotl, torchtune,
    LitGPT): RMSNorm upcasts and RoPE/SiLU intermediates are kept (Stas Bekman's measured 28
    hidden-sized copies per Llama layer); ``fused``: fused kernels (Megatron/Transformer
    Engine, Liger, Unsloth): a fused RMSNorm keeps its input, FlashAttention its q, k, v and
    output, a fused SwiGLU its two inputs (:func:`app.model.memory.fused_copies_per_layer`).
    """

    EAGER = "eager"
    FUSED = "fused"


class QuantBackend(StrEnum):
    """The library that holds a quantised (QLoRA) base: ``bitsandbytes`` (``Linear4bit``,
    PEFT/axolotl/LLaMA-Factory/LitGPT) or ``torchao`` (``NF4Tensor``, torchtune)."""

    BITSANDBYTES = "bitsandbytes"
    TORCHAO = "torchao"


class Sharding(StrEnum):
    """Data-parallel state sharding: DeepSpeed ZeRO stages or PyTorch FSDP (full shard)."""

    NONE = "none"
    ZERO1 = "zero1"
    ZERO2 = "zero2"
    ZERO3 = "zero3"
    FSDP = "fsdp"


class Interconnect(StrEnum):
    """GPU-to-GPU link class inside one instance, as the estimates use it (``nvlink``
    includes NVSwitch boards: :func:`interconnect_class`)."""

    NVLINK = "nvlink"
    PCIE = "pcie"


#: The interconnect words of offers, filters and what-if hardware (the API's one enum):
#: ``nvlink`` (GPUs linked by NVLink bridges or direct NVLink), ``nvswitch`` (NVLink through
#: NVSwitch chips, as on 8-GPU HGX boards), ``pcie`` (PCIe only).
InterconnectLabel = Literal["nvlink", "nvswitch", "pcie"]
INTERCONNECT_LABELS: tuple[InterconnectLabel, ...] = ("nvlink", "nvswitch", "pcie")
#: Other words listings use for a link: an SXM board links its GPUs by NVLink.
_INTERCONNECT_SYNONYMS: dict[str, InterconnectLabel] = {"sxm": "nvlink"}


def interconnect_label(raw: str | None) -> InterconnectLabel | None:
    """A listing's or a user's interconnect word as one of :data:`INTERCONNECT_LABELS`
    (any case; ``sxm`` → ``nvlink``); ``None`` when empty or not a link word."""
    word = (raw or "").strip().lower()
    for label in INTERCONNECT_LABELS:
        if word == label:
            return label
    return _INTERCONNECT_SYNONYMS.get(word)


def interconnect_class(raw: str | None) -> Interconnect | None:
    """The link class an interconnect word stands for: ``nvlink`` and ``nvswitch`` (NVSwitch
    is NVLink through a switch) → :attr:`Interconnect.NVLINK`, ``pcie`` → PCIe, else
    ``None`` (unknown)."""
    label = interconnect_label(raw)
    if label is None:
        return None
    return Interconnect.PCIE if label == "pcie" else Interconnect.NVLINK


class OomRisk(StrEnum):
    """Out-of-memory risk band; thresholds in :mod:`app.model.memory`."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


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


@dataclass(frozen=True, slots=True, kw_only=True)
class InputSpec:
    """How a :class:`Workload` field may be given from outside (API body, flat query
    parameter, web form, seed row).

    ``description`` says what the value is, with its unit (the API documents it as is);
    ``gt``/``ge``/``le`` bound a number (exclusive / inclusive); ``pattern`` (a regex) a text;
    ``max_items`` the longest list; ``count``: a count people write as ``7B`` or ``25.6M`` in a
    form or a query string; ``examples`` values for the API document.

    ``group`` is the part of the job the field describes (:class:`FieldGroup`);
    ``throughput``: a change of it means the preset's measurements no longer describe the
    job (:data:`app.model.job.THROUGHPUT_FIELDS`); ``required``: needed when no preset
    supplies it (:data:`app.model.job.REQUIRED_WITHOUT_PRESET`).
    """

    group: FieldGroup
    description: str
    count: bool = False
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    pattern: str | None = None
    max_items: int | None = None
    examples: tuple[Any, ...] = ()
    throughput: bool = False
    required: bool = False


@dataclass(frozen=True, slots=True)
class WorkloadInput:
    """One outside-given field of :class:`Workload` (:data:`WORKLOAD_INPUTS`).

    ``kind`` is its value type without ``None``: ``int``, ``float``, ``bool``, ``str``, one of
    the enums above, or ``tuple`` (of text).
    """

    name: str
    kind: type
    spec: InputSpec


#: The dataclass-field metadata key of a field's :class:`InputSpec`.
_INPUT = "input"


def _given(group: FieldGroup, description: str, **spec: Any) -> dict[str, InputSpec]:
    """The metadata of a :class:`Workload` field that requests, forms and seed rows may give:
    its :class:`InputSpec` of ``group``, ``description`` and ``spec``."""
    return {_INPUT: InputSpec(group=group, description=description, **spec)}


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

    The fields whose metadata is made by ``_given`` are those given from outside; their
    :class:`InputSpec` (description, bounds) is the one statement of them that the API's
    ``WorkloadIn``, the ranking form and the seed loader are built from
    (:data:`WORKLOAD_INPUTS`).
    """

    preset: str | None = field(
        default=None,
        metadata=_given(
            FieldGroup.PRESET,
            "workload preset slug (GET /v1/workloads lists them); it supplies every field "
            "not given",
            examples=("resnet50-imagenet",),
        ),
    )
    architecture: Architecture = field(
        metadata=_given(
            FieldGroup.SHAPE,
            "model family; selects the activation-memory and FLOPs formulas",
            examples=("transformer_decoder",),
            throughput=True,
            required=True,
        )
    )
    params: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "trainable plus frozen model parameters (count)",
            count=True,
            gt=0,
            le=10**14,
            examples=(7_000_000_000,),
            throughput=True,
            required=True,
        ),
    )
    layers: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "transformer blocks (count; Hugging Face num_hidden_layers)",
            gt=0,
            le=10_000,
            examples=(32,),
            throughput=True,
        ),
    )
    hidden_size: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "model (embedding) width (Hugging Face hidden_size)",
            gt=0,
            le=10**6,
            examples=(4096,),
            throughput=True,
        ),
    )
    heads: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "attention heads per layer (Hugging Face num_attention_heads)",
            gt=0,
            le=10**5,
            examples=(32,),
            throughput=True,
        ),
    )
    kv_heads: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "key/value heads per layer for grouped-query attention (Hugging Face "
            "num_key_value_heads; default: heads)",
            gt=0,
            le=10**5,
            examples=(8,),
            throughput=True,
        ),
    )
    ffn_hidden_size: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "feed-forward inner width (Hugging Face intermediate_size)",
            gt=0,
            le=10**7,
            examples=(14336,),
            throughput=True,
        ),
    )
    vocab_size: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "tokenizer vocabulary (tokens; sizes the logits)",
            gt=0,
            le=10**8,
            examples=(128256,),
            throughput=True,
        ),
    )
    seq_len: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "tokens per sample (sequence length)",
            gt=0,
            le=10**8,
            examples=(2048,),
            throughput=True,
        ),
    )
    image_size: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "image side, pixels (224 for 224×224)",
            gt=0,
            le=100_000,
            examples=(224,),
            throughput=True,
        ),
    )
    micro_batch_size: int = field(
        default=1,
        metadata=_given(
            FieldGroup.TRAINING,
            "samples per GPU per forward/backward step",
            gt=0,
            le=10**9,
            examples=(256,),
        ),
    )
    grad_accum_steps: int = field(
        default=1,
        metadata=_given(
            FieldGroup.TRAINING,
            "micro-batches accumulated per optimizer step (count)",
            gt=0,
            le=10**6,
            examples=(1,),
        ),
    )
    precision: Precision = field(
        default=Precision.BF16_AMP,
        metadata=_given(
            FieldGroup.TRAINING,
            "numeric regime: fp32, tf32, fp16_amp/bf16_amp (autocast with fp32 master "
            "weights), bf16 (pure bf16 states) or fp8",
            examples=("bf16_amp",),
        ),
    )
    optimizer: Optimizer = field(
        default=Optimizer.ADAMW,
        metadata=_given(
            FieldGroup.TRAINING, "optimizer, as it sizes the optimizer state", examples=("adamw",)
        ),
    )
    method: Method = field(
        default=Method.FULL,
        metadata=_given(
            FieldGroup.TRAINING,
            "parameters trained: full, lora (adapters) or qlora (adapters on an NF4 base)",
            examples=("full",),
            throughput=True,
        ),
    )
    lora_rank: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.TRAINING, "LoRA/QLoRA adapter rank r", gt=0, le=10**5, examples=(16,)
        ),
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata=_given(
            FieldGroup.TRAINING,
            "activation checkpointing on (activations recomputed)",
            throughput=True,
        ),
    )
    attention: Attention = field(
        default=Attention.SDPA,
        metadata=_given(
            FieldGroup.TRAINING,
            "attention kernel: eager materialises the seq_len × seq_len scores, sdpa "
            "(Flash/memory-efficient) does not",
        ),
    )
    sharding: Sharding = field(
        default=Sharding.NONE,
        metadata=_given(
            FieldGroup.TRAINING,
            "data-parallel state sharding: none, DeepSpeed ZeRO stage 1/2/3, or FSDP full shard",
        ),
    )
    fused_cross_entropy: bool = field(
        default=False,
        metadata=_given(
            FieldGroup.TRAINING, "chunked/fused cross-entropy: no full fp32 logits tensor"
        ),
    )
    cpu_offload: bool = field(
        default=False,
        metadata=_given(
            FieldGroup.TRAINING, "optimizer states and master weights offloaded to CPU RAM"
        ),
    )
    # -- memory set-up (issue 9): optional, defaults describe a plain PyTorch loop --
    #: optimizer step fused into backward (torchtune ``optimizer_in_bwd``): gradients are
    #: applied and freed per parameter, so no full gradient buffer exists
    optimizer_in_backward: bool = field(
        default=False,
        metadata=_given(
            FieldGroup.TRAINING,
            "optimizer step fused into backward (torchtune optimizer_in_bwd): no full "
            "gradient buffer",
        ),
    )
    #: checkpointed activations offloaded to host RAM (torchtune activation offloading)
    activation_offloading: bool = field(
        default=False,
        metadata=_given(FieldGroup.TRAINING, "checkpointed activations offloaded to CPU RAM"),
    )
    checkpoint_granularity: CheckpointGranularity = field(
        default=CheckpointGranularity.FULL,
        metadata=_given(
            FieldGroup.TRAINING,
            "with gradient_checkpointing: full (block inputs only) or selective "
            "(op level, as torchtitan: matmul outputs saved, the rest recomputed)",
        ),
    )
    #: LoRA/QLoRA: the dtype the frozen base is loaded in; ``None``: the method's default
    #: (:func:`app.model.memory.base_dtype`: nf4 for QLoRA, fp32 for a fp32/tf32 LoRA run,
    #: else 16-bit)
    base_dtype: BaseDtype | None = field(
        default=None,
        metadata=_given(
            FieldGroup.TRAINING,
            "LoRA/QLoRA: dtype the frozen base weights are loaded in (fp32, bf16, fp16, int8, "
            "nf4); default nf4 for qlora, fp32 for an fp32/tf32 lora run, else 16-bit",
        ),
    )
    #: the transformer block's implementation; ``None``: eager (the training stack's default
    #: when one is named: :func:`app.model.memory.implementation`)
    implementation: Implementation | None = field(
        default=None,
        metadata=_given(
            FieldGroup.TRAINING,
            "transformers: eager PyTorch modules (Hugging Face, torchtune, LitGPT; default) or "
            "fused kernels (Megatron/Transformer Engine, Liger, Unsloth), as it decides the "
            "activations kept",
        ),
    )
    #: QLoRA: the library holding the quantised base; ``None``: bitsandbytes
    quant_backend: QuantBackend | None = field(
        default=None,
        metadata=_given(
            FieldGroup.TRAINING,
            "QLoRA: the library holding the quantised base, bitsandbytes (default) or torchao "
            "(torchtune)",
        ),
    )
    #: QLoRA NF4 with double quantisation (~4.127 bits/param) instead of plain NF4 (~4.5)
    double_quant: bool = field(
        default=True,
        metadata=_given(FieldGroup.TRAINING, "QLoRA: NF4 with double quantisation (default true)"),
    )
    #: every rank materialises the full 16-bit model on its GPU before FSDP shards it and
    #: keeps it allocated (no meta-device init / ``cpu_ram_efficient_loading``)
    full_model_init: bool = field(
        default=False,
        metadata=_given(
            FieldGroup.TRAINING,
            "FSDP: every rank loads the full 16-bit model on its GPU before sharding",
        ),
    )
    #: the transformer trains with dropout p > 0 (Korthikanti's 1-byte masks are kept); false:
    #: p = 0 or no dropout layers (PyTorch's dropout at p = 0 returns its input, no mask)
    dropout: bool = field(
        default=True,
        metadata=_given(
            FieldGroup.TRAINING,
            "transformers: dropout with p > 0 in training (default true: its masks are kept); "
            "false for p = 0 or no dropout layers",
        ),
    )
    # -- vision and diffusion memory (issue 9): optional --
    #: conv nets: classification or detection (a detector's activations per backbone GFLOP
    #: are fitted apart from a classifier's)
    vision_task: VisionTask = field(
        default=VisionTask.CLASSIFICATION,
        metadata=_given(
            FieldGroup.SHAPE,
            "conv nets: classification (default), detection (FPN/SSD/YOLO heads) or "
            "segmentation (per-pixel class logits at the input size)",
        ),
    )
    #: detectors: the backbone's forward GFLOPs per 224×224 image (2 × torchvision's GMACs:
    #: ResNet-50 8.178); activations scale it by the input pixels
    backbone_gflops_224: float | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "detectors: backbone forward GFLOPs per 224x224 image (ResNet-50: 8.178)",
            ge=1e-6,
            le=10**6,
        ),
    )
    #: detectors: the most ground-truth boxes one training image carries (after mosaic and
    #: other augmentation): a task-aligned assigner (YOLOv8/11) allocates per box × anchor
    max_boxes_per_image: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "detectors: most ground-truth boxes in one training image after augmentation "
            "(the assigner's box × anchor tensors grow with it)",
            gt=0,
            le=100_000,
        ),
    )
    #: segmentation: classes of the per-pixel logits (ADE20K 150, Cityscapes 19)
    num_classes: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "segmentation: classes of the per-pixel logits (ADE20K 150, Cityscapes 19)",
            gt=0,
            le=1_000_000,
        ),
    )
    #: ViT patch side in pixels (tokens = (image_size / patch_size)² + 1); default 16
    patch_size: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE, "ViT patch side in pixels (default 16)", gt=0, le=100_000
        ),
    )
    #: diffusion: parameters of the frozen text encoder(s) and of the frozen VAE, held on
    #: the GPU next to the UNet (``params`` counts the UNet only)
    text_encoder_params: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "diffusion: frozen text encoder(s) parameters held on the GPU (params counts the "
            "UNet); 0 when the encoders are not on the GPU (embeddings cached or offloaded)",
            count=True,
            ge=0,
            le=10**13,
        ),
    )
    vae_params: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "diffusion: frozen VAE parameters held on the GPU; 0 when it is not there (latents "
            "cached)",
            count=True,
            ge=0,
            le=10**13,
        ),
    )
    #: an fp32 exponential-moving-average copy of the trained parameters kept on the GPU
    #: (diffusers ``--use_ema``, torchvision/timm ``--model-ema``)
    ema_weights: bool = field(
        default=False,
        metadata=_given(
            FieldGroup.TRAINING, "an fp32 EMA copy of the trained parameters on the GPU (--use_ema)"
        ),
    )
    #: the training software (:mod:`app.model.stacks`); ``None``: the preset's recipe, or
    #: HF Trainer + PEFT for a custom job
    stack: Stack | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SOFTWARE,
            "training software: hf_trainer (HF Trainer/PEFT/TRL), axolotl, llama_factory, "
            "unsloth, torchtune, deepspeed, lightning, megatron (Megatron/NeMo), torchtitan, "
            "llm_foundry, llm_c, timm, nvidia_dle, pytorch (a plain loop), tensorflow; default: "
            "the preset's recipe, else hf_trainer",
            examples=("hf_trainer",),
        ),
    )
    samples_per_epoch: int = field(
        default=1,
        metadata=_given(
            FieldGroup.DATA,
            "samples in one pass over the dataset (count)",
            count=True,
            gt=0,
            le=10**15,
            examples=(1_281_167,),
            required=True,
        ),
    )
    epochs: float = field(
        default=1.0,
        metadata=_given(
            FieldGroup.DATA,
            "passes over the dataset (may be fractional)",
            gt=0,
            le=10**6,
            examples=(90,),
        ),
    )
    dataset_gb: float | None = field(
        default=None,
        metadata=_given(
            FieldGroup.DATA,
            "dataset size on disk, GB (10^9 bytes)",
            ge=0,
            le=10**9,
            examples=(150,),
        ),
    )
    cpu_ms_per_sample: float | None = field(
        default=None,
        metadata=_given(
            FieldGroup.DATA,
            "CPU milliseconds of data loading per sample on one core (at least 0.001 ms = 1 µs)",
            ge=1e-3,
            le=10**7,
            examples=(3.5,),
        ),
    )
    min_cuda: str | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SOFTWARE,
            "lowest CUDA version the job needs (offers whose driver supports less are "
            "warned about)",
            pattern=VERSION_PATTERN,
            examples=("12.1",),
        ),
    )
    forward_gflops_per_sample: float | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "forward-pass GFLOPs per sample (non-transformers without a preset need it for a "
            "FLOPs-based throughput estimate)",
            ge=1e-6,
            le=10**9,
            throughput=True,
        ),
    )
    #: millions of activation elements of one sample's forward pass at ``image_size``: the
    #: output elements of every convolution and matrix product (fvcore's
    #: ``ActivationCountAnalysis``, the ``infer_macts`` column of timm's benchmark CSVs)
    forward_activations_per_sample: float | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "forward-pass activations per sample at image_size, millions of elements (outputs "
            "of every convolution and matrix product, fvcore's count as timm's benchmark "
            "publishes it in infer_macts); sizes CNN activation memory when given",
            ge=1e-6,
            le=10**7,
            examples=(11.11,),
        ),
    )
    #: transformers: parameters inside ``params`` that a token only looks up and does not
    #: multiply every step (untied token-embedding tables; an adaptive softmax's tail
    #: clusters, Grave et al. 2017, arXiv:1609.04309, which only the tokens whose target
    #: falls in them are projected onto); the FLOPs count leaves them out
    #: (:func:`app.model.throughput.matmul_params`)
    lookup_params: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SHAPE,
            "transformers: parameters a token only looks up instead of multiplying (untied "
            "embedding tables, adaptive-softmax tail clusters), left out of the FLOPs count; "
            "default: an encoder's vocab_size x hidden_size table, none for a decoder",
            count=True,
            ge=0,
            le=10**13,
            throughput=True,
        ),
    )
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
    tokens_per_epoch: int | None = field(
        default=None,
        metadata=_given(
            FieldGroup.DATA,
            "real (non-padding) tokens in one pass over the dataset; with packing the epoch is "
            "tokens_per_epoch / seq_len sequences and epoch_hours = tokens / tokens_per_s",
            count=True,
            gt=0,
            le=10**15,
        ),
    )
    #: mean real tokens per sample; resolved into ``tokens_per_epoch`` = samples × this
    #: (:func:`app.services.workloads.resolve_workload`), so packing applies
    tokens_per_sample: float | None = field(
        default=None,
        metadata=_given(
            FieldGroup.DATA,
            "mean real (non-padding) tokens per sample; the epoch's tokens are "
            "samples_per_epoch × this, packed into seq_len sequences unless packed is false",
            gt=0,
            le=10**9,
            examples=(92.4,),
        ),
    )
    #: samples packed into ``seq_len`` sequences (True) or each padded to ``seq_len``
    #: (False); ``None``: packed when ``tokens_per_epoch`` is given, else padded
    packed: bool | None = field(
        default=None,
        metadata=_given(
            FieldGroup.DATA,
            "samples packed into seq_len sequences (true) or each padded to seq_len (false); "
            "default: packed when tokens_per_epoch is given",
        ),
    )
    #: CUDA version the framework build targets (a ``cu121`` PyTorch wheel → ``"12.1"``)
    cuda_build: str | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SOFTWARE,
            "CUDA version the framework build targets (a cu121 PyTorch wheel: 12.1)",
            pattern=VERSION_PATTERN,
        ),
    )
    #: libraries with CUDA-only builds the job imports (``bitsandbytes``, ``flash-attn``)
    cuda_only_libraries: tuple[str, ...] = field(
        default=(),
        metadata=_given(
            FieldGroup.SOFTWARE, "libraries with CUDA-only builds the job uses", max_items=8
        ),
    )
    #: lowest compute capability the build supports (``"8.0"`` for FlashAttention-2)
    min_compute_capability: str | None = field(
        default=None,
        metadata=_given(
            FieldGroup.SOFTWARE, "lowest compute capability of the build", pattern=VERSION_PATTERN
        ),
    )
    #: full checkpoints kept on disk at once
    checkpoints_kept: int = field(
        default=1,
        metadata=_given(FieldGroup.DATA, "full checkpoints kept on disk at once", ge=0, le=10_000),
    )


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
        f.name, _value_type(typing.get_type_hints(Workload)[f.name]), f.metadata[_INPUT]
    )
    for f in fields(Workload)
    if _INPUT in f.metadata
}


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


class WarningCode(StrEnum):
    """Stable codes of :class:`RunWarning` (clients may switch on them; never renamed)."""

    OOM = "oom"
    OOM_POSSIBLE = "oom_possible"
    DISK_TOO_SMALL = "disk_too_small"
    RAM_SHORT = "ram_short"
    CUDA_TOO_OLD = "cuda_too_old"
    CUDA_BUILD_TOO_OLD_FOR_GPU = "cuda_build_too_old_for_gpu"
    CUDA_BUILD_TOO_NEW_FOR_GPU = "cuda_build_too_new_for_gpu"
    DRIVER_TOO_OLD_FOR_GPU = "driver_too_old_for_gpu"
    CUDA_ONLY_LIBRARY = "cuda_only_library"
    COMPUTE_CAPABILITY_TOO_LOW = "compute_capability_too_low"
    BF16_UNSUPPORTED = "bf16_unsupported"
    FP8_UNSUPPORTED = "fp8_unsupported"
    TF32_UNSUPPORTED = "tf32_unsupported"
    NO_NVLINK = "no_nvlink"
    NVLINK_UNAVAILABLE = "nvlink_unavailable"
    FP8_TRANSFORMER_ONLY = "fp8_transformer_only"
    FP8_GAIN_UNMEASURED = "fp8_gain_unmeasured"
    PCIE_HOST_BRIDGE = "pcie_host_bridge"
    MULTI_NODE = "multi_node"
    DATA_LOADER_BOUND = "data_loader_bound"
    VCPUS_UNLISTED = "vcpus_unlisted"
    SLOW_DISK = "slow_disk"
    EPOCH_TOKENS_PADDED = "epoch_tokens_padded"
    SPOT_INTERRUPTIBLE = "spot_interruptible"
    PARAMS_OFF_SHAPE = "params_off_shape"


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
