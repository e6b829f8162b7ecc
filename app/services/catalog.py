"""Reference-data listings: the GPU catalog and the measured benchmarks, filtered, sorted and
paged; and one GPU with its offers and measurements (the ``/gpus`` and ``/benchmarks`` pages,
their JSON twins and ``GET /v1/gpus`` / ``GET /v1/benchmarks``)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, String, cast, func, or_, select
from sqlalchemy.orm import Session

from app.db.models import GpuModel, ThroughputBenchmark
from app.gpu_names import parse_name
from app.model.cost import UnknownCurrencyError, convert, price_per_gpu_hour
from app.services.offers import FilterError, OfferRow
from app.services.reference import ReferenceData
from app.services.snapshot import matching_offers

#: Sortable catalog columns: row key → True when a click sorts it largest first (specs,
#: counts), False when smallest first (names, prices).
GPU_SORTS: dict[str, bool] = {
    "id": False,
    "canonical_name": False,
    "vendor": False,
    "architecture": False,
    "vram_gib": True,
    "memory_bandwidth_gbs": True,
    "fp32_tflops": True,
    "tf32_tflops": True,
    "bf16_tflops": True,
    "fp16_fp32acc_tflops": True,
    "fp8_tflops": True,
    "tdp_w": True,
    "nvlink_bandwidth_gbs": True,
    "release_year": True,
    "offers": True,
    "min_price_per_gpu_hour_usd": False,
}

#: Sortable benchmark columns, as :data:`GPU_SORTS`.
BENCHMARK_SORTS: dict[str, bool] = {
    "id": False,
    "gpu": False,
    "gpu_count": True,
    "workload": False,
    "precision": False,
    "batch_size_per_gpu": True,
    "seq_len": True,
    "throughput_total": True,
    "throughput_per_gpu": True,
    "peak_memory_gib": True,
    "framework": False,
    "source": False,
    "seen_on": True,
}


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a sorted, filtered listing.

    ``items``: the rows of the page; ``total``: rows matching the filters (all pages);
    ``limit``/``offset``: the page asked for; ``sort``: the column key; ``descending``: the
    direction (rows without a value sort last either way; ties keep id order).
    """

    items: list[dict[str, Any]]
    total: int
    limit: int
    offset: int
    sort: str
    descending: bool


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _check_sort(sort: str, allowed: dict[str, bool]) -> None:
    if sort not in allowed:
        raise FilterError("sort", f"unknown column {sort!r}; one of {', '.join(allowed)}")


_PAREN = re.compile(r"\([^)]*\)")


def gpu_family(canonical_name: str) -> str:
    """The family a catalog name belongs to, as a person writes it: the name without its
    memory size, board form or memory type (``A100 SXM4 80GB`` → ``A100``, ``GeForce RTX
    4090`` stays). The same split as :func:`app.gpu_names.parse_name`, which keys the offer
    filters' family match, so a family shown here filters the offers of all its members."""
    words = []
    for word in _PAREN.sub(" ", canonical_name).split():
        parsed = parse_name(word)
        if parsed.family or not parsed.key:  # a name word, or a vendor word (GeForce)
            words.append(word)
    return " ".join(words) or canonical_name


def _gpu_rows(session: Session) -> list[dict[str, Any]]:
    rows = session.scalars(select(GpuModel).order_by(GpuModel.id))
    return [{c.name: getattr(g, c.name) for c in GpuModel.__table__.columns} for g in rows]


def search_gpus(session: Session, ref: ReferenceData, q: str | None = None) -> list[dict[str, Any]]:
    """Catalog rows (every column) by id; ``q`` keeps GPUs whose name, alias, vendor,
    architecture or market contains it (case-insensitive), or that ``q`` names
    (:meth:`ReferenceData.resolve_gpu_filter`: the one model, or every model of a family or
    of an ambiguous name: ``A100 80GB`` lists both 80 GB A100s, never one provider's pick).
    """
    out = _gpu_rows(session)
    if not q or not q.strip():
        return out
    named = set(ref.resolve_gpu_filter(q.strip()))
    return [g for g in out if _hit(g, q.strip(), named)]


def _hit(g: dict[str, Any], q: str, named: set[str]) -> bool:
    if g["canonical_name"] in named:
        return True
    needle = q.lower()
    fields = [
        g["canonical_name"],
        g["vendor"],
        g["architecture"],
        g["market"] or "",
        *(g["aliases"] or []),
    ]
    return any(needle in str(f).lower() for f in fields)


def usd_per_gpu_hour(row: OfferRow, ref: ReferenceData) -> float | None:
    """An offer's price per GPU-hour in USD (listed price ÷ GPU count, converted with the
    stored rates); ``None`` without a price, a GPU count or a rate to USD."""
    per_gpu = price_per_gpu_hour(row.price_per_hour, row.gpu_count)
    if per_gpu is None:
        return None
    try:
        return convert(per_gpu, row.currency, "USD", ref.rates)
    except UnknownCurrencyError:
        return None


def _sorted(
    rows: list[dict[str, Any]], key: str, descending: bool, tie: str = "id"
) -> list[dict[str, Any]]:
    """Rows by ``key`` (text case-insensitively), rows without a value last, ties by ``tie``."""

    def value(r: dict[str, Any]) -> Any:
        v = r.get(key)
        return v.lower() if isinstance(v, str) else v

    known = [r for r in rows if value(r) is not None]
    unknown = [r for r in rows if value(r) is None]
    known.sort(key=lambda r: r[tie])
    known.sort(key=value, reverse=descending)  # stable: ties stay in id order
    return known + sorted(unknown, key=lambda r: r[tie])


@dataclass(frozen=True, slots=True)
class Paging:
    """Which page of a listing, in which order: ``sort`` a column key (of :data:`GPU_SORTS`
    or :data:`BENCHMARK_SORTS`), largest first when ``descending``; ``limit`` rows from row
    ``offset`` (0-based)."""

    sort: str = "id"
    descending: bool = False
    limit: int = 50
    offset: int = 0


@dataclass(frozen=True, slots=True)
class GpuFilters:
    """Filters of the GPU catalog (the ``/gpus`` page and its JSON twin), each ``None`` when
    not given: ``q`` text as :func:`search_gpus`; ``family`` any GPU or family name;
    ``vendor``/``architecture`` exact, case-insensitive; ``min_vram_gib``/``max_vram_gib``
    bounds on the memory per GPU, GiB."""

    q: str | None = None
    family: str | None = None
    vendor: str | None = None
    architecture: str | None = None
    min_vram_gib: float | None = None
    max_vram_gib: float | None = None


@dataclass(frozen=True, slots=True)
class BenchmarkFilters:
    """Filters of the measured throughput (``GET /v1/benchmarks``, the ``/benchmarks`` page),
    each ``None`` when not given; :func:`search_benchmarks` says what each keeps."""

    gpu: str | None = None
    workload: str | None = None
    q: str | None = None
    ids: Sequence[int] | None = None
    status: str | None = None
    precision: str | None = None
    gpu_count: int | None = None
    source: str | None = None


def gpu_catalog(
    session: Session, ref: ReferenceData, filters: GpuFilters, paging: Paging
) -> Listing:
    """The catalog filtered, sorted and paged.

    Each row has every catalog column plus ``family`` (:func:`gpu_family`), ``offers`` (the
    number of available, non-suspect offers of this model) and ``min_price_per_gpu_hour_usd``
    (the cheapest of them per GPU-hour, USD/GPU-hour, converted with the stored rates; ``None``
    when none is priced). Filters: ``q`` as :func:`search_gpus`; ``family`` any GPU or family
    name (``A100`` keeps every A100, as the offer filters do:
    :meth:`ReferenceData.resolve_gpu_filter`); ``vendor``/``architecture`` exact,
    case-insensitive; ``min_vram_gib``/``max_vram_gib`` bounds on the memory per GPU, GiB.
    ``sort`` is a key of :data:`GPU_SORTS`.

    Raises:
        FilterError: unknown family, vendor, architecture or sort column (``field`` names it).
    """
    _check_sort(paging.sort, GPU_SORTS)
    f = filters
    family, vendor, architecture, q = f.family, f.vendor, f.architecture, f.q
    catalog = _gpu_rows(session)
    rows = list(catalog)
    if family:
        members = set(ref.resolve_gpu_filter(family.strip()))
        if not members:
            raise FilterError("family", f"no GPU or GPU family {family!r} in the catalog")
        rows = [g for g in rows if g["canonical_name"] in members]
    for field, wanted in (("vendor", vendor), ("architecture", architecture)):
        if wanted:
            known = sorted({g[field] for g in catalog})
            if wanted.lower() not in {k.lower() for k in known}:
                raise FilterError(field, f"unknown {field} {wanted!r}; one of {', '.join(known)}")
            rows = [g for g in rows if g[field].lower() == wanted.lower()]
    if f.min_vram_gib is not None:
        rows = [g for g in rows if g["vram_gib"] >= f.min_vram_gib]
    if f.max_vram_gib is not None:
        rows = [g for g in rows if g["vram_gib"] <= f.max_vram_gib]
    if q and q.strip():
        named = set(ref.resolve_gpu_filter(q.strip()))
        rows = [g for g in rows if _hit(g, q.strip(), named)]
    counts: dict[int, int] = {}
    cheapest: dict[int, float] = {}
    for o in matching_offers(session, {"available_only": True}, ref):
        if o.gpu_model_id is None:
            continue
        counts[o.gpu_model_id] = counts.get(o.gpu_model_id, 0) + 1
        usd = usd_per_gpu_hour(o, ref)
        if usd is not None and usd < cheapest.get(o.gpu_model_id, math.inf):
            cheapest[o.gpu_model_id] = usd
    for g in rows:
        g["family"] = gpu_family(g["canonical_name"])
        g["offers"] = counts.get(g["id"], 0)
        g["min_price_per_gpu_hour_usd"] = cheapest.get(g["id"])
    ordered = _sorted(rows, paging.sort, paging.descending)
    page = ordered[paging.offset : paging.offset + paging.limit]
    return Listing(page, len(ordered), paging.limit, paging.offset, paging.sort, paging.descending)


def catalog_choices(session: Session) -> dict[str, list[str]]:
    """The values the catalog filters offer: families (with two or more members first, then
    the rest), vendors and architectures, each sorted."""
    rows = _gpu_rows(session)
    families: dict[str, int] = {}
    for g in rows:
        fam = gpu_family(g["canonical_name"])
        families[fam] = families.get(fam, 0) + 1
    return {
        "family": sorted(families, key=lambda f: (families[f] < 2, f.lower())),
        "vendor": sorted({g["vendor"] for g in rows}),
        "architecture": sorted({g["architecture"] for g in rows}),
    }


def find_gpu(session: Session, ref: ReferenceData, key: str) -> dict[str, Any] | None:
    """One catalog row (every column, plus ``family``) by id (``12``) or by any name or alias
    the catalog knows (``H100 SXM 80GB``, ``NVIDIA A100-SXM4-80GB``); ``None`` when unknown or
    when the name leaves several models open (``A100``, ``RTX 6000``:
    :meth:`ReferenceData.resolve_gpu`, never a provider's convention)."""
    rows = _gpu_rows(session)
    numeric = key.isascii() and key.isdigit() and len(key) <= 18
    found = next((g for g in rows if numeric and g["id"] == int(key)), None)
    if found is None:
        name = ref.resolve_gpu(key.strip())
        found = next((g for g in rows if g["canonical_name"] == name), None) if name else None
    return {**found, "family": gpu_family(found["canonical_name"])} if found else None


def gpu_offers(
    session: Session, ref: ReferenceData, canonical_name: str
) -> list[tuple[OfferRow, float | None]]:
    """The available, non-suspect offers of one catalog GPU with their USD per GPU-hour
    (:func:`usd_per_gpu_hour`), cheapest per GPU-hour first, unpriced last, ties by id."""
    rows = matching_offers(session, {"gpu": canonical_name, "available_only": True}, ref)
    priced = [(r, usd_per_gpu_hour(r, ref)) for r in rows]
    return sorted(priced, key=lambda p: (p[1] is None, p[1] or 0.0, p[0].id))


def _benchmark_sort_column(key: str) -> ColumnElement[Any]:
    tb = ThroughputBenchmark
    if key == "gpu":
        return (
            select(GpuModel.canonical_name).where(GpuModel.id == tb.gpu_model_id).scalar_subquery()
        )
    if key == "throughput_per_gpu":
        return tb.throughput_total / tb.gpu_count
    column: ColumnElement[Any] = getattr(tb, key)
    return column


def search_benchmarks(
    session: Session, ref: ReferenceData, filters: BenchmarkFilters, paging: Paging
) -> tuple[list[dict[str, Any]], int]:
    """Measured throughput rows, filtered and sorted; returns (page of rows, total matching).

    ``gpu`` is any catalog name or alias, or a family name standing for every model of the
    family it fits (:meth:`ReferenceData.resolve_gpu_filter`: ``A100``, ``A100 80GB``);
    ``workload`` a benchmark label (e.g. "ResNet-50 v1.5") or a preset slug, which selects the
    labels that preset stands for (either in any case: ``resnet-50 v1.5`` matched no row);
    ``q`` a case-insensitive substring of the label, task, GPU as published, framework,
    precision or source; ``ids`` selects measurements by id (those an estimate cites);
    ``status`` ``accepted`` or ``held`` (submitted rows held for review); ``precision``,
    ``source`` values of those columns (:func:`benchmark_choices`), in any case; ``gpu_count`` the
    number of GPUs of the run. ``sort`` is a key of :data:`BENCHMARK_SORTS` (default id order;
    rows without a value last, ties by id). Each row gains ``gpu`` (canonical name),
    ``throughput_per_gpu`` (``throughput_total`` ÷ ``gpu_count``, in ``throughput_unit``) and
    ``submitted`` (sent by ``gpucost bench``).

    Raises:
        FilterError: unknown GPU, precision, source or sort column (``field`` names it).
    """
    _check_sort(paging.sort, BENCHMARK_SORTS)
    f = filters
    gpu, workload, q = f.gpu, f.workload, f.q
    tb = ThroughputBenchmark
    stmt = select(tb)
    if gpu:
        names = ref.resolve_gpu_filter(gpu.strip())
        if not names:
            raise FilterError("gpu", f"unknown GPU {gpu!r}")
        stmt = stmt.where(tb.gpu_model_id.in_([ref.gpu_ids_by_name[n] for n in names]))
    if workload:
        preset = ref.presets.get(workload) or next(
            (p for s, p in ref.presets.items() if s.lower() == workload.lower()), None
        )
        if preset is not None:
            stmt = stmt.where(tb.workload.in_(list(preset.benchmark_workloads)))
        else:
            stmt = stmt.where(func.lower(tb.workload) == workload.lower())
    if f.ids:
        stmt = stmt.where(tb.id.in_(f.ids))
    if f.status:
        stmt = stmt.where(tb.status == f.status)
    for field, value, column in (
        ("precision", f.precision, tb.precision),
        ("source", f.source, tb.source),
    ):
        if value:
            known = list(session.scalars(select(column).distinct().order_by(column)))
            hits = [value] if value in known else [k for k in known if k.lower() == value.lower()]
            if len(hits) != 1:
                raise FilterError(field, f"unknown {field} {value!r}; one of {', '.join(known)}")
            stmt = stmt.where(column == hits[0])
    if f.gpu_count is not None:
        stmt = stmt.where(tb.gpu_count == f.gpu_count)
    if q and q.strip():
        stmt = stmt.where(_benchmark_text(q.strip()))
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    by = _benchmark_sort_column(paging.sort)
    order = (by.desc() if paging.descending else by.asc()).nulls_last()
    rows = session.scalars(stmt.order_by(order, tb.id).offset(paging.offset).limit(paging.limit))
    return [_benchmark_row(b, ref) for b in rows], total


def _benchmark_text(text: str) -> ColumnElement[bool]:
    """``text`` as a case-insensitive substring of the label, task, GPU as published,
    framework, precision or source of a measurement."""
    tb = ThroughputBenchmark
    pattern = _like(text)
    columns = (
        tb.workload,
        tb.task,
        tb.gpu_label,
        tb.framework,
        tb.precision_label,
        tb.source,
        tb.source_ref,
    )
    return or_(*(func.lower(cast(c, String)).like(pattern, escape="\\") for c in columns))


def _benchmark_row(b: ThroughputBenchmark, ref: ReferenceData) -> dict[str, Any]:
    """A stored measurement as a listing row: every column, plus ``gpu`` (canonical name),
    ``throughput_per_gpu`` and ``submitted``."""
    item = {c.name: getattr(b, c.name) for c in ThroughputBenchmark.__table__.columns}
    item["gpu"] = ref.gpu_names_by_id.get(b.gpu_model_id) if b.gpu_model_id else None
    item["throughput_per_gpu"] = b.throughput_total / b.gpu_count
    item["submitted"] = b.source == "submitted"
    return item


def benchmark_listing(
    session: Session, ref: ReferenceData, filters: BenchmarkFilters, paging: Paging
) -> Listing:
    """:func:`search_benchmarks` as a :class:`Listing` (same filters, same errors)."""
    items, total = search_benchmarks(session, ref, filters, paging)
    return Listing(items, total, paging.limit, paging.offset, paging.sort, paging.descending)


def benchmark_choices(session: Session) -> dict[str, Sequence[Any]]:
    """The values the benchmark filters offer, each sorted: workload labels, precisions,
    sources and GPU counts of the stored measurements."""
    tb = ThroughputBenchmark

    def distinct(column: Any) -> list[Any]:
        return list(session.scalars(select(column).distinct().order_by(column)))

    return {
        "workload": distinct(tb.workload),
        "precision": distinct(tb.precision),
        "source": distinct(tb.source),
        "gpu_count": distinct(tb.gpu_count),
    }


def benchmark_labels(session: Session) -> list[str]:
    """The distinct workload labels of the measurements, sorted."""
    return sorted(session.scalars(select(ThroughputBenchmark.workload).distinct()))
