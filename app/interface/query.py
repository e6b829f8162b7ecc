"""Flat query-string parameters, shared by the web pages and their GET JSON twins.

``POST /v1/rank`` takes a nested JSON body; a browser form and a shareable link need flat
``key=value`` pairs. The flat names are the body's field names: every field of
:class:`WorkloadIn` (``preset``, ``params``, ``micro_batch_size`` …), every field of
:class:`OfferFilters` (``gpu``, ``gpu_count``, ``provider`` …) and the options ``currency``,
``sort``, ``limit``, ``drop_oom``, plus ``order`` (re-order the returned rows by any column).
Values are validated by the same pydantic models as the JSON body, so a flat request and the
equivalent body give the same answer; numbers and booleans must first be written as the
OpenAPI document types them (:func:`query_text_error`, the rule of every GET endpoint). Empty
values count as not given (an HTML form sends every field).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.interface.counts import GRAMMARS, parse_count
from app.interface.field_names import our_names, reason, unknown_field
from app.interface.schemas import (
    GPU_COUNT_TEXT,
    OfferFilters,
    RankedOfferOut,
    RankRequest,
    WorkloadIn,
)
from app.model.types import Interconnect, unwrap_optional
from app.model.vocabulary import parse_version
from app.services.estimates import offer_interconnect

WORKLOAD_PARAMS: tuple[str, ...] = tuple(WorkloadIn.model_fields)
FILTER_PARAMS: tuple[str, ...] = tuple(OfferFilters.model_fields)
RANK_OPTION_PARAMS = (
    "currency",
    "sort",
    "limit",
    "drop_oom",
    "exclude_spot",
    "bookable_fresh_first",
    "max_total_cost",
    "max_total_hours",
    "budget_at_high_end",
    "spot_interruptions_per_hour",
    "spot_checkpoint_interval_hours",
    "spot_restart_hours",
)
#: Every parameter of the ranking page and ``GET /v1/rank``, in canonical (URL) order.
RANK_PARAMS: tuple[str, ...] = (*WORKLOAD_PARAMS, *FILTER_PARAMS, *RANK_OPTION_PARAMS, "order")
#: Parameters of the offer page and ``GET /v1/offers/{id}``: the workload and the currency.
OFFER_PARAMS: tuple[str, ...] = (*WORKLOAD_PARAMS, "currency")

#: Workload fields that accept human counts: ``7B``, ``25.6M``, ``8e9``, ``1,281,167`` (those
#: whose :class:`~app.model.types.InputSpec` says ``count``; the form's count boxes), and
#: lengths in tokens, ``4k`` = 4096 (``tokens``): :data:`app.interface.counts.GRAMMARS`.
COUNT_PARAMS: tuple[str, ...] = tuple(GRAMMARS)


#: How a number or a boolean is written in a query string: one rule for every GET endpoint
#: (the API's declared parameters, its flat workload and filter parameters, the web pages'
#: listings), as the OpenAPI document types them. An integer is digits with an optional
#: leading ``-``; a number a plain decimal with an optional exponent (``1.5``, ``.5``,
#: ``2e-3``); a boolean ``true`` or ``false``. Lax parsing took ``1_000`` (Python's ``int()``),
#: ``yes``, ``on`` and ``1`` (pydantic's and Litestar's booleans), which the document does not
#: say. Counts (:data:`COUNT_PARAMS`) are text with their own grammar (``7B``).
_INTEGER_TEXT = re.compile(r"-?[0-9]+")
_NUMBER_TEXT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
BOOLEAN_TEXTS = ("true", "false")


def scalar_kind(annotation: Any) -> type | None:
    """``bool``, ``int`` or ``float`` for a parameter of that type, optional or not; ``None``
    for any other (text, enums, lists: checked by their own rules)."""
    inner = unwrap_optional(annotation)
    return inner if inner in (bool, int, float) else None


#: Why a query value with whitespace around it is refused: one rule for every query parameter
#: of every GET endpoint and page (declared, flat, listing), the stricter of rejecting and
#: stripping: `` 40`` is not a number, and `` A100`` not quietly ``A100``.
SURROUNDING_SPACE = "must not begin or end with whitespace"


def space_error(text: str) -> str | None:
    """:data:`SURROUNDING_SPACE` when ``text`` begins or ends with whitespace (a value of only
    whitespace too); ``None`` otherwise (the empty value included: it means not given)."""
    return SURROUNDING_SPACE if text != text.strip() else None


def query_text_error(text: str, kind: type, name: str = "") -> str | None:
    """Why ``text`` is not a ``kind`` (``bool``, ``int`` or ``float``) as a query string writes
    it (:data:`BOOLEAN_TEXTS`, ``_INTEGER_TEXT``, ``_NUMBER_TEXT``); ``None`` when it is. The
    parameter ``name``, where given, may have a reason of its own (:data:`_PARAM_TEXTS`: a GPU
    count is not "e.g. 1.5")."""
    why = None
    if kind is bool and text not in BOOLEAN_TEXTS:
        why = "must be true or false"
    if kind is int and not _INTEGER_TEXT.fullmatch(text):
        why = "must be a whole number written as digits, e.g. 1000 (no _, +, spaces or exponent)"
    if kind is float and not _NUMBER_TEXT.fullmatch(text):
        why = "must be a number written as a decimal, e.g. 1.5, 40 or 2e-3"
    return _PARAM_TEXTS.get(name, why) if why is not None else None


#: Query parameters whose refusal says more than their type's rule.
_PARAM_TEXTS = {"gpu_count": GPU_COUNT_TEXT, "min_gpu_count": GPU_COUNT_TEXT}


def _missing(r: RankedOfferOut) -> None:
    return None


#: ``order`` columns of the ranking table: key → value of a row (``None`` sorts last).
ORDER_COLUMNS: dict[str, Callable[[RankedOfferOut], Any]] = {
    "rank": lambda r: r.rank,
    "provider": lambda r: r.offer.provider_name.lower(),
    "instance": lambda r: r.offer.instance_type.lower(),
    "gpu": lambda r: (r.offer.gpu or r.offer.gpu_name_raw).lower(),
    "gpu_count": lambda r: r.offer.gpu_count,
    "vram": lambda r: r.offer.vram_gib_per_gpu,
    "vcpus": lambda r: r.offer.vcpus,
    "ram": lambda r: r.offer.ram_gib,
    "disk": lambda r: r.offer.disk_gb,
    "max_cuda": lambda r: parse_version(r.offer.max_cuda, parts=3),
    "nvlink": lambda r: offer_interconnect(r.offer.interconnect) == Interconnect.NVLINK,
    "region": lambda r: r.offer.region.lower(),
    "billing": lambda r: r.offer.billing,
    "price_per_hour": lambda r: r.price_per_hour,
    "samples_per_s": lambda r: r.estimate.samples_per_s,
    "epoch_hours": lambda r: r.estimate.epoch_hours,
    "cost_per_epoch": lambda r: r.estimate.cost_per_epoch,
    "total_cost": lambda r: r.estimate.total_cost,
    "memory": lambda r: r.estimate.memory_utilization,
    "warnings": lambda r: len(r.estimate.warnings),
}


class ParamError(ValueError):
    """Bad query parameters: ``errors`` lists (parameter, reason) pairs, every one found."""

    def __init__(self, errors: list[tuple[str, str]]):
        super().__init__("; ".join(f"{k}: {m}" for k, m in errors))
        self.errors = errors

    def as_extra(self) -> list[dict[str, str]]:
        """The errors in the shape of the API's 400 ``extra`` list."""
        return [{"key": k, "message": m} for k, m in self.errors]


@dataclass(frozen=True, slots=True)
class RankQuery:
    """A parsed ranking request: the JSON body it stands for, the row order, the given params.

    ``params`` holds the non-empty parameters as given, in canonical order: the state a link
    to the same page (or to its JSON twin) carries.
    """

    request: RankRequest
    order: str | None
    params: dict[str, str]


@dataclass(frozen=True, slots=True)
class OfferQuery:
    """A parsed offer-page request: the workload (``None`` when none given) and currency."""

    workload: WorkloadIn | None
    currency: str
    params: dict[str, str]


def flat_field(field: str) -> str:
    """``workload.micro_batch_size`` / ``filters.gpu`` → the flat parameter name."""
    for prefix in ("workload.", "filters.", "hardware."):
        if field.startswith(prefix):
            return field[len(prefix) :]
    return field


def _clean(
    raw: Mapping[str, str], allowed: tuple[str, ...], errors: list[tuple[str, str]]
) -> dict[str, str]:
    given = {k: v for k, v in raw.items() if isinstance(v, str) and v}
    given, clashes = our_names(given, allowed)
    errors.extend(("request", why) for why in clashes)
    for key, text in given.items():
        if key not in allowed:
            errors.append((key, unknown_field(key, allowed, "parameter")))
        elif (why := space_error(text)) is not None:
            errors.append((key, why))
    return {k: given[k] for k in allowed if k in given and space_error(given[k]) is None}


M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], values: dict[str, Any], errors: list[tuple[str, str]]) -> M | None:
    try:
        # flat parameters are text that passed _strict: "8" is the integer 8 here (bodies
        # are strict)
        return model.model_validate(values, strict=False)
    except ValidationError as exc:
        for e in exc.errors(include_url=False):
            key = str(e["loc"][0]) if e["loc"] else "request"
            errors.append((key, reason(e)))
        return None


def _workload_values(params: dict[str, str], errors: list[tuple[str, str]]) -> dict[str, Any]:
    values: dict[str, Any] = {k: params[k] for k in WORKLOAD_PARAMS if k in params}
    for key in COUNT_PARAMS:
        if key in values:
            count = parse_count(values.pop(key), GRAMMARS[key])
            if count is None:
                errors.append((key, f"must be {GRAMMARS[key].help}"))
            else:
                values[key] = count
    if "cuda_only_libraries" in values:  # flat: comma-separated
        values["cuda_only_libraries"] = [
            x.strip() for x in values["cuda_only_libraries"].split(",") if x.strip()
        ]
    return values


#: The flat parameters typed ``bool``, ``int`` or ``float`` (counts are text), by name.
_FLAT_KINDS: dict[str, type] = {
    name: kind
    for model in (WorkloadIn, OfferFilters, RankRequest)
    for name, info in model.model_fields.items()
    if name not in COUNT_PARAMS and (kind := scalar_kind(info.annotation)) is not None
}


def _strict(params: dict[str, str], errors: list[tuple[str, str]]) -> dict[str, str]:
    """``params`` without those whose text breaks :func:`query_text_error` (each one reported
    in ``errors``, by parameter name)."""
    out = {}
    for key, text in params.items():
        kind = _FLAT_KINDS.get(key)
        why = query_text_error(text, kind, key) if kind is not None else None
        if why is None:
            out[key] = text
        else:
            errors.append((key, why))
    return out


def parse_rank_query(raw: Mapping[str, str]) -> RankQuery:
    """Flat parameters → :class:`RankQuery`.

    Raises:
        ParamError: unknown parameters or invalid values (all of them, by parameter name).
    """
    errors: list[tuple[str, str]] = []
    params = _clean(raw, RANK_PARAMS, errors)
    given = _strict(params, errors)
    workload = _validate(WorkloadIn, _workload_values(given, errors), errors)
    filters = _validate(OfferFilters, {k: given[k] for k in FILTER_PARAMS if k in given}, errors)
    options = _validate(
        RankRequest,
        {"workload": {}, **{k: given[k] for k in RANK_OPTION_PARAMS if k in given}},
        errors,
    )
    order = params.get("order")
    if order is not None and order.removeprefix("-") not in ORDER_COLUMNS:
        errors.append(
            ("order", "must be one of " + ", ".join(ORDER_COLUMNS) + " (prefix - for descending)")
        )
    if errors or workload is None or filters is None or options is None:
        raise ParamError(errors)
    request = options.model_copy(update={"workload": workload, "filters": filters})
    return RankQuery(request=request, order=order, params=params)


def parse_offer_query(raw: Mapping[str, str]) -> OfferQuery:
    """Flat parameters of an offer page → :class:`OfferQuery`.

    Raises:
        ParamError: unknown parameters or invalid values.
    """
    errors: list[tuple[str, str]] = []
    params = _clean(raw, OFFER_PARAMS, errors)
    values = _workload_values(_strict(params, errors), errors)
    workload = _validate(WorkloadIn, values, errors) if values else None
    options = _validate(
        RankRequest,
        {"workload": {}, **({"currency": params["currency"]} if "currency" in params else {})},
        errors,
    )
    if errors or options is None:
        raise ParamError(errors)
    return OfferQuery(workload=workload, currency=options.currency, params=params)


def order_rows(rows: list[RankedOfferOut], order: str | None) -> list[RankedOfferOut]:
    """Rows re-ordered by an ``order`` column (``-`` prefix: descending); missing values last.

    The sort is stable, so rows with equal values keep their rank order.
    """
    if not order:
        return rows
    descending = order.startswith("-")
    get = ORDER_COLUMNS.get(order.removeprefix("-"), _missing)
    present = [r for r in rows if get(r) is not None]
    absent = [r for r in rows if get(r) is None]
    return sorted(present, key=get, reverse=descending) + absent
