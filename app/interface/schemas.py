"""Request and response models of the HTTP API (pydantic v2).

Requests forbid unknown fields, so a typo is a 400 naming the field instead of a silent
default. Enumerated values are lower-case snake_case and appear in the OpenAPI schema.
"""

from __future__ import annotations

import re
import typing
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

from app.interface.counts import COUNT, GRAMMARS, Grammar, count_value
from app.interface.field_names import our_names
from app.model.shape import SHAPE_PARAM_FIELDS
from app.model.types import (
    VERSION_PATTERN,
    WORKLOAD_INPUTS,
    Architecture,
    Attention,
    BaseDtype,
    Basis,
    CheckpointGranularity,
    Implementation,
    InterconnectLabel,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    QuantBackend,
    Sharding,
    Stack,
    VisionTask,
    interconnect_label,
    unwrap_optional,
)
from app.price_age import AGE_TIERS_DAYS, PriceKind, PriceTier

#: the row type of a :class:`Page`
RowT = typing.TypeVar("RowT", bound=BaseModel)

#: numeric constraint → the OpenAPI keyword that states it
BOUND_KEYWORDS = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
}


def zero_bounds(constraints: dict[str, Any]) -> dict[str, Any] | None:
    """The bounds of 0 among ``constraints`` (``{"gt": 0, "le": 5}`` → ``{"exclusiveMinimum":
    0}``) as OpenAPI keywords, ``None`` when there are none.

    Litestar 2 leaves a bound out of the OpenAPI document when its value is falsy and the field
    is optional (``gt=0`` on ``float | None`` came out with no lower bound, so the document let
    clients send ``0`` or ``-1`` that validation rejects); stating these again as schema extras
    puts them back. Used by :func:`state_openapi_bounds` (models) and the routes' query parameters.
    """
    found = {
        key: value
        for name, key in BOUND_KEYWORDS.items()
        if (value := constraints.get(name)) is not None and not value
    }
    return found or None


def state_openapi_bounds(model: type[BaseModel]) -> type[BaseModel]:
    """Copy what Litestar 2 leaves out of the OpenAPI document from ``model``'s validation into
    its fields' JSON-schema extras: bounds of 0 (:func:`zero_bounds`) and ``pattern`` (given as
    ``Field(pattern=...)``, which it does not read). Returns ``model``.

    ``tests/test_openapi_bounds.py`` compares every served model with pydantic's own schema.
    A list's length limits become ``minItems``/``maxItems`` (Litestar writes them as string
    lengths, which say nothing about an array).
    """
    for info in model.model_fields.values():
        constraints = {
            name: getattr(meta, name)
            for meta in info.metadata
            for name in (*BOUND_KEYWORDS, "pattern")
            if getattr(meta, name, None) is not None
        }
        extra: dict[str, Any] = zero_bounds(constraints) or {}
        if "pattern" in constraints:
            extra["pattern"] = constraints["pattern"]
        if _is_array(info.annotation):
            # a list's length limits are minItems/maxItems (Litestar writes maxLength)
            for meta in info.metadata:
                for name, key in (("min_length", "minItems"), ("max_length", "maxItems")):
                    if getattr(meta, name, None) is not None:
                        extra[key] = getattr(meta, name)
                        extra["minLength" if name == "min_length" else "maxLength"] = None
        if extra and not callable(info.json_schema_extra):
            info.json_schema_extra = {**(info.json_schema_extra or {}), **extra}
    return model


def described_as(model: type[BaseModel], name: str, **field_kwargs: Any) -> Any:
    """A ``Field`` with the description of ``model``'s field ``name``: the same value in
    another answer (a refresh run's ``provider``, a price history's ``offer_key``) is described
    in one place. ``field_kwargs`` go to ``Field`` as they are (``examples``, ``default``)."""
    return Field(description=model.model_fields[name].description, **field_kwargs)


def _is_array(annotation: Any) -> bool:
    """Whether a field's type is a list (or tuple/set), optional or not
    (:func:`~app.model.types.unwrap_optional`)."""
    return typing.get_origin(unwrap_optional(annotation)) in (list, tuple, set, frozenset)


#: Request bodies: unknown fields are a 400 naming the field, and types are strict, as the
#: OpenAPI states them: ``"1.5"`` is not a number, ``1`` or ``"true"`` not a boolean, ``2.0``
#: not an integer (lax parsing accepted all of these, so the document said less than the
#: API accepted). Bodies are validated as JSON (``app.asgi.ModelStrictnessPlugin``), where
#: strict mode takes enum fields by value; flat query parameters, which are all text, are
#: parsed with ``strict=False`` once their numbers and booleans are written as the document
#: types them (:func:`app.interface.query.query_text_error`).
REQUEST_CONFIG = ConfigDict(extra="forbid", strict=True)

#: Currency codes as requests may write them (any case; upper-cased before use).
CURRENCY_PATTERN = r"^[A-Za-z]{3}$"
#: How every ``currency`` field and parameter is described.
CURRENCY_TEXT = (
    "ISO 4217 code, any case (usd = USD): USD or a currency with a stored exchange rate "
    "(CNY, EUR); prices listed in another currency are converted"
)
#: How the ``gpus_matched`` answer field is described.
GPUS_MATCHED_TEXT = (
    "the catalog GPUs the gpu filter matched (a family name stands for several); null "
    "without a gpu filter"
)
#: How an ``offer_id`` path parameter is described.
OFFER_ID_TEXT = "offer id (the id field of GET /v1/offers or of a ranked offer)"
#: How the ``gpu`` offer filter is described.
GPU_FILTER_TEXT = (
    "GPU name or alias, any case; a family name matches every model of the family: A100 "
    "matches the A100 PCIe and SXM4, 40 and 80 GB; A100 80GB both 80 GB forms; A100 SXM4 "
    "80GB one model (gpus_matched in the answer lists them); several, separated by commas, "
    "match any of them (A100, H100)"
)
#: A CUDA version as written in listings and presets (``12.4``).
CUDA_PATTERN = VERSION_PATTERN
#: Longest GPU name, alias, provider slug, region, preset slug or search text accepted.
MAX_TEXT = 200
#: Largest price per hour accepted (any currency; the dearest listed machine is ~1e3 USD/h).
MAX_PRICE = 1e9

Billing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y"]

#: Libraries :mod:`app.model.compat` knows the software stack of.
CudaLibrary = Literal["bitsandbytes", "flash-attn", "transformer-engine"]


class SpotIn(BaseModel):
    """Spot assumptions (see :class:`app.model.cost.SpotAssumptions` for the defaults)."""

    model_config = REQUEST_CONFIG

    spot_interruptions_per_hour: float | None = Field(
        default=None, ge=0, le=100, allow_inf_nan=False, description="expected interruptions"
    )
    spot_checkpoint_interval_hours: float | None = Field(
        default=None, gt=0, le=10_000, allow_inf_nan=False, description="hours between checkpoints"
    )
    spot_restart_hours: float | None = Field(
        default=None, ge=0, le=1_000, allow_inf_nan=False, description="hours lost per restart"
    )


def request_field(name: str) -> Any:
    """The :data:`WORKLOAD_INPUTS` field ``name`` as an optional request field (absent: the
    preset's or the core's default): its :class:`~app.model.types.InputSpec` as pydantic
    constraints. The field's type is written in :class:`WorkloadIn` (by
    ``tools/gen_workload_in.py``, which checks it against the input's ``kind``).

    Numbers are finite; free text (no ``pattern``) is at most :data:`MAX_TEXT` long; a list
    at most ``max_items`` long.
    """
    given = WORKLOAD_INPUTS[name]
    spec = given.spec
    kwargs: dict[str, Any] = {
        key: value
        for key in ("gt", "ge", "le", "pattern")
        if (value := getattr(spec, key)) is not None
    }
    if given.kind in (int, float):
        kwargs["allow_inf_nan"] = False
    if given.kind is str and spec.pattern is None:
        kwargs["max_length"] = MAX_TEXT
    if spec.max_items is not None:
        kwargs["max_length"] = spec.max_items
    if spec.examples:
        kwargs["examples"] = list(spec.examples)
    if name in GRAMMARS:
        kwargs["json_schema_extra"] = count_schema(kwargs, GRAMMARS[name])
    return Field(default=None, description=spec.description, **kwargs)


def count_schema(constraints: dict[str, Any], grammar: Grammar = COUNT) -> dict[str, Any]:
    """The JSON forms of a count field in a body, as schema keywords: an integer within
    ``constraints``' bounds (``7e9`` is one), text such as ``"7B"`` (``grammar``'s pattern,
    :data:`~app.interface.counts.COUNT_PATTERN`, or ``"4k"`` for a length in tokens,
    :data:`~app.interface.counts.TOKENS_PATTERN`; the same bounds limit its value), or null
    (not given). The forms exclude each other, so ``anyOf`` and ``oneOf`` say the same: pydantic's
    own schema takes ``anyOf`` in place of its integer-or-null, Litestar's document ``oneOf``.
    """
    integer = {"type": "integer"} | {
        key: constraints[name] for name, key in BOUND_KEYWORDS.items() if name in constraints
    }
    forms = [integer, {"type": "string", "pattern": grammar.pattern}, {"type": "null"}]
    return {"anyOf": forms, "oneOf": forms}


#: The workload's count fields (their :class:`~app.model.types.InputSpec` says ``count``, or
#: ``tokens`` for a length in tokens): :data:`app.interface.counts.GRAMMARS`.
COUNT_FIELDS: tuple[str, ...] = tuple(GRAMMARS)


class CountsIn(BaseModel):
    """A request model whose :data:`COUNT_FIELDS` take counts as people write them: an
    integral JSON number (``7e9``) or text (``"7B"``, ``"50k"``, ``"1.5M"``), read by
    :func:`app.interface.counts.count_value` (the query strings' parser) in the field's
    grammar (``seq_len``: ``"4k"`` is 4096); a value that is not whole is a 400 naming the
    field."""

    model_config = REQUEST_CONFIG

    @field_validator(*COUNT_FIELDS, mode="before", check_fields=False)
    @classmethod
    def _count(cls, value: object, info: ValidationInfo) -> object:
        return count_value(value, GRAMMARS[info.field_name or ""])

    @model_validator(mode="before")
    @classmethod
    def _our_names(cls, data: object) -> object:
        """Fields named as other tools name them (:data:`~app.interface.field_names.SYNONYMS`:
        ``gradient_accumulation_steps``, ``max_seq_length``) read as ours.

        Raises:
            ValueError: a field given under two names with different values."""
        if not isinstance(data, dict):
            return data
        named, clashes = our_names(data, cls.model_fields)
        if clashes:
            raise ValueError("; ".join(clashes))
        return named


# --- WorkloadIn: written by tools/gen_workload_in.py from WORKLOAD_INPUTS; do not edit ---
class WorkloadIn(CountsIn):
    """A training job. ``preset`` supplies defaults for every other field.

    Sizes: ``params`` parameters (count), ``seq_len`` tokens per sample, ``image_size`` pixels
    per side, ``micro_batch_size`` samples per GPU per step, ``dataset_gb`` GB on disk,
    ``cpu_ms_per_sample`` CPU milliseconds of data loading per sample on one core.

    One field per outside-given field of :class:`app.model.types.Workload`, described and
    bounded by its :class:`~app.model.types.InputSpec` (:func:`request_field`).
    """

    model_config = REQUEST_CONFIG

    preset: str | None = request_field("preset")
    architecture: Architecture | None = request_field("architecture")
    params: int | None = request_field("params")
    layers: int | None = request_field("layers")
    hidden_size: int | None = request_field("hidden_size")
    heads: int | None = request_field("heads")
    kv_heads: int | None = request_field("kv_heads")
    ffn_hidden_size: int | None = request_field("ffn_hidden_size")
    vocab_size: int | None = request_field("vocab_size")
    seq_len: int | None = request_field("seq_len")
    image_size: int | None = request_field("image_size")
    micro_batch_size: int | None = request_field("micro_batch_size")
    grad_accum_steps: int | None = request_field("grad_accum_steps")
    precision: Precision | None = request_field("precision")
    optimizer: Optimizer | None = request_field("optimizer")
    method: Method | None = request_field("method")
    lora_rank: int | None = request_field("lora_rank")
    gradient_checkpointing: bool | None = request_field("gradient_checkpointing")
    attention: Attention | None = request_field("attention")
    sharding: Sharding | None = request_field("sharding")
    fused_cross_entropy: bool | None = request_field("fused_cross_entropy")
    cpu_offload: bool | None = request_field("cpu_offload")
    optimizer_in_backward: bool | None = request_field("optimizer_in_backward")
    activation_offloading: bool | None = request_field("activation_offloading")
    checkpoint_granularity: CheckpointGranularity | None = request_field("checkpoint_granularity")
    base_dtype: BaseDtype | None = request_field("base_dtype")
    implementation: Implementation | None = request_field("implementation")
    quant_backend: QuantBackend | None = request_field("quant_backend")
    double_quant: bool | None = request_field("double_quant")
    full_model_init: bool | None = request_field("full_model_init")
    dropout: bool | None = request_field("dropout")
    set_grads_to_none: bool | None = request_field("set_grads_to_none")
    vision_task: VisionTask | None = request_field("vision_task")
    backbone_gflops_224: float | None = request_field("backbone_gflops_224")
    max_boxes_per_image: int | None = request_field("max_boxes_per_image")
    num_classes: int | None = request_field("num_classes")
    patch_size: int | None = request_field("patch_size")
    text_encoder_params: int | None = request_field("text_encoder_params")
    vae_params: int | None = request_field("vae_params")
    ema_weights: bool | None = request_field("ema_weights")
    stack: Stack | None = request_field("stack")
    samples_per_epoch: int | None = request_field("samples_per_epoch")
    epochs: float | None = request_field("epochs")
    dataset_gb: float | None = request_field("dataset_gb")
    cpu_ms_per_sample: float | None = request_field("cpu_ms_per_sample")
    min_cuda: str | None = request_field("min_cuda")
    forward_gflops_per_sample: float | None = request_field("forward_gflops_per_sample")
    forward_activations_per_sample: float | None = request_field("forward_activations_per_sample")
    lookup_params: int | None = request_field("lookup_params")
    tokens_per_epoch: int | None = request_field("tokens_per_epoch")
    tokens_per_sample: float | None = request_field("tokens_per_sample")
    packed: bool | None = request_field("packed")
    cuda_build: str | None = request_field("cuda_build")
    cuda_only_libraries: list[CudaLibrary] | None = request_field("cuda_only_libraries")
    min_compute_capability: str | None = request_field("min_compute_capability")
    checkpoints_kept: int | None = request_field("checkpoints_kept")


# --- end of the written WorkloadIn ---


#: The most each shape field of a workload may be (WorkloadIn's own bounds), for the
#: config.json reader (:func:`app.hf_config.parse_hf_config`): one set of bounds for both (the
#: shape fields the parameter count follows, :data:`app.model.shape.SHAPE_PARAM_FIELDS`).
WORKLOAD_LIMITS: dict[str, int] = {
    name: int(typing.cast(float, WORKLOAD_INPUTS[name].spec.le))
    for name in (*SHAPE_PARAM_FIELDS, "params")
}


class HardwareIn(BaseModel):
    """A what-if machine: ``gpu`` is any name or alias the catalog knows."""

    model_config = REQUEST_CONFIG

    gpu: str = Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="GPU model: a catalog name, any alias or a listing's label, in any case "
        "(GET /v1/gpus); a VRAM or board the label writes picks the variant that has it "
        "(3090-24G, V100 32GB SXM2; 4090-48G: a memory-modified RTX 4090 with 48 GB) and a "
        "VRAM no variant has is a 400 naming them (4060-12GB); a name that leaves several "
        "models open (A100, A100-80GB: PCIe or SXM4) is a 400 listing them unless "
        "interconnect or vram_gib tells them apart",
        examples=["A100 80GB SXM4"],
    )
    gpu_count: float = Field(
        default=1,
        ge=0.05,
        le=1024,
        description="GPUs; below 1 a slice (vGPU/MIG share) of one card",
    )
    interconnect: InterconnectLabel | None = Field(
        default=None,
        description="GPU-to-GPU link, the same words offers use (any case): nvlink, nvswitch "
        "(NVLink through NVSwitch, e.g. 8-GPU HGX boards) or pcie; null: unknown (SXM boards "
        "are taken as NVLink)",
        examples=["nvswitch"],
    )
    vcpus: float | None = Field(
        default=None,
        ge=0.1,
        le=10**5,
        allow_inf_nan=False,
        description="vCPUs (hardware threads) of the machine; they bound data loading",
        examples=[32],
    )
    ram_gib: float | None = Field(
        default=None, ge=0.1, le=10**7, allow_inf_nan=False, description="host RAM, GiB"
    )
    disk_gb: float | None = Field(
        default=None,
        ge=0.1,
        le=10**9,
        allow_inf_nan=False,
        description="system plus data disk, GB (10^9 bytes)",
        examples=[500],
    )
    max_cuda: str | None = Field(
        default=None,
        pattern=CUDA_PATTERN,
        description="highest CUDA version the driver supports",
        examples=["12.4"],
    )
    vram_gib: float | None = Field(
        default=None,
        ge=0.1,
        le=10**5,
        allow_inf_nan=False,
        description="override catalog VRAM per GPU, GiB",
    )
    disk_type: Literal["hdd", "ssd", "nvme"] | None = Field(
        default=None,
        description="disk kind; a dataset streamed from hdd may bound throughput",
    )
    gpus_per_node: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="GPUs one machine holds; more GPUs than that span several machines "
        "joined by the network (null: 8, or the board's NVLink domain: 16 for V100 SXM3, "
        "72 for GB200/GB300)",
        examples=[8],
    )
    network_gbps: float | None = Field(
        default=None,
        ge=1,
        le=10**5,
        allow_inf_nan=False,
        description="network between machines, Gbit/s per machine (InfiniBand, RoCE or "
        "Ethernet, all NICs together: 8× 400 Gbit/s NDR = 3200); used when the GPUs span "
        "several machines (null: a documented default, said in the multi_node warning)",
        examples=[3200],
    )

    _gpu_count = field_serializer("gpu_count")(lambda self, v: gpu_count_out(v))
    _gpu_count_whole = field_validator("gpu_count")(lambda v: whole_gpu_count(v))
    _gpu_count_number = field_validator("gpu_count", mode="before")(lambda v: gpu_count_number(v))

    @field_validator("interconnect", mode="before")
    @classmethod
    def _interconnect(cls, value: object) -> object:
        """Any case; ``sxm`` (a board form some listings give) reads as ``nvlink``."""
        return (interconnect_label(value) or value) if isinstance(value, str) else value


#: What a GPU count must be, where a generic number rule would mislead (its example, 1.5, is
#: itself refused as a GPU count: :func:`whole_gpu_count`), in a body and a query string alike.
GPU_COUNT_TEXT = (
    "must be a number of GPUs written as digits, e.g. 8 (not 8x); below 1 a share of one "
    "card, e.g. 0.5"
)


#: A number as text (the query strings' form, read by the lax validation of flat parameters).
_NUMBER_TEXT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def gpu_count_number(value: object) -> object:
    """A GPU count written as text that is no number (``"8x"``, ``"8 GPUs"``) is refused with
    :data:`GPU_COUNT_TEXT` rather than pydantic's bare "Input should be a valid number". A
    number as text (``"8"``) passes on: the query strings' lax validation reads it, and a
    body's strict one refuses it as before (a body writes a JSON number)."""
    if isinstance(value, str) and not _NUMBER_TEXT.fullmatch(value):
        raise ValueError(f"{value!r}: {GPU_COUNT_TEXT}")
    return value


def whole_gpu_count(count: float | None) -> float | None:
    """A GPU count as requests may give it: whole from 1 up (``2``, ``8``), a fraction only
    below 1 (``0.5``: a slice of one card). No machine has 1.5 GPUs.

    Raises:
        ValueError: a fractional count of 1 or more (pydantic reports it as a 400 naming the
            field).
    """
    if count is not None and count >= 1 and not float(count).is_integer():
        raise ValueError(
            f"{count:g} GPUs: a count of 1 or more must be whole (fractions only below 1, "
            "a slice of one card)"
        )
    return count


def gpu_count_out(count: float) -> float | int:
    """A GPU count as JSON gives it: whole counts as integers (``8``, not ``8.0``), so a
    fraction appears only where an offer or a request has one (``0.5``: half a card)."""
    return int(count) if float(count).is_integer() else count


def billing_word(text: str) -> str:
    """A billing kind as people write it: any case, ``-`` or a space for ``_`` (``Spot``,
    ``on-demand``, ``On Demand`` and ``reserved-1y`` are ``spot``, ``on_demand`` and
    ``reserved_1y``: the rule :class:`app.model.vocabulary.AsWritten` applies to the workload's
    words). Other text is returned as written, for the enum to refuse naming the four kinds."""
    word = text.strip().lower().replace("-", "_").replace(" ", "_")
    return word if word in typing.get_args(Billing) else text


def _billing_word(value: object) -> object:
    return billing_word(value) if isinstance(value, str) else value


def _upper_currency(value: object) -> object:
    """Currency codes in any case (``cny`` → ``CNY``); only ASCII is upper-cased, so what is
    accepted is exactly :data:`CURRENCY_PATTERN` (``"ßa".upper()`` would be ``"SSA"``)."""
    return value.upper() if isinstance(value, str) and value.isascii() else value


class AnchorIn(BaseModel):
    """A rate you measured for this very job on one machine: every estimate is moved by the
    measured ÷ estimated ratio there, and its range narrows to the cross-GPU error (not
    stored; docs/model.md#throughput)."""

    model_config = REQUEST_CONFIG

    gpu: str = Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="GPU model the rate was measured on (catalog name or alias)",
        examples=["GeForce RTX 4090"],
    )
    gpu_count: float = Field(default=1, ge=0.05, le=1024, description="GPUs of that run")
    interconnect: InterconnectLabel | None = Field(
        default=None, description="GPU-to-GPU link of that run (nvlink, nvswitch, pcie)"
    )
    samples_per_s: float | None = Field(
        default=None, gt=0, le=1e12, allow_inf_nan=False, description="measured samples/s, all GPUs"
    )
    tokens_per_s: float | None = Field(
        default=None,
        gt=0,
        le=1e15,
        allow_inf_nan=False,
        description="measured tokens/s, all GPUs (token workloads; instead of samples_per_s)",
    )

    @model_validator(mode="after")
    def _one_rate(self) -> AnchorIn:
        if (self.samples_per_s is None) == (self.tokens_per_s is None):
            raise ValueError("give exactly one of samples_per_s and tokens_per_s")
        return self


class EstimateRequest(SpotIn):
    """``POST /v1/estimate`` body. ``price_per_hour`` (optional, in ``currency``) prices it;
    ``billing`` ``spot`` adds the interruption warning and the expected cost."""

    model_config = REQUEST_CONFIG

    workload: WorkloadIn = Field(description="the training job")
    hardware: HardwareIn = Field(description="the machine to estimate it on")
    currency: str = Field(
        default="USD",
        pattern=CURRENCY_PATTERN,
        description=CURRENCY_TEXT + "; of price_per_hour and every cost in the answer",
        examples=["USD"],
    )
    price_per_hour: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE,
        allow_inf_nan=False,
        description="price of the whole machine per hour, in currency; null: no costs",
        examples=[2.5],
    )
    billing: Billing | None = Field(
        default=None, description="billing kind; spot adds interruptions to time and cost"
    )
    anchor: AnchorIn | None = Field(
        default=None,
        description="a rate you measured for this job on one machine: the estimate is made "
        "relative to it (not stored)",
    )

    _currency = field_validator("currency", mode="before")(_upper_currency)
    _billing = field_validator("billing", mode="before")(_billing_word)


class OfferFilters(BaseModel):
    """Offer filters shared by ``GET /v1/offers`` and ``POST /v1/rank``."""

    model_config = REQUEST_CONFIG

    gpu: str | None = Field(
        default=None,
        max_length=MAX_TEXT,
        description=GPU_FILTER_TEXT,
        examples=["A100 80GB"],
    )
    min_vram_gib: float | None = Field(
        default=None,
        ge=0,
        le=10**5,
        allow_inf_nan=False,
        description="least VRAM per GPU, GiB (a GPU slice counts its share of the card)",
        examples=[40],
    )
    gpu_count: float | None = Field(
        default=None,
        gt=0,
        le=1024,
        allow_inf_nan=False,
        description="exactly this many GPUs per instance (fractions match GPU slices)",
        examples=[8],
    )
    min_gpu_count: float | None = Field(
        default=None,
        gt=0,
        le=1024,
        allow_inf_nan=False,
        description="at least this many GPUs per instance",
        examples=[2],
    )
    provider: str | None = Field(
        default=None,
        max_length=MAX_TEXT,
        description="provider slug or name, any case and punctuation (vast, Vast.ai, "
        "恒源云); one that names no provider is a 400 listing the known slugs",
        examples=["vast"],
    )
    region: str | None = Field(
        default=None,
        max_length=MAX_TEXT,
        description="case-insensitive substring of the offer's region, or a country (English or "
        "Chinese name, ISO code: China, 中国, US), which matches its regions' own labels "
        "(华北, us-east-1, Texas, US, NA); text that is neither a country nor part of any "
        "offer's region is a 400 listing the regions",
        examples=["us-"],
    )
    billing: Billing | None = Field(default=None, description="only offers of this billing kind")
    max_price_per_hour: float | None = Field(
        default=None,
        gt=0,
        le=MAX_PRICE,
        allow_inf_nan=False,
        description="in the request's currency",
    )
    available_only: bool = Field(
        default=True, description="only offers the provider showed as available when last seen"
    )
    include_suspect: bool = Field(
        default=False,
        description="also list offers that failed a plausibility check at ingest (marked "
        "suspect, with the reason)",
    )
    bookable_only: bool = Field(
        default=False,
        description="only offers that can be rented as listed (bookable): leave out price "
        "indices and quoted examples (by default they are listed, marked, and ranked after "
        "the bookable offers)",
    )

    _gpu_count_whole = field_validator("gpu_count")(lambda v: whole_gpu_count(v))
    _gpu_count_number = field_validator("gpu_count", "min_gpu_count", mode="before")(
        gpu_count_number
    )
    _billing = field_validator("billing", mode="before")(_billing_word)


class RankRequest(SpotIn):
    """``POST /v1/rank`` body. ``max_total_cost`` (in ``currency``) and ``max_total_hours``
    (wall clock, all epochs) keep only the offers that meet them; spot offers are judged by
    their expected time and cost with interruptions."""

    model_config = REQUEST_CONFIG

    workload: WorkloadIn = Field(description="the training job")
    filters: OfferFilters = Field(default_factory=OfferFilters, description="which offers to rank")
    sort: Literal[
        "cost_per_epoch", "epoch_hours", "total_cost", "price_per_hour", "samples_per_s"
    ] = Field(
        default="cost_per_epoch",
        description="ranking key: cheapest epoch, fastest epoch, cheapest run, cheapest "
        "instance-hour or highest throughput first",
    )
    currency: str = Field(
        default="USD",
        pattern=CURRENCY_PATTERN,
        description=CURRENCY_TEXT + "; of every price, cost and max_price_per_hour",
        examples=["EUR"],
    )
    _currency = field_validator("currency", mode="before")(_upper_currency)
    limit: int = Field(default=50, ge=1, le=1000, description="most results returned")
    drop_oom: bool = Field(default=False, description="leave out offers predicted to OOM")
    exclude_spot: bool = Field(default=False, description="leave out spot/preemptible offers")
    bookable_fresh_first: bool = Field(
        default=True,
        description="true: offers that cannot be rented as listed (price indices, quoted "
        "examples) rank after every bookable offer, and an old or undated price (price_age) "
        "after every fresh dated offer of the same GPU model and count; false: rank by sort "
        "alone",
    )
    max_total_cost: float | None = Field(
        default=None,
        gt=0,
        le=1e12,
        allow_inf_nan=False,
        description="budget for all epochs, in currency",
    )
    max_total_hours: float | None = Field(
        default=None,
        gt=0,
        le=1e7,
        allow_inf_nan=False,
        description="deadline: wall-clock hours, all epochs",
    )
    budget_at_high_end: bool = Field(
        default=False,
        description="judge max_total_cost and max_total_hours at the slow end of each offer's "
        "range (total_cost_high, the low throughput) instead of the estimate, so the budget "
        "holds if the run is as slow as the range allows",
    )


class ErrorOut(BaseModel):
    """An error answer: 400 (``extra`` names each bad field), 404, 413, 503 (with
    ``Retry-After``)."""

    status_code: int = Field(description="the HTTP status code again", examples=[400])
    detail: str = Field(
        description="what went wrong, in a sentence (for a 400 it names the fields)",
        examples=["Validation failed for POST /v1/rank (workload.micro_batch_size)"],
    )
    extra: list[dict[str, object]] | dict[str, object] | None = Field(
        default=None,
        description="for a 400: one entry per bad field, {key: field name, message: reason}",
        examples=[
            [{"key": "workload.micro_batch_size", "message": "Input should be greater than 0"}]
        ],
    )


class MemoryOut(BaseModel):
    """Peak memory per GPU and its components, GiB."""

    weights_gib: float = Field(
        description="model weights per GPU, GiB (after sharding and quantisation)"
    )
    gradients_gib: float = Field(description="gradients per GPU, GiB")
    optimizer_gib: float = Field(
        description="optimizer state per GPU, GiB (e.g. Adam moments, fp32 master weights)"
    )
    activations_gib: float = Field(
        description="activations kept for the backward pass per GPU at the micro-batch, GiB"
    )
    overhead_gib: float = Field(
        description="CUDA context, cuBLAS/NCCL workspace and allocator fragmentation, GiB"
    )
    usable_vram_gib: float = Field(
        description="VRAM per GPU that training can use, GiB (1 GiB = 2^30 bytes)"
    )
    allocated_gib: float = Field(
        default=0.0, description="bytes the framework allocates (max_memory_allocated)"
    )
    logits_gib: float = Field(default=0.0, description="loss-side logits (in activations)")
    buffers_gib: float = Field(
        default=0.0, description="FSDP/ZeRO gather and NF4 dequantisation buffers (in overhead)"
    )
    init_extra_gib: float = Field(
        default=0.0, description="initialisation peak above the training step (in overhead)"
    )
    context_gib: float = Field(default=0.0, description="CUDA context + NCCL (in overhead)")
    allocator_slack_gib: float = Field(
        default=0.0, description="caching-allocator slack (in overhead)"
    )
    text_encoder_gib: float = Field(
        default=0.0, description="diffusion: frozen text encoder(s) weights (in weights)"
    )
    vae_gib: float = Field(default=0.0, description="diffusion: frozen VAE weights (in weights)")
    ema_gib: float = Field(
        default=0.0, description="fp32 EMA copy of the trained parameters (in optimizer)"
    )
    gradients_freed_gib: float = Field(
        default=0.0,
        description=(
            "gradients not alive at the peak (set to None between steps, 1 GPU, no "
            "accumulation): gradients_gib + this = the gradients' full size, GiB"
        ),
    )
    optimizer_step_gib: float = Field(
        default=0.0,
        description="optimizer step temporaries above the forward/backward peak (in optimizer)",
    )


class MemoryFixOut(BaseModel):
    """A change predicted to fit when ``oom_risk`` is high: fields to set, predicted peak."""

    label: str = Field(description="the change in words", examples=["activation checkpointing"])
    changes: dict[str, str] = Field(
        description="workload fields to set and their values (flat names of GET /v1/rank)",
        examples=[{"gradient_checkpointing": "true"}],
    )
    peak_memory_gib: float = Field(description="predicted peak memory per GPU with it, GiB")
    oom_risk: OomRisk = Field(description="out-of-memory verdict with the change")
    oom_probability: float | None = Field(
        description="calibrated probability of running out of memory with it (0–1)"
    )


class EvidenceOut(BaseModel):
    """A measurement the estimate used."""

    benchmark_id: int = Field(description="id of the measurement (GET /v1/benchmarks)")
    gpu: str = Field(description="GPU model measured")
    gpu_count: int = Field(description="GPUs in the measured run")
    workload: str = Field(description="benchmark workload label of the measurement")
    precision: str = Field(
        description="numeric precision of the measured run (fp32, bf16_amp, ...)"
    )
    batch_size_per_gpu: int | None = Field(
        description="micro-batch per GPU in the measured run; null: not published"
    )
    samples_per_s: float = Field(description="measured throughput of the whole run, samples/s")
    source: str = Field(description="who published the measurement")
    source_ref: str = Field(description="URL or repository path of the measurement")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def submitted(self) -> bool:
        """Sent by a user's ``gpucost bench`` run (``source`` ``submitted``), not published."""
        return self.source == "submitted"


class WarningOut(BaseModel):
    """A warning: stable ``code``, a sentence for the user, and the numbers behind it."""

    code: str = Field(
        description="stable machine-readable code, e.g. epoch_tokens_padded, ram_short"
    )
    message: str = Field(description="the warning as a sentence for the user")
    values: dict[str, object] = Field(
        description="the numbers behind the warning, by name (units in the names)"
    )


class MultiGpuOut(BaseModel):
    """How the GPUs of a multi-GPU answer talk to each other."""

    link_class: Literal[
        "nvswitch",
        "nvlink_bridge",
        "infinity_fabric",
        "pcie_p2p",
        "pcie_host_bridge",
        "network",
        "unknown",
    ] = Field(
        description="the link the collectives cross: nvswitch (NVLink through NVSwitch), "
        "nvlink_bridge (bridged pairs), infinity_fabric (AMD xGMI), pcie_p2p (PCIe "
        "peer-to-peer through a switch), pcie_host_bridge (PCIe through the CPU, no P2P), "
        "network (several machines); unknown when the offer names no link (see modelled_as)"
    )
    modelled_as: str = Field(description="the link class the estimate assumed")
    nodes: int = Field(description="machines the GPUs span")
    gpus_per_node: int = Field(description="GPUs one machine holds")
    bytes_per_step: float = Field(
        description="bytes each GPU sends over the link per optimizer step (nccl-tests bus "
        "bytes, at the precision the collectives run in)"
    )
    comm_time_share: float = Field(
        description="share of the step spent waiting on communication (not hidden), 0–1"
    )
    bus_bandwidth_gbs: float = Field(description="all-reduce bus bandwidth of the link, GB/s")
    network_gbps: float | None = Field(
        default=None, description="network per machine, Gbit/s (several machines only)"
    )
    network_stated: bool = Field(
        default=False, description="the offer stated network_gbps (else a documented default)"
    )


class EstimateOut(BaseModel):
    """An estimate. Throughput for the whole GPU set; costs in ``currency``."""

    samples_per_s: float = Field(description="predicted training throughput of all GPUs, samples/s")
    samples_per_s_low: float = Field(description="low end of the throughput range, samples/s")
    samples_per_s_high: float = Field(description="high end of the throughput range, samples/s")
    tokens_per_s: float | None = Field(
        description="throughput in tokens/s for token workloads (samples/s × tokens per "
        "sample); null otherwise"
    )
    basis: Basis = Field(
        description="what the throughput rests on: measured (the per-GPU figure is the "
        "published measurement at this GPU, software level, precision and micro-batch, or "
        "their mean), scaled (moved by the model from measurements) or flops_model"
    )
    situation: str | None = Field(
        default=None,
        description="which evidence the throughput stands on, one of: measured (the per-GPU "
        "figure is the mean of this GPU's published measurements at the served software "
        "level, precision and micro-batch); measured_rescaled (this GPU's measurements at "
        "another software level, micro-batch or precision, moved to the asked one by the "
        "pooled model; a note gives the measured and the served figure); sibling (a GPU of "
        "the same architecture); extrapolated (other architectures); flops_model (workload "
        "never measured); derived (custom workload from its preset); precision_switch "
        "(workload measured only at another precision class); submitted (the published "
        "answer moved by users' submitted runs of this configuration, within the bounds of "
        "POST /v1/benchmarks; a note gives both figures). The first note says it in words",
    )
    precision: str | None = Field(
        default=None,
        description="the precision the throughput was estimated at: what the GPU runs the "
        "workload's precision at (fp8 without fp8 tensor cores runs at bf16_amp, ...), or the "
        "measured 16-bit precision when fp8 is asked for a workload never measured at fp8 "
        "(warning fp8_gain_unmeasured)",
    )
    epochs: float = Field(description="the epochs total_hours and total_cost count")
    epoch_hours: float = Field(description="wall-clock hours of one epoch")
    epoch_hours_low: float = Field(description="epoch hours at the high throughput")
    epoch_hours_high: float = Field(description="epoch hours at the low throughput")
    total_hours: float = Field(description="wall-clock hours of all epochs")
    total_hours_low: float = Field(
        description="wall-clock hours of all epochs at the high throughput"
    )
    total_hours_high: float = Field(
        description="wall-clock hours of all epochs at the low throughput"
    )
    cost_per_epoch: float | None = Field(
        description="cost of one epoch in currency; null when the offer has no price"
    )
    cost_per_epoch_low: float | None = Field(
        description="cost per epoch at the high throughput, in currency"
    )
    cost_per_epoch_high: float | None = Field(
        description="cost per epoch at the low throughput, in currency"
    )
    total_cost: float | None = Field(
        description="cost of all epochs in currency; null without a price"
    )
    total_cost_low: float | None = Field(
        description="cost of all epochs at the high throughput, in currency; null without a price"
    )
    total_cost_high: float | None = Field(
        description="cost of all epochs at the low throughput, in currency; null without a price"
    )
    currency: str = Field(description="ISO 4217 code of every cost field (USD, CNY)")
    peak_memory_gib: float = Field(description="predicted peak memory per GPU, GiB")
    memory_utilization: float = Field(
        description="peak memory / usable VRAM (above 1: does not fit)"
    )
    oom_risk: OomRisk = Field(
        description="out-of-memory verdict: low (fits), medium (tight), high (predicted OOM)"
    )
    max_micro_batch_size: int = Field(
        description=(
            "largest micro-batch per GPU whose oom_risk is low (P(OOM) < 0.1), i.e. predicted"
            " to fit with margin; a medium batch may still OOM (0: even 1 is not low)"
        )
    )
    memory: MemoryOut = Field(description="peak memory per GPU by component, GiB")
    oom_probability: float | None = Field(
        default=None, description="calibrated probability of running out of memory"
    )
    memory_fixes: list[MemoryFixOut] = Field(
        default_factory=list,
        description="when oom_risk is high: smallest changes predicted to fit on this hardware",
    )
    multi_gpu_efficiency: float = Field(description="throughput of N GPUs / (N × one GPU), 0–1")
    multi_gpu_basis: Literal["measured", "model"] | None = Field(
        default=None,
        description="where multi_gpu_efficiency comes from: measured (this GPU's published rows "
        "at that GPU count and link) or model (the link model fitted per interconnect class); "
        "null for one GPU",
    )
    multi_gpu: MultiGpuOut | None = Field(
        default=None,
        description="link class, machines, bytes per step and communication share of a "
        "multi-GPU answer; null for one GPU",
    )
    mfu: float | None = Field(
        default=None,
        description="implied model-FLOPs utilisation per GPU: model FLOPs per sample (6N per "
        "token for full training, 4N for LoRA, plus attention; no recompute) × samples/s ÷ "
        "GPUs ÷ the dense datasheet peak at the precision estimated (an fp32 transformer whose "
        "stack leaves TF32 off: the FP32 vector peak); null without a FLOPs count",
    )
    stack: str | None = Field(
        default=None,
        description="the training stack the throughput assumes (the workload's stack, else "
        "the preset's recipe, else hf_trainer); see docs/model.md#throughput",
    )
    hfu: float | None = Field(
        default=None,
        description="implied hardware-FLOPs utilisation: as mfu with the recomputed forward "
        "of activation checkpointing counted",
    )
    data_loader_samples_per_s: float | None = Field(
        description="samples/s the instance's vCPUs can load; null when unknown"
    )
    warnings: list[WarningOut] = Field(description="warnings about the estimate or the offer")
    notes: list[str] = Field(description="how the estimate was made, in sentences")
    epoch_definition: str = Field(description="what one epoch is (samples, or packed tokens)")
    epoch_samples: float = Field(description="samples (as samples_per_s counts them) per epoch")
    epoch_tokens: float | None = Field(description="tokens per epoch (token workloads)")
    interruptible: bool = Field(description="spot offer: the run can be interrupted")
    expected_total_hours: float | None = Field(
        description="spot: wall-clock hours of all epochs with interruptions and restarts"
    )
    expected_total_cost: float | None = Field(
        description="spot: cost of all epochs with interruptions and restarts, in currency"
    )
    evidence: list[EvidenceOut] = Field(description="measurements used (at most 5 in /v1/rank)")
    evidence_total: int = Field(description="number of measurements the estimate used")


class EstimateResponse(BaseModel):
    """``POST /v1/estimate`` answer: the resolved workload and hardware with the estimate."""

    workload: dict[str, object] = Field(
        description="the resolved workload: preset values merged with the given fields"
    )
    hardware: dict[str, object] = Field(description="the resolved hardware the estimate is for")
    estimate: EstimateOut = Field(description="the estimate")


class OfferOut(BaseModel):
    """An instance offer. ``price_per_hour`` is per instance in ``currency`` (as listed)."""

    id: int = Field(description="offer id (GET /v1/offers/{offer_id})")
    provider: str = Field(description="provider slug")
    provider_name: str = Field(description="provider name for display")
    offer_key: str = Field(description="the provider's stable key for this offer")
    instance_type: str = Field(description="the provider's instance type name")
    region: str = Field(description="region or zone as the provider names it")
    gpu: str | None = Field(
        description="canonical GPU model; null when the name is not in the catalog"
    )
    gpu_name_raw: str = Field(description="the GPU name as the provider lists it")
    gpu_count: float = Field(
        description="GPUs in the instance: a whole number, or a fraction for a share of one "
        "card (vGPU/MIG slice)",
        examples=[8, 0.5],
    )
    vram_gib_per_gpu: float | None = Field(
        description="VRAM per GPU, GiB: as listed, or the matched card's catalog size when "
        "the listing is that card's full memory written another way (a driver's reading a "
        "little below it; gpu_note keeps the listed figure); for a fractional GPU the slice's "
        "share; the catalog size when the listing gives none"
    )
    vcpus: float | None = Field(description="vCPUs of the instance")
    ram_gib: float | None = Field(description="host RAM, GiB")
    disk_gb: float | None = Field(description="system plus data disk, GB")
    max_cuda: str | None = Field(description="highest CUDA version the driver supports, e.g. 12.4")
    driver_version: str | None = Field(description="NVIDIA driver version, when listed")
    interconnect: InterconnectLabel | None = Field(
        description="GPU-to-GPU link, the words HardwareIn takes: nvlink, nvswitch (NVLink "
        "through NVSwitch) or pcie; null when the listing does not say"
    )
    network_gbps: float | None = Field(
        default=None,
        description="network between machines, Gbit/s per machine, as the provider states it "
        "(InfiniBand, RoCE, EFA or Ethernet: AWS's price list 'Network Performance'); used when "
        "the GPUs span several machines; null: not stated (a documented default is used then, "
        "said in the multi_node warning)",
    )
    billing: str = Field(description="on_demand, spot, reserved_1y or reserved_3y")
    price_per_hour: float | None = Field(
        description="price of the whole instance per hour, in currency; null: no price listed"
    )
    currency: str = Field(description="ISO 4217 code of price_per_hour (USD, CNY)")
    price_is_estimate: bool = Field(
        description="the provider lists no hourly price; price_per_hour is estimated"
    )
    available: bool = Field(description="the provider showed the offer as available when last seen")
    stale: bool = Field(
        description="deprecated (read price_age and provider_refresh_stale): true when the "
        "price is old or undated (price_age) or the provider's refreshes stopped succeeding"
    )
    last_seen_at: str | None = Field(
        description="when the source last showed the offer (ISO 8601); null: the source gives "
        "no date"
    )
    source: str = Field(
        description="where the offer comes from: a public URL, or a file of the gpucost "
        "repository (seed_data/...); scraped offers: live: and the API read; public-catalog "
        "offers: catalog: and the catalog file read"
    )
    age_days: float | None = Field(
        default=None,
        description="days since price_seen_at; null when undated",
    )
    price_seen_at: str | None = Field(
        default=None,
        description="when the price was seen at its source (ISO 8601: the scrape time, or the "
        "date a seed row's source shows); null: undated (the source gives no date; never the "
        "day it was read)",
    )
    price_age: PriceTier = Field(
        default="undated",
        description="the price's age tier for its kind (thresholds in days, fresh up to / aging "
        "up to, older is old: "
        + "; ".join(f"{k} {a:g}/{b:g}" for k, (a, b) in AGE_TIERS_DAYS.items())
        + "): fresh, aging, old, or undated. A default ranking puts an old or undated price "
        "after every fresh dated offer of the same GPU and count",
    )
    price_kind: PriceKind = Field(
        default="hand_kept",
        description="what the price is: scraped (the provider's API, read by the refresh), "
        "catalog (the provider's price as a maintained public catalog, gpuhunt or SkyPilot, "
        "copied it: second-hand, never listed when a scraped price of the same instance, "
        "region and billing is available), hand_kept (the provider's own price kept in the "
        "seed data), price_index (an aggregate such as a day's lowest listing across "
        "platforms) or quoted_example (a listing a document quotes as an example)",
    )
    bookable: bool = Field(
        default=True,
        description="the offer can be rented as listed (scraped, catalog or hand_kept); price "
        "indices and quoted examples cannot, and rank after bookable offers by default",
    )
    provider_refresh_stale: bool = Field(
        default=False,
        description="the provider's price refreshes stopped succeeding (GET /v1/refresh-runs)",
    )
    price_per_gpu_hour: float | None = Field(
        default=None, description="price_per_hour / gpu_count, in currency"
    )
    suspect: bool = Field(
        default=False, description="failed a plausibility check at ingest (see suspect_reason)"
    )
    suspect_reason: str | None = Field(
        default=None, description="why the offer failed a plausibility check; null: it passed"
    )
    gpu_note: str | None = Field(
        default=None,
        description="what GPU-name matching noticed (VRAM mismatch, ambiguity)",
    )
    offer_url: str | None = Field(
        default=None,
        description="where to rent it: the provider's page or console link for this offer, "
        "else the provider's home page; null when the provider has no page (a price index or "
        "quoted example says which platform it stands for in provider_name)",
    )

    _gpu_count = field_serializer("gpu_count")(lambda self, v: gpu_count_out(v))


class Page(BaseModel, typing.Generic[RowT]):
    """One page of a listing (``/v1/offers``, ``/v1/benchmarks``, the submissions' audit
    trail): its rows, how many match in all, and the paging asked for."""

    items: list[RowT] = Field(description="the rows of this page")
    total: int = Field(description="rows matching the filters")
    limit: int = Field(description="page size asked for")
    offset: int = Field(description="rows skipped before this page")


class OfferPage(Page[OfferOut]):
    """A page of offers."""

    gpus_matched: list[str] | None = Field(
        default=None, description=GPUS_MATCHED_TEXT, examples=[["A100 SXM4 80GB", "A100 PCIe 80GB"]]
    )


class RankedOfferOut(BaseModel):
    """One ranked offer: the offer, its price in the asked currency, and the estimate."""

    rank: int = Field(description="position in the full ranking, 1 = best")
    pareto_optimal: bool = Field(
        description="on the cost/time Pareto frontier (nothing is both cheaper and faster) of "
        "the offers that fit and can run; with bookable_fresh_first (the default) drawn over "
        "the bookable ones when any is, as the answer's picks are, so a price index that "
        "cannot be rented never knocks a bookable offer off it (and is itself on it only "
        "when no offer is bookable)"
    )
    offer: OfferOut = Field(description="the offer")
    price_per_hour: float | None = Field(
        description="the instance price per hour converted to the response currency"
    )
    estimate: EstimateOut = Field(description="the estimate for the workload on this offer")


class UnestimableOfferOut(BaseModel):
    """An offer matching the filters that cannot be estimated, with the reason."""

    offer: OfferOut = Field(description="the offer")
    reason: str = Field(description="why it cannot be estimated")


class RankAnswerOut(BaseModel):
    """The short answer: three of the answer's offers (``results`` or ``frontier`` holds each,
    by offer id) that can run the job as asked (OOM risk not high, and no warning saying it
    cannot run there: software with no build for the GPU, a disk too small …) and have a
    price; with ``bookable_fresh_first`` (the default), only offers that can be rented as
    listed when any can. Null when none qualifies (every offer predicted out of memory or
    unable to run the job, or none priced)."""

    cheapest_offer_id: int | None = Field(
        default=None,
        description="the lowest cost per epoch of the offers that fit; always one marked "
        "pareto_optimal (the frontier is drawn over the same offers)",
    )
    fastest_offer_id: int | None = Field(
        default=None, description="the shortest epoch of the offers that fit and have a price"
    )
    best_value_offer_id: int | None = Field(
        default=None,
        description="on the cost/time Pareto front of those offers, the lowest cost per epoch "
        "× epoch hours: a saving of 10 % in money or in time counts the same",
    )


class ExchangeRateOut(BaseModel):
    """A stored exchange rate an answer converted prices with: 1 ``base`` = ``rate``
    ``quote``, published on ``seen_on`` (seed_data/currency_rates.csv, with its source)."""

    base: str = Field(description="ISO 4217 code of the base currency", examples=["USD"])
    quote: str = Field(description="ISO 4217 code of the quote currency", examples=["CNY"])
    rate: float = Field(description="units of quote per one base", examples=[7.0197])
    seen_on: str | None = Field(description="the day the rate was published (ISO 8601 date)")
    source: str | None = Field(description="where the rate was read (URL and publisher)")
    age_days: float | None = Field(description="days from seen_on to the answer's day")
    warning: str | None = Field(
        description="set when the rate is older than the stated limit (RATE_OLD_AFTER_DAYS in "
        "app/services/rates.py: 7 days; both sources publish a new fixing every business day)"
    )


EXCHANGE_RATES_TEXT = (
    "the stored exchange rates the converted prices used, each with its date and source "
    "(empty when nothing was converted)"
)


class RankResponse(BaseModel):
    """``POST /v1/rank`` / ``GET /v1/rank`` answer.

    ``frontier`` holds the Pareto-optimal offers ranked below ``limit`` (with their rank in the
    full order), so that the whole cost/time frontier can be drawn next to the top offers.
    """

    workload: dict[str, object] = Field(
        description="the resolved workload: preset values merged with the given fields"
    )
    currency: str = Field(description="ISO 4217 code of every price and cost")
    sort: str = Field(description="ranking key used")
    order: str | None = Field(default=None, description="row order (GET: ``order`` param)")
    total_offers: int = Field(description="offers estimated")
    unestimated_offers: int = Field(
        default=0,
        description="offers matching the filters whose GPU model is not in the "
        "catalog (stored with their raw name; cannot be estimated)",
    )
    over_budget_offers: int = Field(
        default=0, description="estimated offers left out by max_total_cost / max_total_hours"
    )
    gpus_matched: list[str] | None = Field(default=None, description=GPUS_MATCHED_TEXT)
    exchange_rates: list[ExchangeRateOut] = Field(
        default_factory=list, description=EXCHANGE_RATES_TEXT
    )
    results: list[RankedOfferOut] = Field(description="the best offers by sort, at most limit")
    frontier: list[RankedOfferOut] = Field(
        default_factory=list, description="Pareto-optimal offers ranked below limit"
    )
    answer: RankAnswerOut = Field(
        default_factory=RankAnswerOut,
        description="the cheapest, the fastest and the best-value offer that fit",
    )
    unestimable: list[UnestimableOfferOut] = Field(
        default_factory=list,
        description="offers matching the filters that cannot be estimated, each with the "
        "reason (listed, not dropped)",
    )


class PricePointOut(BaseModel):
    """One observed price of an offer: ``price_per_hour`` per instance in ``currency``, as
    listed (``GET /v1/offers/{id}/prices`` and ``GET /v1/offers/{id}``)."""

    observed_at: str = Field(description="when the price was seen (ISO 8601, UTC)")
    price_per_hour: float | None = Field(
        description="price of the whole instance per hour, in currency, as listed"
    )
    currency: str = Field(description="ISO 4217 code of price_per_hour")
    source: str = Field(description="where the price was seen (API, page or seed file)")


class OfferDetailsOut(BaseModel):
    """Listing details beyond :class:`OfferOut` (disks in GB, network in Mbit/s)."""

    cpu_model: str | None = Field(description="host CPU model as listed; null: not listed")
    system_disk_gb: float | None = Field(description="system disk, GB; null: not listed")
    data_disk_gb: float | None = Field(description="data disk, GB; null: not listed")
    disk_type: str | None = Field(description="disk kind as listed (hdd, ssd, nvme)")
    network_up_mbps: float | None = Field(description="upload bandwidth, Mbit/s")
    network_down_mbps: float | None = Field(description="download bandwidth, Mbit/s")
    first_seen_at: str = Field(description="when the offer was first stored (ISO 8601, UTC)")
    seen_on: str | None = Field(
        description="date the source showed the offer (YYYY-MM-DD); null: undated"
    )
    notes: str | None = Field(description="remarks kept with the listing (units, provenance)")


class OfferDetailResponse(BaseModel):
    """``GET /v1/offers/{id}``: one offer, its price history and, for a workload, the estimate.

    ``price_per_hour`` is in ``currency``; ``estimate`` is ``null`` without workload parameters
    or when the offer's GPU is not in the catalog.
    """

    offer: OfferOut = Field(description="the offer, prices as listed")
    details: OfferDetailsOut = Field(description="listing details beyond the offer")
    currency: str = Field(description="ISO 4217 code of price_per_hour and the estimate's costs")
    price_per_hour: float | None = Field(
        description="the instance price per hour converted to currency; null: no price"
    )
    exchange_rates: list[ExchangeRateOut] = Field(
        default_factory=list, description=EXCHANGE_RATES_TEXT
    )
    workload: dict[str, object] | None = Field(
        description="the resolved workload; null without workload parameters"
    )
    estimate: EstimateOut | None = Field(
        description="the estimate for the workload; null without workload parameters or when "
        "the GPU is not in the catalog"
    )
    price_history: list[PricePointOut] = Field(
        description="every observed price, oldest first, as listed"
    )


for _model in [m for m in list(globals().values()) if isinstance(m, type)]:
    if issubclass(_model, BaseModel) and _model.__module__ == __name__:
        state_openapi_bounds(_model)
