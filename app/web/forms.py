"""The ranking form: which fields it shows, in what order, with which choices.

Field names are the flat parameter names of :mod:`app.api.query`, so the form state *is* the
URL of the page and of its JSON twin.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.estimate.rank import SORT_KEYS
from app.estimate.types import (
    Architecture,
    Attention,
    CheckpointGranularity,
    Method,
    Optimizer,
    Precision,
    Sharding,
    VisionTask,
)


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


WORKLOAD_MAIN = (
    FormField("params", "Parameters", "count", hint="e.g. 7B, 125M, 25557032"),
    FormField("micro_batch_size", "Micro-batch per GPU", step="1"),
    FormField("seq_len", "Sequence length", step="1", unit="tokens"),
    FormField("image_size", "Image size", step="1", unit="px per side"),
    FormField(
        "precision", "Precision", "select", _enum([p.value for p in Precision], PRECISION_LABELS)
    ),
    FormField("method", "Method", "select", _enum([m.value for m in Method], METHOD_LABELS)),
    FormField("gradient_checkpointing", "Activation checkpointing", "select", BOOL_CHOICES),
    FormField("samples_per_epoch", "Samples per epoch", "count", hint="e.g. 1.28M"),
    FormField("epochs", "Epochs"),
    FormField("dataset_gb", "Dataset size", unit="GB on disk"),
)

WORKLOAD_ADVANCED = (
    FormField("architecture", "Architecture", "select", _enum([a.value for a in Architecture])),
    FormField("layers", "Layers", step="1"),
    FormField("hidden_size", "Hidden size", step="1"),
    FormField("heads", "Attention heads", step="1"),
    FormField("kv_heads", "KV heads", step="1"),
    FormField("ffn_hidden_size", "FFN hidden size", step="1"),
    FormField("vocab_size", "Vocabulary size", step="1"),
    FormField("grad_accum_steps", "Gradient accumulation steps", step="1"),
    FormField("optimizer", "Optimizer", "select", _enum([o.value for o in Optimizer])),
    FormField("lora_rank", "LoRA rank", step="1"),
    FormField("attention", "Attention kernel", "select", _enum([a.value for a in Attention])),
    FormField("sharding", "Sharding", "select", _enum([s.value for s in Sharding])),
    FormField("cpu_offload", "CPU offload of optimizer state", "select", BOOL_CHOICES),
    FormField("fused_cross_entropy", "Fused cross-entropy", "select", BOOL_CHOICES),
    FormField("optimizer_in_backward", "Optimizer step in backward", "select", BOOL_CHOICES),
    FormField("activation_offloading", "Activation offloading", "select", BOOL_CHOICES),
    FormField(
        "checkpoint_granularity",
        "Checkpointing granularity",
        "select",
        _enum([g.value for g in CheckpointGranularity]),
    ),
    FormField("double_quant", "QLoRA double quantisation", "select", BOOL_CHOICES),
    FormField("full_model_init", "Full model loaded per GPU before FSDP", "select", BOOL_CHOICES),
    FormField("vision_task", "Vision task", "select", _enum([t.value for t in VisionTask])),
    FormField("backbone_gflops_224", "Detector backbone GFLOPs", unit="per 224px image"),
    FormField("patch_size", "ViT patch size", step="1", unit="px"),
    FormField("text_encoder_params", "Frozen text encoder(s)", "count", hint="e.g. 123M"),
    FormField("vae_params", "Frozen VAE", "count", hint="e.g. 84M"),
    FormField("ema_weights", "EMA copy of the weights", "select", BOOL_CHOICES),
    FormField("forward_gflops_per_sample", "Forward GFLOPs", unit="per sample"),
    FormField("cpu_ms_per_sample", "Data loading", unit="CPU ms per sample"),
    FormField("min_cuda", "Minimum CUDA", "text", hint="e.g. 12.1"),
    FormField("tokens_per_epoch", "Tokens per epoch", "count", hint="real tokens, e.g. 9.04B"),
    FormField("packed", "Sequences packed", "select", BOOL_CHOICES),
    FormField("cuda_build", "CUDA build", "text", hint="framework's CUDA, e.g. 12.1"),
    FormField(
        "cuda_only_libraries", "CUDA-only libraries", "text", hint="bitsandbytes, flash-attn"
    ),
    FormField("min_compute_capability", "Min compute capability", "text", hint="e.g. 8.0"),
    FormField("checkpoints_kept", "Checkpoints kept", step="1"),
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
