"""HTTP API under ``/v1`` (JSON). Handlers parse, make one service call, and shape the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency, Provide
from litestar.enums import ParamType
from litestar.exceptions import ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation, Parameter, Schema
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import JSONBody, PathParameter, QueryParameter
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from app.api.counts import COUNT_HELP, COUNT_PATTERN
from app.api.field_names import unknown_field
from app.api.query import (
    COUNT_PARAMS,
    OFFER_PARAMS,
    ORDER_COLUMNS,
    RANK_PARAMS,
    ParamError,
    flat_field,
    parse_offer_query,
    parse_rank_query,
    query_text_error,
    scalar_kind,
    space_error,
)
from app.api.reference_schemas import BenchmarkPage, GpuOut, WorkloadPresetOut
from app.api.responses import (
    MAX_ID,
    error_responses,
    offer_detail,
    provide_reference,
    provide_session,
    provide_settings,
    rank_json,
)
from app.api.schemas import (
    CURRENCY_PATTERN,
    CURRENCY_TEXT,
    MAX_PRICE,
    MAX_TEXT,
    OFFER_ID_TEXT,
    Billing,
    EstimateRequest,
    EstimateResponse,
    OfferDetailResponse,
    OfferFilters,
    OfferPage,
    RankRequest,
    RankResponse,
    WorkloadIn,
    zero_bounds,
)
from app.api.submissions import SubmissionEventOut, SubmissionEventPage, handle_submission
from app.operations import Deps, estimate_response, hf_config_fields, list_presets, offer_page
from app.services.catalog import search_benchmarks, search_gpus
from app.services.offers import (
    FilterError,
)
from app.services.reference import ReferenceData
from app.services.submissions import list_events
from app.services.workloads import WorkloadError
from app.settings import Settings


def query_param(**constraints: Any) -> Any:
    """``QueryParameter(**constraints)`` whose bounds of 0 reach the OpenAPI document too
    (:func:`app.api.schemas.zero_bounds`)."""
    return QueryParameter(**constraints, schema_extra=zero_bounds(constraints))


def documented(container: Any, description: str) -> ResponseSpec:
    """The OpenAPI entry of a 200 answer the handler builds as plain dicts: ``container`` (a
    model of :mod:`app.api.reference_schemas`) says what the dicts hold."""
    return ResponseSpec(data_container=container, description=description, generate_examples=False)


def _doc(model: type[BaseModel], name: str) -> str | None:
    """A field's description, for the query parameter of the same name."""
    return model.model_fields[name].description


def bad_params(exc: ParamError | WorkloadError | FilterError) -> ValidationException:
    """A flat-parameter error as the API's 400 (``extra`` names every parameter, flat)."""
    if not isinstance(exc, ParamError):
        exc = ParamError(
            [(flat_field(f), r) for f, r in getattr(exc, "errors", [(exc.field, exc.reason)])]
        )
    return ValidationException(detail="Invalid query parameters", extra=exc.as_extra())


#: Handler arguments that are injected, not query parameters.
_INJECTED = frozenset({"self", "request", "session", "ref", "settings"})
#: Parameters that were renamed (the old name's 400 says what to send instead).
_RENAMED = {"min_vram_gb": "min_vram_gib"}


def reject_unknown_query(request: Request[Any, Any, Any]) -> None:
    """A 400 naming every query parameter the handler does not take, or takes once but was
    given several times (an ignored filter would silently widen the answer).

    Raises:
        ValidationException: ``extra`` lists each such parameter with the reason.
    """
    # the parsed signature (``fn`` is wrapped for handlers that run in a thread)
    known = set(request.route_handler.parsed_fn_signature.parameters) - _INJECTED
    errors: list[tuple[str, str]] = []
    for key in dict.fromkeys(request.query_params.keys()):
        if key not in known:
            errors.append(
                (
                    key,
                    f"unknown parameter; renamed to {_RENAMED[key]}"
                    if key in _RENAMED
                    else unknown_field(key, known, "parameter"),
                )
            )
        elif len(request.query_params.getall(key)) > 1:
            errors.append((key, "given more than once"))
    if errors:
        raise bad_params(ParamError(errors))


def strict_query(request: Request[Any, Any, Any]) -> None:
    """``before_request`` of the API: no query parameter the handler declares may begin or
    end with whitespace (:func:`app.api.query.space_error`, as for the flat parameters and
    the pages), and one it declares as a boolean, integer or number must be written as the
    OpenAPI document types it
    (:func:`app.api.query.query_text_error`, the rule the flat parameters of ``GET /v1/rank``
    follow too), checked before Litestar parses it laxly (``1e2`` as an integer, ``1`` or
    ``True`` as a boolean).

    Raises:
        ValidationException: a 400 whose ``extra`` names each such parameter with the reason.
    """
    declared = request.route_handler.parsed_fn_signature.parameters
    errors: list[tuple[str, str]] = []
    for key in dict.fromkeys(request.query_params.keys()):
        field = declared.get(key)
        if field is None or key in request.path_params:
            continue
        kind = scalar_kind(field.annotation)
        texts = request.query_params.getall(key)
        reasons = (
            space_error(t) or (query_text_error(t, kind) if kind is not None else None)
            for t in texts
        )
        if (why := next((r for r in reasons if r), None)) is not None:
            errors.append((key, why))
    if errors:
        raise bad_params(ParamError(errors))


#: Flat parameters typed as text although the body field is not: counts take ``7B`` and
#: ``25.6M``, ``cuda_only_libraries`` is comma-separated.
_TEXT_PARAMS = {*COUNT_PARAMS, "cuda_only_libraries"}
_SCHEMA_KEYS = {
    "enum": "enum",
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum",
    "pattern": "pattern",
    "maxLength": "max_length",
    "minLength": "min_length",
}


def _flat_schema(
    prop: dict[str, Any], defs: dict[str, Any], *, text: bool, count: bool = False
) -> Schema:
    """A query parameter's schema from a field's JSON schema (pydantic's): its type, enum,
    bounds, pattern and default; ``null`` dropped (an absent parameter is the null). A count
    (``count``) is ``anyOf`` the field's integer with its bounds and a string of
    :data:`~app.api.counts.COUNT_PATTERN` (``7B``), whose value the same bounds limit."""
    options = prop.get("anyOf", [prop])
    typed: dict[str, Any] = next((o for o in options if o.get("type") != "null"), {})
    if "$ref" in typed:
        typed = defs[typed["$ref"].rsplit("/", 1)[-1]]
    kwargs: dict[str, Any] = {}
    bounds = {ours: typed[key] for key, ours in _SCHEMA_KEYS.items() if key in typed}
    if count:
        kwargs["any_of"] = [
            Schema(type=OpenAPIType(typed["type"]), **bounds),
            Schema(type=OpenAPIType.STRING, pattern=COUNT_PATTERN),
        ]
    elif text:
        kwargs["type"] = OpenAPIType.STRING
    else:
        kwargs["type"] = OpenAPIType(typed.get("type", "string"))
        kwargs |= bounds
    if prop.get("default") is not None:
        kwargs["default"] = prop["default"]
    if prop.get("examples") and not text:
        kwargs["examples"] = prop["examples"]
    return Schema(**kwargs)


def _count_help(prop: dict[str, Any]) -> str:
    """How a count parameter is written, with the field's bounds in words (``7B``; more than
    0, at most 1e+14)."""
    typed = next(o for o in prop.get("anyOf", [prop]) if o.get("type") != "null")
    limits = [
        f"{word} {typed[key]:g}"
        for key, word in (
            ("exclusiveMinimum", "more than"),
            ("minimum", "at least"),
            ("exclusiveMaximum", "less than"),
            ("maximum", "at most"),
        )
        if key in typed
    ]
    return COUNT_HELP + (f" ({', '.join(limits)})" if limits else "")


def rank_query_parameters(names: tuple[str, ...] = RANK_PARAMS) -> list[Parameter]:
    """Flat query parameters for the OpenAPI document: by default those of ``GET /v1/rank``
    (every field of ``WorkloadIn``, ``OfferFilters`` and the ranking options, plus
    ``order``), typed and described by the pydantic field (or, where it has none, by the
    ranking form's label and unit)."""
    from app.web.forms import all_form_fields

    form = {f.name: f for f in all_form_fields()}
    models = (WorkloadIn, OfferFilters, RankRequest)
    schemas = [m.model_json_schema() for m in models]
    defs = {k: v for js in schemas for k, v in js.get("$defs", {}).items()}
    props = {k: v for js in reversed(schemas) for k, v in js["properties"].items()}
    out = []
    for name in names:
        text = next(
            (m.model_fields[name].description for m in models if name in m.model_fields), None
        )
        if not text and name in form:
            f = form[name]
            text = f.label + (f" ({f.unit})" if f.unit else "") + (f"; {f.hint}" if f.hint else "")
        if name in _TEXT_PARAMS:
            text = f"{text}; " + (
                "comma-separated" if name == "cuda_only_libraries" else _count_help(props[name])
            )
        if name == "order":
            text = "re-order the returned rows by a column (prefix - for descending): " + (
                ", ".join(ORDER_COLUMNS)
            )
            schema = Schema(
                type=OpenAPIType.STRING,
                enum=[*ORDER_COLUMNS, *(f"-{c}" for c in ORDER_COLUMNS)],
            )
        else:
            schema = _flat_schema(
                props[name], defs, text=name in _TEXT_PARAMS, count=name in COUNT_PARAMS
            )
        out.append(
            Parameter(
                name=name,
                param_in=ParamType.QUERY,
                required=False,
                schema=schema,
                description=text or name.replace("_", " "),
                # an empty value counts as not given (an HTML form sends every field)
                allow_empty_value=True,
            )
        )
    return out


@dataclass
class RankQueryOperation(Operation):
    """``GET /v1/rank`` reads its flat parameters itself; this lists them in the schema."""

    def __post_init__(self) -> None:
        self.parameters = [*(self.parameters or []), *rank_query_parameters()]


@dataclass
class OfferQueryOperation(Operation):
    """``GET /v1/offers/{id}`` reads its flat workload parameters itself; this lists them."""

    def __post_init__(self) -> None:
        self.parameters = [*(self.parameters or []), *rank_query_parameters(OFFER_PARAMS)]


class V1Controller(Controller):
    """gpucost API v1."""

    path = "/v1"
    dependencies = {  # noqa: RUF012 - Litestar reads this class attribute
        "session": Provide(provide_session),
        "ref": Provide(provide_reference),
        "settings": Provide(provide_settings, sync_to_thread=False),
    }
    before_request = staticmethod(strict_query)

    @get(
        "/offers",
        sync_to_thread=True,
        summary="List offers",
        responses=error_responses(400),
    )
    def list_offers(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
        gpu: Annotated[
            str | None, QueryParameter(max_length=MAX_TEXT, description=_doc(OfferFilters, "gpu"))
        ] = None,
        min_vram_gib: Annotated[
            float | None,
            query_param(ge=0, le=10**5, description=_doc(OfferFilters, "min_vram_gib")),
        ] = None,
        gpu_count: Annotated[
            float | None,
            query_param(gt=0, le=1024, description=_doc(OfferFilters, "gpu_count")),
        ] = None,
        min_gpu_count: Annotated[
            float | None,
            query_param(gt=0, le=1024, description=_doc(OfferFilters, "min_gpu_count")),
        ] = None,
        provider: Annotated[
            str | None,
            QueryParameter(max_length=MAX_TEXT, description=_doc(OfferFilters, "provider")),
        ] = None,
        region: Annotated[
            str | None,
            QueryParameter(max_length=MAX_TEXT, description=_doc(OfferFilters, "region")),
        ] = None,
        billing: Annotated[
            Billing | None, QueryParameter(description=_doc(OfferFilters, "billing"))
        ] = None,
        max_price_per_hour: Annotated[
            float | None,
            query_param(
                gt=0,
                le=MAX_PRICE,
                description="highest price of the whole instance per hour, in currency",
            ),
        ] = None,
        currency: Annotated[
            str,
            QueryParameter(
                pattern=CURRENCY_PATTERN,
                description=CURRENCY_TEXT + "; of max_price_per_hour (the answer's prices are "
                "as listed, each with its currency)",
            ),
        ] = "USD",
        available_only: Annotated[
            bool, QueryParameter(description=_doc(OfferFilters, "available_only"))
        ] = True,
        include_suspect: Annotated[
            bool, QueryParameter(description=_doc(OfferFilters, "include_suspect"))
        ] = False,
        bookable_only: Annotated[
            bool, QueryParameter(description=_doc(OfferFilters, "bookable_only"))
        ] = False,
        limit: Annotated[
            int, QueryParameter(ge=1, le=1000, description="page size: most offers returned")
        ] = 100,
        offset: Annotated[
            int,
            QueryParameter(ge=0, le=1_000_000_000, description="offers skipped (ordered by id)"),
        ] = 0,
    ) -> OfferPage:
        """Instance offers, filtered and paginated (ordered by id).

        ``max_price_per_hour`` is in ``currency`` (offers in other currencies are converted
        with the stored exchange rates); prices in the answer are as listed. ``gpus_matched``
        names the catalog GPUs the ``gpu`` filter stands for.
        """
        reject_unknown_query(request)
        try:
            filters = OfferFilters(
                gpu=gpu,
                min_vram_gib=min_vram_gib,
                gpu_count=gpu_count,
                min_gpu_count=min_gpu_count,
                provider=provider,
                region=region,
                billing=billing,
                max_price_per_hour=max_price_per_hour,
                available_only=available_only,
                include_suspect=include_suspect,
                bookable_only=bookable_only,
            )
        except PydanticValidationError as exc:  # rules beyond the parameters' own bounds
            raise bad_params(
                ParamError(
                    [
                        (".".join(map(str, e["loc"])), e["msg"])
                        for e in exc.errors(include_url=False)
                    ]
                )
            ) from None
        return offer_page(
            filters,
            currency.upper(),
            limit,
            offset,
            Deps(session, ref, settings),
        )

    @get(
        "/gpus",
        sync_to_thread=True,
        summary="List the GPU catalog",
        responses={200: documented(list[GpuOut], "The GPU models, by id"), **error_responses(400)},
    )
    def list_gpus(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        q: Annotated[
            str | None,
            QueryParameter(
                max_length=MAX_TEXT,
                description="case-insensitive text: a name, alias, vendor, architecture or "
                "market containing it, or a name it resolves to (A100-SXM4-80GB)",
            ),
        ] = None,
    ) -> list[dict[str, Any]]:
        """The GPU catalog with specs, aliases and sources (dense TFLOPS; VRAM in GiB).

        ``q`` keeps GPUs whose name, alias, vendor, architecture or market contains it, or
        whose name it resolves to (``A100-SXM4-80GB``).
        """
        reject_unknown_query(request)
        return search_gpus(session, ref, q)

    @get(
        "/benchmarks",
        sync_to_thread=True,
        summary="List measured throughput",
        responses={
            200: documented(BenchmarkPage, "A page of measurements"),
            **error_responses(400),
        },
    )
    def list_benchmarks(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        gpu: Annotated[
            str | None,
            QueryParameter(
                max_length=MAX_TEXT,
                description="GPU name or alias, any case; a family name matches every model "
                "of the family",
            ),
        ] = None,
        workload: Annotated[
            str | None,
            QueryParameter(
                max_length=MAX_TEXT,
                description="benchmark workload label (ResNet-50 v1.5) or a preset slug",
            ),
        ] = None,
        q: Annotated[
            str | None,
            QueryParameter(
                max_length=MAX_TEXT,
                description="case-insensitive substring of the label, task, GPU as published, "
                "framework, precision or source",
            ),
        ] = None,
        ids: Annotated[
            str | None,
            QueryParameter(
                pattern=r"^\d{1,12}(,\d{1,12}){0,499}$",
                description="comma-separated measurement ids (an estimate's evidence)",
            ),
        ] = None,
        status: Annotated[
            str | None,
            QueryParameter(
                pattern=r"^(accepted|held|revoked)$",
                description="held: submitted rows held for review (never used); revoked: rows "
                "of a revoked submitter (never used); accepted: the rest",
            ),
        ] = None,
        limit: Annotated[
            int, QueryParameter(ge=1, le=5000, description="page size: most rows returned")
        ] = 500,
        offset: Annotated[
            int, QueryParameter(ge=0, le=1_000_000_000, description="rows skipped")
        ] = 0,
    ) -> dict[str, Any]:
        """Measured training throughput, filtered by GPU (any alias) and workload label.

        ``workload`` matches the benchmark label (e.g. "ResNet-50 v1.5") or a preset slug,
        which selects the labels that preset stands for; ``q`` is a case-insensitive
        substring of the label, task, GPU as published, framework, precision or source;
        ``ids`` (comma-separated) fetches the measurements an estimate cites in its
        ``evidence``; ``status`` ``held`` lists the submitted rows held for review (more than
        2× off the published estimate, or moving an answer more than the uncorroborated bound:
        stored, never used), ``revoked`` those of a revoked submitter, ``accepted`` the rest.
        """
        reject_unknown_query(request)
        items, total = search_benchmarks(
            session,
            ref,
            gpu=gpu,
            workload=workload,
            q=q,
            ids=[int(i) for i in ids.split(",")] if ids else None,
            status=status,
            limit=limit,
            offset=offset,
        )
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    @post(
        "/benchmarks",
        sync_to_thread=True,
        status_code=201,
        summary="Submit a measurement",
        responses={
            200: ResponseSpec(
                data_container=dict[str, Any],
                description="The row already stored for this `run_id` (same submitter)",
                generate_examples=False,
            ),
            **error_responses(400, 401, 409, 429),
        },
    )
    def submit_benchmark(
        self,
        request: Request,
        data: JSONBody[dict[str, Any]],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[dict[str, Any]]:
        """Store a measurement from ``gpucost bench`` (``Authorization: Bearer <token>``).

        Body: :class:`app.api.submissions.BenchmarkSubmission`. Stored with ``source``
        ``submitted``, the environment, the token's name and the time. It never enters the
        model: it moves only its own configuration's answer, each submitter counting as one
        observation, by at most ±10 % until a second submitter's run agrees or a maintainer
        approves it; a row more than 2× off the published estimate (the model without any
        submitted row), or one that alone would move the answer further, is ``held``
        (``GET /v1/benchmarks?status=held``); ``GET /v1/submissions/events`` is the audit
        trail. 201 new; 200 with the stored row when the same
        submitter sends the same ``run_id`` again; 401 without a valid token (nothing stored);
        400 naming the field; 409 run id of another submitter; 429 past the rate limit.
        """
        return handle_submission(request, data, session, ref, settings)

    @get(
        "/submissions/events",
        sync_to_thread=True,
        summary="Audit trail of submitted measurements",
        responses=error_responses(400),
    )
    def submission_events(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        submitter: Annotated[
            str | None, QueryParameter(max_length=100, description="only this submitter's rows")
        ] = None,
        limit: Annotated[
            int, QueryParameter(ge=1, le=1000, description="page size: most entries returned")
        ] = 100,
        offset: Annotated[
            int, QueryParameter(ge=0, le=1_000_000_000, description="entries skipped")
        ] = 0,
    ) -> SubmissionEventPage:
        """Who submitted, held, corroborated, approved or revoked which measurement, when, and
        what it moved: the served answer of the row's configuration before and after, newest
        first. Read-only and public (identities are the tokens' names, as every submitted row
        shows them); maintainers act with ``gpucost submissions approve|revoke``."""
        reject_unknown_query(request)
        items, total = list_events(session, submitter=submitter, limit=limit, offset=offset)
        return SubmissionEventPage(
            items=[SubmissionEventOut(**i) for i in items], total=total, limit=limit, offset=offset
        )

    @get(
        "/workloads",
        sync_to_thread=False,
        summary="List workload presets",
        responses={200: documented(list[WorkloadPresetOut], "The presets, by slug")},
    )
    def list_workloads(self, ref: NamedDependency[ReferenceData]) -> list[dict[str, Any]]:
        """Workload presets: every field value, the benchmark labels they stand for, sources."""
        return list_presets(ref)

    @post(
        "/workloads/from-hf-config",
        sync_to_thread=False,
        status_code=200,
        summary="Workload fields from a Hugging Face config.json",
        responses=error_responses(400),
    )
    def workload_from_hf_config(self, data: JSONBody[dict[str, Any]]) -> dict[str, Any]:
        """Read a Hugging Face ``config.json`` (the request body, as is) into workload fields.

        Returns ``fields`` under the flat parameter names of ``GET /v1/rank`` (``layers``,
        ``hidden_size``, ``heads``, ``kv_heads``, ``ffn_hidden_size``, ``vocab_size``,
        ``architecture``, ``params`` as an approximate count) plus ``max_positions`` (tokens),
        and ``notes`` saying what was assumed. A config without layers, hidden size, heads or
        vocabulary gets a 400 naming every missing field; a size that is not a positive
        integer, exceeds the bounds of a typed-in workload or does not fit the attention shape
        gets a 400 naming the config key and the reason.
        """
        return hf_config_fields(data)

    @post(
        "/estimate",
        sync_to_thread=False,
        status_code=200,
        summary="Estimate a workload on a what-if machine",
        responses=error_responses(400),
    )
    def estimate(
        self, data: JSONBody[EstimateRequest], ref: NamedDependency[ReferenceData]
    ) -> EstimateResponse:
        """Estimate a workload on a what-if machine (no offer needed).

        Returns throughput (samples/s for all GPUs), epoch time, OOM risk from the per-GPU
        memory estimate, and the measurements used. With ``price_per_hour`` (in ``currency``)
        the cost per epoch too.
        """
        return estimate_response(data, ref)

    @post(
        "/rank",
        sync_to_thread=True,
        status_code=200,
        summary="Rank offers for a workload",
        responses=error_responses(400),
    )
    def rank_offers(
        self,
        data: JSONBody[RankRequest],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[RankResponse]:
        """Rank offers for a workload by cost per epoch (or time), OOM-risky offers last.

        Each result carries the offer, its price in ``currency`` and the estimate;
        ``pareto_optimal`` marks offers no other fitting offer beats on both cost per epoch and
        epoch time.
        """
        return rank_json(data, session, ref, settings)

    @get(
        "/rank",
        sync_to_thread=True,
        summary="Rank offers for a workload (flat query parameters)",
        responses=error_responses(400),
        operation_class=RankQueryOperation,
    )
    def rank_offers_flat(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[RankResponse]:
        """``POST /v1/rank`` with flat query parameters: the JSON twin of the web page ``/``.

        Parameters are the body's field names, flat: every workload field (``preset``,
        ``params``, ``micro_batch_size``, ``seq_len``, ``precision`` …), every filter (``gpu``,
        ``gpu_count``, ``provider``, ``region``, ``billing``, ``max_price_per_hour`` …),
        ``currency``, ``sort``, ``limit``, ``drop_oom``, and ``order`` (re-order the returned
        rows by any table column, ``-`` prefix for descending). Example:
        ``/v1/rank?preset=resnet50-imagenet&gpu_count=1&currency=CNY``.
        """
        try:
            query = parse_rank_query(dict(request.query_params.items()))
            return rank_json(query.request, session, ref, settings, order=query.order)
        except (ParamError, WorkloadError, FilterError) as exc:
            raise bad_params(exc) from exc

    @get(
        "/offers/{offer_id:int}",
        sync_to_thread=True,
        summary="One offer with its price history and estimate",
        responses=error_responses(400, 404),
        operation_class=OfferQueryOperation,
    )
    def get_offer(
        self,
        offer_id: Annotated[int, PathParameter(ge=1, le=MAX_ID, description=OFFER_ID_TEXT)],
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> OfferDetailResponse:
        """One offer, its price history and, given workload parameters, its estimate.

        The JSON twin of the web page ``/offers/{id}``. Parameters: the flat workload fields
        of ``GET /v1/rank`` (``preset``, ``micro_batch_size`` …) and ``currency``; the
        estimate lists every measurement it used.
        """
        try:
            query = parse_offer_query(dict(request.query_params.items()))
            return offer_detail(offer_id, query, session, ref, settings)
        except (ParamError, WorkloadError, FilterError) as exc:
            raise bad_params(exc) from exc
