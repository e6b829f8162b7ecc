"""Listing pages' query parameters: parsing with every error named at once, sortable column
headers and the pager (the ``/gpus`` and ``/benchmarks`` pages and their JSON twins)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from app.interface.query import query_text_error, space_error
from app.interface.schemas import MAX_TEXT
from app.services.catalog import Listing
from app.web.i18n import N_

#: Rows per page unless ``limit`` says otherwise, and the most one page may hold.
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_OFFSET = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Param:
    """One query parameter of a listing page.

    ``label`` names it on the form and in error messages. ``kind``: ``text`` (at most
    :data:`MAX_TEXT` characters), ``int`` or ``float`` (within ``lo``..``hi``), ``choice`` (one
    of ``choices``) or ``ids`` (comma-separated ids, parsed to a list of ints); ``pattern``
    further restricts text.
    """

    name: str
    kind: str = "text"
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    hint: str = ""
    label: str = ""


def paging_params(sorts: Iterable[str]) -> tuple[Param, ...]:
    """``sort``/``order``/``limit``/``offset``/``page``/``format``, shared by the listings."""
    return (
        Param("sort", "choice", choices=tuple(sorts), label=N_("Sort column")),
        Param("order", "choice", choices=("asc", "desc"), label=N_("Sort direction")),
        Param("limit", "int", 1, MAX_LIMIT, label=N_("Rows per page")),
        Param("offset", "int", 0, MAX_OFFSET, label=N_("First row (0-based)")),
        Param("page", "int", 1, MAX_OFFSET, label=N_("Page")),
        Param("format", "choice", choices=("html", "json"), label=N_("Format")),
    )


@dataclass(frozen=True, slots=True)
class ListingQuery:
    """Parsed parameters: ``values`` typed (only those given), ``params`` the given non-empty
    ones as text in the order of the spec (the state every link of the page carries), and
    ``errors`` (parameter, reason) for every bad one, ``labels`` names them."""

    values: dict[str, Any]
    params: dict[str, str]
    errors: list[tuple[str, str]]
    #: every known parameter given, as typed (bad ones too: the form shows them to fix)
    form: dict[str, str]

    @property
    def limit(self) -> int:
        """Rows per page."""
        return int(self.values.get("limit", DEFAULT_LIMIT))

    @property
    def offset(self) -> int:
        """First row of the page (0-based): ``offset``, or ``(page - 1) × limit``."""
        if "page" in self.values:
            return min((int(self.values["page"]) - 1) * self.limit, MAX_OFFSET)
        return int(self.values.get("offset", 0))

    @property
    def wants_json(self) -> bool:
        """``format=json``: the page's JSON twin."""
        return self.values.get("format") == "json"


def _number(p: Param, text: str) -> tuple[float | None, str | None]:
    # written as the API's query parameters are (one rule: app.interface.query.query_text_error)
    why = query_text_error(text, int if p.kind == "int" else float)
    if why is not None:
        return None, why
    value: float = int(text) if p.kind == "int" else float(text)
    if not math.isfinite(value):  # 1e999
        return None, "must be a finite number"
    if p.lo is not None and value < p.lo:
        return None, f"must be at least {p.lo:g}"
    if p.hi is not None and value > p.hi:
        return None, f"must be at most {p.hi:g}"
    return value, None


def parse_listing(raw: Mapping[str, str], spec: Sequence[Param]) -> ListingQuery:
    """Check ``raw`` query parameters against ``spec``; unknown parameters are errors too,
    and every error is reported (none stops the others being checked)."""
    known = {p.name: p for p in spec}
    values: dict[str, Any] = {}
    params: dict[str, str] = {}
    form: dict[str, str] = {}
    errors: list[tuple[str, str]] = []
    for key in raw:
        if key not in known:
            errors.append((key, f"unknown parameter; this page takes {', '.join(known)}"))
    for p in spec:
        text = raw.get(p.name) or ""
        if not text:
            continue
        form[p.name] = text[:MAX_TEXT]
        error: str | None = space_error(text)
        value: Any = text
        if error:
            pass
        elif len(text) > MAX_TEXT:
            error = f"at most {MAX_TEXT} characters"
        elif p.kind in ("int", "float"):
            value, error = _number(p, text)
            if p.kind == "int" and value is not None:
                value = int(value)
        elif p.kind == "choice" and text not in p.choices:
            error = f"unknown value {text!r}; one of {', '.join(p.choices)}"
        elif p.pattern and not re.fullmatch(p.pattern, text):
            error = p.hint or "malformed"
        elif p.kind == "ids":
            value = [int(i) for i in text.split(",")]
        if error:
            errors.append((p.name, error))
        else:
            values[p.name] = value
            params[p.name] = text
    if "page" in values and "offset" in values:
        errors.append(("page", "give page or offset, not both"))
    return ListingQuery(values, params, errors, form)


def link(path: str, params: Mapping[str, str], **changes: str | None) -> str:
    """``path`` with ``params`` (in their order) updated by ``changes``; ``None`` removes one."""
    merged = dict(params)
    for k, v in changes.items():
        if v is None or v == "":
            merged.pop(k, None)
        else:
            merged[k] = v
    query = urlencode(list(merged.items()))
    return f"{path}?{query}" if query else path


@dataclass(frozen=True, slots=True)
class Column:
    """A listing column: ``key`` the sort key (``None``: not sortable), header ``label``,
    ``title`` (tooltip: units, meaning), ``numeric`` (right-aligned), ``unit`` (shown under the
    label)."""

    key: str | None
    label: str
    title: str = ""
    numeric: bool = False
    unit: str = ""


def headers(
    path: str,
    params: Mapping[str, str],
    columns: Sequence[Column],
    listing: Listing | None,
    desc_first: Mapping[str, bool],
) -> list[dict[str, Any]]:
    """Header cells: the link that sorts by each column (the sorted column's link flips its
    direction; another column starts largest first for specs and counts, smallest first for
    names and prices) and ``aria-sort`` for the sorted one. Sorting returns to the first page.
    """
    base = {k: v for k, v in params.items() if k not in ("offset", "page", "format")}
    out = []
    for col in columns:
        direction = None
        href = None
        if col.key is not None:
            if listing is not None and listing.sort == col.key:
                direction = "descending" if listing.descending else "ascending"
                flip = "asc" if listing.descending else "desc"
                href = link(path, base, sort=col.key, order=flip)
            else:
                first = "desc" if desc_first.get(col.key) else "asc"
                href = link(path, base, sort=col.key, order=first)
        out.append({"col": col, "href": href, "direction": direction})
    return out


def pager(path: str, params: Mapping[str, str], listing: Listing) -> dict[str, Any]:
    """``Showing 51–100 of 2,747`` and the first/previous/next/last links (``offset``)."""
    base = {k: v for k, v in params.items() if k not in ("offset", "page", "format")}
    limit, offset, total = listing.limit, listing.offset, listing.total
    shown = len(listing.items)

    def at(start: int) -> str:
        return link(path, base, offset=str(start) if start > 0 else None)

    last_start = max(0, (total - 1) // limit * limit)
    # an offset past the last row (``?page=99`` of 2): nothing shown, "previous" is the last page
    past_end = shown == 0 and offset > 0 and offset >= total
    return {
        "first": offset + 1 if shown else 0,
        "last": offset + shown if shown else 0,
        "total": total,
        "page": offset // limit + 1,
        "pages": max(1, math.ceil(total / limit)),
        "past_end": past_end,
        "first_url": at(0) if offset > 0 else None,
        "prev_url": (at(last_start) if past_end else at(max(0, offset - limit)))
        if offset > 0
        else None,
        "next_url": at(offset + limit) if offset + limit < total else None,
        "last_url": at(last_start) if offset + limit < total else None,
    }


# --- the catalog, benchmark and GPU pages' parameters and columns ---------------------------

#: Filters of ``/gpus`` (then the paging parameters).
CATALOG_PARAMS = (
    Param("q", label=N_("Search")),
    Param("family", label=N_("Family")),
    Param("vendor", label=N_("Vendor")),
    Param("architecture", label=N_("Architecture")),
    Param("min_vram_gib", "float", 0, 100_000, label=N_("Min VRAM (GiB)")),
    Param("max_vram_gib", "float", 0, 100_000, label=N_("Max VRAM (GiB)")),
)

#: Filters of ``/benchmarks`` (then the paging parameters).
BENCHMARK_PARAMS = (
    Param("gpu", label=N_("GPU or family")),
    Param("workload", label=N_("Workload")),
    Param("precision", label=N_("Precision")),
    Param("gpu_count", "int", 1, 100_000, label=N_("GPUs")),
    Param("source", label=N_("Source")),
    Param("q", label=N_("Search")),
    Param(
        "ids",
        "ids",
        pattern=r"\d{1,12}(,\d{1,12}){0,499}",
        hint="comma-separated measurement ids (at most 500)",
        label=N_("Measurement ids"),
    ),
    Param("status", "choice", choices=("accepted", "held"), label=N_("Status")),
)

#: Columns of the catalog table (``/gpus``), in order.
GPU_COLUMNS = (
    Column("canonical_name", N_("GPU"), N_("catalog name; aliases below")),
    Column("architecture", N_("Architecture"), N_("vendor, architecture, CUDA compute capability")),
    Column("vram_gib", N_("VRAM"), N_("memory per GPU, GiB"), True, "GiB"),
    Column("memory_bandwidth_gbs", N_("Bandwidth"), N_("memory bandwidth, GB/s"), True, "GB/s"),
    Column(
        "fp32_tflops", "FP32", N_("FP32 (non-tensor), TFLOPS, dense (no sparsity)"), True, "TFLOPS"
    ),
    Column("tf32_tflops", "TF32", N_("TF32 tensor, TFLOPS, dense (no sparsity)"), True, "TFLOPS"),
    Column("bf16_tflops", "BF16", N_("BF16 tensor, TFLOPS, dense (no sparsity)"), True, "TFLOPS"),
    Column(
        "fp16_fp32acc_tflops",
        "FP16·32",
        N_(
            "FP16 tensor with FP32 accumulate (the rate mixed-precision training runs at), "
            "TFLOPS, dense (no sparsity)"
        ),
        True,
        "TFLOPS",
    ),
    Column("fp8_tflops", "FP8", N_("FP8 tensor, TFLOPS, dense (no sparsity)"), True, "TFLOPS"),
    Column("nvlink_bandwidth_gbs", "NVLink", N_("NVLink bandwidth per GPU, GB/s"), True, "GB/s"),
    Column("release_year", N_("Year"), N_("release year; form factor and market below"), True),
    Column("offers", N_("Offers"), N_("available offers of this GPU"), True),
    Column(
        "min_price_per_gpu_hour_usd",
        N_("From"),
        N_(
            "cheapest available offer per GPU-hour, USD (other currencies converted at the "
            "stored rate)"
        ),
        True,
        "$/GPU·h",
    ),
    Column(None, N_("Source"), N_("where the specs come from")),
)

#: Columns of the measurements table (``/benchmarks``), in order.
BENCHMARK_COLUMNS = (
    Column("id", "#", N_("measurement id"), True),
    Column("gpu", N_("GPU"), N_("catalog GPU; the name as published below")),
    Column("gpu_count", N_("GPUs"), N_("GPUs in the run; interconnect below"), True),
    Column("workload", N_("Workload"), N_("benchmark label; the task below")),
    Column("precision", N_("Precision"), N_("training method and precision")),
    Column("batch_size_per_gpu", N_("Batch"), N_("batch per GPU, samples"), True, "/GPU"),
    Column("seq_len", N_("Seq"), N_("sequence length, tokens"), True),
    Column(None, N_("Published"), N_("the figure as published, with its scope"), True),
    Column("throughput_total", N_("Total"), N_("throughput of all GPUs of the run"), True),
    Column("throughput_per_gpu", N_("Per GPU"), N_("total ÷ GPUs, same unit"), True),
    Column("peak_memory_gib", N_("Peak mem"), N_("peak memory per GPU, GiB"), True, "GiB"),
    Column("framework", N_("Framework"), N_("framework and version")),
    Column("source", N_("Source"), N_("where the figure is published")),
)

#: Measurements shown on a GPU's page (all of them: ``/benchmarks?gpu=…``).
GPU_PAGE_MEASUREMENTS = 50

#: The spec list of a GPU's page: (catalog column, label, unit).
SPEC_ROWS = (
    ("vram_gib", N_("Memory"), N_("GiB")),
    ("memory_type", N_("Memory type"), ""),
    ("memory_bandwidth_gbs", N_("Memory bandwidth"), N_("GB/s")),
    ("fp32_tflops", N_("FP32 (non-tensor)"), N_("TFLOPS")),
    ("tf32_tflops", N_("TF32 tensor"), N_("TFLOPS dense")),
    ("bf16_tflops", N_("BF16 tensor"), N_("TFLOPS dense")),
    ("fp16_tflops", N_("FP16 tensor, FP16 accumulate"), N_("TFLOPS dense")),
    ("fp16_fp32acc_tflops", N_("FP16 tensor, FP32 accumulate"), N_("TFLOPS dense")),
    ("fp8_tflops", N_("FP8 tensor"), N_("TFLOPS dense")),
    ("fp8_fp32acc_tflops", N_("FP8 tensor, FP32 accumulate"), N_("TFLOPS dense")),
    ("tdp_w", N_("Board power"), N_("W")),
    ("nvlink_bandwidth_gbs", N_("NVLink"), N_("GB/s per GPU")),
    ("form_factor", N_("Form factor"), ""),
    ("market", N_("Market"), ""),
    ("release_year", N_("Released"), ""),
    ("compute_capability", N_("CUDA compute capability"), ""),
)
