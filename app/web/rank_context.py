"""The ranking page's context after ranking, and its links: what :mod:`app.web.pages` hands the
template besides the form. Everything is read from the :class:`RankResponse` the page and its
JSON twin share (the picks, comparisons and chart themselves: :mod:`app.web.ranking_view`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.orm import Session

from app.interface.query import OFFER_PARAMS, RANK_PARAMS, WORKLOAD_PARAMS
from app.interface.schemas import RankResponse
from app.services.catalog import gpu_family
from app.services.offers import offer_counts_by_gpu
from app.services.reference import Preset, ReferenceData
from app.web.forms import (
    BILLING_LABELS,
    COLUMNS,
    EXTRA_ORDER_COLUMNS,
    FormField,
    preset_form_values,
    throughput_unit,
)
from app.web.picker import short_name
from app.web.ranking_view import (
    all_oom,
    answer,
    billing_siblings,
    chart_spec,
    gpu_groups,
    group_reason,
    oom_alternatives,
    rank_chart,
    rows_by_id,
    toggled,
    warning_label,
    warning_level,
)

#: Parameters the ranking page's own links carry (the API's, and the pins).
RANK_PAGE_PARAMS = (*RANK_PARAMS, "pin")


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
        page = functools.partial(url, "/", params, RANK_PAGE_PARAMS)
        if col.key == "rank":
            href = page(order=None)
        elif direction is not None:
            flipped = ("" if direction == "descending" else "-") + col.key
            href = page(order=flipped)
        elif col.rank_key is not None:
            href = page(sort=col.rank_key, order=None)
        else:
            href = page(order=("-" if col.desc_first else "") + col.key)
        out.append({"col": col, "href": href, "direction": direction})
    return out


def strip_preset_values(
    raw: dict[str, str], preset: Preset | None, fields: Sequence[FormField]
) -> dict[str, str]:
    """``raw`` without the workload fields that still hold the value the form showed for
    ``preset`` (the form shows a preset's values as values; unchanged, they are not
    overrides). A page without JavaScript submits them all."""
    if preset is None:
        return raw
    shown = preset_form_values(preset.fields, fields)
    return {k: v for k, v in raw.items() if not (k in shown and v.strip() == shown[k])}


def workload_title(preset: Preset | None, params: Mapping[str, str]) -> dict[str, Any]:
    """The workload in a few words: the preset's short name and the fields changed from it
    (the template says it in the page's language)."""
    overrides = [k for k in WORKLOAD_PARAMS if k in params and k != "preset"]
    return {
        "preset": short_name(preset.name) if preset else None,
        "full": preset.name if preset else None,
        "changed": overrides,
    }


def gpu_chips(session: Session, ref: ReferenceData, most: int = 14) -> list[str]:
    """GPU families to pick with one click, those with the most available offers first: the
    catalog's family names (``A100``, ``RTX 4090``: a vendor's brand word dropped where the
    ``gpu`` filter takes the name without it)."""
    counts: dict[str, int] = {}
    for gpu_id, offers in offer_counts_by_gpu(session).items():
        name = ref.gpu_names_by_id.get(gpu_id)
        if name is None:
            continue
        family = gpu_family(name)
        short = family.removeprefix("GeForce ").removeprefix("Instinct ")
        if short != family and set(ref.resolve_gpu_filter(short)) != set(
            ref.resolve_gpu_filter(family)
        ):
            short = family
        counts[short] = counts.get(short, 0) + offers
    return sorted(counts, key=lambda f: (-counts[f], f))[:most]


def ranked_context(
    result: RankResponse,
    params: Mapping[str, str],
    page_params: Mapping[str, str],
    sort: str,
    order: str | None,
    pins: Sequence[int],
    lang: str,
) -> dict[str, Any]:
    """What the ranking page shows after ranking, all read from ``result`` (the JSON twin):
    the answer, the comparisons, the chart, the all-OOM alternatives."""
    rows = [*result.results, *result.frontier]
    unit = throughput_unit(
        any(r.estimate.tokens_per_s is not None for r in result.results),
        bool(result.workload.get("image_size")),
    )
    by_id = rows_by_id(result)
    spec = chart_spec(params)

    def offer_href(offer_id: int) -> str:
        return url(f"/offers/{offer_id}", params, OFFER_PARAMS)

    def relink(changes: dict[str, str]) -> str:
        return url("/", params, RANK_PARAMS, **changes)

    return {
        "unit": unit,
        "answer": answer(result),
        "groups": gpu_groups(rows),
        "compare_gpus": "," in params.get("gpu", ""),
        "siblings": billing_siblings(rows),
        "pinned": [by_id[i] for i in pins if i in by_id],
        "pins_missing": [i for i in pins if i not in by_id],
        "toggle_pin": lambda offer_id: toggled(pins, offer_id),
        "chart": rank_chart(result, spec, offer_href, lang),
        "chart_spec": spec,
        "headers": column_headers(page_params, sort, order),
        "extra_orders": column_headers(page_params, sort, order, EXTRA_ORDER_COLUMNS),
        "column_labels": {c.key: c.label for c in (*COLUMNS, *EXTRA_ORDER_COLUMNS)}
        | {"samples_per_s": unit},
        "limit_url": lambda n: url("/", page_params, RANK_PAGE_PARAMS, limit=str(min(1000, n))),
        "more_url": url(
            "/", page_params, RANK_PAGE_PARAMS, limit=str(min(1000, len(result.results) + 100))
        )
        if result.total_offers > len(result.results)
        else None,
        "all_oom": all_oom(result),
        "alternatives": oom_alternatives(result, relink, lang) if all_oom(result) else [],
        "more_gpus_url": relink({"sharding": "fsdp", "min_gpu_count": "2", "gpu_count": ""}),
        "warning_label": lambda w: warning_label(w, lang),
        "group_reason": lambda g: group_reason(g, lang),
        "warning_level": warning_level,
        "billing_labels": BILLING_LABELS,
    }
