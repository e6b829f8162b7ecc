"""Build core workloads from flat field dictionaries (presets, API input).

Moved verbatim from ``app/services/presets.py`` (issue 31: the estimator's package holds the
job's resolution; the calibration and the seed loader build workloads without the services).
"""

from __future__ import annotations

from dataclasses import fields as dc_fields
from typing import Any

from app.model.stacks import parse_stack
from app.model.types import (
    Architecture,
    Attention,
    BaseDtype,
    CheckpointGranularity,
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
