"""Typed row schemas for every ``seed_data/*.csv``, and the one function that reads them.

Each schema names a file's columns and how each cell is read (:mod:`app.data.cells`: the
rules ``gpucost seed`` has always applied, so the seeded database is unchanged); every row
carries a non-blank ``source`` (provenance; team rule).

Workload presets (``workloads.csv``, ``workloads_memory.csv``) carry the core workload's
outside-given fields (:data:`app.model.types.WORKLOAD_INPUTS`) as columns; they are read by
:func:`workload_cells` into :attr:`PresetRow.fields`.

:func:`read_rows` raises :class:`SeedError` naming the file, the line and the column of the
first bad cell (``gpus.csv:14: column vram_gib: could not convert string to float: 'x'``).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator

from app.data.cells import (
    PRESET_FIELDS,
    Date,
    Float,
    Int,
    OptDate,
    OptDecimal,
    OptFloat,
    OptInt,
    OptText,
    PipeList,
    TrueFlag,
    YesFlag,
    cell_value,
    decimal,
    split_list,
    workload_cells,
)

__all__ = ["PRESET_FIELDS", "SeedError", "read_rows", "split_list", "workload_cells"]


class SeedError(ValueError):
    """A seed file is malformed or a row lacks its source (the message names the file, and
    the line and column where there is one)."""


class SeedRow(BaseModel):
    """A row of a seed file: where it was read, and its source (never blank)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: columns read into computed fields (besides the declared ones)
    extra_columns: ClassVar[frozenset[str]] = frozenset()
    #: declared fields that are not columns
    not_columns: ClassVar[frozenset[str]] = frozenset({"file", "line"})

    file: str
    #: the line of the file the row ends on (1 is the header)
    line: int
    source: str

    @field_validator("source")
    @classmethod
    def _has_source(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("row has no source")
        return value

    @classmethod
    def columns(cls) -> frozenset[str]:
        """The column names this schema reads."""
        return frozenset(cls.model_fields) - cls.not_columns | cls.extra_columns

    @classmethod
    def required_columns(cls) -> frozenset[str]:
        """Columns the file must have."""
        return frozenset(
            n for n, f in cls.model_fields.items() if f.is_required() and n not in cls.not_columns
        )


class ProviderRow(SeedRow):
    """``providers*.csv``: a provider we list offers of."""

    slug: str
    name: str
    homepage_url: OptText = None
    kind: Annotated[str, BeforeValidator(lambda v: v or "cloud")] = "cloud"


class GpuRow(SeedRow):
    """``gpus.csv`` (and ``gpus_manual.csv``, merged into it by tools/import_shared.py): one
    GPU model's datasheet. Bandwidths GB/s, compute dense TFLOP/s, VRAM GiB, power W."""

    canonical_name: str
    vendor: str
    architecture: str
    compute_capability: OptText
    vram_gib: OptFloat
    memory_type: OptText
    memory_bandwidth_gbs: OptFloat
    fp32_tflops: OptFloat
    tf32_tflops: OptFloat
    fp16_tflops: OptFloat
    bf16_tflops: OptFloat
    fp8_tflops: OptFloat
    fp16_fp32acc_tflops: OptFloat
    fp8_fp32acc_tflops: OptFloat
    tdp_w: OptFloat
    nvlink: YesFlag
    nvlink_bandwidth_gbs: OptFloat
    form_factor: OptText
    release_year: OptInt
    market: OptText
    aliases: PipeList
    uncertain_fields: PipeList
    seen_on: OptDate
    notes: OptText


class GpuAliasRow(SeedRow):
    """``gpu_aliases.csv``: another name a GPU model goes by."""

    alias: str
    canonical_name: str
    seen_on: OptDate = None


#: the columns of a benchmark row that identify it across re-seeds (``seed_key``), as written
BENCH_KEY_COLUMNS = (
    "source",
    "source_ref",
    "gpu_label",
    "gpu_count",
    "workload",
    "task",
    "precision_label",
    "batch_size_per_gpu",
    "throughput",
    "notes",
)


class BenchmarkRow(SeedRow):
    """``benchmarks*.csv``: one normalised published throughput measurement. Throughput in
    ``throughput_unit`` per second (``throughput_total``: all GPUs together), memory GiB."""

    not_columns = frozenset({"file", "line", "key_cells"})

    gpu: str
    gpu_label: str
    gpu_count: Int
    interconnect: OptText
    workload: str
    task: str
    method: str
    precision: str
    precision_label: str
    batch_size_per_gpu: OptInt
    seq_len: OptInt
    throughput: Float
    throughput_scope: str
    throughput_total: Float
    throughput_unit: str
    peak_memory_gib: OptFloat
    framework: str
    framework_version: OptText
    suspect: TrueFlag
    source_ref: str
    seen_on: OptDate
    published_on: OptText = None
    #: the notes as written ("" when none): part of the row's identity (``key_cells``)
    notes: str
    #: :data:`BENCH_KEY_COLUMNS` as written (the seed key hashes them)
    key_cells: tuple[str, ...]


class PresetRow(SeedRow):
    """``workloads.csv``: a workload preset, its workload fields (:attr:`fields`) and the
    published measurements it stands for."""

    extra_columns = frozenset(PRESET_FIELDS)
    not_columns = frozenset({"file", "line", "fields"})

    preset: str
    name: str
    benchmark_workloads: PipeList = ()
    benchmark_method: OptText = None
    units_per_sample: OptFloat = None
    throughput_unit: OptText = None
    seen_on: OptDate = None
    notes: OptText = None
    #: the non-empty workload cells, typed (:func:`workload_cells`)
    fields: dict[str, Any]


class PresetMemoryRow(SeedRow):
    """``workloads_memory.csv``: memory set-up fields laid over a preset's (non-empty cells
    only; its source is appended to the preset's)."""

    extra_columns = frozenset(PRESET_FIELDS)
    not_columns = frozenset({"file", "line", "fields"})

    preset: str
    seen_on: OptDate = None
    notes: OptText = None
    fields: dict[str, Any]


class PresetFactRow(SeedRow):
    """``preset_facts.csv``: one sourced workload figure of a preset, in ``unit``."""

    preset: str
    field: str
    #: the value read as the field's type (:data:`PRESET_FIELDS`)
    value: Any
    unit: OptText = None
    seen_on: OptDate = None
    notes: OptText = None


class RateRow(SeedRow):
    """``currency_rates.csv``: units of ``quote`` per ``base`` published on ``seen_on``."""

    base: str
    quote: str
    rate: Annotated[Decimal, BeforeValidator(lambda v: decimal(str(v)))]
    seen_on: Date
    notes: OptText = None


class OfferRow(SeedRow):
    """``offers*.csv``: one observed price of one offer (rows sharing provider × offer key ×
    region × billing are its history). Prices per hour in ``currency``; sizes GiB/GB."""

    provider: str
    offer_key: str
    instance_type: str
    region: str
    gpu_name_raw: str
    gpu_count: Float
    vram_gib_per_gpu: OptFloat
    vcpus: OptFloat
    cpu_model: OptText
    ram_gib: OptFloat
    system_disk_gb: OptFloat
    data_disk_gb: OptFloat
    disk_type: OptText
    max_cuda: OptText
    driver_version: OptText
    interconnect: OptText
    network_up_mbps: OptFloat
    network_down_mbps: OptFloat
    billing: str
    price_per_hour: OptDecimal
    currency: str
    price_is_estimate: TrueFlag
    published_price: OptText = None
    published_price_unit: OptText = None
    #: orders the offer's history (rows without a date first)
    seen_on: OptDate
    notes: OptText
    #: as written; :func:`app.db.seed.price_kind` checks it
    price_kind: str = ""


class MeasuredRow(SeedRow):
    """A row of a measured quantity: besides its ``source``, the ``units`` the source states
    it in, the ``system`` it was measured on, the date it was seen and notes (all optional)."""

    units: OptText = None
    system: OptText = None
    seen_on: OptDate = None
    notes: OptText = None


class LinkRow(MeasuredRow):
    """``link_bandwidth.csv``: one quantity of one link class (see
    :func:`app.model.comm.link_table` for the quantities and their units)."""

    link_class: str
    quantity: str
    value: Float


class Int8SpeedRow(MeasuredRow):
    """``int8_matmul_speed.csv``: the measured speed of bitsandbytes' LLM.int8() matmul
    relative to a 16-bit one at one model dimension (see
    :func:`app.model.int8_base.int8_speed_table`)."""

    model_dim: Int
    ffn_dim: OptInt = None
    speed_vs_fp16: Float
    method: str


class LauncherRow(SeedRow):
    """``launchers.csv``: how a launcher names one of our providers."""

    provider: str
    launcher: str
    cloud: str
    instance_types: YesFlag
    seen_on: OptDate = None


class LauncherGpuRow(SeedRow):
    """``launcher_gpus.csv``: a launcher's name for a catalog GPU (``provider`` empty: any)."""

    gpu: str
    launcher: str
    provider: str
    name: str
    seen_on: OptDate = None


class TorchBuildRow(SeedRow):
    """``torch_builds.csv``: one PyTorch wheel index and what it runs on."""

    index: str
    cuda: str
    min_compute_capability: str
    max_compute_capability: str
    min_driver_linux: str
    seen_on: OptDate = None


class MemoryCaseRow(SeedRow):
    """``memory_cases.csv``: one published peak-memory case. The workload columns are kept as
    written in :attr:`cells` (:func:`app.calibrate.validate.case_workload` rewrites some
    before reading them as workload fields)."""

    not_columns = frozenset({"file", "line", "cells"})
    extra_columns = frozenset(
        {
            *PRESET_FIELDS,
            "gpu",
            "gpu_count",
            "observed_gib",
            "tied_embeddings",
            "lora_targets",
            "cpu_offload",
            "framework",
            "assumptions",
            "seen_on",
            "notes",
            "source_group",
            "gpu_vram_gib",
            "scope",
            "dropout",
        }
    )

    case_id: str
    description: str
    metric: str
    outcome: str
    #: every cell as written, by column
    cells: dict[str, str]


def _with_fields(values: dict[str, Any]) -> dict[str, Any]:
    """A preset row's workload cells moved into ``fields``."""
    fields = workload_cells(values)
    rest = {k: v for k, v in values.items() if k not in PRESET_FIELDS}
    return {**rest, "fields": fields}


def _memory_fields(values: dict[str, Any]) -> dict[str, Any]:
    """``workloads_memory.csv``: its non-empty workload cells (as ``gpucost seed`` lays
    them over the preset's row)."""
    return _with_fields({k: v for k, v in values.items() if k in ("file", "line") or v})


def _fact(values: dict[str, Any]) -> dict[str, Any]:
    kind = PRESET_FIELDS.get(values.get("field") or "")
    if kind is None:
        raise ValueError(f"column field: unknown workload field {values.get('field')!r}")
    try:
        return {**values, "value": cell_value(values.get("value"), kind)}
    except ValueError as exc:
        raise ValueError(f"column value: {values['field']}: {exc}") from exc


def _memory_case(values: dict[str, Any]) -> dict[str, Any]:
    keep = ("file", "line", "source", *MemoryCaseRow.model_fields)
    out = {k: v for k, v in values.items() if k in keep}
    out["cells"] = {k: v for k, v in values.items() if k not in ("file", "line")}
    return out


def _bench(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, "key_cells": tuple(str(values.get(k)) for k in BENCH_KEY_COLUMNS)}


#: per schema: how a file's cells become the schema's fields (before validation)
_PREPARE: dict[type[SeedRow], Callable[[dict[str, Any]], dict[str, Any]]] = {
    PresetRow: _with_fields,
    PresetMemoryRow: _memory_fields,
    PresetFactRow: _fact,
    MemoryCaseRow: _memory_case,
    BenchmarkRow: _bench,
}

R = TypeVar("R", bound=SeedRow)


def _check_header(path: Path, header: Sequence[str] | None, schema: type[SeedRow]) -> None:
    columns = set(header or ())
    missing = sorted(schema.required_columns() - columns)
    unknown = sorted(columns - schema.columns())
    if missing:
        raise SeedError(f"{path.name}:1: column {missing[0]}: missing from the header")
    if unknown:
        raise SeedError(f"{path.name}:1: column {unknown[0]}: not a column of {schema.__name__}")


def _row_error(path: Path, line: int, exc: ValidationError | ValueError) -> SeedError:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        column = ".".join(str(part) for part in err["loc"]) or "?"
        message = str(err["msg"]).removeprefix("Value error, ")
        return SeedError(f"{path.name}:{line}: column {column}: {message}")
    return SeedError(f"{path.name}:{line}: {exc}")


def read_rows(path: Path, schema: type[R]) -> list[R]:
    """Every row of the seed file ``path`` as ``schema`` rows, in file order.

    Raises:
        SeedError: a header without a required column or with an unknown one, a row with more
            cells than the header (an unquoted comma or quote in a text cell), or a bad cell
            (the message names the file, the line and the column).
        FileNotFoundError: no such file.
    """
    prepare = _PREPARE.get(schema, lambda values: values)
    out: list[R] = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        _check_header(path, reader.fieldnames, schema)
        for cells in reader:
            if None in cells:
                raise SeedError(
                    f"{path.name}:{reader.line_num}: {len(cells[None])} cell(s) past the header's"
                    " last column (quote text cells that hold a comma or a quote)"
                )
            values: dict[str, Any] = dict(cells)
            values.update(file=path.name, line=reader.line_num)
            try:
                out.append(schema.model_validate(prepare(values)))
            except (ValidationError, ValueError) as exc:
                raise _row_error(path, reader.line_num, exc) from exc
    return out
