"""The calibration data set: seed CSVs read straight into core types (no database).

Used by ``tools/fit_constants.py`` (which writes app/model/calibration.json) and by
``python -m benchmarks.accuracy`` (cross-validation), so both see exactly the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.data.load import (
    load_catalog,
    load_points,
    load_presets,
    read_benchmarks,
    read_memory_cases,
)
from app.model.evidence import flops_table
from app.model.flops import RunRecompute
from app.model.job import build_workload
from app.model.stacks import published_run_stack
from app.model.types import BenchmarkPoint, GpuSpec, Workload


@dataclass
class Preset:
    """A preset's flat fields and its benchmark metadata."""

    slug: str
    fields: dict[str, Any]
    meta: dict[str, Any]

    def workload(self, **overrides: Any) -> Workload:
        """The preset as a core workload, with field overrides."""
        return build_workload({**self.fields, **overrides}, self.meta, True)


@dataclass
class Dataset:
    """Catalog, measurements and presets from ``seed_data/``."""

    catalog: dict[str, GpuSpec]
    points: list[BenchmarkPoint]
    presets: dict[str, Preset]
    #: (benchmark label, method) → the first preset standing for it
    label_presets: dict[tuple[str, str], Preset]
    flops_table: dict[tuple[str, str], tuple[str, float, float, int | None]]
    memory_cases: list[dict[str, str]]
    #: benchmark id → the activation checkpointing the run used, where its source states it
    #: (llm-foundry's and torchtitan's benchmark tables have the column;
    #: see :func:`app.data.load.stated_checkpointing`)
    checkpointing: dict[int, RunRecompute] = field(default_factory=dict)
    #: benchmark id → whether the run used ``torch.compile``, where its notes state it
    #: (``torch.compile True/False``: :func:`stated_compile`)
    compiled: dict[int, bool] = field(default_factory=dict)
    #: results derived from this dataset alone, memoised by their callers (never copied by
    #: ``dataclasses.replace``: a changed dataset starts empty)
    memo: dict[object, object] = field(default_factory=dict, init=False, repr=False, compare=False)


def stated_compile(notes: str) -> bool | None:
    """``torch.compile`` of a benchmark run as its notes state it (``torch.compile True`` or
    ``torch.compile False``); ``None`` when not stated."""
    if "torch.compile True" in notes:
        return True
    if "torch.compile False" in notes:
        return False
    return None


def load_dataset(seed_dir: Path) -> Dataset:
    """Read ``gpus.csv``, ``benchmarks*.csv``, the presets and ``memory_cases.csv`` through
    :mod:`app.data.load`, the reader ``gpucost seed`` stores from.

    Gives the same specs, measurements and presets as the service's
    :func:`app.services.reference.load_reference` on a seeded database
    (tests/test_calibrate_same_data.py).
    """
    points, checkpointing = load_points(seed_dir)
    presets = {p.slug: Preset(p.slug, p.fields, p.meta) for p in load_presets(seed_dir)}
    label_presets: dict[tuple[str, str], Preset] = {}
    for p in presets.values():
        for label in p.meta["benchmark_workloads"]:
            method = p.meta["benchmark_method"] or p.fields.get("method", "full")
            label_presets.setdefault((label, method), p)
    return Dataset(
        catalog=load_catalog(seed_dir),
        points=points,
        presets=presets,
        label_presets=label_presets,
        flops_table=flops_table([(p.fields, p.meta) for p in presets.values()]),
        memory_cases=[dict(row.cells) for row in read_memory_cases(seed_dir)],
        checkpointing=checkpointing,
        compiled={
            i: found
            for i, row in enumerate(read_benchmarks(seed_dir), start=1)
            if (found := stated_compile(row.notes)) is not None
        },
    )


def rate_rows(ds: Dataset) -> list[BenchmarkPoint]:
    """Single-GPU rate measurements usable for validation (mapped GPU, not suspect)."""
    return [p for p in ds.points if p.gpu_count == 1 and p.gpu in ds.catalog and not p.suspect]


def row_workload(ds: Dataset, p: BenchmarkPoint) -> Workload | None:
    """The workload a measurement describes: its preset at the row's precision and batch,
    and with the row's activation checkpointing where the source states it (llm-foundry ran
    some sizes both ways; the preset follows the model's training YAML).

    ``units_per_sample`` stays the preset's: multiply a predicted samples/s by it to compare
    with the published throughput (see :func:`units`).
    """
    preset = ds.label_presets.get((p.workload, p.method))
    if preset is None and p.method == "pretrain":
        preset = ds.label_presets.get((p.workload, "full"))
    if preset is None:
        return None
    overrides: dict[str, Any] = {"precision": p.precision.value}
    if p.batch_size_per_gpu:
        overrides["micro_batch_size"] = p.batch_size_per_gpu
    if p.id in ds.checkpointing:
        stated = ds.checkpointing[p.id]
        overrides["gradient_checkpointing"] = stated.on
        overrides["checkpoint_granularity"] = stated.granularity.value
    w = preset.workload(**overrides)
    return Workload(
        **{
            **{f: getattr(w, f) for f in w.__dataclass_fields__},
            "benchmark_workloads": (p.workload,),
            "benchmark_method": p.method,
            # the row's own stack as its run went: the API receives it as the request's
            "stack": published_run_stack(p.source),
        }
    )


def units(w: Workload) -> float:
    """Published throughput units per sample of ``w`` (1 when not set)."""
    return w.units_per_sample or 1.0
