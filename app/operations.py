"""One request handler per operation, shared by the HTTP API, the CLI and the MCP server.

Every surface that answers "rank offers for this job" or "estimate it on that machine" calls
the same :class:`Operation`: a request model in, a response model out, with the same
validation and the same errors. The API's controllers validate the body through
:func:`validate_body` (``app.asgi.ModelStrictnessPlugin``) and call :attr:`Operation.run`; the
CLI (:mod:`app.cli_ask`) and the MCP server (:mod:`app.mcp_server`) call :meth:`Operation.call`
with the JSON body they built, which validates it the same way and turns every error into the
API's error answer (:class:`OperationError`: status code, ``detail``, ``extra`` naming each
field). :func:`encode` writes an answer as the API's bytes.

The operations (``method`` and ``path`` are the API request each one is):

- :data:`RANK` ``POST /v1/rank`` (:class:`~app.interface.schemas.RankRequest`)
- :data:`ESTIMATE` ``POST /v1/estimate`` (:class:`~app.interface.schemas.EstimateRequest`)
- :data:`RESOLVE_GPU` ``POST /v1/gpus/resolve`` (:class:`GpuResolveRequest`)
- :data:`LIST_PRESETS` ``GET /v1/workloads`` (no input)
- :data:`HF_CONFIG` ``POST /v1/workloads/from-hf-config`` (a ``config.json`` object)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from litestar.exceptions import NotFoundException
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from app.hf_config import HFConfigError, parse_hf_config
from app.interface.field_names import detail_keys, name_unknown_fields, reason
from app.interface.query import (
    OfferQuery,
    ParamError,
    flat_field,
    parse_offer_query,
    query_text_error,
    space_error,
)
from app.interface.responses import (
    estimate_out,
    offer_detail,
    offer_out,
    rank_response,
    spot_assumptions,
)
from app.interface.schemas import (
    MAX_TEXT,
    WORKLOAD_LIMITS,
    EstimateRequest,
    EstimateResponse,
    OfferFilters,
    OfferPage,
    RankRequest,
    RankResponse,
)
from app.launch import FORMATS, Format, LaunchError, LaunchFile, LaunchJob, load_launch_data, render
from app.model.cost import disk_needed_gb
from app.model.memory import vram_per_gpu_gib
from app.services.estimates import (
    HardwareError,
    anchor_from_input,
    estimate_what_if,
    hardware_from_input,
)
from app.services.offers import (
    FilterError,
    require_currency,
    resolve_gpu_list,
)
from app.services.reference import ReferenceData
from app.services.snapshot import offers_page, stale_providers
from app.services.workloads import WorkloadError, resolve_workload
from app.settings import Settings

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Deps:
    """What a handler reads: a database session (``None`` for operations that need none),
    the reference data (catalog, benchmarks, presets, rates) and the settings."""

    session: Session | None
    ref: ReferenceData
    settings: Settings

    def db(self) -> Session:
        """The session (an operation that reads offers needs one)."""
        if self.session is None:  # pragma: no cover - a wiring mistake, not input
            raise RuntimeError("this operation needs a database session")
        return self.session


class OperationError(Exception):
    """An error answer, as the API gives it: ``status_code``, ``detail`` (a sentence naming
    the fields) and ``extra`` (for a 400, one ``{key, message}`` entry per bad field)."""

    def __init__(self, status_code: int, detail: str, extra: list[dict[str, Any]] | None = None):
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail
        self.extra = extra

    def body(self) -> dict[str, Any]:
        """The error answer's JSON object (``GET``/``POST`` of the API give the same)."""
        out: dict[str, Any] = {"status_code": self.status_code, "detail": self.detail}
        if self.extra is not None:
            out["extra"] = self.extra
        return out


def validate_body(model: type[M], value: Any) -> M:
    """A request body (parsed JSON: dicts, lists, numbers, text) validated as the JSON it
    came from, with the model's own strictness: strict types (``"1.5"`` is no number), enum
    fields by their values (pydantic's strict mode takes enum values only from JSON).

    Raises:
        pydantic.ValidationError: the errors, each with its location.
        ValueError: ``value`` is not JSON (NaN, infinity).
    """
    return model.model_validate_json(json.dumps(value, allow_nan=False))


def validation_error(
    request_line: str, exc: PydanticValidationError, model: type[BaseModel] | None = None
) -> OperationError:
    """A body that failed :func:`validate_body` as the API answers it: 400, ``detail``
    ``Validation failed for POST /v1/rank (workload.seq_len)`` and one ``{message, key}`` per
    error (key: the dotted location), the form Litestar gives a handler's ``data``; an unknown
    field of ``model`` names the field meant
    (:func:`app.interface.field_names.name_unknown_fields`)."""
    extra: list[dict[str, Any]] = []
    errors: list[Any] = exc.errors(include_url=False, include_input=False)
    for e in name_unknown_fields(model, errors) if model is not None else errors:
        entry: dict[str, Any] = {"message": reason(e)}
        if e["loc"]:
            entry["key"] = ".".join(str(part) for part in e["loc"])
        extra.append(entry)
    keys = detail_keys(extra)
    detail = f"Validation failed for {request_line}" + (f" ({keys})" if keys else "")
    return OperationError(400, detail, extra)


def field_error(exc: Exception) -> OperationError:
    """A service's field error (``field``, ``reason``, optionally ``errors``: every pair) as
    the API's 400: ``Invalid workload.preset: unknown preset 'x'`` with one ``{key, message}``
    per field."""
    field = getattr(exc, "field", "request")
    reason = getattr(exc, "reason", str(exc))
    pairs = getattr(exc, "errors", [(field, reason)])
    return OperationError(
        400, f"Invalid {field}: {reason}", [{"key": k, "message": m} for k, m in pairs]
    )


#: Exceptions of the services that name a field of the request (a 400 by :func:`field_error`).
FIELD_ERRORS = (WorkloadError, HardwareError, FilterError)


def encode(answer: Any) -> bytes:
    """An answer as the API writes it: the JSON bytes of ``model_dump(mode="json")`` (of each
    model inside a list), encoded by Litestar's serializer (compact, fields in model order)."""
    from litestar.serialization import encode_json

    return encode_json(_plain(answer))


def _plain(answer: Any) -> Any:
    if isinstance(answer, BaseModel):
        return answer.model_dump(mode="json")
    if isinstance(answer, list):
        return [_plain(a) for a in answer]
    return answer


@dataclass(frozen=True)
class Operation(Generic[Req, Resp]):
    """One operation: the API request it is (``method``, ``path``), its request model, and
    the handler every surface calls (``run``)."""

    name: str
    method: str
    path: str
    request: type[Req] | None
    run: Callable[[Req, Deps], Resp]
    description: str

    @property
    def request_line(self) -> str:
        """``POST /v1/rank``: how the API's validation errors name the request."""
        return f"{self.method} {self.path}"

    def parse(self, body: Any) -> Req:
        """The request model from a JSON body, validated as the API validates it.

        Raises:
            OperationError: 400 naming every bad field (as the API's answer).
        """
        if self.request is None:
            return None  # type: ignore[return-value]
        try:
            return validate_body(self.request, body)
        except PydanticValidationError as exc:
            raise validation_error(self.request_line, exc, self.request) from None
        except ValueError as exc:  # NaN / infinity: not JSON
            raise OperationError(
                400, f"Invalid body: {exc}", [{"key": "body", "message": str(exc)}]
            ) from None

    def call(self, body: Any, deps: Deps) -> Resp:
        """Validate ``body`` and run the handler: the answer the API gives for that body.

        Raises:
            OperationError: the API's error answer (400 naming the field, 404, 422).
        """
        request = self.parse(body)
        try:
            return self.run(request, deps)
        except FIELD_ERRORS as exc:
            raise field_error(exc) from None


# --- estimate -------------------------------------------------------------------------------


def estimate_response(data: EstimateRequest, ref: ReferenceData) -> EstimateResponse:
    """``POST /v1/estimate``: the workload on a what-if machine (no offer needed).

    Raises:
        WorkloadError, HardwareError, FilterError: bad input, naming the field.
    """
    given = data.workload.model_dump(exclude_unset=True, mode="json")
    workload, reference, echo = resolve_workload(given, ref)
    hw_in = data.hardware.model_dump(mode="json")
    hw = hardware_from_input(hw_in, ref)
    require_currency(ref, data.currency)
    anchor = anchor_from_input(data.anchor.model_dump(), workload, ref) if data.anchor else None
    est = estimate_what_if(
        workload,
        reference,
        hw,
        ref,
        price_per_hour=data.price_per_hour,
        currency=data.currency,
        billing=data.billing,
        spot=spot_assumptions(data),
        anchor=anchor,
    )
    hw_echo = {
        **hw_in,
        "gpu": hw.gpu.name,
        "vram_gib": vram_per_gpu_gib(hw.gpu.vram_gib, hw.vram_gib_per_gpu, hw.gpu_count),
    }
    return EstimateResponse(workload=echo, hardware=hw_echo, estimate=estimate_out(est))


# --- presets and config.json ----------------------------------------------------------------


def list_presets(ref: ReferenceData) -> list[dict[str, Any]]:
    """``GET /v1/workloads``: every preset with its field values, the benchmark labels it
    stands for and its sources."""
    return [
        {
            "preset": p.slug,
            "name": p.name,
            **p.fields,
            "benchmark_workloads": list(p.benchmark_workloads),
            "benchmark_method": p.benchmark_method,
            "units_per_sample": p.units_per_sample,
            "throughput_unit": p.throughput_unit,
            "source": p.source,
            "notes": p.notes,
        }
        for p in ref.presets.values()
    ]


def hf_config_fields(config: Any) -> dict[str, Any]:
    """``POST /v1/workloads/from-hf-config``: a Hugging Face ``config.json`` object → workload
    ``fields`` (flat names) and ``notes``.

    Raises:
        OperationError: 400 naming every missing or unusable config key.
    """
    try:
        parsed = parse_hf_config(json.dumps(config), limits=WORKLOAD_LIMITS)
    except HFConfigError as exc:
        extra = [{"key": k, "message": "missing in config.json"} for k in exc.missing]
        extra += [{"key": k, "message": why} for k, why in exc.invalid]
        extra = extra or [{"key": "body", "message": exc.reason}]
        keys = ", ".join(e["key"] for e in extra)
        raise OperationError(400, f"Invalid config.json: {exc.reason} ({keys})", extra) from None
    return {"fields": parsed.fields, "notes": parsed.notes}


# --- GPU labels -----------------------------------------------------------------------------


class GpuResolveRequest(BaseModel):
    """``POST /v1/gpus/resolve``: a GPU label as a provider lists it, with what else the
    listing says (its VRAM, instance type, GPU count), to match against the catalog."""

    model_config = ConfigDict(extra="forbid", strict=True)

    label: str = Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="the GPU as the listing names it (A100-80G-PCIe, 3090-24G, NVIDIA_A100)",
        examples=["A100-80G-PCIe"],
    )
    vram_gib: float | None = Field(
        default=None,
        gt=0,
        le=10**5,
        allow_inf_nan=False,
        description="VRAM per GPU as listed (GiB or GB: a 12 % tolerance absorbs the unit)",
    )
    instance_type: str | None = Field(
        default=None,
        max_length=MAX_TEXT,
        description="the listing's instance type, whose words may tell models apart "
        "(gpu_8x_a100_80gb_sxm4)",
    )
    gpu_count: float = Field(
        default=1, gt=0, le=1024, allow_inf_nan=False, description="GPUs in the listing"
    )


class GpuResolveResponse(BaseModel):
    """What a listing label names in the catalog: one GPU, several (ambiguous), or none."""

    label: str = Field(description="the label as given")
    status: str = Field(description="match, ambiguous or none")
    gpu: str | None = Field(description="the catalog GPU (GET /v1/gpus); null unless a match")
    candidates: list[str] = Field(
        description="catalog GPUs the label leaves open (the match alone when there is one)"
    )
    note: str | None = Field(description="what the matching noticed, in words")


def resolve_gpu(data: GpuResolveRequest, ref: ReferenceData) -> GpuResolveResponse:
    """``POST /v1/gpus/resolve``: a listing label matched as ingest matches an offer's
    (:meth:`app.gpu_names.GpuNameNormaliser.identify` with the providers' conventions)."""
    identity = ref.normaliser.identify(
        data.label,
        vram_gib=data.vram_gib,
        context=(data.instance_type,),
        gpu_count=data.gpu_count,
    )
    return GpuResolveResponse(
        label=data.label,
        status=identity.status,
        gpu=identity.match.canonical_name if identity.match else None,
        candidates=[identity.match.canonical_name] if identity.match else list(identity.candidates),
        note=identity.note,
    )


# --- the operations -------------------------------------------------------------------------

RANK: Operation[RankRequest, RankResponse] = Operation(
    "rank_offers",
    "POST",
    "/v1/rank",
    RankRequest,
    lambda r, d: rank_response(r, d.db(), d.ref, d.settings),
    "Rank rentable GPU offers for a training job by cost per epoch (or time): throughput, "
    "epoch time and cost with their ranges, OOM risk and warnings for each offer.",
)
ESTIMATE: Operation[EstimateRequest, EstimateResponse] = Operation(
    "estimate",
    "POST",
    "/v1/estimate",
    EstimateRequest,
    lambda r, d: estimate_response(r, d.ref),
    "Estimate a training job on one what-if machine (GPU x count): throughput, epoch time, "
    "peak memory and OOM risk, and the cost per epoch given a price per hour.",
)
RESOLVE_GPU: Operation[GpuResolveRequest, GpuResolveResponse] = Operation(
    "resolve_gpu",
    "POST",
    "/v1/gpus/resolve",
    GpuResolveRequest,
    lambda r, d: resolve_gpu(r, d.ref),
    "Match a GPU label as a provider lists it (A100-80G-PCIe, 3090-24G) to the catalog GPU "
    "it names, or the candidates it leaves open.",
)
LIST_PRESETS: Operation[Any, list[dict[str, Any]]] = Operation(
    "list_presets",
    "GET",
    "/v1/workloads",
    None,
    lambda _r, d: list_presets(d.ref),
    "List the workload presets (ResNet-50 on ImageNet, GPT-2, BERT, Llama fine-tunes ...) "
    "with every field value; a preset's slug is the workload's `preset`.",
)


class _AnyObject(BaseModel):
    """Any JSON object (a ``config.json``)."""

    model_config = ConfigDict(extra="allow")


HF_CONFIG: Operation[_AnyObject, dict[str, Any]] = Operation(
    "workload_from_hf_config",
    "POST",
    "/v1/workloads/from-hf-config",
    _AnyObject,
    lambda r, _d: hf_config_fields(r.model_dump()),
    "Read a Hugging Face config.json (the object itself) into workload fields (layers, "
    "hidden_size, heads, vocab_size, params ...) for rank_offers or estimate.",
)

#: Every operation, by name (the MCP tools).
OPERATIONS: dict[str, Operation[Any, Any]] = {
    op.name: op for op in (RANK, ESTIMATE, RESOLVE_GPU, LIST_PRESETS, HF_CONFIG)
}


# --- launch files ---------------------------------------------------------------------------

#: Parameters of ``GET /v1/offers/{id}/launch`` besides the offer page's (workload, currency).
LAUNCH_OPTIONS = ("format", "max_total_cost", "max_total_hours")


def param_error(exc: ParamError | WorkloadError | FilterError) -> OperationError:
    """A flat-parameter error as the API's 400 for a ``GET`` with query parameters:
    ``Invalid query parameters (seq_len)``, one ``{key, message}`` per parameter (workload and
    filter fields by their flat names)."""
    if not isinstance(exc, ParamError):
        exc = ParamError(
            [(flat_field(f), r) for f, r in getattr(exc, "errors", [(exc.field, exc.reason)])]
        )
    keys = ", ".join(k for k, _ in exc.errors)
    return OperationError(400, f"Invalid query parameters ({keys})", exc.as_extra())


@dataclass(frozen=True, slots=True)
class LaunchQuery:
    """A parsed launch request: the file's format, the offer query (workload, currency) and
    the budget (``max_total_cost`` in currency, ``max_total_hours`` wall-clock hours; ``None``
    when not given)."""

    format: Format
    offer: OfferQuery
    max_total_cost: float | None = None
    max_total_hours: float | None = None


def parse_launch_query(raw: Mapping[str, str]) -> LaunchQuery:
    """Flat parameters of a launch request → :class:`LaunchQuery`.

    Raises:
        ParamError: every bad or unknown parameter, by name.
    """
    errors: list[tuple[str, str]] = []
    fmt = raw.get("format") or ""
    if fmt not in FORMATS:
        errors.append(("format", "required: " + " or ".join(FORMATS)))
    budget: dict[str, float] = {}
    for key in ("max_total_cost", "max_total_hours"):
        text = raw.get(key) or ""
        if not text:
            continue
        why = space_error(text) or query_text_error(text, float)
        if why is None:
            try:
                checked = RankRequest.model_validate({"workload": {}, key: text}, strict=False)
                budget[key] = getattr(checked, key)
            except PydanticValidationError as exc:
                why = exc.errors(include_url=False)[0]["msg"]
        if why is not None:
            errors.append((key, why))
    query = None
    try:
        query = parse_offer_query({k: v for k, v in raw.items() if k not in LAUNCH_OPTIONS})
    except ParamError as exc:
        errors += exc.errors
    if errors or query is None:
        raise ParamError(errors)
    return LaunchQuery(cast(Format, fmt), query, **budget)


def launch_file(offer_id: int, raw: Mapping[str, str], deps: Deps) -> LaunchFile:
    """``GET /v1/offers/{id}/launch``: the offer's SkyPilot or dstack file for the workload
    given as flat parameters (those of ``GET /v1/offers/{id}``, plus ``format`` and the
    budget).

    Raises:
        OperationError: 400 naming each bad parameter; 404 no such offer; 422 the launcher
            does not support the offer's provider (the message says which does, if any).
    """
    try:
        launch = parse_launch_query(raw)
        detail = offer_detail(offer_id, launch.offer, deps.db(), deps.ref, deps.settings)
        disk = None
        if launch.offer.workload is not None:
            given = launch.offer.workload.model_dump(exclude_unset=True, mode="json")
            workload, _reference, _echo = resolve_workload(given, deps.ref)
            disk = disk_needed_gb(workload)
    except (ParamError, WorkloadError, FilterError) as exc:
        raise param_error(exc) from None
    except NotFoundException as exc:
        raise OperationError(404, exc.detail) from None
    job = LaunchJob(
        offer=detail.offer,
        price_per_hour=detail.price_per_hour,
        currency=detail.currency,
        seen_on=detail.details.seen_on,
        workload=detail.workload,
        estimate=detail.estimate,
        disk=disk,
        max_total_cost=launch.max_total_cost,
        max_total_hours=launch.max_total_hours,
    )
    try:
        return render(job, launch.format, load_launch_data(deps.settings.seed_dir))
    except LaunchError as exc:
        raise OperationError(
            exc.status, exc.reason, [{"key": exc.field, "message": exc.reason}]
        ) from None


# --- offers ---------------------------------------------------------------------------------


def offer_page(
    filters: OfferFilters, currency: str, limit: int, offset: int, deps: Deps
) -> OfferPage:
    """``GET /v1/offers``: offers matching ``filters``, a page ordered by id.

    ``max_price_per_hour`` is in ``currency``; prices in the answer are as listed.

    Raises:
        FilterError: an unknown currency or filter value, naming it.
    """
    session = deps.db()
    page, total = offers_page(
        session, filters.model_dump(), deps.ref, currency=currency, limit=limit, offset=offset
    )
    stale = stale_providers(session, deps.ref, deps.settings.stale_after_hours)
    return OfferPage(
        items=[offer_out(r, deps.ref, stale) for r in page],
        total=total,
        limit=limit,
        offset=offset,
        gpus_matched=resolve_gpu_list(deps.ref, filters.gpu) if filters.gpu else None,
    )
