"""The ranking form: which fields it shows, in what order, with which choices.

Field names are the flat parameter names of :mod:`app.api.query`, so the form state *is* the
URL of the page and of its JSON twin.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from app.estimate.rank import SORT_KEYS
from app.estimate.types import WORKLOAD_INPUTS


@dataclass(frozen=True, slots=True)
class FormField:
    """One input: ``kind`` is ``number``, ``count`` (accepts 7B, 25.6M), ``text`` or
    ``select``; ``choices`` are (value, label) pairs; an empty value means "not given"."""

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
    "fp32": "FP32",
    "tf32": "TF32",
    "fp16_amp": "FP16 mixed (AMP)",
    "bf16_amp": "BF16 mixed (AMP)",
    "bf16": "pure BF16",
    "fp8": "FP8 (on BF16 AMP)",
}
METHOD_LABELS = {"full": "full training / fine-tune", "lora": "LoRA", "qlora": "QLoRA (NF4)"}
BOOL_CHOICES = (("true", "on"), ("false", "off"))
BILLING_LABELS = {
    "on_demand": "on demand",
    "spot": "spot / interruptible",
    "reserved_1y": "reserved 1 year",
    "reserved_3y": "reserved 3 years",
}
SORT_LABELS = {
    "cost_per_epoch": "cost per epoch",
    "epoch_hours": "epoch time",
    "total_cost": "total cost",
    "price_per_hour": "price per hour",
    "samples_per_s": "throughput (fastest first)",
}
assert set(SORT_LABELS) == set(SORT_KEYS)


def _enum(values: list[str], labels: dict[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    labels = labels or {}
    return tuple((v, labels.get(v, v.replace("_", " "))) for v in values)


def _workload(
    name: str, label: str, *, hint: str = "", unit: str = "", labels: dict[str, str] | None = None
) -> FormField:
    """The form field of a workload input (:data:`app.estimate.types.WORKLOAD_INPUTS`), its
    kind from the field's type: an enum is a select of its values (shown by ``labels``), a
    boolean an on/off select, a count (``7B``) a count box, a whole number a number box of
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
    if kind is int:
        return FormField(name, label, hint=hint, step="1", unit=unit)
    if kind is float:
        return FormField(name, label, hint=hint, unit=unit)
    return FormField(name, label, "text", hint=hint, unit=unit)


#: The workload inputs shown by default (``preset`` has its own picker); every other one is in
#: :data:`WORKLOAD_ADVANCED` (``tests/test_workload_fields.py`` checks that none is left out).
WORKLOAD_MAIN = (
    _workload("params", "Parameters", hint="e.g. 7B, 125M, 25557032"),
    _workload("micro_batch_size", "Micro-batch per GPU"),
    _workload("seq_len", "Sequence length", unit="tokens"),
    _workload("image_size", "Image size", unit="px per side"),
    _workload("precision", "Precision", labels=PRECISION_LABELS),
    _workload("method", "Method", labels=METHOD_LABELS),
    _workload("gradient_checkpointing", "Activation checkpointing"),
    _workload("samples_per_epoch", "Samples per epoch", hint="e.g. 1.28M"),
    _workload("epochs", "Epochs"),
    _workload("dataset_gb", "Dataset size", unit="GB on disk"),
)

WORKLOAD_ADVANCED = (
    _workload("architecture", "Architecture"),
    _workload("layers", "Layers"),
    _workload("hidden_size", "Hidden size"),
    _workload("heads", "Attention heads"),
    _workload("kv_heads", "KV heads"),
    _workload("ffn_hidden_size", "FFN hidden size"),
    _workload("vocab_size", "Vocabulary size"),
    _workload("grad_accum_steps", "Gradient accumulation steps"),
    _workload("optimizer", "Optimizer"),
    _workload("lora_rank", "LoRA rank"),
    _workload("attention", "Attention kernel"),
    _workload("sharding", "Sharding"),
    _workload("cpu_offload", "CPU offload of optimizer state"),
    _workload("fused_cross_entropy", "Fused cross-entropy"),
    _workload("optimizer_in_backward", "Optimizer step in backward"),
    _workload("activation_offloading", "Activation offloading"),
    _workload("checkpoint_granularity", "Checkpointing granularity"),
    _workload("double_quant", "QLoRA double quantisation"),
    _workload("full_model_init", "Full model loaded per GPU before FSDP"),
    _workload("dropout", "Dropout (p > 0)"),
    _workload("vision_task", "Vision task"),
    _workload("backbone_gflops_224", "Detector backbone GFLOPs", unit="per 224px image"),
    _workload("patch_size", "ViT patch size", unit="px"),
    _workload("text_encoder_params", "Frozen text encoder(s)", hint="e.g. 123M"),
    _workload("vae_params", "Frozen VAE", hint="e.g. 84M"),
    _workload("ema_weights", "EMA copy of the weights"),
    _workload("forward_gflops_per_sample", "Forward GFLOPs", unit="per sample"),
    _workload("forward_activations_per_sample", "Forward activations", unit="million per sample"),
    _workload("lookup_params", "Lookup-only parameters", hint="e.g. 126.8M"),
    _workload("cpu_ms_per_sample", "Data loading", unit="CPU ms per sample"),
    _workload("min_cuda", "Minimum CUDA", hint="e.g. 12.1"),
    _workload("tokens_per_epoch", "Tokens per epoch", hint="real tokens, e.g. 9.04B"),
    _workload("packed", "Sequences packed"),
    _workload("cuda_build", "CUDA build", hint="framework's CUDA, e.g. 12.1"),
    _workload("cuda_only_libraries", "CUDA-only libraries", hint="bitsandbytes, flash-attn"),
    _workload("min_compute_capability", "Min compute capability", hint="e.g. 8.0"),
    _workload("checkpoints_kept", "Checkpoints kept"),
)

#: Filters shown by default; ``provider`` and ``currency`` choices come from the database.
FILTERS_MAIN = (
    FormField(
        "gpu",
        "GPU",
        "text",
        hint="a name, alias or family, any case: 4090, A100 (all four), A100 80GB (both forms)",
    ),
    FormField("gpu_count", "GPU count", step="any"),
    FormField("provider", "Provider", "select"),
    FormField("region", "Region", "text", hint="substring: us-east, 华北"),
    FormField("billing", "Billing", "select", _enum(list(BILLING_LABELS), BILLING_LABELS)),
    FormField("max_price_per_hour", "Max price per hour", unit="in the currency below"),
    FormField("currency", "Currency", "select", default="USD"),
)

FILTERS_ADVANCED = (
    FormField("min_vram_gib", "Min VRAM per GPU", unit="GiB"),
    FormField("min_gpu_count", "Min GPU count"),
    FormField(
        "available_only",
        "Availability",
        "select",
        (("true", "available only"), ("false", "include unavailable")),
        default="true",
    ),
    FormField(
        "include_suspect",
        "Implausible offers",
        "select",
        (("false", "leave out"), ("true", "show, marked")),
        default="false",
    ),
    FormField(
        "bookable_only",
        "Price indices, quoted examples",
        "select",
        (("false", "show, ranked last"), ("true", "leave out")),
        default="false",
    ),
    FormField(
        "bookable_fresh_first",
        "Price trust",
        "select",
        (("true", "rentable and fresh prices first"), ("false", "by the ranking key alone")),
        default="true",
    ),
    FormField(
        "drop_oom",
        "Out-of-memory offers",
        "select",
        (("false", "show last"), ("true", "leave out")),
        default="false",
    ),
    FormField(
        "exclude_spot",
        "Spot offers",
        "select",
        (("false", "include"), ("true", "leave out")),
        default="false",
    ),
    FormField("max_total_cost", "Max total cost", unit="all epochs, in the currency"),
    FormField("max_total_hours", "Deadline", unit="wall-clock hours, all epochs"),
    FormField("spot_interruptions_per_hour", "Spot interruptions", unit="per hour (0.05)"),
    FormField("spot_checkpoint_interval_hours", "Checkpoint every", unit="hours (1)"),
    FormField("spot_restart_hours", "Restart after interruption", unit="hours (0.25)"),
)

OPTIONS = (
    FormField(
        "sort", "Rank by", "select", _enum(list(SORT_KEYS), SORT_LABELS), default="cost_per_epoch"
    ),
    FormField("limit", "Rows", step="1", hint="50"),
)


@dataclass(frozen=True, slots=True)
class Column:
    """A results-table column: ``key`` is its ``order`` value; ``rank_key`` the ranking key it
    stands for (clicking it re-ranks all offers); ``desc_first`` when bigger is better."""

    key: str
    label: str
    numeric: bool = True
    rank_key: str | None = None
    desc_first: bool = False
    title: str = ""


COLUMNS = (
    Column("rank", "#", title="rank; ◆ = on the cost/time Pareto frontier"),
    Column(
        "provider",
        "Offer",
        numeric=False,
        title="provider and instance type; open Specs for VRAM, vCPUs, RAM, disk, CUDA, link",
    ),
    Column("gpu", "GPU × count", numeric=False),
    Column(
        "price_per_hour",
        "Price / h",
        rank_key="price_per_hour",
        title="whole instance per hour, converted to the chosen currency; below: per GPU-hour",
    ),
    Column(
        "samples_per_s",
        "Samples/s",
        rank_key="samples_per_s",
        desc_first=True,
        title="predicted training throughput of all GPUs: value, low–high range, basis",
    ),
    Column("epoch_hours", "Epoch", rank_key="epoch_hours", title="wall-clock time of one epoch"),
    Column("cost_per_epoch", "Cost / epoch", rank_key="cost_per_epoch"),
    Column("total_cost", "Total", rank_key="total_cost", title="all epochs"),
    Column("memory", "Memory", title="OOM verdict; predicted peak per GPU / usable VRAM, GiB"),
    Column("warnings", "Warnings", numeric=False),
)

#: Columns kept out of the table to fit the screen (their values are in each row's Specs);
#: the rows can still be ordered by them.
EXTRA_ORDER_COLUMNS = (
    Column("instance", "instance type", numeric=False),
    Column("vram", "VRAM", desc_first=True, title="per GPU, GB"),
    Column("vcpus", "vCPUs", desc_first=True),
    Column("ram", "RAM", desc_first=True, title="host RAM, GB"),
    Column("disk", "disk", desc_first=True, title="system + data disk, GB"),
    Column("max_cuda", "max CUDA", desc_first=True),
    Column("nvlink", "NVLink", numeric=False, desc_first=True, title="GPU-to-GPU link"),
    Column("region", "region", numeric=False),
)


def throughput_unit(token_workload: bool, image_workload: bool) -> str:
    """The throughput unit people use: ``tokens/s`` for token workloads, ``images/s`` for
    image workloads, else ``samples/s``."""
    if token_workload:
        return "tokens/s"
    return "images/s" if image_workload else "samples/s"


def all_form_fields() -> tuple[FormField, ...]:
    """Every field the ranking form shows."""
    return (*WORKLOAD_MAIN, *WORKLOAD_ADVANCED, *FILTERS_MAIN, *FILTERS_ADVANCED, *OPTIONS)
