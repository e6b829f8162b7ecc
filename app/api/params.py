"""What every controller of the JSON API (``/v1``) shares: strict query parameters, the 400
that names them, the OpenAPI entries of parameters the handlers read themselves, and the
base controller.

A handler declares its query parameters; :func:`strict_query` (``before_request``) checks how
each is written before Litestar parses it, and :func:`reject_unknown_query` (called by list
handlers) names every parameter the handler does not take. ``GET /v1/rank`` and
``GET /v1/offers/{id}`` read their flat workload parameters themselves
(:mod:`app.interface.query`); :func:`rank_query_parameters` lists them in the OpenAPI
document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Controller, Request
from litestar.enums import ParamType
from litestar.exceptions import ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation, Parameter, Schema
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import QueryParameter
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from app.interface.counts import GRAMMARS, Grammar
from app.interface.deps import DEPENDENCIES
from app.interface.field_names import reason, unknown_field
from app.interface.query import (
    COUNT_PARAMS,
    OFFER_PARAMS,
    ORDER_COLUMNS,
    RANK_PARAMS,
    ParamError,
    flat_field,
    query_text_error,
    scalar_kind,
    space_error,
)
from app.interface.schemas import OfferFilters, RankRequest, WorkloadIn, zero_bounds
from app.services.offers import FilterError
from app.services.workloads import WorkloadError


def query_param(**constraints: Any) -> Any:
    """``QueryParameter(**constraints)`` whose bounds of 0 reach the OpenAPI document too
    (:func:`app.interface.schemas.zero_bounds`)."""
    return QueryParameter(**constraints, schema_extra=zero_bounds(constraints))


def documented(container: Any, description: str) -> ResponseSpec:
    """The OpenAPI entry of a 200 answer the handler builds as plain dicts: ``container`` (a
    model of :mod:`app.api.reference_schemas`) says what the dicts hold."""
    return ResponseSpec(data_container=container, description=description, generate_examples=False)


def field_doc(model: type[BaseModel], name: str) -> str | None:
    """A field's description, for the query parameter of the same name."""
    return model.model_fields[name].description


def bad_params(exc: ParamError | WorkloadError | FilterError) -> ValidationException:
    """A flat-parameter error as the API's 400 (``extra`` names every parameter, flat)."""
    if not isinstance(exc, ParamError):
        exc = ParamError(
            [(flat_field(f), r) for f, r in getattr(exc, "errors", [(exc.field, exc.reason)])]
        )
    return ValidationException(detail="Invalid query parameters", extra=exc.as_extra())


def bad_model_params(exc: PydanticValidationError) -> ValidationException:
    """A model built from query parameters failed a rule beyond the parameters' own bounds:
    the API's 400 naming each field (its location, dotted) with pydantic's reason."""
    return bad_params(
        ParamError(
            [(".".join(map(str, e["loc"])), reason(e)) for e in exc.errors(include_url=False)]
        )
    )


#: Handler arguments that are injected, not query parameters.
_INJECTED = frozenset({"self", "request", "session", "ref", "settings"})
#: Parameters that were renamed (the old name's 400 says what to send instead).
_RENAMED = {"min_vram_gb": "min_vram_gib"}


def _unknown_reason(key: str, known: set[str]) -> str:
    if key in _RENAMED:
        return f"unknown parameter; renamed to {_RENAMED[key]}"
    return unknown_field(key, known, "parameter")


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
            errors.append((key, _unknown_reason(key, known)))
        elif len(request.query_params.getall(key)) > 1:
            errors.append((key, "given more than once"))
    if errors:
        raise bad_params(ParamError(errors))


def strict_query(request: Request[Any, Any, Any]) -> None:
    """``before_request`` of the API: no query parameter the handler declares may begin or
    end with whitespace (:func:`app.interface.query.space_error`, as for the flat parameters
    and the pages), and one it declares as a boolean, integer or number must be written as
    the OpenAPI document types it (:func:`app.interface.query.query_text_error`, the rule the
    flat parameters of ``GET /v1/rank`` follow too), checked before Litestar parses it laxly
    (``1e2`` as an integer, ``1`` or ``True`` as a boolean).

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
            space_error(t) or (query_text_error(t, kind, key) if kind is not None else None)
            for t in texts
        )
        if (why := next((r for r in reasons if r), None)) is not None:
            errors.append((key, why))
    if errors:
        raise bad_params(ParamError(errors))


class ResourceController(Controller):
    """A controller of one resource of the API under ``/v1``: the shared dependencies
    (:data:`app.interface.deps.DEPENDENCIES`) and :func:`strict_query`."""

    dependencies = DEPENDENCIES
    before_request = staticmethod(strict_query)


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
    prop: dict[str, Any], defs: dict[str, Any], *, text: bool, count: Grammar | None = None
) -> Schema:
    """A query parameter's schema from a field's JSON schema (pydantic's): its type, enum,
    bounds, pattern and default; ``null`` dropped (an absent parameter is the null). A count
    (``count``: its grammar) is ``anyOf`` the field's integer with its bounds and a string of
    the grammar's pattern (:data:`~app.interface.counts.COUNT_PATTERN`, ``7B``;
    :data:`~app.interface.counts.TOKENS_PATTERN`, ``4k``), whose value the same bounds limit."""
    options = prop.get("anyOf", [prop])
    typed: dict[str, Any] = next((o for o in options if o.get("type") != "null"), {})
    if "$ref" in typed:
        typed = defs[typed["$ref"].rsplit("/", 1)[-1]]
    kwargs: dict[str, Any] = {}
    bounds = {ours: typed[key] for key, ours in _SCHEMA_KEYS.items() if key in typed}
    if count is not None:
        kwargs["any_of"] = [
            Schema(type=OpenAPIType(typed["type"]), **bounds),
            Schema(type=OpenAPIType.STRING, pattern=count.pattern),
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


def _count_help(prop: dict[str, Any], grammar: Grammar) -> str:
    """How a count parameter is written in ``grammar``, with the field's bounds in words
    (``7B``; more than 0, at most 1e+14)."""
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
    return grammar.help + (f" ({', '.join(limits)})" if limits else "")


#: The models whose fields are the flat parameters, and every one's JSON schema.
_FLAT_MODELS: tuple[type[BaseModel], ...] = (WorkloadIn, OfferFilters, RankRequest)
#: ``order`` is no model field: it re-orders the returned rows by a column.
_ORDER = (
    "re-order the returned rows by a column (prefix - for descending): " + ", ".join(ORDER_COLUMNS),
    Schema(type=OpenAPIType.STRING, enum=[*ORDER_COLUMNS, *(f"-{c}" for c in ORDER_COLUMNS)]),
)


def _flat_parameter(name: str, props: dict[str, Any], defs: dict[str, Any]) -> Parameter:
    """One flat parameter: described and typed by the model field of the same name."""
    if name == "order":
        text, schema = _ORDER
    else:
        fields = (m.model_fields[name] for m in _FLAT_MODELS if name in m.model_fields)
        text = next((f.description for f in fields), None) or ""
        if name in _TEXT_PARAMS:
            text = f"{text}; " + (
                "comma-separated"
                if name == "cuda_only_libraries"
                else _count_help(props[name], GRAMMARS[name])
            )
        schema = _flat_schema(
            props[name], defs, text=name in _TEXT_PARAMS, count=GRAMMARS.get(name)
        )
    return Parameter(
        name=name,
        param_in=ParamType.QUERY,
        required=False,
        schema=schema,
        description=text or name.replace("_", " "),
        # an empty value counts as not given (an HTML form sends every field)
        allow_empty_value=True,
    )


def rank_query_parameters(names: tuple[str, ...] = RANK_PARAMS) -> list[Parameter]:
    """Flat query parameters for the OpenAPI document: by default those of ``GET /v1/rank``
    (every field of ``WorkloadIn``, ``OfferFilters`` and the ranking options, plus
    ``order``), typed and described by the pydantic field."""
    schemas = [m.model_json_schema() for m in _FLAT_MODELS]
    defs = {k: v for js in schemas for k, v in js.get("$defs", {}).items()}
    props = {k: v for js in reversed(schemas) for k, v in js["properties"].items()}
    return [_flat_parameter(name, props, defs) for name in names]


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
