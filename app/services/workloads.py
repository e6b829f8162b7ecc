"""Resolve an API workload (preset + overrides) into the core :class:`Workload`."""

from __future__ import annotations

from dataclasses import fields as dc_fields
from typing import Any

from app.estimate.types import (
    Architecture,
    Attention,
    Method,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)
from app.services.reference import Preset, ReferenceData

#: Fields whose change means the preset's measurements no longer describe the job.
THROUGHPUT_FIELDS = (
    "architecture", "params", "layers", "hidden_size", "heads", "kv_heads", "ffn_hidden_size",
    "vocab_size", "seq_len", "image_size", "method", "gradient_checkpointing",
)

REQUIRED_WITHOUT_PRESET = ("architecture", "params", "samples_per_epoch")

_ENUMS = {
    "architecture": Architecture, "precision": Precision, "optimizer": Optimizer,
    "method": Method, "attention": Attention, "sharding": Sharding,
}
_WORKLOAD_FIELDS = {f.name for f in dc_fields(Workload)}


class WorkloadError(ValueError):
    """Bad workload input; ``field`` names the offending field (dotted path)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _build(values: dict[str, Any], preset: Preset | None, matches: bool) -> Workload:
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in _WORKLOAD_FIELDS or value is None:
            continue
        kwargs[key] = _ENUMS[key](value) if key in _ENUMS else value
    if preset is not None:
        kwargs.update(
            preset=preset.slug,
            benchmark_workloads=preset.benchmark_workloads,
            benchmark_method=preset.benchmark_method,
            units_per_sample=preset.units_per_sample,
            throughput_unit=preset.throughput_unit,
        )
    kwargs["matches_preset"] = matches
    return Workload(**kwargs)


def resolve_workload(
    given: dict[str, Any], ref: ReferenceData, *, prefix: str = "workload"
) -> tuple[Workload, Workload | None, dict[str, Any]]:
    """Merge ``given`` (only the fields the client set) over its preset.

    Returns:
        (workload, the preset's own workload when ``workload`` departs from it, the merged flat
        field values for echoing back).

    Raises:
        WorkloadError: unknown preset, or a field required without a preset is missing, or
            an inconsistent combination (LoRA rank without LoRA).
    """
    preset_slug = given.get("preset")
    preset = None
    base: dict[str, Any] = {}
    if preset_slug is not None:
        preset = ref.presets.get(preset_slug)
        if preset is None:
            known = ", ".join(sorted(ref.presets))
            raise WorkloadError(
                f"{prefix}.preset", f"unknown preset {preset_slug!r}; known: {known}"
            )
        base = dict(preset.fields)
    merged = {**base, **{k: v for k, v in given.items() if k != "preset" and v is not None}}
    for name in REQUIRED_WITHOUT_PRESET:
        if merged.get(name) is None:
            raise WorkloadError(f"{prefix}.{name}", "required when no preset is given")
    method = merged.get("method", "full")
    if method in ("lora", "qlora") and not merged.get("lora_rank"):
        merged["lora_rank"] = 8
    arch = merged["architecture"]
    if arch in ("transformer_encoder", "transformer_decoder", "vit") and not (
        merged.get("layers") and merged.get("hidden_size")
    ):
        missing = "layers" if not merged.get("layers") else "hidden_size"
        raise WorkloadError(f"{prefix}.{missing}", f"required for architecture {arch}")
    if arch in ("transformer_encoder", "transformer_decoder") and not merged.get("seq_len"):
        raise WorkloadError(f"{prefix}.seq_len", f"required for architecture {arch}")
    matches = preset is not None and all(
        _same(merged.get(k), base.get(k), k) for k in THROUGHPUT_FIELDS
    )
    workload = _build(merged, preset, matches)
    reference = None
    if preset is not None and not matches:
        reference = _build(base, preset, True)
    echo = {"preset": preset_slug, **merged}
    return workload, reference, echo


def _same(a: Any, b: Any, key: str) -> bool:
    if key == "method":
        return (a or "full") == (b or "full")
    if key == "gradient_checkpointing":
        return bool(a) == bool(b)
    return a == b
