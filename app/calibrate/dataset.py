"""The calibration data set: seed CSVs read straight into core types (no database).

Used by ``tools/fit_constants.py`` (which writes app/model/calibration.json) and by
``python -m benchmarks.accuracy`` (cross-validation), so both see exactly the same rows.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.db.seed import memory_overlay, read_preset_facts, with_memory_overlay, workload_cells
from app.model.stacks import published_run_stack
from app.model.types import BenchmarkPoint, GpuSpec, Precision, Workload
from app.services.presets import build_workload, flops_table


def _f(value: str | None) -> float | None:
    value = (value or "").strip()
    return float(value) if value else None


def stated_checkpointing(notes: str) -> bool | None:
    """Activation checkpointing of a benchmark run as its notes quote the source
    (``activation checkpointing True/False``: the column of llm-foundry's
    scripts/train/benchmarking/README.md tables); ``None`` when not stated."""
    if "activation checkpointing True" in notes:
        return True
    if "activation checkpointing False" in notes:
        return False
    return None


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


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
    #: benchmark id → whether the run used activation checkpointing, where its source states
    #: it (llm-foundry's benchmark tables have the column; see :func:`stated_checkpointing`)
    checkpointing: dict[int, bool] = field(default_factory=dict)
    #: results derived from this dataset alone, memoised by their callers (never copied by
    #: ``dataclasses.replace``: a changed dataset starts empty)
    memo: dict[object, object] = field(default_factory=dict, init=False, repr=False, compare=False)


def load_dataset(seed_dir: Path) -> Dataset:
    """Read ``gpus.csv``, ``benchmarks*.csv``, ``workloads.csv`` and ``memory_cases.csv``.

    Gives the same specs, measurements and presets as the service's
    :func:`app.services.reference.load_reference` on a seeded database
    (tests/test_calibrate_same_data.py).
    """
    catalog = {}
    for r in _read(seed_dir / "gpus.csv"):
        year = _f(r["release_year"])
        catalog[r["canonical_name"]] = GpuSpec(
            name=r["canonical_name"],
            vendor=r["vendor"],
            architecture=r["architecture"],
            vram_gib=float(r["vram_gib"]),
            memory_bandwidth_gbs=_f(r["memory_bandwidth_gbs"]),
            fp32_tflops=_f(r["fp32_tflops"]),
            tf32_tflops=_f(r["tf32_tflops"]),
            fp16_tflops=_f(r["fp16_tflops"]),
            bf16_tflops=_f(r["bf16_tflops"]),
            fp8_tflops=_f(r["fp8_tflops"]),
            fp16_fp32acc_tflops=_f(r["fp16_fp32acc_tflops"]),
            fp8_fp32acc_tflops=_f(r["fp8_fp32acc_tflops"]),
            nvlink=r["nvlink"] == "yes",
            nvlink_bandwidth_gbs=_f(r["nvlink_bandwidth_gbs"]),
            form_factor=r["form_factor"],
            market=r["market"],
            release_year=int(year) if year else None,
            compute_capability=r["compute_capability"].strip() or None,
        )
    points = []
    checkpointing: dict[int, bool] = {}
    # every benchmarks*.csv, in the order `gpucost seed` loads them (app/db/seed.py)
    rows = [r for path in sorted(seed_dir.glob("benchmarks*.csv")) for r in _read(path)]
    for i, r in enumerate(rows):
        if r["throughput_scope"] == "unknown":
            continue
        bs = _f(r["batch_size_per_gpu"])
        seq = _f(r["seq_len"])
        stated = stated_checkpointing(r.get("notes") or "")
        if stated is not None:
            checkpointing[i + 1] = stated
        points.append(
            BenchmarkPoint(
                id=i + 1,
                gpu=r["gpu"],
                gpu_count=int(r["gpu_count"]),
                interconnect=r["interconnect"] or None,
                workload=r["workload"],
                method=r["method"],
                precision=Precision(r["precision"]),
                batch_size_per_gpu=int(bs) if bs else None,
                seq_len=int(seq) if seq else None,
                throughput_total=float(r["throughput_total"]),
                throughput_unit=r["throughput_unit"],
                peak_memory_gib=_f(r["peak_memory_gib"]),
                framework_version=r["framework_version"] or None,
                source=r["source"],
                source_ref=r["source_ref"],
                suspect=r["suspect"] == "true",
                gpu_label=r["gpu_label"],
            )
        )
    presets: dict[str, Preset] = {}
    overlay = memory_overlay(seed_dir)
    facts = read_preset_facts(seed_dir)  # merged over workloads.csv, as `gpucost seed` does
    for listed in _read(seed_dir / "workloads.csv"):
        r = with_memory_overlay(listed, overlay)
        fields = workload_cells(r)  # read as `gpucost seed` reads them
        fields.update(facts.get(r["preset"], {}))
        meta = {
            "preset": r["preset"],
            "benchmark_workloads": tuple(
                x.strip() for x in (r["benchmark_workloads"] or "").split("|") if x.strip()
            ),
            "benchmark_method": r["benchmark_method"] or None,
            "units_per_sample": _f(r["units_per_sample"]),
            "throughput_unit": r["throughput_unit"] or None,
        }
        presets[r["preset"]] = Preset(r["preset"], fields, meta)
    label_presets: dict[tuple[str, str], Preset] = {}
    for p in presets.values():
        for label in p.meta["benchmark_workloads"]:
            method = p.meta["benchmark_method"] or p.fields.get("method", "full")
            label_presets.setdefault((label, method), p)
    table = flops_table([(p.fields, p.meta) for p in presets.values()])
    cases_path = seed_dir / "memory_cases.csv"
    cases = _read(cases_path) if cases_path.exists() else []
    return Dataset(
        catalog=catalog,
        points=points,
        presets=presets,
        label_presets=label_presets,
        flops_table=table,
        memory_cases=cases,
        checkpointing=checkpointing,
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
        overrides["gradient_checkpointing"] = ds.checkpointing[p.id]
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
