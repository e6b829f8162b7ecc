"""Evidence built from the presets and the measurements: the FLOPs table and the pooled
throughput model's data.

Moved from ``app/services/presets.py`` (issue 31): the service
(:func:`app.services.reference.load_reference`) and the calibration
(:mod:`app.calibrate.dataset`, :func:`app.calibrate.validate.served_data`) build them alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.model.calibration import Calibration
from app.model.job import build_workload
from app.model.pooled import PooledData
from app.model.throughput import family, label_workloads, training_flops_per_sample
from app.model.types import BenchmarkPoint, GpuSpec, Method

#: (benchmark label, method) → (family, training FLOPs per published unit, FLOPs per sample,
#: parameters)
FlopsTable = dict[tuple[str, str], tuple[str, float, float, int | None]]


def flops_table(presets: list[tuple[dict[str, Any], dict[str, Any]]]) -> FlopsTable:
    """(label, method) → (family, FLOPs per published unit, FLOPs per sample, params).

    ``presets`` is a list of (fields, meta) pairs; presets without FLOPs or units are skipped.
    The first preset of a (label, method) pair wins.
    """
    table: FlopsTable = {}
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
