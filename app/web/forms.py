"""The ranking form: which fields it shows, in what order, with which choices.

Field names are the flat parameter names of :mod:`app.interface.query`, so the form state *is* the
URL of the page and of its JSON twin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from app.interface.schemas import billing_word
from app.model.job import preset_slug
from app.model.rank import SORT_KEYS
from app.model.types import WORKLOAD_INPUTS
from app.web.i18n import N_

if TYPE_CHECKING:
    from app.services.reference import ReferenceData


@dataclass(frozen=True, slots=True)
class FormField:
    """One input: ``kind`` is ``number``, ``count`` (accepts 7B, 25.6M), ``tokens`` (a
    length in tokens: accepts 4k = 4096), ``text`` or ``select``; ``choices`` are (value,
    label) pairs; an empty value means "not given"."""

    name: str
    label: str
    kind: str = "number"
    choices: tuple[tuple[str, str], ...] = ()
    hint: str = ""
    step: str = "any"
    unit: str = ""
    #: value used when the parameter is absent (selects then offer no empty choice)
    default: str = ""


PRECISION_LABELS = {
    "fp32": N_("FP32"),
    "tf32": N_("TF32"),
    "fp16_amp": N_("FP16 mixed (AMP)"),
    "bf16_amp": N_("BF16 mixed (AMP)"),
    "bf16": N_("pure BF16"),
    "fp8": N_("FP8 (on BF16 AMP)"),
}
METHOD_LABELS = {
    "full": N_("full training / fine-tune"),
    "lora": N_("LoRA"),
    "qlora": N_("QLoRA (NF4)"),
}
STACK_LABELS = {
    "hf_trainer": N_("HF Trainer / PEFT / TRL"),
    "axolotl": N_("axolotl"),
    "llama_factory": N_("LLaMA-Factory"),
    "unsloth": N_("Unsloth"),
    "torchtune": N_("torchtune"),
    "deepspeed": N_("DeepSpeed"),
    "lightning": N_("Lightning"),
    "megatron": N_("Megatron / NeMo"),
    "torchtitan": N_("torchtitan"),
    "llm_foundry": N_("llm-foundry"),
    "llm_c": N_("llm.c"),
    "timm": N_("timm"),
    "nvidia_dle": N_("NVIDIA DeepLearningExamples"),
    "pytorch": N_("plain PyTorch loop"),
    "pytorch_compile": N_("PyTorch loop + torch.compile (nanoGPT)"),
    "tensorflow": N_("TensorFlow"),
}
BOOL_CHOICES = (("true", N_("on")), ("false", N_("off")))
#: Billing kinds in our users' words (按量计费 on demand, 竞价 spot, 包年 reserved).
BILLING_LABELS = {
    "on_demand": N_("on demand"),
    "spot": N_("spot / interruptible"),
    "reserved_1y": N_("reserved 1 year"),
    "reserved_3y": N_("reserved 3 years"),
}
SORT_LABELS = {
    "cost_per_epoch": N_("cost per epoch"),
    "epoch_hours": N_("epoch time"),
    "total_cost": N_("total cost"),
    "price_per_hour": N_("price per hour"),
    "samples_per_s": N_("throughput (fastest first)"),
}
assert set(SORT_LABELS) == set(SORT_KEYS)


def _enum(values: list[str], labels: dict[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    labels = labels or {}
    return tuple((v, labels.get(v, v.replace("_", " "))) for v in values)


def _workload(
    name: str, label: str, *, hint: str = "", unit: str = "", labels: dict[str, str] | None = None
) -> FormField:
    """The form field of a workload input (:data:`app.model.types.WORKLOAD_INPUTS`), its
    kind from the field's type: an enum is a select of its values (shown by ``labels``), a
    boolean an on/off select, a count (``7B``) a count box, a length in tokens (``4k``) a
    tokens box (text, shown as the preset's whole number), a whole number a number box of
    step 1, any other number one of any step, text (a version, a list) a text box."""
    given = WORKLOAD_INPUTS[name]
    kind = given.kind
    if issubclass(kind, Enum):
        return FormField(
            name, label, "select", _enum([e.value for e in kind], labels), hint, unit=unit
        )
    if kind is bool:
        return FormField(name, label, "select", BOOL_CHOICES, hint, unit=unit)
    if given.spec.count:
        return FormField(name, label, "count", hint=hint, unit=unit)
    if given.spec.tokens:
        return FormField(name, label, "tokens", hint=hint, unit=unit)
    if kind is int:
        return FormField(name, label, hint=hint, step="1", unit=unit)
    if kind is float:
        return FormField(name, label, hint=hint, unit=unit)
    return FormField(name, label, "text", hint=hint, unit=unit)


#: The workload inputs shown by default (``preset`` has its own picker); every other one is in
#: :data:`WORKLOAD_ADVANCED` (``tests/test_workload_fields.py`` checks that none is left out).
WORKLOAD_MAIN = (
    _workload("params", N_("Parameters"), hint=N_("e.g. 7B, 125M, 25557032")),
    _workload("micro_batch_size", N_("Micro-batch per GPU")),
    _workload("seq_len", N_("Sequence length"), hint=N_("e.g. 4k, 2048"), unit=N_("tokens")),
    _workload("image_size", N_("Image size"), unit=N_("px per side")),
    _workload("precision", N_("Precision"), labels=PRECISION_LABELS),
    _workload("method", N_("Method"), labels=METHOD_LABELS),
    _workload("gradient_checkpointing", N_("Activation checkpointing")),
    _workload("samples_per_epoch", N_("Samples per epoch"), hint=N_("e.g. 1.28M")),
    _workload("epochs", N_("Epochs")),
    _workload("dataset_gb", N_("Dataset size"), unit=N_("GB on disk")),
)

WORKLOAD_ADVANCED = (
    _workload("architecture", N_("Architecture")),
    _workload("layers", N_("Layers")),
    _workload("hidden_size", N_("Hidden size")),
    _workload("heads", N_("Attention heads")),
    _workload("kv_heads", N_("KV heads")),
    _workload("ffn_hidden_size", N_("FFN hidden size")),
    _workload("vocab_size", N_("Vocabulary size")),
    _workload("grad_accum_steps", N_("Gradient accumulation steps")),
    _workload("optimizer", N_("Optimizer")),
    _workload("lora_rank", N_("LoRA rank")),
    _workload("attention", N_("Attention kernel")),
    _workload("sharding", N_("Sharding")),
    _workload("stack", N_("Training stack"), labels=STACK_LABELS),
    _workload("cpu_offload", N_("CPU offload of optimizer state")),
    _workload("fused_cross_entropy", N_("Fused cross-entropy")),
    _workload("optimizer_in_backward", N_("Optimizer step in backward")),
    _workload("activation_offloading", N_("Activation offloading")),
    _workload("checkpoint_granularity", N_("Checkpointing granularity")),
    _workload("base_dtype", N_("Frozen base dtype (LoRA/QLoRA)")),
    _workload("implementation", N_("Block implementation")),
    _workload("quant_backend", N_("Quantisation library (QLoRA)")),
    _workload("double_quant", N_("QLoRA double quantisation")),
    _workload("full_model_init", N_("Full model loaded per GPU before FSDP")),
    _workload("dropout", N_("Dropout (p > 0)")),
    _workload("set_grads_to_none", N_("Gradients released between steps")),
    _workload("vision_task", N_("Vision task")),
    _workload("backbone_gflops_224", N_("Detector backbone GFLOPs"), unit=N_("per 224px image")),
    _workload("max_boxes_per_image", N_("Detector: most boxes in one image"), unit=N_("boxes")),
    _workload("num_classes", N_("Segmentation: classes per pixel"), unit=N_("classes")),
    _workload("patch_size", N_("ViT patch size"), unit=N_("px")),
    _workload("text_encoder_params", N_("Frozen text encoder(s)"), hint=N_("e.g. 123M")),
    _workload("vae_params", N_("Frozen VAE"), hint=N_("e.g. 84M")),
    _workload("ema_weights", N_("EMA copy of the weights")),
    _workload("forward_gflops_per_sample", N_("Forward GFLOPs"), unit=N_("per sample")),
    _workload(
        "forward_activations_per_sample", N_("Forward activations"), unit=N_("million per sample")
    ),
    _workload("lookup_params", N_("Lookup-only parameters"), hint=N_("e.g. 126.8M")),
    _workload("cpu_ms_per_sample", N_("Data loading"), unit=N_("CPU ms per sample")),
    _workload("min_cuda", N_("Minimum CUDA"), hint=N_("e.g. 12.1")),
    _workload("tokens_per_epoch", N_("Tokens per epoch"), hint=N_("real tokens, e.g. 9.04B")),
    _workload("tokens_per_sample", N_("Tokens per sample"), hint=N_("mean real tokens, e.g. 92.4")),
    _workload("packed", N_("Sequences packed")),
    _workload("cuda_build", N_("CUDA build"), hint=N_("framework's CUDA, e.g. 12.1")),
    _workload(
        "cuda_only_libraries", N_("CUDA-only libraries"), hint=N_("bitsandbytes, flash-attn")
    ),
    _workload("min_compute_capability", N_("Min compute capability"), hint=N_("e.g. 8.0")),
    _workload("checkpoints_kept", N_("Checkpoints kept")),
)

#: Filters shown by default; ``provider`` and ``currency`` choices come from the database.
#: The budget is here (not folded away): the figure a team plans against.
FILTERS_MAIN = (
    FormField(
        "gpu",
        N_("GPU"),
        "text",
        hint=N_("one or several, comma-separated: A100, H100 (a family is all its models)"),
    ),
    FormField("gpu_count", N_("GPU count"), step="any"),
    FormField("provider", N_("Provider"), "select"),
    FormField(
        "region",
        N_("Region"),
        "text",
        hint=N_("a country or part of a region: China, 华北, us-east"),
    ),
    FormField("billing", N_("Billing"), "select", _enum(list(BILLING_LABELS), BILLING_LABELS)),
    FormField("max_price_per_hour", N_("Max price per hour"), unit=N_("in the currency")),
    FormField("currency", N_("Currency"), "select", default="USD"),
    FormField("max_total_cost", N_("Budget"), unit=N_("all epochs, in the currency")),
    FormField(
        "budget_at_high_end",
        N_("Budget holds"),
        "select",
        (("false", N_("at the estimate")), ("true", N_("at the range's slow end"))),
        default="false",
    ),
)

FILTERS_ADVANCED = (
    FormField("min_vram_gib", N_("Min VRAM per GPU"), unit=N_("GiB")),
    FormField("min_gpu_count", N_("Min GPU count")),
    FormField(
        "available_only",
        N_("Availability"),
        "select",
        (("true", N_("available only")), ("false", N_("include unavailable"))),
        default="true",
    ),
    FormField(
        "include_suspect",
        N_("Implausible offers"),
        "select",
        (("false", N_("leave out")), ("true", N_("show, marked"))),
        default="false",
    ),
    FormField(
        "bookable_only",
        N_("Price indices, quoted examples"),
        "select",
        (("false", N_("show, ranked last")), ("true", N_("leave out"))),
        default="false",
    ),
    FormField(
        "bookable_fresh_first",
        N_("Price trust"),
        "select",
        (
            ("true", N_("rentable and fresh prices first")),
            ("false", N_("by the ranking key alone")),
        ),
        default="true",
    ),
    FormField(
        "drop_oom",
        N_("Out-of-memory offers"),
        "select",
        (("false", N_("show last")), ("true", N_("leave out"))),
        default="false",
    ),
    FormField(
        "exclude_spot",
        N_("Spot offers"),
        "select",
        (("false", N_("include")), ("true", N_("leave out"))),
        default="false",
    ),
    FormField("max_total_hours", N_("Deadline"), unit=N_("wall-clock hours, all epochs")),
    FormField("spot_interruptions_per_hour", N_("Spot interruptions"), unit=N_("per hour (0.05)")),
    FormField("spot_checkpoint_interval_hours", N_("Checkpoint every"), unit=N_("hours (1)")),
    FormField("spot_restart_hours", N_("Restart after interruption"), unit=N_("hours (0.25)")),
)

OPTIONS = (
    FormField(
        "sort",
        N_("Rank by"),
        "select",
        _enum(list(SORT_KEYS), SORT_LABELS),
        default="cost_per_epoch",
    ),
    FormField("limit", N_("Rows"), step="1", hint="50"),
)


@dataclass(frozen=True, slots=True)
class Column:
    """A results-table column: ``key`` is its ``order`` value; ``rank_key`` the ranking key it
    stands for (clicking it re-ranks all offers); ``desc_first`` when bigger is better;
    ``hardware`` columns show on wide screens only (their values are in each row's *more*
    below that)."""

    key: str
    label: str
    numeric: bool = True
    rank_key: str | None = None
    desc_first: bool = False
    title: str = ""
    hardware: bool = False
    #: shown under the header (the cells then carry the number only)
    unit: str = ""


COLUMNS = (
    Column("rank", "#", title=N_("rank; ◆ = on the cost/time Pareto frontier; ☆ pins a row")),
    Column("provider", N_("Offer"), numeric=False, title=N_("provider, instance, region, billing")),
    Column("gpu", N_("GPU × count"), numeric=False, title=N_("GPU model × count; VRAM per GPU")),
    Column("vcpus", N_("vCPU"), desc_first=True, hardware=True),
    Column("ram", N_("RAM"), desc_first=True, title=N_("host RAM, GiB"), hardware=True, unit="GiB"),
    Column(
        "disk",
        N_("Disk"),
        desc_first=True,
        title=N_("system + data disk, GB"),
        hardware=True,
        unit="GB",
    ),
    Column(
        "max_cuda",
        N_("CUDA"),
        desc_first=True,
        title=N_("highest CUDA the driver runs"),
        hardware=True,
    ),
    Column(
        "nvlink",
        N_("Link"),
        numeric=False,
        desc_first=True,
        title=N_("GPU-to-GPU link"),
        hardware=True,
    ),
    Column(
        "price_per_hour",
        N_("Price / h"),
        rank_key="price_per_hour",
        title=N_("whole instance per hour, in the chosen currency; below: per GPU-hour"),
    ),
    Column(
        "samples_per_s",
        N_("Samples/s"),
        rank_key="samples_per_s",
        desc_first=True,
        title=N_("predicted training throughput of all GPUs: value, basis, low–high range"),
    ),
    Column(
        "epoch_hours",
        N_("Epoch"),
        rank_key="epoch_hours",
        title=N_("wall-clock time of one epoch; below: its range"),
    ),
    Column(
        "cost_per_epoch",
        N_("Cost / epoch"),
        rank_key="cost_per_epoch",
        title=N_("below: its range"),
    ),
    Column(
        "total_cost",
        N_("Total"),
        rank_key="total_cost",
        title=N_("all epochs: cost and time, each with its range"),
    ),
    Column(
        "memory", N_("Memory"), title=N_("OOM verdict; predicted peak per GPU / usable VRAM, GiB")
    ),
    Column("warnings", N_("Warnings"), numeric=False),
)

#: Columns the rows can also be ordered by (the line above the table).
EXTRA_ORDER_COLUMNS = (
    Column("instance", N_("instance type"), numeric=False),
    Column("vram", N_("VRAM"), desc_first=True, title=N_("per GPU, GiB")),
    Column("region", N_("region"), numeric=False),
    Column("billing", N_("billing"), numeric=False),
)


#: The throughput units of :func:`throughput_unit` (marked for translation).
THROUGHPUT_UNITS = (N_("tokens/s"), N_("images/s"), N_("samples/s"))


def throughput_unit(token_workload: bool, image_workload: bool) -> str:
    """The throughput unit people use: ``tokens/s`` for token workloads, ``images/s`` for
    image workloads, else ``samples/s``."""
    if token_workload:
        return "tokens/s"
    return "images/s" if image_workload else "samples/s"


def all_form_fields() -> tuple[FormField, ...]:
    """Every field the ranking form shows."""
    return (*WORKLOAD_MAIN, *WORKLOAD_ADVANCED, *FILTERS_MAIN, *FILTERS_ADVANCED, *OPTIONS)


def human_count(n: float) -> str:
    """25557032 → ``25.6M``; 8030261248 → ``8.03B`` (three significant figures)."""
    for factor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= factor:
            return f"{_sig3(n / factor)}{suffix}"
    return _sig3(n)


def _sig3(v: float) -> str:
    text = f"{v:.3g}"
    return str(round(float(text))) if "e" in text else text


#: The workload inputs whose form field is a select of an enum's values, by name: the enums
#: read words as people write them (:class:`app.model.vocabulary.AsWritten`: ``8bit`` is
#: ``int8``, ``bfloat16`` is ``bf16``, ``BF16-AMP`` is ``bf16_amp``).
SELECT_ENUMS: dict[str, type[Enum]] = {
    name: given.kind
    for name, given in WORKLOAD_INPUTS.items()
    if isinstance(given.kind, type) and issubclass(given.kind, Enum)
}


#: The filter selects the API reads in any case, as it reads them: a currency code upper-cased
#: (``cny`` is ``CNY``: ``app.interface.schemas._upper_currency``), a provider slug compared in
#: lower case (``Lambda`` is ``lambda``: ``app.services.offers``), a billing kind in any case
#: and ``-`` for ``_`` (``Spot``, ``on-demand``: ``app.interface.schemas.billing_word``).
#: ASCII only, as there.
SELECT_CASES: dict[str, Callable[[str], str]] = {
    "currency": str.upper,
    "provider": str.lower,
    "billing": billing_word,
}


def with_preset_slug(raw: dict[str, str], ref: ReferenceData) -> dict[str, str]:
    """``raw`` with its ``preset`` written as the slug it names (``Llama3-8B-LoRA`` →
    ``llama3-8b-lora``: :func:`app.model.job.preset_slug`, the API's reading), so the page
    recaps, fills and links the preset the answer is about; a name that is no preset is left
    as written, for the ranking's 400 to name."""
    slug = preset_slug(raw.get("preset") or "", ref.presets)
    return {**raw, "preset": slug} if slug else raw


def canonical_choices(raw: Mapping[str, str]) -> dict[str, str]:
    """``raw`` (query parameters as given) with each select's value written as the option it
    stands for: ``base_dtype=8bit`` → ``int8``, ``precision=bfloat16`` → ``bf16``,
    ``stack=composer`` → ``llm_foundry`` (the enum's own reading, :data:`SELECT_ENUMS`),
    ``currency=cny`` → ``CNY``, ``provider=Lambda`` → ``lambda`` (:data:`SELECT_CASES`). The
    select then shows the choice the answer used, and the next submit sends it; left as
    written, no option matched, the select showed "default" (or its first option) and the
    next submit silently dropped or changed the choice.

    A value the enum refuses, or one with whitespace around it (refused by the query rule
    :data:`app.interface.query.SURROUNDING_SPACE`), is left as written, so its error still
    names the field and the box keeps what was typed."""
    out = dict(raw)
    for key, text in raw.items():
        if not isinstance(text, str) or not text or text != text.strip():
            continue
        if key in SELECT_CASES and text.isascii():
            out[key] = SELECT_CASES[key](text)
        kind = SELECT_ENUMS.get(key)
        if kind is None:
            continue
        try:
            out[key] = str(kind(text).value)
        except ValueError:
            continue
    return out


def preset_form_values(
    fields: Mapping[str, Any], form_fields: Sequence[FormField]
) -> dict[str, str]:
    """A preset's values as the form holds them (shown as values, not placeholders): a
    select's option value (``bf16``, ``true``), a count box the count as people write it
    (``8.03B``: :func:`human_count`), any other box the value as typed (``2048``,
    ``147.897``). Fields the form does not show are left out."""
    kinds = {f.name: f.kind for f in form_fields}
    out = {}
    for key, value in fields.items():
        kind = kinds.get(key)
        if kind is None or value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif kind == "count" and isinstance(value, int | float):
            text = human_count(value)
        elif isinstance(value, float):
            text = str(int(value)) if value.is_integer() else repr(value)
        elif isinstance(value, list | tuple):
            text = ", ".join(str(v) for v in value)
        else:
            text = str(value)
        out[key] = text
    return out
