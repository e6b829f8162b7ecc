"""Seed rows (:mod:`app.data.rows`) as the estimation core's types.

The one place ``seed_data/`` is read: ``gpucost seed`` (:mod:`app.db.seed`) stores these
values, the service reads them back from the database (:mod:`app.services.reference`) and the
calibration (:mod:`app.calibrate.dataset`) takes them straight from here, so both estimate
from the same specs, measurements and presets (tests/test_calibrate_same_data.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.data.rows import (
    PRESET_FIELDS,
    BenchmarkRow,
    GpuAliasRow,
    GpuRow,
    MemoryCaseRow,
    OfferRow,
    PresetFactRow,
    PresetMemoryRow,
    PresetRow,
    ProviderRow,
    RateRow,
    SeedError,
    read_rows,
)
from app.fields import same_named
from app.model.flops import RunRecompute
from app.model.types import BenchmarkPoint, CheckpointGranularity, GpuSpec, Precision


def read_gpus(seed_dir: Path) -> list[GpuRow]:
    """``gpus.csv``, in file order."""
    return read_rows(seed_dir / "gpus.csv", GpuRow)


#: the :class:`GpuSpec` fields a GPU row holds under the same name: a ``gpus.csv`` row
#: (:class:`GpuRow`) and a stored ``gpu_model`` row (app/db/models.py) alike; the spec's
#: ``name`` is the row's ``canonical_name``
SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(GpuSpec) if f.name != "name")


def gpu_spec(row: GpuRow) -> GpuSpec:
    """The core's spec of a ``gpus.csv`` row (the figures ``gpucost seed`` stores).

    Raises:
        SeedError: the row states no VRAM.
    """
    if row.vram_gib is None:
        raise SeedError(f"{row.file}:{row.line}: column vram_gib: empty")
    return stored_gpu_spec(row)


def stored_gpu_spec(row: object) -> GpuSpec:
    """The core's spec of a GPU row that has :data:`SPEC_FIELDS` and ``canonical_name`` (a
    stored ``gpu_model`` row; a :class:`GpuRow` through :func:`gpu_spec`)."""
    values: dict[str, Any] = {name: getattr(row, name) for name in (*SPEC_FIELDS, "canonical_name")}
    return GpuSpec(name=values.pop("canonical_name"), **values)


def load_catalog(seed_dir: Path) -> dict[str, GpuSpec]:
    """GPU specs by canonical name, in ``gpus.csv`` order."""
    return {row.canonical_name: gpu_spec(row) for row in read_gpus(seed_dir)}


def load_extra_aliases(seed_dir: Path) -> dict[str, list[str]]:
    """``gpu_aliases.csv`` as alias → canonical names (a label listed under several GPUs is
    ambiguous: ingest resolves it from the offer's context or reports it); empty when the
    file is absent."""
    path = seed_dir / "gpu_aliases.csv"
    if not path.exists():
        return {}
    out: dict[str, list[str]] = {}
    for row in read_rows(path, GpuAliasRow):
        out.setdefault(row.alias, []).append(row.canonical_name)
    return out


def read_benchmarks(seed_dir: Path) -> list[BenchmarkRow]:
    """Every ``benchmarks*.csv`` row, files in name order (the order ``gpucost seed`` stores
    them, so a fresh database's ids are the positions here, from 1)."""
    return [
        row
        for path in sorted(seed_dir.glob("benchmarks*.csv"))
        for row in read_rows(path, BenchmarkRow)
    ]


#: How sources word a run's activation checkpointing, lower-cased, first match wins:
#: llm-foundry's table column (scripts/train/benchmarking/README.md, ``activation
#: checkpointing True/False``, quoted so in the notes, also by torchtune's technique rows);
#: torchtitan's docs/performance.md column (``activation checkpointing: full / selective op /
#: selective layer / no``), its benchmarks/llama3_h100_202412_torchtitan.md table captions
#: (``Full / Selective activation checkpointing.``: the Llama 3 train_configs' selective mode
#: is op-level) and benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (``full AC``, ``per
#: op SAC``). ``selective layer`` (every second block fully checkpointed, ac_freq 2) recomputes
#: half a forward; it is read as op-level selective, whose recompute is 36–37 % of a Llama
#: forward's matmuls (:func:`app.model.flops.selective_recompute_params`): within 4 % of its
#: training FLOPs.
CHECKPOINTING_WORDS: tuple[tuple[str, RunRecompute], ...] = (
    ("activation checkpointing true", RunRecompute(True)),
    ("activation checkpointing false", RunRecompute(False)),
    ("activation checkpointing: full", RunRecompute(True)),
    ("activation checkpointing: selective", RunRecompute(True, CheckpointGranularity.SELECTIVE)),
    ("activation checkpointing: no", RunRecompute(False)),
    ("without activation checkpointing", RunRecompute(False)),
    ("full activation checkpointing", RunRecompute(True)),
    ("selective activation checkpointing", RunRecompute(True, CheckpointGranularity.SELECTIVE)),
    ("full ac,", RunRecompute(True)),
    ("per op sac", RunRecompute(True, CheckpointGranularity.SELECTIVE)),
)


def stated_checkpointing(notes: str) -> RunRecompute | None:
    """Activation checkpointing of a benchmark run as its notes quote the source
    (:data:`CHECKPOINTING_WORDS`); ``None`` when not stated."""
    text = notes.lower()
    for words, recompute in CHECKPOINTING_WORDS:
        if words in text:
            return recompute
    return None


#: the :class:`BenchmarkPoint` fields a benchmark row holds under the same name: a
#: ``seed_data/benchmarks*.csv`` row (:class:`BenchmarkRow`) and a stored
#: ``throughput_benchmark`` row (app/db/models.py) alike
POINT_FIELDS = tuple(
    f.name for f in dataclasses.fields(BenchmarkPoint) if f.name not in ("id", "gpu")
)


def benchmark_point(row: object, point_id: int, gpu: str) -> BenchmarkPoint:
    """The core's measurement of a benchmark row (a :class:`BenchmarkRow` or a stored row:
    :data:`POINT_FIELDS`) on the catalog GPU ``gpu`` (blank where the variant is not known),
    with id ``point_id``; the precision becomes a :class:`Precision` (ValueError if unknown)."""
    values: dict[str, Any] = {name: getattr(row, name) for name in POINT_FIELDS}
    values["precision"] = Precision(values["precision"])
    values["gpu_label"] = values["gpu_label"] or ""
    return BenchmarkPoint(id=point_id, gpu=gpu, **values)


def load_points(seed_dir: Path) -> tuple[list[BenchmarkPoint], dict[int, RunRecompute]]:
    """The measurements of known scope (ids: positions in :func:`read_benchmarks`, from 1),
    and by id the activation checkpointing of runs whose notes state it."""
    points: list[BenchmarkPoint] = []
    checkpointing: dict[int, RunRecompute] = {}
    for i, row in enumerate(read_benchmarks(seed_dir), start=1):
        if row.throughput_scope == "unknown":
            continue
        stated = stated_checkpointing(row.notes)
        if stated is not None:
            checkpointing[i] = stated
        points.append(benchmark_point(row, i, row.gpu))
    return points, checkpointing


@dataclass(frozen=True, slots=True)
class SeedPreset:
    """A preset as seeded: its ``workloads.csv`` row with ``workloads_memory.csv`` laid over
    and ``preset_facts.csv`` merged into :attr:`fields` (the API's flat workload fields)."""

    slug: str
    name: str
    fields: dict[str, Any]
    benchmark_workloads: tuple[str, ...]
    benchmark_method: str | None
    units_per_sample: float | None
    throughput_unit: str | None
    source: str
    seen_on: dt.date | None
    notes: str | None

    @property
    def meta(self) -> dict[str, Any]:
        """The preset's benchmark metadata as :func:`app.model.job.build_workload` takes it."""
        return {
            "preset": self.slug,
            "benchmark_workloads": self.benchmark_workloads,
            "benchmark_method": self.benchmark_method,
            "units_per_sample": self.units_per_sample,
            "throughput_unit": self.throughput_unit,
        }


def read_preset_facts(seed_dir: Path) -> dict[str, dict[str, Any]]:
    """``preset_facts.csv``: preset → field → value (one sourced figure per row), merged
    over the preset's ``workloads.csv`` fields; empty when the file is absent.

    Raises:
        SeedError: an unknown field, a row without its source, or a value of the wrong type.
    """
    path = seed_dir / "preset_facts.csv"
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    if path.exists():
        for row in read_rows(path, PresetFactRow):
            out[row.preset][row.field] = row.value
    return out


def _memory_overlay(seed_dir: Path) -> dict[str, PresetMemoryRow]:
    path = seed_dir / "workloads_memory.csv"
    if not path.exists():
        return {}
    return {row.preset: row for row in read_rows(path, PresetMemoryRow)}


def _seed_preset(
    row: PresetRow, extra: PresetMemoryRow | None, facts: dict[str, Any]
) -> SeedPreset:
    fields = dict(row.fields)
    source = row.source
    if extra is not None:
        merged = {**fields, **extra.fields}
        # in field order, as the overlaid row's cells were read before
        fields = {k: merged[k] for k in PRESET_FIELDS if k in merged}
        source = f"{row.source} ; {extra.source}"
    fields.update(facts)
    return same_named(SeedPreset, row, slug=row.preset, fields=fields, source=source)


def load_presets(seed_dir: Path) -> list[SeedPreset]:
    """The presets of ``workloads.csv`` in file order (none when the file is absent).

    Raises:
        SeedError: a bad row, or a fact of a preset ``workloads.csv`` lacks.
    """
    path = seed_dir / "workloads.csv"
    if not path.exists():
        return []
    overlay = _memory_overlay(seed_dir)
    facts = read_preset_facts(seed_dir)
    rows = read_rows(path, PresetRow)
    unknown = sorted(set(facts) - {row.preset for row in rows})
    if unknown:
        raise SeedError(f"preset_facts.csv: unknown preset(s) {', '.join(unknown)}")
    return [_seed_preset(row, overlay.get(row.preset), facts.get(row.preset, {})) for row in rows]


def read_providers(seed_dir: Path) -> list[ProviderRow]:
    """Every ``providers*.csv`` row, files in name order."""
    return [
        row
        for path in sorted(seed_dir.glob("providers*.csv"))
        for row in read_rows(path, ProviderRow)
    ]


def read_rates(seed_dir: Path) -> list[RateRow]:
    """``currency_rates.csv``."""
    return read_rows(seed_dir / "currency_rates.csv", RateRow)


def read_offers(seed_dir: Path) -> list[OfferRow]:
    """Every ``offers*.csv`` row, files in name order."""
    return [
        row for path in sorted(seed_dir.glob("offers*.csv")) for row in read_rows(path, OfferRow)
    ]


def read_memory_cases(seed_dir: Path) -> list[MemoryCaseRow]:
    """``memory_cases.csv`` (none when absent)."""
    path = seed_dir / "memory_cases.csv"
    return read_rows(path, MemoryCaseRow) if path.exists() else []
