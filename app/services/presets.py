"""Build core workloads from flat field dictionaries (presets, API input)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields as dc_fields
from typing import Any

from app.model.calibration import Calibration
from app.model.pooled import PooledData
from app.model.stacks import parse_stack
from app.model.throughput import family, label_workloads, training_flops_per_sample
from app.model.types import (
    Architecture,
    Attention,
    BaseDtype,
    BenchmarkPoint,
    CheckpointGranularity,
    GpuSpec,
    Implementation,
    Method,
    Optimizer,
    Precision,
    QuantBackend,
    Sharding,
    VisionTask,
    Workload,
)

_ENUMS = {
    "architecture": Architecture,
    "precision": Precision,
    "optimizer": Optimizer,
    "method": Method,
    "attention": Attention,
    "sharding": Sharding,
    "checkpoint_granularity": CheckpointGranularity,
    "base_dtype": BaseDtype,
    "implementation": Implementation,
    "quant_backend": QuantBackend,
    "vision_task": VisionTask,
    "stack": parse_stack,
}
_WORKLOAD_FIELDS = {f.name for f in dc_fields(Workload)}


def build_workload(
    values: dict[str, Any], meta: dict[str, Any] | None = None, matches_preset: bool = False
) -> Workload:
    """Core workload from flat ``values`` (API field names) plus preset ``meta``.

    ``meta`` may carry ``preset``, ``benchmark_workloads``, ``benchmark_method``,
    ``units_per_sample`` and ``throughput_unit``.
    """
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in _WORKLOAD_FIELDS or value is None:
            continue
        if key == "cuda_only_libraries":  # a list from the API, "a|b" from a preset row
            parts = value.split("|") if isinstance(value, str) else value
            value = tuple(str(p).strip() for p in parts if str(p).strip())
        kwargs[key] = _ENUMS[key](value) if key in _ENUMS else value
    kwargs.update(meta or {})
    kwargs["matches_preset"] = matches_preset
    return Workload(**kwargs)


def flops_table(
    presets: list[tuple[dict[str, Any], dict[str, Any]]],
) -> dict[tuple[str, str], tuple[str, float, float, int | None]]:
    """(label, method) → (family, FLOPs per published unit, FLOPs per sample, params).

    ``presets`` is a list of (fields, meta) pairs; presets without FLOPs or units are skipped.
    The first preset of a (label, method) pair wins.
    """
    table: dict[tuple[str, str], tuple[str, float, float, int | None]] = {}
    for values, meta in presets:
        units = meta.get("units_per_sample")
        labels = meta.get("benchmark_workloads") or ()
        if not units or not labels or "architecture" not in values:
            continue
        w = build_workload(values, meta, True)
        flops = training_flops_per_sample(w)
        if not flops:
            continue
        method = meta.get("benchmark_method") or (
            "full" if w.method == Method.FULL else w.method.value
        )
        for label in labels:
            table.setdefault(
                (label, method), (family(w.architecture), flops / units, flops, w.params)
            )
    return table


def throughput_data(
    points: Sequence[BenchmarkPoint],
    catalog: Mapping[str, GpuSpec],
    presets: list[tuple[dict[str, Any], dict[str, Any]]],
    cal: Calibration | None = None,
) -> PooledData:
    """The pooled-model data of ``points``: each measured (label, method) tied to the first
    preset standing for it (its architecture picks the family); multi-GPU rows placed with
    ``cal``'s multi-GPU constants (default: the served calibration)."""
    workloads = [
        build_workload(values, meta, True)
        for values, meta in presets
        if meta.get("benchmark_workloads") and "architecture" in values
    ]
    return PooledData(
        points,
        catalog,
        label_workloads(workloads),
        {k: v[0] for k, v in flops_table(presets).items()},
        cal=cal,
    )
