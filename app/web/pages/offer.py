"""``/offers/{id}``: one offer: its details, the estimate explained, its price history. JSON
twin: ``GET /v1/offers/{id}`` with the same parameters."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import PathParameter
from litestar.response import Template

from app.interface.deps import MAX_ID
from app.interface.query import (
    OFFER_PARAMS,
    OfferQuery,
    ParamError,
    flat_field,
    parse_offer_query,
)
from app.interface.responses import offer_detail
from app.interface.schemas import OfferDetailResponse
from app.services.offers import FilterError
from app.services.workloads import WorkloadError
from app.web import charts
from app.web.format import money_short
from app.web.forms import BILLING_LABELS, canonical_choices, with_preset_slug
from app.web.i18n import N_, translations
from app.web.pages.common import (
    FIELD_LABELS,
    NVLINK_LABELS,
    PageController,
    PageEnv,
    error_list,
    given,
    gpu_url,
    page_language,
    page_status,
    raw_query,
    with_unknown,
)
from app.web.picker import picker_groups
from app.web.rank_context import url, workload_title
from app.web.ranking_view import warning_label, warning_level

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


def offer_alone() -> OfferQuery:
    """What the page shows when the request's workload is refused: the offer alone."""
    return OfferQuery(workload=None, currency="USD", params={})


class OfferPageController(PageController):
    """The page of one offer."""

    path = "/offers"

    @get("/{offer_id:int}", sync_to_thread=True, name="offer_page")
    def offer_page(
        self,
        offer_id: Annotated[int, PathParameter(ge=1, le=MAX_ID)],
        request: Request,
        env: NamedDependency[PageEnv],
    ) -> Template:
        """One offer: details, the estimate explained, price history."""
        session, ref, settings = env.session, env.ref, env.settings
        language = page_language(request)
        raw = with_preset_slug(
            canonical_choices({k: v for k, v in raw_query(request).items() if k != "lang"}), ref
        )
        form = given(raw)
        errors: list[tuple[str, str]] = [("lang", language.error)] if language.error else []
        try:
            query = parse_offer_query(raw)
        except ParamError as exc:
            errors += exc.errors
            query = offer_alone()
        try:
            detail = offer_detail(offer_id, query, session, ref, settings)
        except (WorkloadError, FilterError) as exc:
            errors = [(flat_field(exc.field), exc.reason)]
            query = offer_alone()
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
            "errors": error_list(errors, language.lang),
            "error_fields": {k for k, _ in errors},
            "field_labels": FIELD_LABELS,
            "preset_values": {},
            "json_url": url(f"/v1/offers/{offer_id}", form, with_unknown(OFFER_PARAMS, form)),
            "rank_url": url("/", params, OFFER_PARAMS),
            "presets": list(ref.presets.values()),
            "picker": picker_groups(ref.presets.values()),
            "currencies": ref.currencies,
            "memory": memory_bar(detail),
            "basis_text": BASIS_TEXT,
            "price_chart": price_chart(detail, language.lang),
            "gpu_url": gpu_url,
            "nvlink_labels": NVLINK_LABELS,
            "warning_label": lambda w: warning_label(w, language.lang),
            "warning_level": warning_level,
            "billing_labels": BILLING_LABELS,
            "banner": env.banner(),
            **language.context(request),
        }
        return Template("offer.html", context=context, status_code=page_status(errors))


def memory_bar(detail: OfferDetailResponse) -> dict[str, Any] | None:
    """The estimate's memory as a stacked bar (GiB per part) against the usable VRAM; ``None``
    without an estimate."""
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


def price_chart(detail: OfferDetailResponse, lang: str) -> charts.ChartLayout | None:
    """The offer's price history in its own currency over time, up to now; ``None`` without
    a price in that currency."""
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
