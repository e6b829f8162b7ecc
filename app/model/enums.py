"""The string enums of the estimation core: optimizer, method, attention, vision task,
checkpoint granularity, base dtype, implementation, quantisation backend, sharding,
interconnect (with its labels), OOM-risk band and the stable warning codes.

Re-exported by :mod:`app.model.types`; no I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from app.model.vocabulary import AsWritten


class Optimizer(AsWritten):
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


class Method(AsWritten):
    """Which parameters are trained: all (``full``), LoRA adapters, or LoRA on an NF4 base."""

    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Attention(AsWritten):
    """Attention kernel: ``eager`` materialises the s×s score matrix, ``sdpa`` (Flash) does not."""

    EAGER = "eager"
    SDPA = "sdpa"


class VisionTask(AsWritten):
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


class CheckpointGranularity(AsWritten):
    """What activation checkpointing recomputes when ``gradient_checkpointing`` is on.

    ``full``: every transformer block keeps only its input (Chen et al. 2016);
    ``selective``: op-level selective checkpointing as torchtitan implements it (matmul
    and attention outputs saved, the rest recomputed:
    :func:`app.model.memory_activations.selective_saved_copies`).
    """

    FULL = "full"
    SELECTIVE = "selective"


class BaseDtype(AsWritten):
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


class Implementation(AsWritten):
    """How the transformer block is implemented, as it decides its saved activations.

    ``eager``: PyTorch modules op by op (Hugging Face transformers/PEFT, axolotl, torchtune,
    LitGPT): RMSNorm upcasts and RoPE/SiLU intermediates are kept (Stas Bekman's measured 28
    hidden-sized copies per Llama layer); ``fused``: fused kernels (Megatron/Transformer
    Engine, Liger, Unsloth): a fused RMSNorm keeps its input, FlashAttention its q, k, v and
    output, a fused SwiGLU its two inputs
    (:func:`app.model.memory_activations.fused_copies_per_layer`).
    """

    EAGER = "eager"
    FUSED = "fused"


class QuantBackend(AsWritten):
    """The library that holds a quantised (QLoRA) base: ``bitsandbytes`` (``Linear4bit``,
    PEFT/axolotl/LLaMA-Factory/LitGPT) or ``torchao`` (``NF4Tensor``, torchtune)."""

    BITSANDBYTES = "bitsandbytes"
    TORCHAO = "torchao"


class Sharding(AsWritten):
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


class WarningCode(StrEnum):
    """Stable codes of :class:`RunWarning` (clients may switch on them; never renamed)."""

    OOM = "oom"
    OOM_POSSIBLE = "oom_possible"
    DISK_TOO_SMALL = "disk_too_small"
    RAM_SHORT = "ram_short"
    RAM_BELOW_VRAM = "ram_below_vram"
    RAM_UNLISTED = "ram_unlisted"
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
    FP8_QUANTISED_BASE = "fp8_quantised_base"
    FP8_GAIN_UNMEASURED = "fp8_gain_unmeasured"
    FP8_GAIN_EXTRAPOLATED = "fp8_gain_extrapolated"
    PCIE_HOST_BRIDGE = "pcie_host_bridge"
    MULTI_NODE = "multi_node"
    DATA_LOADER_BOUND = "data_loader_bound"
    VCPUS_UNLISTED = "vcpus_unlisted"
    SLOW_DISK = "slow_disk"
    EPOCH_TOKENS_PADDED = "epoch_tokens_padded"
    SPOT_INTERRUPTIBLE = "spot_interruptible"
    PARAMS_OFF_SHAPE = "params_off_shape"
