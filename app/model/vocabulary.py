"""The estimator's words, one definition each: precision, precision class, architecture and
model family, situation and basis, and the one parser of dotted versions.

Every enum here is a :class:`~enum.StrEnum`: a member *is* its string (``Family.CNN ==
"cnn"``, the same hash, the same JSON, ``f"{Family.CNN}"`` is ``cnn``), so dictionaries
keyed by the plain strings (the fitted constants in ``app/model/calibration.json``), messages and
API answers read the same as before the strings became enums. The rules that used to be
repeated where the strings were compared live on the enums as properties
(:attr:`Precision.precision_class`, :attr:`Architecture.family`,
:attr:`Architecture.is_transformer`, :attr:`Situation.basis`, …).

Pure: standard library only.
"""

from __future__ import annotations

from enum import StrEnum


class AsWritten(StrEnum):
    """A word read as people write it: ``BF16``, ``Bf16-AMP``, ``bf16 amp`` are ``bf16_amp``
    (case, surrounding spaces, and ``-`` or a space for ``_`` do not matter), plus the
    class's :data:`ALIASES` (``fp16`` is ``fp16_amp``: HF Trainer's ``--fp16`` flag is
    autocast). No members of its own: every input enum subclasses it, so the one rule holds
    for the JSON API, query strings, the page's forms and the CLI alike."""

    @classmethod
    def _missing_(cls, value: object) -> AsWritten | None:
        if not isinstance(value, str):
            return None
        word = value.strip().lower().replace("-", "_").replace(" ", "_")
        word = ALIASES.get(cls.__name__, {}).get(word, word)
        return next((m for m in cls if m.value == word), None)


#: Enum class name → words people write → the member's value (beyond case and separators).
ALIASES: dict[str, dict[str, str]] = {
    "Precision": {
        "fp16": "fp16_amp",  # HF Trainer --fp16, Lightning precision="16-mixed": autocast
        "16_mixed": "fp16_amp",
        "bf16_mixed": "bf16_amp",  # Lightning precision="bf16-mixed"
        "amp_fp16": "fp16_amp",
        "amp_bf16": "bf16_amp",
        "bfloat16": "bf16",  # torch_dtype=torch.bfloat16: weights and states in bf16
        "torch.bfloat16": "bf16",
        "float32": "fp32",
        "torch.float32": "fp32",
        # 16-bit floats as dtypes: no recipe trains with fp16 weights and no fp32 master copy
        # (updates below fp16's resolution vanish: Micikevicius et al., "Mixed Precision
        # Training", https://arxiv.org/abs/1710.03740, section 3.1), so fp16 is autocast
        "float16": "fp16_amp",
        "torch.float16": "fp16_amp",
        "half": "fp16_amp",
        "16": "fp16_amp",  # Lightning precision=16 (before 2.0): "16-mixed"
        "32": "fp32",  # Lightning precision=32, "32-true"
        "32_true": "fp32",
        "bf16_true": "bf16",  # Lightning precision="bf16-true": weights and states in bf16
        "float8": "fp8",
    },
    "BaseDtype": {
        # transformers/PEFT: from_pretrained(load_in_8bit=True) or
        # BitsAndBytesConfig(load_in_8bit=True), bitsandbytes LLM.int8 (alpaca-lora's
        # finetune.py); load_in_4bit with bnb_4bit_quant_type="nf4" for QLoRA
        "8bit": "int8",
        "8_bit": "int8",  # "8-bit", "8 bit"
        "load_in_8bit": "int8",
        "llm.int8": "int8",
        "llm.int8()": "int8",  # as the paper and bitsandbytes write it
        "llm_int8": "int8",
        "bnb_int8": "int8",
        # 4-bit bitsandbytes (load_in_4bit): FP4 by default, NF4 with
        # bnb_4bit_quant_type="nf4" (QLoRA's); both store a 4-bit code per weight and one
        # absmax per 64-weight block (bitsandbytes Params4bit blocksize 64), so the memory
        # is nf4's (double_quant says whether the absmax are themselves quantised:
        # transformers' default is no, this model's default for qlora yes)
        "4bit": "nf4",
        "4_bit": "nf4",
        "load_in_4bit": "nf4",
        "bnb_nf4": "nf4",
        # torch_dtype as people write it in from_pretrained (torch.bfloat16, torch.half):
        # the dtype the frozen base is loaded in
        "bfloat16": "bf16",
        "torch.bfloat16": "bf16",
        "float16": "fp16",
        "torch.float16": "fp16",
        "half": "fp16",
        "torch.half": "fp16",
        "float32": "fp32",
        "torch.float32": "fp32",
        "float": "fp32",
        "torch.float": "fp32",
        # not "int4": transformers' load_in_4bit is bitsandbytes FP4 unless
        # bnb_4bit_quant_type="nf4" (BitsAndBytesConfig(bnb_4bit_quant_type="fp4") default,
        # huggingface/transformers src/transformers/utils/quantization_config.py, seen
        # 2026-12-04), and int4 elsewhere is torchao's or GPTQ/AWQ's group-wise int4, none
        # of them this model's nf4; refused with the choices named
    },
    # Hugging Face's own words (transformers TrainingArguments.optim, OptimizerNames in
    # src/transformers/training_args.py; from_pretrained(attn_implementation=...)):
    "Optimizer": {
        "adamw_torch": "adamw",  # torch.optim.AdamW: the same two fp32 moments
        "adamw_hf": "adamw",  # transformers' own AdamW: the same states
        "adam": "adamw",  # Adam keeps the same two moments; states are all that differ here
        "adamw_bnb_8bit": "adamw_8bit",  # bitsandbytes AdamW8bit
        "adamw8bit": "adamw_8bit",
        "bnb_adamw_8bit": "adamw_8bit",
        "paged_adamw8bit": "paged_adamw_8bit",
        "lion_32bit": "lion",  # bitsandbytes Lion, one fp32 momentum
    },
    "Attention": {
        # FlashAttention kernels keep no s×s scores: what sdpa stands for here
        "flash_attention_2": "sdpa",
        "flash_attention_3": "sdpa",
        "flash_attention": "sdpa",
        "flash_attn": "sdpa",
        "flashattention": "sdpa",
        "flash": "sdpa",
        "fa2": "sdpa",
    },
    "QuantBackend": {"bnb": "bitsandbytes"},
}


class _Word(AsWritten):
    """A vocabulary word that stands in for a plain string everywhere, its ``repr`` included:
    generated constants (``tools/fit_constants.py`` prints dictionaries with
    :func:`pprint.pformat`, which writes keys by ``repr``) stay byte-identical when their keys
    come from these enums."""

    def __repr__(self) -> str:
        return repr(self.value)


class PrecisionClass(_Word):
    """The arithmetic class a precision runs at, as fits and tables key it: ``32``
    (fp32/tf32), ``16`` (the 16-bit regimes; fp8 too where only two classes are kept) or
    ``8`` (fp8 on its own, :attr:`Precision.mfu_class`)."""

    FP32 = "32"
    HALF = "16"
    FP8 = "8"


class Precision(AsWritten):
    """Numeric regime of training.

    ``fp16_amp``/``bf16_amp``: autocast mixed precision with fp32 master weights;
    ``bf16``: pure bf16 weights, gradients and optimizer states; ``fp8``: FP8 matmuls on top of
    bf16 mixed precision (torchao/Transformer Engine style).
    """

    FP32 = "fp32"
    TF32 = "tf32"
    FP16_AMP = "fp16_amp"
    BF16_AMP = "bf16_amp"
    BF16 = "bf16"
    FP8 = "fp8"

    @property
    def is_fp32(self) -> bool:
        """Whether the matmuls run at 32-bit (fp32 or TF32 tensor cores)."""
        return self in (Precision.FP32, Precision.TF32)

    @property
    def precision_class(self) -> PrecisionClass:
        """``32`` for the fp32/tf32 regimes, ``16`` for 16-bit and fp8: the two classes the
        throughput fits, cross-validation folds and FLOP-rate tables are kept per."""
        return PrecisionClass.FP32 if self.is_fp32 else PrecisionClass.HALF

    @property
    def mfu_class(self) -> PrecisionClass:
        """``32`` for fp32/tf32, ``8`` for fp8, ``16`` for the 16-bit regimes: the three
        classes of the MFU table (:mod:`app.model.mfu`), where an fp8 run's rate says
        nothing about a bf16 run's."""
        if self.is_fp32:
            return PrecisionClass.FP32
        return PrecisionClass.FP8 if self == Precision.FP8 else PrecisionClass.HALF


def precision_class(p: Precision) -> PrecisionClass:
    """:attr:`Precision.precision_class` as a function (``32`` or ``16``), for callers that
    map over precisions."""
    return Precision(p).precision_class


def mfu_class(p: Precision) -> PrecisionClass:
    """:attr:`Precision.mfu_class` as a function (``32``, ``16`` or ``8``)."""
    return Precision(p).mfu_class


class Family(_Word):
    """Throughput family of an architecture (:attr:`Architecture.family`): the fitted
    constants, MFU table and FLOPs-model donors are kept per family."""

    TRANSFORMER = "transformer"
    CNN = "cnn"
    OTHER = "other"


class Architecture(AsWritten):
    """Model family; selects the activation-memory and FLOPs formulas."""

    CNN = "cnn"
    VIT = "vit"
    TRANSFORMER_ENCODER = "transformer_encoder"
    TRANSFORMER_DECODER = "transformer_decoder"
    DIFFUSION_UNET = "diffusion_unet"
    #: a diffusion transformer over VAE-latent patches (DiT, Peebles & Xie arXiv:2212.09748;
    #: SD3's MMDiT, Esser et al. arXiv:2403.03206; Flux): FLOPs and activations from its shape
    DIFFUSION_TRANSFORMER = "diffusion_transformer"
    RNN_SEQ2SEQ = "rnn_seq2seq"
    TTS = "tts"
    VOCODER = "vocoder"
    RECOMMENDER = "recommender"

    @property
    def is_transformer(self) -> bool:
        """Built of ``layers × hidden_size`` transformer blocks (encoder, decoder, ViT): its
        FLOPs count from parameters and tokens, its shape fields describe blocks."""
        return self in TRANSFORMER_ARCHITECTURES

    @property
    def family(self) -> Family:
        """``transformer`` (encoder, decoder, ViT), ``cnn`` (convolutional: CNNs and
        diffusion UNets, whose cost and activations go per pixel) or ``other``."""
        if self.is_transformer:
            return Family.TRANSFORMER
        if self in (Architecture.CNN, Architecture.DIFFUSION_UNET):
            return Family.CNN
        return Family.OTHER

    @property
    def counts_tokens(self) -> bool:
        """Samples are token sequences (transformer encoder/decoder, RNN seq2seq): an epoch
        may be counted in tokens."""
        return self in (
            Architecture.TRANSFORMER_ENCODER,
            Architecture.TRANSFORMER_DECODER,
            Architecture.RNN_SEQ2SEQ,
        )

    @property
    def takes_images(self) -> bool:
        """An image model (CNN, ViT, diffusion UNet or transformer): ``image_size`` applies."""
        return self in (
            Architecture.CNN,
            Architecture.VIT,
            Architecture.DIFFUSION_UNET,
            Architecture.DIFFUSION_TRANSFORMER,
        )

    @property
    def takes_lora(self) -> bool:
        """LoRA/QLoRA adapters are counted for it (transformers and diffusion UNets,
        :func:`app.model.memory_states.lora_trainable_params`)."""
        return self.is_transformer or self == Architecture.DIFFUSION_UNET

    @property
    def shape_fields(self) -> tuple[str, ...]:
        """The shape fields it cannot be estimated without: a transformer's ``layers`` and
        ``hidden_size``, and the ``seq_len`` of a language transformer (a ViT's and a
        diffusion transformer's tokens follow from its image size)."""
        if not self.is_transformer:
            return ()
        if self == Architecture.VIT:
            return ("layers", "hidden_size")
        if self == Architecture.DIFFUSION_TRANSFORMER:
            return ("layers", "hidden_size", "image_size")
        return ("layers", "hidden_size", "seq_len")


#: The architectures built of transformer blocks (:attr:`Architecture.is_transformer`).
TRANSFORMER_ARCHITECTURES = frozenset(
    {
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.VIT,
        Architecture.DIFFUSION_TRANSFORMER,
    }
)


def family(arch: Architecture) -> Family:
    """:attr:`Architecture.family` as a function (``transformer``, ``cnn`` or ``other``)."""
    return Architecture(arch).family


class Basis(StrEnum):
    """Where a throughput figure comes from, most to least trustworthy."""

    MEASURED = "measured"
    SCALED = "scaled"
    FLOPS_MODEL = "flops_model"


class Situation(StrEnum):
    """Which evidence an estimate stands on (finer than :class:`Basis`; ranges are calibrated
    per situation). :attr:`text` says it in words."""

    MEASURED = "measured"
    MEASURED_RESCALED = "measured_rescaled"
    SIBLING = "sibling"
    EXTRAPOLATED = "extrapolated"
    FLOPS_MODEL = "flops_model"
    DERIVED = "derived"
    PRECISION_SWITCH = "precision_switch"
    SUBMITTED = "submitted"

    @property
    def basis(self) -> Basis:
        """The coarse :class:`Basis` it reports: measured, FLOPs model, else scaled."""
        if self == Situation.MEASURED:
            return Basis.MEASURED
        return Basis.FLOPS_MODEL if self == Situation.FLOPS_MODEL else Basis.SCALED

    @property
    def text(self) -> str:
        """The situation in words (:data:`SITUATION_TEXT`)."""
        return SITUATION_TEXT[self]

    @property
    def range_situation(self) -> Situation:
        """The situation whose cross-validated range an estimate carries: a rescaled
        measurement shares the ``measured`` one, which the served path's "measured
        elsewhere" protocol calibrates on exactly that case (a GPU's rows of one suite
        predicted from its rows in other suites:
        :func:`app.calibrate.validate.measured_elsewhere`)."""
        return Situation.MEASURED if self == Situation.MEASURED_RESCALED else self


SITUATION_TEXT = {
    Situation.MEASURED: "measured on this GPU model: the per-GPU rate is the mean of its "
    "measurements at this software level, precision and micro-batch",
    Situation.MEASURED_RESCALED: "measured on this GPU model at another software level, "
    "micro-batch or precision, moved to the asked one by the pooled model (both figures in "
    "the notes)",
    Situation.SIBLING: "scaled from measurements on a GPU of the same architecture",
    Situation.EXTRAPOLATED: "extrapolated from measurements on other GPU architectures",
    Situation.FLOPS_MODEL: "FLOPs model: this workload was never measured; FLOP rate of "
    "similar measured workloads as estimated for this GPU",
    Situation.DERIVED: "derived from the preset's estimate by the ratio of training FLOPs, "
    "each weighted by the time it takes (a wider model's matmuls reach a higher share of "
    "the peak)",
    Situation.PRECISION_SWITCH: "this workload was measured only at another precision "
    "(fp32/tf32 vs 16-bit); converted by the speed-up other workloads of its family show "
    "between the two",
    Situation.SUBMITTED: "the published estimate moved by measurements users submitted for "
    "this configuration (gpucost bench): each submitter one observation, the published "
    "estimate one; both figures in the notes",
}

#: :attr:`Situation.basis` of every situation, as a table.
SITUATION_BASIS = {s: s.basis for s in Situation}


def range_situation(situation: Situation) -> Situation:
    """:attr:`Situation.range_situation` as a function."""
    return situation.range_situation


#: A dotted version as parsed by :func:`parse_version`: ``(12, 4)``.
Version = tuple[int, ...]


def parse_version(text: str | None, parts: int = 2) -> Version | None:
    """The one parser of dotted versions (CUDA, driver, compute capability, framework).

    Returns the first ``parts`` numbers, those not written as 0: ``"12.4"`` → ``(12, 4)``,
    ``"12"`` and ``"12."`` → ``(12, 0)``, ``"12.4.1"`` → ``(12, 4)`` (``(12, 4, 1)`` with
    ``parts=3``); ``None`` when blank or when a number among the first ``parts`` is not an
    integer (``"NeMo 26.06"``, ``"main@2013a4dd"``). Versions compare as tuples, so a driver
    that says ``12`` is as new as a job that needs ``12.0``.
    """
    if not text or not str(text).strip():
        return None
    words = str(text).strip().split(".")[:parts]
    try:
        numbers = [int(words[0])] + [int(w) if w else 0 for w in words[1:]]
    except ValueError:
        return None
    return tuple(numbers + [0] * (parts - len(numbers)))


def format_version(v: Version) -> str:
    """``(12, 4)`` → ``"12.4"``."""
    return ".".join(str(n) for n in v)


def minor_version_number(text: str | None) -> float:
    """A version as a sortable number, major + minor / 100 (``1.13`` → 1.13, ``2.3`` →
    2.03, ``0.4.0 (main@…)`` → 0.04); 0 when unknown, not numeric or without a minor
    version (``main@…``, ``NeMo 26.06``)."""
    words = (text or "").split(".")
    if len(words) < 2 or not words[1].strip():
        return 0.0
    v = parse_version(text)
    return v[0] + v[1] / 100 if v is not None else 0.0
