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
from litestar.di import NamedDependency
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

from app.interface.deps import DEPENDENCIES, MAX_ID
from app.interface.query import (
    OFFER_PARAMS,
    RANK_PARAMS,
    WORKLOAD_PARAMS,
    OfferQuery,
    ParamError,
    flat_field,
    parse_offer_query,
    parse_rank_query,
)
from app.interface.responses import offer_detail, offer_out, rank_response
from app.interface.schemas import (
    MAX_TEXT,
    OfferDetailResponse,
    RankedOfferOut,
    RankResponse,
    WorkloadIn,
)
from app.launch import launch_links
from app.services.catalog import (
    BENCHMARK_SORTS,
    GPU_SORTS,
    BenchmarkFilters,
    GpuFilters,
    Listing,
    Paging,
    benchmark_choices,
    benchmark_listing,
    catalog_choices,
    find_gpu,
    gpu_catalog,
    gpu_offers,
)
from app.services.estimates import HardwareError
from app.services.freshness import ProviderFreshness, provider_freshness
from app.services.offers import FilterError
from app.services.providers import provider_coverage
from app.services.reference import ReferenceData
from app.services.snapshot import per_version, stale_providers
from app.services.workloads import WorkloadError
from app.settings import Settings
from app.web import charts
from app.web.format import money_short
from app.web.forms import (
    BILLING_LABELS,
    FILTERS_ADVANCED,
    FILTERS_MAIN,
    OPTIONS,
    SORT_LABELS,
    WORKLOAD_ADVANCED,
    WORKLOAD_MAIN,
    all_form_fields,
    preset_form_values,
)
from app.web.i18n import LANG_NAMES, N_, accept_language, parse_lang, translations
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
from app.web.messages import form_texts
from app.web.picker import picker_groups, short_name
from app.web.rank_context import (
    RANK_PAGE_PARAMS,
    gpu_chips,
    ranked_context,
    strip_preset_values,
    url,
    workload_title,
)
from app.web.ranking_view import MAX_PINS, all_oom, parse_pins, warning_label, warning_level

#: Labels of fields for error messages ("Micro-batch per GPU (micro_batch_size): …").
FIELD_LABELS = {f.name: f.label for f in all_form_fields()} | {
    "preset": N_("Preset"),
    "order": N_("Row order"),
    "q": N_("Search"),
    "ids": N_("Benchmark ids"),
    "lang": N_("Language"),
    "pin": N_("Pinned offers"),
    "base": N_("Preset the form showed"),
}
NVLINK_LABELS = {"nvlink": "NVLink", "nvswitch": "NVSwitch", "sxm": "SXM", "pcie": "PCIe"}
BASIS_TEXT = {
    "measured": N_(
        "Measured: the per-GPU figure is the published measurement of this workload on "
        "this GPU model at this software level, precision and micro-batch (their mean; the "
        "measurements below); a different GPU count goes through the multi-GPU scaling model."
    ),
    "scaled": N_(
        "Scaled: measurements moved by the model: this GPU's own at another software "
        "level, micro-batch or precision (the notes give both figures), or other GPU models' "
        "scaled by compute and memory bandwidth, or the preset's estimate scaled by training "
        "FLOPs for a workload that departs from it, or moved by submitted runs."
    ),
    "flops_model": N_(
        "FLOPs model: no usable measurement, so training FLOPs per sample divided "
        "by the GPU's peak tensor throughput at a typical utilisation (MFU) for "
        "this model family. The least certain basis."
    ),
}
MEMORY_PARTS = (
    ("weights", N_("Weights")),
    ("gradients", N_("Gradients")),
    ("optimizer", N_("Optimizer state")),
    ("activations", N_("Activations")),
    ("overhead", N_("CUDA context, workspace, fragmentation")),
)
#: Parameters of the pages themselves (not of the API): the language, the ranking page's
#: pinned rows and the preset whose values its form showed.
PAGE_PARAMS = ("lang", "pin", "base")
#: The JSON twin of the ranking page before a job is entered: what that page offers, the
#: presets its picker lists (``GET /v1/workloads``), each with the fields it supplies. Linking
#: ``/v1/rank`` there answered a 400 (no workload) to a page that answered 200.
EMPTY_RANK_TWIN = "/v1/workloads"


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


def _with_unknown(keys: tuple[str, ...], form: Mapping[str, str]) -> tuple[str, ...]:
    """``keys`` plus any unknown parameters given, so the JSON twin gets the same request."""
    return (*keys, *(k for k in form if k not in keys and k not in PAGE_PARAMS))


def _error_list(
    errors: list[tuple[str, str]], lang: str, labels: Mapping[str, str] = FIELD_LABELS
) -> list[dict[str, str]]:
    """Errors for the page: each field's label in the page's language (an unknown parameter
    is named as given)."""
    _ = translations(lang).gettext
    return [
        {"field": k, "label": _(labels[k]) if k in labels else k, "message": m} for k, m in errors
    ]


def _raw(request: Request) -> dict[str, str]:
    return dict(request.query_params.items())


def _given(raw: Mapping[str, str]) -> dict[str, str]:
    """The non-empty parameters, stripped: what the form shows again."""
    return {k: v.strip() for k, v in raw.items() if isinstance(v, str) and v.strip()}


@dataclass(frozen=True, slots=True)
class PageLanguage:
    """The page's language: ``lang`` (``en``/``zh-CN``); ``param`` the ``lang`` the URL gave
    (which every link then keeps), ``None`` when it came from ``Accept-Language``; ``error``
    for a ``lang`` value no page speaks."""

    lang: str
    param: str | None
    error: str | None = None

    def context(self, request: Request) -> dict[str, Any]:
        """What every template needs for its language and the language switch."""
        query = [(k, v) for k, v in request.query_params.items() if k != "lang"]
        here = request.url.path + (f"?{urlencode(query)}" if query else "")
        return {
            "lang": self.lang,
            "lang_param": self.param,
            "html_lang": self.lang,
            "page_url": here,
            "lang_names": LANG_NAMES,
        }


def page_language(request: Request) -> PageLanguage:
    """``?lang=`` (kept by the page's links), else the browser's ``Accept-Language``."""
    given = request.query_params.get("lang")
    browser = accept_language(request.headers.get("accept-language"))
    if not given:
        return PageLanguage(browser, None)
    lang = parse_lang(given)
    if lang is None:
        return PageLanguage(browser, None, f"must be one of {', '.join(LANG_NAMES)}")
    return PageLanguage(lang, lang)


def _html_error(request: Request, exc: Exception) -> Response[Any]:
    """Errors on pages render as HTML (never a traceback)."""
    language = page_language(request)
    _ = translations(language.lang).gettext
    if isinstance(exc, WorkloadError | FilterError | HardwareError):
        status = HTTP_400_BAD_REQUEST
        message = _("Invalid {field}: {reason}").format(
            field=flat_field(exc.field), reason=exc.reason
        )
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
        message = _("Something went wrong on our side; the error was logged.")
    return Template(
        "error.html",
        context={
            "title": _("Error {status}").format(status=status),
            "status": status,
            "message": message,
            "json_url": None,
            "banner": None,
            **language.context(request),
        },
        status_code=status,
    )


class PageController(Controller):
    """The team's web pages."""

    path = "/"
    include_in_schema = False
    dependencies = DEPENDENCIES
    exception_handlers = dict.fromkeys(
        (HTTPException, ValidationException, WorkloadError, FilterError, HardwareError, Exception),
        _html_error,
    )

    def _banner(self, session: Session, ref: ReferenceData, settings: Settings) -> dict[str, Any]:
        """The freshness banner, made once per catalog version (and minute: ages move)."""

        def make() -> dict[str, Any]:
            hours = settings.stale_after_hours
            out = banner(provider_freshness(session, hours), hours)
            coverage = provider_coverage(session, hours)
            out.update(
                price_ages=coverage.price_ages, coverage={c.slug: c for c in coverage.providers}
            )
            return out

        return per_version(ref, "banner", settings.stale_after_hours, make)

    @get("/", sync_to_thread=True, name="rank_page")
    def rank_page(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Template | Redirect:
        """Workload form, filters; after ranking: the answer, the table, the chart.
        ``format=json`` (how the listings' twins are asked for) is sent to the JSON twin,
        ``GET /v1/rank`` with the same parameters (303); with no job parameters, the empty
        page's twin :data:`EMPTY_RANK_TWIN` (the presets)."""
        if request.query_params.get("format") == "json":
            rest = {k: v for k, v in _raw(request).items() if k not in ("format", *PAGE_PARAMS)}
            twin = link("/v1/rank", rest) if any(rest.values()) else EMPTY_RANK_TWIN
            return Redirect(twin, status_code=HTTP_303_SEE_OTHER)
        language = page_language(request)
        _ = translations(language.lang).gettext
        given = {k: v for k, v in _raw(request).items() if k not in PAGE_PARAMS}
        base = ref.presets.get(_raw(request).get("base", ""))
        raw = strip_preset_values(given, base, all_form_fields())
        form = _given(raw)
        errors: list[tuple[str, str]] = []
        if language.error:
            errors.append(("lang", language.error))
        pins, pin_error = parse_pins(request.query_params.get("pin"))
        if pin_error:
            errors.append(("pin", pin_error))
        result: RankResponse | None = None
        params: dict[str, str] = {k: v for k, v in form.items() if k in RANK_PARAMS}
        sort, order = "cost_per_epoch", None
        no_workload = False
        try:
            query = parse_rank_query(raw)
        except ParamError as exc:
            errors += exc.errors
        else:
            params, sort, order = query.params, query.request.sort, query.order
            if errors:
                pass
            elif any(k in params for k in WORKLOAD_PARAMS):
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
        preset = ref.presets.get(form.get("preset", ""))
        page_params = {**params, **({"pin": ",".join(map(str, pins))} if pins else {})}
        context = {
            "title": _("Compare GPU offers for a training job"),
            "form": form,
            "params": params,
            "errors": _error_list(errors, language.lang),
            "error_fields": {k for k, _ in errors},
            "result": result,
            "currency": result.currency if result else params.get("currency", "USD"),
            "sort": sort,
            "order": order,
            "no_workload": no_workload,
            "json_url": (
                url("/v1/rank", form, _with_unknown(RANK_PARAMS, form))
                if form or errors
                else EMPTY_RANK_TWIN
            ),
            "page_link": lambda **changes: url("/", page_params, RANK_PAGE_PARAMS, **changes),
            "offer_url": lambda offer_id: url(f"/offers/{offer_id}", params, OFFER_PARAMS),
            "launch_links": launch_links(params, OFFER_PARAMS, settings.seed_dir),
            "presets": list(ref.presets.values()),
            "picker": picker_groups(ref.presets.values()),
            "preset": preset,
            "preset_short": short_name(preset.name) if preset else None,
            "preset_values": preset_form_values(preset.fields, all_form_fields()) if preset else {},
            "preset_json": {
                slug: preset_form_values(p.fields, all_form_fields())
                for slug, p in ref.presets.items()
            },
            "workload_main": WORKLOAD_MAIN,
            "workload_advanced": WORKLOAD_ADVANCED,
            "filters_main": FILTERS_MAIN,
            "filters_advanced": FILTERS_ADVANCED,
            "options": OPTIONS,
            "field_labels": FIELD_LABELS,
            "form_text": form_texts(language.lang),
            "form_text_any": _("any"),
            "form_text_default": _("default"),
            "sort_labels": SORT_LABELS,
            "gpu_chips": gpu_chips(session, ref),
            "gpu_names": sorted(ref.gpus),
            "nvlink_labels": NVLINK_LABELS,
            "pins": pins,
            "max_pins": MAX_PINS,
            "banner": self._banner(session, ref, settings),
            **language.context(request),
        }
        fresh = context["banner"]
        context["providers"] = [(e.slug, e.name) for e in fresh["entries"] if e.offers]
        context["currency_choices"] = [(c, c) for c in ref.currencies]
        if result is not None:
            context.update(
                ranked_context(result, params, page_params, sort, order, pins, language.lang)
            )
            context["workload_title"] = workload_title(preset, params)
            if all_oom(result) and result.workload.get("sharding") in (None, "none"):
                context["more_gpus"] = self._more_gpus(query, session, ref, settings)
        return Template(
            "rank.html", context=context, status_code=HTTP_400_BAD_REQUEST if errors else 200
        )

    @staticmethod
    def _more_gpus(
        query: Any, session: Session, ref: ReferenceData, settings: Settings
    ) -> RankedOfferOut | None:
        """When every offer runs out of memory: the cheapest offer of two or more GPUs with
        the model sharded (FSDP), and its memory, as the API ranks it."""
        filters = query.request.filters.model_copy(update={"gpu_count": None, "min_gpu_count": 2})
        given = query.request.workload.model_dump(exclude_unset=True, mode="json")
        workload = WorkloadIn.model_validate({**given, "sharding": "fsdp"}, strict=False)
        request = query.request.model_copy(
            update={"filters": filters, "workload": workload, "limit": 1, "drop_oom": True}
        )
        try:
            found = rank_response(request, session, ref, settings)
        except (WorkloadError, FilterError):
            return None
        return found.results[0] if found.results else None

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
        language = page_language(request)
        raw = {k: v for k, v in _raw(request).items() if k != "lang"}
        form = _given(raw)
        errors: list[tuple[str, str]] = [("lang", language.error)] if language.error else []
        try:
            query = parse_offer_query(raw)
        except ParamError as exc:
            errors += exc.errors
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
        context = {
            "title": f"{detail.offer.provider_name} {detail.offer.instance_type}",
            "d": detail,
            "o": detail.offer,
            "e": detail.estimate,
            "form": form,
            "workload_title": workload_title(preset, params),
            "params": params,
            "errors": _error_list(errors, language.lang),
            "error_fields": {k for k, _ in errors},
            "field_labels": FIELD_LABELS,
            "preset_values": {},
            "json_url": url(f"/v1/offers/{offer_id}", form, _with_unknown(OFFER_PARAMS, form)),
            "rank_url": url("/", params, OFFER_PARAMS),
            "presets": list(ref.presets.values()),
            "picker": picker_groups(ref.presets.values()),
            "currencies": ref.currencies,
            "memory": _memory(detail),
            "basis_text": BASIS_TEXT,
            "price_chart": _price_chart(detail, language.lang),
            "gpu_url": gpu_url,
            "nvlink_labels": NVLINK_LABELS,
            "warning_label": lambda w: warning_label(w, language.lang),
            "warning_level": warning_level,
            "billing_labels": BILLING_LABELS,
            "banner": self._banner(session, ref, settings),
            **language.context(request),
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
        labels = {p.name: p.label or p.name for p in spec} | {"lang": FIELD_LABELS["lang"]}
        language = page_language(request)
        query = parse_listing({k: v for k, v in _raw(request).items() if k != "lang"}, spec)
        errors = list(query.errors)
        if language.error and not query.wants_json:
            errors.append(("lang", language.error))
        listing: Listing | None = None
        if not errors:
            v = query.values
            paging = Paging(
                sort=v.get("sort", "id"),
                descending=_descending(v, kind.sorts),
                limit=query.limit,
                offset=query.offset,
            )
            try:
                filters = kind.filters(**{p.name: v[p.name] for p in kind.params if p.name in v})
                listing = kind.fetch(session, ref, filters, paging)
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
            "errors": _error_list(errors, language.lang, labels),
            "title": translations(language.lang).gettext(context["title"]),
            "filtered": any(p.name in params for p in kind.params),
            "headers": headers(kind.path, params, kind.columns, listing, kind.sorts),
            "pager": pager(kind.path, params, listing) if listing else None,
            "gpu_url": gpu_url,
            "json_url": link(kind.path, {**params, "format": "json"}),
            "banner": self._banner(session, ref, settings),
            **language.context(request),
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
            "title": N_("GPU catalog"),
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
        language = page_language(request)
        raw = {k: v for k, v in _raw(request).items() if k != "lang"}
        query = parse_listing(raw, paging_params(())[-1:])
        if language.error and not query.wants_json:
            query.errors.append(("lang", language.error))
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
            if language.param and not query.wants_json:
                wanted["lang"] = language.param
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
        stale = stale_providers(session, ref, settings.stale_after_hours)
        offers = [(offer_out(row, ref, stale), usd) for row, usd in gpu_offers(session, ref, name)]
        measurements = benchmark_listing(
            session,
            ref,
            BenchmarkFilters(gpu=name),
            Paging(sort="workload", limit=GPU_PAGE_MEASUREMENTS),
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
                "banner": self._banner(session, ref, settings),
                "billing_labels": BILLING_LABELS,
                **language.context(request),
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
            "title": N_("Measured training throughput"),
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
    a field of ``filters``, the typed filters ``fetch`` takes), sortable columns with their
    first direction, columns."""

    path: str
    template: str
    params: tuple[Param, ...]
    sorts: Mapping[str, bool]
    columns: tuple[Column, ...]
    filters: type[GpuFilters] | type[BenchmarkFilters]
    fetch: Callable[[Session, ReferenceData, Any, Paging], Listing]


CATALOG = ListingKind(
    "/gpus", "gpus.html", CATALOG_PARAMS, GPU_SORTS, GPU_COLUMNS, GpuFilters, gpu_catalog
)
BENCHMARKS = ListingKind(
    "/benchmarks",
    "benchmarks.html",
    BENCHMARK_PARAMS,
    BENCHMARK_SORTS,
    BENCHMARK_COLUMNS,
    BenchmarkFilters,
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


def _price_chart(detail: OfferDetailResponse, lang: str) -> charts.ChartLayout | None:
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
        y_format=lambda v: money_short(v, currency, lang),
        y_label=translations(lang).gettext("price per hour ({currency})").format(currency=currency),
        now=dt.datetime.now(dt.UTC),
    )
