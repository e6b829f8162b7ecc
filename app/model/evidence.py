"""Evidence built from the presets and the measurements: the FLOPs table and the pooled
throughput model's data.

Moved from ``app/services/presets.py`` (issue 31): the service
(:func:`app.services.reference.load_reference`) and the calibration
(:mod:`app.calibrate.dataset`, :func:`app.calibrate.validate.served_data`) build them alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.model.calibration import Calibration
from app.model.flops import RunRecompute
from app.model.job import build_workload
from app.model.pooled import PooledData
from app.model.throughput import family, label_workloads, training_flops_per_sample
from app.model.types import BenchmarkPoint, GpuSpec, Method, Workload

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


def at_preset_recompute(
    points: Sequence[BenchmarkPoint],
    workloads: Mapping[tuple[str, str], Workload],
    recompute: Mapping[int, RunRecompute],
) -> list[BenchmarkPoint]:
    """``points`` with each rate whose run states its activation checkpointing
    (``recompute``, by point id) carried to its preset's: the GPU executes the same FLOP rate
    either way, so ``rate × F(run) / F(preset)``, F the training FLOPs per sample with the
    recompute (:func:`training_flops_per_sample`, at the row's sequence length). torchtitan's
    Llama 2 70B on 64 A100s, 353 tokens/s per GPU with full checkpointing (8N + 16·L·h·s per
    token), stands for the preset without it (6N + 12·L·h·s) at 353 × 4/3 = 470.7. A point
    without a stated setting, a preset or a FLOPs count stays as published."""
    out: list[BenchmarkPoint] = []
    for p in points:
        stated = recompute.get(p.id)
        w = workloads.get((p.workload, p.method)) or workloads.get((p.workload, "full"))
        if (
            stated is None
            or w is None
            or (
                stated.on == w.gradient_checkpointing
                and (not stated.on or stated.granularity == w.checkpoint_granularity)
            )
        ):
            out.append(p)
            continue
        if p.seq_len and w.seq_len:
            w = replace(w, seq_len=p.seq_len)
        run, preset = training_flops_per_sample(stated.of(w)), training_flops_per_sample(w)
        if not run or not preset:
            out.append(p)
            continue
        out.append(replace(p, throughput_total=p.throughput_total * run / preset))
    return out


def throughput_data(
    points: Sequence[BenchmarkPoint],
    catalog: Mapping[str, GpuSpec],
    presets: list[tuple[dict[str, Any], dict[str, Any]]],
    cal: Calibration | None = None,
    recompute: Mapping[int, RunRecompute] | None = None,
) -> PooledData:
    """The pooled-model data of ``points``: each measured (label, method) tied to the first
    preset standing for it (its architecture picks the family); rates measured with another
    activation checkpointing than their preset's carried to the preset's
    (:func:`at_preset_recompute`, ``recompute`` by point id); multi-GPU rows placed with
    ``cal``'s multi-GPU constants (default: the served calibration)."""
    workloads = label_workloads(
        [
            build_workload(values, meta, True)
            for values, meta in presets
            if meta.get("benchmark_workloads") and "architecture" in values
        ]
    )
    return PooledData(
        at_preset_recompute(points, workloads, recompute or {}),
        catalog,
        workloads,
        {k: v[0] for k, v in flops_table(presets).items()},
        cal=cal,
    )
