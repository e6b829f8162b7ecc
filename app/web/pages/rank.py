"""``/``: the ranking page: workload form and filters; after ranking, the answer, the table and
the cost/time chart. JSON twin: ``GET /v1/rank`` with the same parameters."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER

from app.interface.query import (
    OFFER_PARAMS,
    RANK_PARAMS,
    WORKLOAD_PARAMS,
    ParamError,
    flat_field,
    parse_rank_query,
)
from app.interface.responses import rank_response
from app.interface.schemas import RankedOfferOut, RankResponse, WorkloadIn
from app.launch import launch_links
from app.services.offers import FilterError, resolve_provider
from app.services.workloads import WorkloadError
from app.web.forms import (
    FILTERS_ADVANCED,
    FILTERS_MAIN,
    OPTIONS,
    SORT_LABELS,
    WORKLOAD_ADVANCED,
    WORKLOAD_MAIN,
    all_form_fields,
    canonical_choices,
    preset_form_values,
    with_preset_slug,
)
from app.web.i18n import translations
from app.web.listing import link
from app.web.messages import form_texts
from app.web.pages.common import (
    FIELD_LABELS,
    NVLINK_LABELS,
    PAGE_PARAMS,
    PageController,
    PageEnv,
    error_list,
    given,
    page_language,
    page_status,
    raw_query,
    with_unknown,
)
from app.web.picker import picker_groups, short_name
from app.web.rank_context import (
    RANK_PAGE_PARAMS,
    gpu_chips,
    ranked_context,
    strip_preset_values,
    url,
    workload_title,
)
from app.web.ranking_view import MAX_PINS, all_oom, parse_pins

#: The JSON twin of the ranking page before a job is entered: what that page offers, the
#: presets its picker lists (``GET /v1/workloads``), each with the fields it supplies. Linking
#: ``/v1/rank`` there answered a 400 (no workload) to a page that answered 200.
EMPTY_RANK_TWIN = "/v1/workloads"


class RankPageController(PageController):
    """The ranking page."""

    path = "/"

    @get("/", sync_to_thread=True, name="rank_page")
    def rank_page(self, request: Request, env: NamedDependency[PageEnv]) -> Template | Redirect:
        """Workload form, filters; after ranking: the answer, the table, the chart.
        ``format=json`` (how the listings' twins are asked for) is sent to the JSON twin,
        ``GET /v1/rank`` with the same parameters (303); with no job parameters, the empty
        page's twin :data:`EMPTY_RANK_TWIN` (the presets)."""
        session, ref, settings = env.session, env.ref, env.settings
        if request.query_params.get("format") == "json":
            rest = {
                k: v for k, v in raw_query(request).items() if k not in ("format", *PAGE_PARAMS)
            }
            twin = link("/v1/rank", rest) if any(rest.values()) else EMPTY_RANK_TWIN
            return Redirect(twin, status_code=HTTP_303_SEE_OTHER)
        language = page_language(request)
        _ = translations(language.lang).gettext
        asked = with_preset_slug(
            canonical_choices(
                {k: v for k, v in raw_query(request).items() if k not in PAGE_PARAMS}
            ),
            ref,
        )
        base = ref.presets.get(raw_query(request).get("base", ""))
        raw = strip_preset_values(asked, base, all_form_fields())
        form = given(raw)
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
            "errors": error_list(errors, language.lang),
            "error_fields": {k for k, _ in errors},
            "result": result,
            "currency": result.currency if result else params.get("currency", "USD"),
            "sort": sort,
            "order": order,
            "no_workload": no_workload,
            "json_url": (
                url("/v1/rank", form, with_unknown(RANK_PARAMS, form))
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
            "banner": env.banner(),
            **language.context(request),
        }
        fresh = context["banner"]
        context["providers"] = [(e.slug, e.name) for e in fresh["entries"] if e.offers]
        named_provider(form, params, context["providers"])
        context["currency_choices"] = [(c, c) for c in ref.currencies]
        if result is not None:
            context.update(
                ranked_context(result, params, page_params, sort, order, pins, language.lang)
            )
            context["workload_title"] = workload_title(preset, params)
            if all_oom(result) and result.workload.get("sharding") in (None, "none"):
                context["more_gpus"] = more_gpus(query, env)
        return Template("rank.html", context=context, status_code=page_status(errors))


def named_provider(
    form: dict[str, str], params: dict[str, str], providers: list[tuple[str, str]]
) -> None:
    """Write the provider filter as the slug it names (``Vast.ai`` → ``vast``), in the form and
    the page's links, so the select shows the provider the answer used (the API reads the name
    the same way: :func:`app.services.offers.resolve_provider`). A name that matches no listed
    provider is left as written (the answer's 400 names it)."""
    text = form.get("provider")
    if not text:
        return
    with suppress(FilterError):
        slug = resolve_provider(text, providers)
        form["provider"] = slug
        if "provider" in params:
            params["provider"] = slug


def more_gpus(query: Any, env: PageEnv) -> RankedOfferOut | None:
    """When every offer runs out of memory: the cheapest offer of two or more GPUs with
    the model sharded (FSDP), and its memory, as the API ranks it."""
    filters = query.request.filters.model_copy(update={"gpu_count": None, "min_gpu_count": 2})
    given = query.request.workload.model_dump(exclude_unset=True, mode="json")
    workload = WorkloadIn.model_validate({**given, "sharding": "fsdp"}, strict=False)
    request = query.request.model_copy(
        update={"filters": filters, "workload": workload, "limit": 1, "drop_oom": True}
    )
    try:
        found = rank_response(request, env.session, env.ref, env.settings)
    except (WorkloadError, FilterError):
        return None
    return found.results[0] if found.results else None
