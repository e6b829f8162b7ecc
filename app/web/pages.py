"""HTML pages. Each page parses the same flat parameters and makes the same service call as its
JSON twin (linked from the page), then renders the answer with a Jinja template.

``/``              ranking form, results table and cost/time chart   → ``GET /v1/rank``
``/offers/{id}``   one offer: estimate explained, price history      → ``GET /v1/offers/{id}``
``/gpus``          GPU catalog: filters, sortable columns, pages     → ``/gpus?format=json``
``/gpus/{name}``   one GPU: specs and sources, offers, measurements  → ``?format=json``
``/benchmarks``    measured throughput: filters, sorting, pages      → ``/benchmarks?format=json``

The listings (``/gpus``, ``/benchmarks``) take more than ``GET /v1/gpus`` and
``GET /v1/benchmarks`` do (``sort``/``order``, paging, more filters), so their JSON twin is the
page's own URL with ``format=json`` (rows, ``total``, ``limit``, ``offset``, ``sort``,
``order``): the same service call, the same rows as the page shows.

Bad input never raises: the page shows the form again with a message naming the field
(status 400), while the JSON twin answers the same request with its 400.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.params import PathParameter
from litestar.response import Redirect, Template
from litestar.status_codes import (
    HTTP_303_SEE_OTHER,
    HTTP_400_BAD_REQUEST,
    HTTP_404_NOT_FOUND,
    HTTP_500_INTERNAL_SERVER_ERROR,
)
from sqlalchemy.orm import Session

from app.api.query import (
    OFFER_PARAMS,
    RANK_PARAMS,
    WORKLOAD_PARAMS,
    OfferQuery,
    ParamError,
    flat_field,
    parse_offer_query,
    parse_rank_query,
)
from app.api.responses import (
    MAX_ID,
    offer_detail,
    offer_out,
    provide_reference,
    provide_session,
    provide_settings,
    rank_response,
)
from app.api.schemas import MAX_TEXT, OfferDetailResponse, RankedOfferOut, RankResponse
from app.launch import launch_links
from app.services.catalog import (
    BENCHMARK_SORTS,
    GPU_SORTS,
    Listing,
    benchmark_choices,
    benchmark_listing,
    catalog_choices,
    find_gpu,
    gpu_catalog,
    gpu_offers,
)
from app.services.estimates import HardwareError
from app.services.freshness import ProviderFreshness, provider_freshness
from app.services.offers import FilterError, stale_provider_ids
from app.services.providers import provider_coverage
from app.services.reference import ReferenceData
from app.services.workloads import WorkloadError
from app.settings import Settings
from app.web import charts
from app.web.format import hours, money, money_short, num
from app.web.forms import (
    COLUMNS,
    EXTRA_ORDER_COLUMNS,
    FILTERS_ADVANCED,
    FILTERS_MAIN,
    OPTIONS,
    SORT_LABELS,
    WORKLOAD_ADVANCED,
    WORKLOAD_MAIN,
    all_form_fields,
    throughput_unit,
)
from app.web.listing import (
    BENCHMARK_COLUMNS,
    BENCHMARK_PARAMS,
    CATALOG_PARAMS,
    GPU_COLUMNS,
    GPU_PAGE_MEASUREMENTS,
    SPEC_ROWS,
    Column,
    Param,
    headers,
    link,
    pager,
    paging_params,
    parse_listing,
)

#: Labels of fields for error messages ("Micro-batch per GPU (micro_batch_size): …").
FIELD_LABELS = {f.name: f.label for f in all_form_fields()} | {
    "preset": "Preset",
    "order": "Row order",
    "q": "Search",
    "ids": "Benchmark ids",
}
NVLINK_LABELS = {"nvlink": "NVLink", "nvswitch": "NVSwitch", "sxm": "SXM", "pcie": "PCIe"}
BASIS_TEXT = {
    "measured": "Measured: the per-GPU figure is the published measurement of this workload on "
    "this GPU model at this software level, precision and micro-batch (their mean; the "
    "measurements below); a different GPU count goes through the multi-GPU scaling model.",
    "scaled": "Scaled: measurements moved by the model: this GPU's own at another software "
    "level, micro-batch or precision (the notes give both figures), or other GPU models' "
    "scaled by compute and memory bandwidth, or the preset's estimate scaled by training "
    "FLOPs for a workload that departs from it, or moved by submitted runs.",
    "flops_model": "FLOPs model: no usable measurement, so training FLOPs per sample divided "
    "by the GPU's peak tensor throughput at a typical utilisation (MFU) for "
    "this model family. The least certain basis.",
}
MEMORY_PARTS = (
    ("weights", "Weights"),
    ("gradients", "Gradients"),
    ("optimizer", "Optimizer state"),
    ("activations", "Activations"),
    ("overhead", "CUDA context, workspace, fragmentation"),
)


def url(
    path: str, params: Mapping[str, str], keys: tuple[str, ...] = RANK_PARAMS, **changes: str | None
) -> str:
    """``path`` with ``params`` (only ``keys``, in their order) updated by ``changes``; a
    change to ``None`` removes the parameter."""
    merged = {k: v for k, v in params.items() if k in keys}
    for k, v in changes.items():
        if v is None or v == "":
            merged.pop(k, None)
        else:
            merged[k] = v
    query = urlencode([(k, merged[k]) for k in keys if k in merged])
    return f"{path}?{query}" if query else path


def human_count(n: float) -> str:
    """25557032 → ``25.6M``; 8030261248 → ``8.03B``."""
    for factor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= factor:
            return f"{num(n / factor, 3)}{suffix}"
    return num(n, 3)


def preset_display(fields: Mapping[str, Any]) -> dict[str, str]:
    """A preset's values as the form shows them in placeholders (``25.6M``, ``on``)."""
    labels = {f.name: dict(f.choices) for f in all_form_fields() if f.kind == "select"}
    out = {}
    for key, value in fields.items():
        if isinstance(value, bool):
            text = "on" if value else "off"
        elif key in ("params", "samples_per_epoch", "lookup_params") and isinstance(
            value, int | float
        ):
            text = human_count(value)
        elif isinstance(value, float):
            text = num(value, 4)
        else:
            text = str(value)
        out[key] = labels.get(key, {}).get(
            text if not isinstance(value, bool) else str(value).lower(), text
        )
    return out


def banner(entries: list[ProviderFreshness], stale_after_hours: float) -> dict[str, Any]:
    """The freshness banner: per-provider lines plus a one-line summary."""
    refreshed = [e for e in entries if e.last_ok_at is not None]
    seed_only = [e for e in entries if e.last_ok_at is None]
    seen = sorted(e.seen_on for e in seed_only if e.seen_on is not None)
    last_ok = [e.last_ok_at for e in refreshed if e.last_ok_at is not None]
    return {
        "entries": entries,
        "stale": [e for e in entries if e.stale],
        "refreshed": refreshed,
        "seed_only": seed_only,
        "seed_oldest": seen[0] if seen else None,
        "seed_newest": seen[-1] if seen else None,
        "seed_undated": sum(1 for e in seed_only if e.seen_on is None),
        "latest_ok": max(last_ok) if last_ok else None,
        "stale_after_hours": stale_after_hours,
    }


def _offer_label(r: RankedOfferOut, currency: str) -> str:
    o, e = r.offer, r.estimate
    gpu = o.gpu or o.gpu_name_raw
    return (
        f"#{r.rank} {o.provider_name} · {o.instance_type} · {gpu} × {o.gpu_count:g} — "
        f"{money(e.cost_per_epoch, currency)} per epoch, {hours(e.epoch_hours)} per epoch"
        + (" (predicted OOM)" if e.oom_risk == "high" else "")
    )


def rank_chart(result: RankResponse, link_params: Mapping[str, str]) -> charts.ChartLayout:
    """Cost per epoch against epoch time: the table's offers plus the rest of the frontier."""
    data = []
    shown = {r.offer.id for r in result.results}
    for r in [*result.results, *result.frontier]:
        if r.estimate.cost_per_epoch is None:
            continue
        classes = ["pt"]
        if r.pareto_optimal:
            classes.append("frontier")
        if r.estimate.oom_risk == "high":
            classes.append("oom")
        if r.offer.id not in shown:
            classes.append("extra")
        data.append(
            charts.Datum(
                key=r.offer.id,
                x=r.estimate.epoch_hours,
                y=r.estimate.cost_per_epoch,
                label=_offer_label(r, result.currency),
                href=url(f"/offers/{r.offer.id}", link_params, OFFER_PARAMS),
                classes=" ".join(classes),
                frontier=r.pareto_optimal,
            )
        )
    layout = charts.scatter(
        data,
        x_format=hours,
        y_format=lambda v: money_short(v, result.currency),
        x_marks=charts.DURATION_MARKS_H,
        x_label="epoch time",
        y_label=f"cost per epoch ({result.currency})",
    )
    layout.extra.update(
        has_extra=any("extra" in p.classes for p in layout.points),
        has_oom=any("oom" in p.classes for p in layout.points),
    )
    return layout


def column_headers(
    params: Mapping[str, str],
    sort: str,
    order: str | None,
    columns: tuple[Any, ...] = COLUMNS,
) -> list[dict[str, Any]]:
    """Header cells with the link that sorts by the column (toggling its direction)."""
    out = []
    for col in columns:
        direction = None
        if order and order.removeprefix("-") == col.key:
            direction = "descending" if order.startswith("-") else "ascending"
        elif not order and col.rank_key == sort:
            direction = "descending" if sort == "samples_per_s" else "ascending"
        if col.key == "rank":
            href = url("/", params, order=None)
        elif direction is not None:
            flipped = ("" if direction == "descending" else "-") + col.key
            href = url("/", params, order=flipped)
        elif col.rank_key is not None:
            href = url("/", params, sort=col.rank_key, order=None)
        else:
            href = url("/", params, order=("-" if col.desc_first else "") + col.key)
        out.append({"col": col, "href": href, "direction": direction})
    return out


def _with_unknown(keys: tuple[str, ...], form: Mapping[str, str]) -> tuple[str, ...]:
    """``keys`` plus any unknown parameters given, so the JSON twin gets the same request."""
    return (*keys, *(k for k in form if k not in keys))


def _error_list(errors: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"field": k, "label": FIELD_LABELS.get(k, k), "message": m} for k, m in errors]


def _raw(request: Request) -> dict[str, str]:
    return dict(request.query_params.items())


def _html_error(request: Request, exc: Exception) -> Response[Any]:
    """Errors on pages render as HTML (never a traceback)."""
    if isinstance(exc, WorkloadError | FilterError | HardwareError):
        status, message = HTTP_400_BAD_REQUEST, f"Invalid {flat_field(exc.field)}: {exc.reason}"
    elif isinstance(exc, HTTPException):
        status, message = exc.status_code, str(exc.detail)
        extra = exc.extra if isinstance(exc, ValidationException) else None
        if isinstance(extra, list) and extra:
            keys = ", ".join(str(e.get("key")) for e in extra if isinstance(e, dict))
            message = f"{message} ({keys})" if keys else message
    else:
        status = HTTP_500_INTERNAL_SERVER_ERROR
    if status >= 500:
        request.logger.exception("error on page %s", request.url.path)
        message = "Something went wrong on our side; the error was logged."
    return Template(
        "error.html",
        context={
            "title": f"Error {status}",
            "status": status,
            "message": message,
            "json_url": None,
            "banner": None,
        },
        status_code=status,
    )


class PageController(Controller):
    """The team's web pages."""

    path = "/"
    include_in_schema = False
    dependencies = {  # noqa: RUF012 - Litestar reads this class attribute
        "session": Provide(provide_session),
        "ref": Provide(provide_reference),
        "settings": Provide(provide_settings, sync_to_thread=False),
    }
    exception_handlers = dict.fromkeys(
        (HTTPException, ValidationException, WorkloadError, FilterError, HardwareError, Exception),
        _html_error,
    )

    def _banner(self, session: Session, settings: Settings) -> dict[str, Any]:
        out = banner(
            provider_freshness(session, settings.stale_after_hours), settings.stale_after_hours
        )
        coverage = provider_coverage(session, settings.stale_after_hours)
        out.update(price_ages=coverage.price_ages, coverage={c.slug: c for c in coverage.providers})
        return out

    @get("/", sync_to_thread=True, name="rank_page")
    def rank_page(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Template:
        """Workload form, filters, ranked offers and the cost/time chart."""
        raw = _raw(request)
        form = {k: v.strip() for k, v in raw.items() if isinstance(v, str) and v.strip()}
        errors: list[tuple[str, str]] = []
        result: RankResponse | None = None
        params: dict[str, str] = {k: v for k, v in form.items() if k in RANK_PARAMS}
        sort, order = "cost_per_epoch", None
        no_workload = False
        try:
            query = parse_rank_query(raw)
        except ParamError as exc:
            errors = exc.errors
        else:
            params, sort, order = query.params, query.request.sort, query.order
            if any(k in params for k in WORKLOAD_PARAMS):
                try:
                    result = rank_response(query.request, session, ref, settings, order=order)
                except (WorkloadError, FilterError) as exc:
                    found = getattr(exc, "errors", [(exc.field, exc.reason)])
                    errors = [(flat_field(f), r) for f, r in found]
            elif form:
                # the form was submitted without a workload: say what to pick, all at once
                no_workload = True
                errors = [
                    (
                        "preset",
                        "pick a preset (e.g. Llama 3 8B QLoRA or ResNet-50), or describe the "
                        "model: give params and the model shape",
                    )
                ]
        fresh = self._banner(session, settings)
        unit = "samples/s"
        if result is not None:
            unit = throughput_unit(
                any(r.estimate.tokens_per_s is not None for r in result.results),
                bool(result.workload.get("image_size")),
            )
        preset = ref.presets.get(form.get("preset", ""))
        currency = result.currency if result else params.get("currency", "USD")
        overrides = [k for k in WORKLOAD_PARAMS if k in params and k != "preset"]
        workload_title = (
            "your workload"
            if preset is None
            else (
                f"{preset.name}, with {', '.join(overrides)} changed" if overrides else preset.name
            )
        )
        currencies = ref.currencies
        context = {
            "title": "Compare GPU offers for a training job",
            "form": form,
            "params": params,
            "errors": _error_list(errors),
            "error_fields": {k for k, _ in errors},
            "result": result,
            "currency": currency,
            "sort": sort,
            "order": order,
            "chart": rank_chart(result, params) if result else None,
            "headers": column_headers(params, sort, order),
            "extra_orders": column_headers(params, sort, order, EXTRA_ORDER_COLUMNS),
            "unit": unit,
            "no_workload": no_workload,
            "json_url": url("/v1/rank", form, _with_unknown(RANK_PARAMS, form)),
            "offer_url": lambda offer_id: url(f"/offers/{offer_id}", params, OFFER_PARAMS),
            "launch_links": launch_links(params, OFFER_PARAMS, settings.seed_dir),
            "more_url": url("/", params, limit=str(min(1000, len(result.results) + 100)))
            if result and result.total_offers > len(result.results)
            else None,
            "presets": list(ref.presets.values()),
            "preset": preset,
            "preset_values": preset_display(preset.fields) if preset else {},
            "preset_json": {slug: preset_display(p.fields) for slug, p in ref.presets.items()},
            "workload_main": WORKLOAD_MAIN,
            "workload_advanced": WORKLOAD_ADVANCED,
            "filters_main": FILTERS_MAIN,
            "filters_advanced": FILTERS_ADVANCED,
            "options": OPTIONS,
            "providers": [(e.slug, e.name) for e in fresh["entries"] if e.offers],
            "currency_choices": [(c, c) for c in currencies],
            "workload_title": workload_title,
            "sort_labels": SORT_LABELS,
            "column_labels": {c.key: c.label for c in (*COLUMNS, *EXTRA_ORDER_COLUMNS)}
            | {"samples_per_s": unit},
            "gpu_names": sorted(ref.gpus),
            "nvlink_labels": NVLINK_LABELS,
            "banner": fresh,
        }
        return Template(
            "rank.html", context=context, status_code=HTTP_400_BAD_REQUEST if errors else 200
        )

    @get("/offers/{offer_id:int}", sync_to_thread=True, name="offer_page")
    def offer_page(
        self,
        offer_id: Annotated[int, PathParameter(ge=1, le=MAX_ID)],
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Template:
        """One offer: details, the estimate explained, price history."""
        raw = _raw(request)
        form = {k: v.strip() for k, v in raw.items() if isinstance(v, str) and v.strip()}
        errors: list[tuple[str, str]] = []
        try:
            query = parse_offer_query(raw)
        except ParamError as exc:
            errors = exc.errors
            query = OfferQuery(workload=None, currency="USD", params={})
        try:
            detail = offer_detail(offer_id, query, session, ref, settings)
        except (WorkloadError, FilterError) as exc:
            errors = [(flat_field(exc.field), exc.reason)]
            query = OfferQuery(workload=None, currency="USD", params={})
            detail = offer_detail(offer_id, query, session, ref, settings)
        params = (
            query.params if not errors else {k: v for k, v in form.items() if k in OFFER_PARAMS}
        )
        preset = (
            ref.presets.get(str(detail.workload.get("preset") or "")) if detail.workload else None
        )
        overrides = [k for k in WORKLOAD_PARAMS if k in params and k != "preset"]
        workload_title = (
            "your workload"
            if preset is None
            else (
                f"{preset.name}, with {', '.join(overrides)} changed" if overrides else preset.name
            )
        )
        context = {
            "title": f"{detail.offer.provider_name} {detail.offer.instance_type}",
            "d": detail,
            "o": detail.offer,
            "e": detail.estimate,
            "form": form,
            "workload_title": workload_title,
            "params": params,
            "errors": _error_list(errors),
            "error_fields": {k for k, _ in errors},
            "preset_values": {},
            "json_url": url(f"/v1/offers/{offer_id}", form, _with_unknown(OFFER_PARAMS, form)),
            "rank_url": url("/", params, OFFER_PARAMS),
            "presets": list(ref.presets.values()),
            "currencies": ref.currencies,
            "memory": _memory(detail),
            "basis_text": BASIS_TEXT,
            "price_chart": _price_chart(detail),
            "gpu_url": gpu_url,
            "nvlink_labels": NVLINK_LABELS,
            "banner": self._banner(session, settings),
        }
        return Template(
            "offer.html", context=context, status_code=HTTP_400_BAD_REQUEST if errors else 200
        )

    def _listing_page(
        self,
        request: Request,
        session: Session,
        ref: ReferenceData,
        settings: Settings,
        kind: ListingKind,
        context: dict[str, Any],
    ) -> Response[Any]:
        """Parse a listing's parameters, fetch its page and render it, or (``format=json``)
        answer its JSON twin; 400 naming every bad parameter."""
        spec = (*kind.params, *paging_params(kind.sorts))
        labels = {p.name: p.label or p.name for p in spec}
        query = parse_listing(_raw(request), spec)
        errors = list(query.errors)
        listing: Listing | None = None
        if not errors:
            v = query.values
            try:
                listing = kind.fetch(
                    session,
                    ref,
                    **{p.name: v[p.name] for p in kind.params if p.name in v},
                    sort=v.get("sort", "id"),
                    descending=_descending(v, kind.sorts),
                    limit=query.limit,
                    offset=query.offset,
                )
            except FilterError as exc:
                errors = [(exc.field, exc.reason)]
        if query.wants_json and "format" not in {k for k, _ in errors}:
            return _json_listing(listing, errors)
        params = query.params
        context = {
            **context,
            "listing": listing,
            "params": params,
            "form": query.form,
            "labels": labels,
            "errors": [{"field": k, "label": labels.get(k, k), "message": m} for k, m in errors],
            "filtered": any(p.name in params for p in kind.params),
            "headers": headers(kind.path, params, kind.columns, listing, kind.sorts),
            "pager": pager(kind.path, params, listing) if listing else None,
            "gpu_url": gpu_url,
            "json_url": link(kind.path, {**params, "format": "json"}),
            "banner": self._banner(session, settings),
        }
        return Template(
            kind.template, context=context, status_code=HTTP_400_BAD_REQUEST if errors else 200
        )

    @get("/gpus", sync_to_thread=True, name="gpus_page")
    def gpus_page(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        """The GPU catalog: filtered by family, vendor, architecture, memory or text; sorted
        by any column; paged. JSON twin: the same URL with ``format=json``."""
        choices = catalog_choices(session)
        context = {
            "title": "GPU catalog",
            "choices": choices,
            "options": _options(choices),
            "catalog_size": len(ref.gpus),
        }
        return self._listing_page(request, session, ref, settings, CATALOG, context)

    @get("/gpus/{key:str}", sync_to_thread=True, name="gpu_page")
    def gpu_page(
        self,
        key: Annotated[str, PathParameter(max_length=MAX_TEXT)],
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        """One GPU (by id, name or alias): its specs with units and sources, its offers
        (cheapest per GPU-hour first) and its measurements; a family name (``A100``) redirects
        to the catalog filtered by that family. JSON twin: the same URL with ``format=json``."""
        query = parse_listing(_raw(request), paging_params(())[-1:])
        if query.errors:
            if query.wants_json or _raw(request).get("format") == "json":
                return _json_listing(None, query.errors)
            raise ValidationException(
                detail="Invalid query parameters", extra=ParamError(query.errors).as_extra()
            )
        family = ref.resolve_gpu_filter(key.strip())
        if len(family) > 1:
            # a family name (``A100``) stands for several models: the catalog lists them
            wanted = {"family": key.strip(), **({"format": "json"} if query.wants_json else {})}
            return Redirect(link("/gpus", wanted), status_code=HTTP_303_SEE_OTHER)
        gpu = find_gpu(session, ref, key)
        if gpu is None:
            missing = f"No GPU {key!r} in the catalog (see /gpus)"
            if query.wants_json:
                return Response(
                    {"status_code": HTTP_404_NOT_FOUND, "detail": missing},
                    status_code=HTTP_404_NOT_FOUND,
                )
            raise NotFoundException(detail=missing)
        name = gpu["canonical_name"]
        stale = stale_provider_ids(session, settings.stale_after_hours)
        offers = [(offer_out(row, ref, stale), usd) for row, usd in gpu_offers(session, ref, name)]
        measurements = benchmark_listing(
            session, ref, gpu=name, sort="workload", limit=GPU_PAGE_MEASUREMENTS
        )
        if query.wants_json:
            return Response(
                {
                    "gpu": gpu,
                    "offers": [
                        {**o.model_dump(mode="json"), "price_per_gpu_hour_usd": usd}
                        for o, usd in offers
                    ],
                    "benchmarks": _listing_json(measurements),
                }
            )
        siblings = [n for n in ref.resolve_gpu_filter(gpu["family"]) if n != name]
        return Template(
            "gpu.html",
            context={
                "title": name,
                "g": gpu,
                "specs": [(label, gpu.get(k), unit, k) for k, label, unit in SPEC_ROWS],
                "offers": offers,
                "measurements": measurements,
                "family": siblings,
                "gpu_url": gpu_url,
                "nvlink_labels": NVLINK_LABELS,
                "json_url": link(gpu_url(name), {"format": "json"}),
                "banner": self._banner(session, settings),
            },
        )

    @get("/benchmarks", sync_to_thread=True, name="benchmarks_page")
    def benchmarks_page(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        """Measured training throughput with sources: filtered by GPU (or family), workload,
        precision, GPU count, source or text; sorted by any column; paged. JSON twin: the same
        URL with ``format=json``."""
        choices = benchmark_choices(session)
        context = {
            "title": "Measured training throughput",
            "choices": choices,
            "options": _options(choices),
            "presets": list(ref.presets.values()),
            "gpu_names": sorted(ref.gpus),
            "families": catalog_choices(session)["family"],
        }
        return self._listing_page(request, session, ref, settings, BENCHMARKS, context)


def gpu_url(name: str) -> str:
    """The page of one catalog GPU (``/gpus/H100%20SXM%2080GB``)."""
    return "/gpus/" + quote(name, safe="")


@dataclass(frozen=True, slots=True)
class ListingKind:
    """What differs between the listing pages: URL path, template, filter parameters (each
    passed to ``fetch`` by its name), sortable columns with their first direction, columns."""

    path: str
    template: str
    params: tuple[Param, ...]
    sorts: Mapping[str, bool]
    columns: tuple[Column, ...]
    fetch: Callable[..., Listing]


CATALOG = ListingKind("/gpus", "gpus.html", CATALOG_PARAMS, GPU_SORTS, GPU_COLUMNS, gpu_catalog)
BENCHMARKS = ListingKind(
    "/benchmarks",
    "benchmarks.html",
    BENCHMARK_PARAMS,
    BENCHMARK_SORTS,
    BENCHMARK_COLUMNS,
    benchmark_listing,
)


def _options(choices: Mapping[str, Sequence[Any]]) -> dict[str, list[tuple[str, str]]]:
    """Filter choices as (value, text) pairs for the selects."""
    return {k: [(str(v), str(v)) for v in values] for k, values in choices.items()}


def _descending(values: Mapping[str, Any], sorts: Mapping[str, bool]) -> bool:
    """``order=desc``/``asc`` as given; without it, the sort column's natural direction."""
    if "order" in values:
        return bool(values["order"] == "desc")
    return bool(sorts.get(values.get("sort", "id"), False))


def _listing_json(listing: Listing) -> dict[str, Any]:
    return {
        "items": listing.items,
        "total": listing.total,
        "limit": listing.limit,
        "offset": listing.offset,
        "sort": listing.sort,
        "order": "desc" if listing.descending else "asc",
    }


def _json_listing(listing: Listing | None, errors: list[tuple[str, str]]) -> Response[Any]:
    """A listing's JSON twin: the page's rows, counts and order; or the API's 400 shape."""
    if errors or listing is None:
        return Response(
            {
                "status_code": HTTP_400_BAD_REQUEST,
                "detail": "Invalid query parameters",
                "extra": ParamError(errors).as_extra(),
            },
            status_code=HTTP_400_BAD_REQUEST,
        )
    return Response(_listing_json(listing))


def _memory(detail: OfferDetailResponse) -> dict[str, Any] | None:
    e = detail.estimate
    if e is None:
        return None
    m = e.memory
    parts = [(label, key, float(getattr(m, f"{key}_gib"))) for key, label in MEMORY_PARTS]
    segments, usable_at, scale = charts.memory_bar(parts, m.usable_vram_gib)
    return {
        "segments": segments,
        "usable_at": usable_at,
        "scale": scale,
        "usable": m.usable_vram_gib,
        "peak": e.peak_memory_gib,
        "vram": detail.offer.vram_gib_per_gpu,
    }


def _price_chart(detail: OfferDetailResponse) -> charts.ChartLayout | None:
    currency = detail.offer.currency
    obs = [
        (dt.datetime.fromisoformat(p.observed_at), p.price_per_hour)
        for p in detail.price_history
        if p.price_per_hour is not None and p.currency == currency
    ]
    if not obs:
        return None
    return charts.timeline(
        obs,
        y_format=lambda v: money_short(v, currency),
        y_label=f"price per hour ({currency})",
        now=dt.datetime.now(dt.UTC),
    )
