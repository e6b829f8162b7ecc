"""What the listing pages (``/gpus``, ``/benchmarks``) share: parse a listing's parameters,
fetch its page through its typed filters and render it, or answer its JSON twin
(``format=json``: the page's rows, counts and order, or the API's 400 shape)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from litestar import Request, Response
from litestar.response import Template
from litestar.status_codes import HTTP_400_BAD_REQUEST
from sqlalchemy.orm import Session

from app.interface.deps import error_answer
from app.interface.query import ParamError
from app.services.catalog import (
    BENCHMARK_SORTS,
    GPU_SORTS,
    BenchmarkFilters,
    GpuFilters,
    Listing,
    Paging,
    benchmark_listing,
    gpu_catalog,
)
from app.services.offers import FilterError
from app.services.reference import ReferenceData
from app.web.i18n import translations
from app.web.listing import (
    BENCHMARK_COLUMNS,
    BENCHMARK_PARAMS,
    CATALOG_PARAMS,
    GPU_COLUMNS,
    Column,
    Param,
    headers,
    link,
    pager,
    paging_params,
    parse_listing,
)
from app.web.pages.common import (
    FIELD_LABELS,
    PageEnv,
    error_list,
    gpu_url,
    page_language,
    page_status,
    raw_query,
)


@dataclass(frozen=True, slots=True)
class ListingKind:
    """What differs between the listing pages: URL path, template, filter parameters (each
    a field of ``filters``, the typed filters ``fetch`` takes), sortable columns with their
    first direction, columns."""

    path: str
    template: str
    params: tuple[Param, ...]
    sorts: Mapping[str, bool]
    columns: tuple[Column, ...]
    filters: type[GpuFilters] | type[BenchmarkFilters]
    fetch: Callable[[Session, ReferenceData, Any, Paging], Listing]


#: The GPU catalog's listing (``/gpus``)
CATALOG = ListingKind(
    "/gpus", "gpus.html", CATALOG_PARAMS, GPU_SORTS, GPU_COLUMNS, GpuFilters, gpu_catalog
)
#: The measurements' listing (``/benchmarks``)
BENCHMARKS = ListingKind(
    "/benchmarks",
    "benchmarks.html",
    BENCHMARK_PARAMS,
    BENCHMARK_SORTS,
    BENCHMARK_COLUMNS,
    BenchmarkFilters,
    benchmark_listing,
)


def select_values(context: Mapping[str, Any]) -> dict[str, list[str]]:
    """The values each select of a listing page offers: its ``options`` (the filter choices
    of the data), and for ``workload`` the presets' slugs too (``/benchmarks`` lists both)."""
    out = {k: [v for v, _ in pairs] for k, pairs in context.get("options", {}).items()}
    if "workload" in out and "presets" in context:
        out["workload"] = [*out["workload"], *(p.slug for p in context["presets"])]
    return out


def canonical_options(
    raw: Mapping[str, str], selects: Mapping[str, Sequence[str]]
) -> dict[str, str]:
    """``raw`` with a select's value written in another case replaced by the one option it
    names (``vendor=nvidia`` → ``NVIDIA``, ``workload=ResNet50-ImageNet`` →
    ``resnet50-imagenet``): the select then shows it and the next submit keeps it. The
    catalog's vendor and architecture filters compared in any case but their selects showed
    "any", so the next submit dropped the filter; the measurements' workload, precision and
    source matched only as stored (0 rows or a 400). Left as written: values with
    surrounding whitespace (refused), matching no option or more than one."""
    out = dict(raw)
    for key, values in selects.items():
        text = raw.get(key)
        if not text or text in values or text != text.strip():
            continue
        hits = [v for v in values if v.lower() == text.lower()]
        if len(hits) == 1:
            out[key] = hits[0]
    return out


def listing_page(
    request: Request, env: PageEnv, kind: ListingKind, context: dict[str, Any]
) -> Response[Any]:
    """Parse a listing's parameters, fetch its page and render it, or (``format=json``)
    answer its JSON twin; 400 naming every bad parameter."""
    spec = (*kind.params, *paging_params(kind.sorts))
    labels = {p.name: p.label or p.name for p in spec} | {"lang": FIELD_LABELS["lang"]}
    language = page_language(request)
    raw = {k: v for k, v in raw_query(request).items() if k != "lang"}
    query = parse_listing(canonical_options(raw, select_values(context)), spec)
    errors = list(query.errors)
    if language.error and not query.wants_json:
        errors.append(("lang", language.error))
    listing: Listing | None = None
    if not errors:
        v = query.values
        paging = Paging(
            sort=v.get("sort", "id"),
            descending=descending(v, kind.sorts),
            limit=query.limit,
            offset=query.offset,
        )
        try:
            filters = kind.filters(**{p.name: v[p.name] for p in kind.params if p.name in v})
            listing = kind.fetch(env.session, env.ref, filters, paging)
        except FilterError as exc:
            errors = [(exc.field, exc.reason)]
    if query.wants_json and "format" not in {k for k, _ in errors}:
        return json_listing(listing, errors)
    params = query.params
    context = {
        **context,
        "listing": listing,
        "params": params,
        "form": query.form,
        "labels": labels,
        "errors": error_list(errors, language.lang, labels),
        "title": translations(language.lang).gettext(context["title"]),
        "filtered": any(p.name in params for p in kind.params),
        "headers": headers(kind.path, params, kind.columns, listing, kind.sorts),
        "pager": pager(kind.path, params, listing) if listing else None,
        "gpu_url": gpu_url,
        "json_url": link(kind.path, {**params, "format": "json"}),
        "listing_path": kind.path,
        "banner": env.banner(),
        **language.context(request),
    }
    return Template(kind.template, context=context, status_code=page_status(errors))


def options(choices: Mapping[str, Sequence[Any]]) -> dict[str, list[tuple[str, str]]]:
    """Filter choices as (value, text) pairs for the selects."""
    return {k: [(str(v), str(v)) for v in values] for k, values in choices.items()}


def descending(values: Mapping[str, Any], sorts: Mapping[str, bool]) -> bool:
    """``order=desc``/``asc`` as given; without it, the sort column's natural direction."""
    if "order" in values:
        return bool(values["order"] == "desc")
    return bool(sorts.get(values.get("sort", "id"), False))


def listing_json(listing: Listing) -> dict[str, Any]:
    """A listing's rows, counts and order as its JSON twin gives them."""
    return {
        "items": listing.items,
        "total": listing.total,
        "limit": listing.limit,
        "offset": listing.offset,
        "sort": listing.sort,
        "order": "desc" if listing.descending else "asc",
    }


def json_listing(listing: Listing | None, errors: list[tuple[str, str]]) -> Response[Any]:
    """A listing's JSON twin: the page's rows, counts and order; or the API's 400 shape."""
    if errors or listing is None:
        return error_answer(
            HTTP_400_BAD_REQUEST, "Invalid query parameters", ParamError(errors).as_extra()
        )
    return Response(listing_json(listing))
