"""HTML pages. Each page parses the same flat parameters and makes the same service call as its
JSON twin (linked from the page), then renders the answer with a Jinja template.

``/``              ranking form, results table and cost/time chart   → ``GET /v1/rank``
``/offers/{id}``   one offer: estimate explained, price history      → ``GET /v1/offers/{id}``
``/gpus``          GPU catalog, searchable                           → ``GET /v1/gpus``
``/benchmarks``    measured throughput, searchable                   → ``GET /v1/benchmarks``

Bad input never raises: the page shows the form again with a message naming the field
(status 400), while the JSON twin answers the same request with its 400.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlencode

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException, ValidationException
from litestar.params import PathParameter, QueryParameter
from litestar.response import Template
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_500_INTERNAL_SERVER_ERROR
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
    provide_reference,
    provide_session,
    provide_settings,
    rank_response,
)
from app.api.schemas import MAX_TEXT, OfferDetailResponse, RankedOfferOut, RankResponse
from app.services.catalog import benchmark_labels, search_benchmarks, search_gpus
from app.services.estimates import HardwareError
from app.services.freshness import ProviderFreshness, provider_freshness
from app.services.offers import FilterError, count_old_offers
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

#: Labels of fields for error messages ("Micro-batch per GPU (micro_batch_size): …").
FIELD_LABELS = {f.name: f.label for f in all_form_fields()} | {
    "preset": "Preset",
    "order": "Row order",
    "q": "Search",
    "ids": "Benchmark ids",
}
NVLINK_LABELS = {"nvlink": "NVLink", "nvswitch": "NVSwitch", "sxm": "SXM", "pcie": "PCIe"}
BASIS_TEXT = {
    "measured": "Measured: published runs of this workload on this GPU model (the measurements "
    "below); a different GPU count goes through the multi-GPU scaling model.",
    "scaled": "Scaled: measurements of this workload on other GPU models, scaled to this GPU "
    "by the ratio of their compute and memory bandwidth (or, for a workload that "
    "departs from its preset, the preset's estimate scaled by training FLOPs).",
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
        elif key in ("params", "samples_per_epoch") and isinstance(value, int | float):
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
        old, total = count_old_offers(session, settings.offer_stale_after_days)
        out.update(
            old_offers=old, offers=total, offer_stale_after_days=settings.offer_stale_after_days
        )
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
            "nvlink_labels": NVLINK_LABELS,
            "banner": self._banner(session, settings),
        }
        return Template(
            "offer.html", context=context, status_code=HTTP_400_BAD_REQUEST if errors else 200
        )

    @get("/gpus", sync_to_thread=True, name="gpus_page")
    def gpus_page(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
        q: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
    ) -> Template:
        """The GPU catalog with sources, searchable by name, alias, vendor or architecture."""
        params = {"q": q.strip()} if q and q.strip() else {}
        context = {
            "title": "GPU catalog",
            "gpus": search_gpus(session, ref, q),
            "q": q or "",
            "total": len(ref.gpus),
            "json_url": url("/v1/gpus", params, ("q",)),
            "banner": self._banner(session, settings),
        }
        return Template("gpus.html", context=context)

    @get("/benchmarks", sync_to_thread=True, name="benchmarks_page")
    def benchmarks_page(
        self,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
        gpu: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        workload: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        q: Annotated[str | None, QueryParameter(max_length=MAX_TEXT)] = None,
        ids: Annotated[str | None, QueryParameter(pattern=r"^\d{1,12}(,\d{1,12}){0,499}$")] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=5000)] = 200,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0,
    ) -> Template:
        """Measured training throughput with sources, filtered and searchable."""
        params = {
            k: str(v).strip()
            for k, v in (
                ("gpu", gpu),
                ("workload", workload),
                ("q", q),
                ("ids", ids),
                ("limit", limit if limit != 200 else None),
                ("offset", offset or None),
            )
            if v is not None and str(v).strip()
        }
        keys = ("gpu", "workload", "q", "ids", "limit", "offset")
        errors: list[tuple[str, str]] = []
        items: list[dict[str, Any]] = []
        total = 0
        try:
            items, total = search_benchmarks(
                session,
                ref,
                gpu=params.get("gpu"),
                workload=params.get("workload"),
                q=params.get("q"),
                ids=[int(i) for i in ids.split(",")] if ids else None,
                limit=limit,
                offset=offset,
            )
        except FilterError as exc:
            errors = [(exc.field, exc.reason)]
        labels = benchmark_labels(session)
        json_params = {**params, "limit": str(limit)} if "limit" not in params else params
        context = {
            "title": "Measured training throughput",
            "items": items,
            "total": total,
            "params": params,
            "limit": limit,
            "offset": offset,
            "errors": _error_list(errors),
            "labels": labels,
            "presets": list(ref.presets.values()),
            "gpu_names": sorted(ref.gpus),
            "json_url": url("/v1/benchmarks", json_params, keys),
            "prev_url": url(
                "/benchmarks",
                params,
                keys,
                offset=str(max(0, offset - limit)) if offset - limit > 0 else None,
            )
            if offset
            else None,
            "next_url": url("/benchmarks", params, keys, offset=str(offset + limit))
            if offset + limit < total
            else None,
            "banner": self._banner(session, settings),
        }
        return Template(
            "benchmarks.html", context=context, status_code=HTTP_400_BAD_REQUEST if errors else 200
        )


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
