"""Request and response models of the HTTP API (pydantic v2).

Requests forbid unknown fields, so a typo is a 400 naming the field instead of a silent
default. Enumerated values are lower-case snake_case and appear in the OpenAPI schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from app.estimate.types import (
    Architecture,
    Attention,
    Basis,
    CheckpointGranularity,
    Interconnect,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    Sharding,
)

CURRENCY_PATTERN = r"^[A-Z]{3}$"
#: A CUDA version as written in listings and presets (``12.4``).
CUDA_PATTERN = r"^\d{1,3}(\.\d{1,3})?$"
#: Longest GPU name, alias, provider slug, region, preset slug or search text accepted.
MAX_TEXT = 200
#: Largest price per hour accepted (any currency; the dearest listed machine is ~1e3 USD/h).
MAX_PRICE = 1e9

Billing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y"]

#: Libraries :mod:`app.estimate.compat` knows the software stack of.
CudaLibrary = Literal["bitsandbytes", "flash-attn", "transformer-engine"]


class SpotIn(BaseModel):
    """Spot assumptions (see :class:`app.estimate.cost.SpotAssumptions` for the defaults)."""

    model_config = ConfigDict(extra="forbid")

    spot_interruptions_per_hour: float | None = Field(
        default=None, ge=0, le=100, allow_inf_nan=False, description="expected interruptions"
    )
    spot_checkpoint_interval_hours: float | None = Field(
        default=None, gt=0, le=10_000, allow_inf_nan=False, description="hours between checkpoints"
    )
    spot_restart_hours: float | None = Field(
        default=None, ge=0, le=1_000, allow_inf_nan=False, description="hours lost per restart"
    )


class WorkloadIn(BaseModel):
    """A training job. ``preset`` supplies defaults for every other field.

    Sizes: ``params`` parameters (count), ``seq_len`` tokens per sample, ``image_size`` pixels
    per side, ``micro_batch_size`` samples per GPU per step, ``dataset_gb`` GB on disk,
    ``cpu_ms_per_sample`` CPU milliseconds of data loading per sample on one core.
    """

    model_config = ConfigDict(extra="forbid")

    preset: str | None = Field(default=None, max_length=MAX_TEXT, examples=["resnet50-imagenet"])
    architecture: Architecture | None = None
    params: int | None = Field(default=None, gt=0, le=10**14, allow_inf_nan=False)
    layers: int | None = Field(default=None, gt=0, le=10_000, allow_inf_nan=False)
    hidden_size: int | None = Field(default=None, gt=0, le=10**6, allow_inf_nan=False)
    heads: int | None = Field(default=None, gt=0, le=10**5, allow_inf_nan=False)
    kv_heads: int | None = Field(default=None, gt=0, le=10**5, allow_inf_nan=False)
    ffn_hidden_size: int | None = Field(default=None, gt=0, le=10**7, allow_inf_nan=False)
    vocab_size: int | None = Field(default=None, gt=0, le=10**8, allow_inf_nan=False)
    seq_len: int | None = Field(default=None, gt=0, le=10**8, allow_inf_nan=False)
    image_size: int | None = Field(default=None, gt=0, le=100_000, allow_inf_nan=False)
    micro_batch_size: int | None = Field(default=None, gt=0, le=10**9, allow_inf_nan=False)
    grad_accum_steps: int | None = Field(default=None, gt=0, le=10**6, allow_inf_nan=False)
    precision: Precision | None = None
    optimizer: Optimizer | None = None
    method: Method | None = None
    lora_rank: int | None = Field(default=None, gt=0, le=10**5, allow_inf_nan=False)
    gradient_checkpointing: bool | None = None
    attention: Attention | None = None
    sharding: Sharding | None = None
    fused_cross_entropy: bool | None = Field(
        default=None, description="chunked/fused cross-entropy: no full fp32 logits tensor"
    )
    cpu_offload: bool | None = Field(
        default=None, description="optimizer states and master weights offloaded to CPU RAM"
    )
    # -- memory set-up (issue 9) --
    optimizer_in_backward: bool | None = Field(
        default=None,
        description="optimizer step fused into backward (torchtune optimizer_in_bwd): no "
        "full gradient buffer",
    )
    activation_offloading: bool | None = Field(
        default=None, description="checkpointed activations offloaded to CPU RAM"
    )
    checkpoint_granularity: CheckpointGranularity | None = Field(
        default=None,
        description="with gradient_checkpointing: full (block inputs only) or selective "
        "(attention core recomputed)",
    )
    double_quant: bool | None = Field(
        default=None, description="QLoRA: NF4 with double quantisation (default true)"
    )
    full_model_init: bool | None = Field(
        default=None,
        description="FSDP: every rank loads the full 16-bit model on its GPU before sharding",
    )
    samples_per_epoch: int | None = Field(default=None, gt=0, le=10**15, allow_inf_nan=False)
    epochs: float | None = Field(default=None, gt=0, le=10**6, allow_inf_nan=False)
    dataset_gb: float | None = Field(default=None, ge=0, le=10**9, allow_inf_nan=False)
    cpu_ms_per_sample: float | None = Field(
        default=None, ge=1e-3, le=10**7, allow_inf_nan=False, description="at least 1 µs"
    )
    min_cuda: str | None = Field(default=None, pattern=CUDA_PATTERN)
    forward_gflops_per_sample: float | None = Field(
        default=None,
        ge=1e-6,
        le=10**9,
        allow_inf_nan=False,
        description="forward-pass GFLOPs per sample (non-transformers without a preset need it "
        "for a FLOPs-based throughput estimate)",
    )
    # -- run cost (issue 10) ----------------------------------------------------------------
    tokens_per_epoch: int | None = Field(
        default=None,
        gt=0,
        le=10**15,
        description="real (non-padding) tokens in one pass over the dataset; with packing the "
        "epoch is tokens_per_epoch / seq_len sequences and epoch_hours = tokens / tokens_per_s",
    )
    packed: bool | None = Field(
        default=None,
        description="samples packed into seq_len sequences (true) or each padded to seq_len "
        "(false); default: packed when tokens_per_epoch is given",
    )
    cuda_build: str | None = Field(
        default=None,
        pattern=CUDA_PATTERN,
        description="CUDA version the framework build targets (a cu121 PyTorch wheel: 12.1)",
    )
    cuda_only_libraries: list[CudaLibrary] | None = Field(
        default=None, max_length=8, description="libraries with CUDA-only builds the job uses"
    )
    min_compute_capability: str | None = Field(
        default=None, pattern=CUDA_PATTERN, description="lowest compute capability of the build"
    )
    checkpoints_kept: int | None = Field(
        default=None, ge=0, le=10_000, description="full checkpoints kept on disk at once"
    )


class HardwareIn(BaseModel):
    """A what-if machine: ``gpu`` is any name or alias the catalog knows."""

    model_config = ConfigDict(extra="forbid")

    gpu: str = Field(min_length=1, max_length=MAX_TEXT, examples=["A100 80GB SXM4"])
    gpu_count: float = Field(
        default=1,
        ge=0.05,
        le=1024,
        description="GPUs; below 1 a slice (vGPU/MIG share) of one card",
    )
    interconnect: Interconnect | None = None
    vcpus: float | None = Field(default=None, ge=0.1, le=10**5, allow_inf_nan=False)
    ram_gb: float | None = Field(
        default=None, ge=0.1, le=10**7, allow_inf_nan=False, description="host RAM, GiB"
    )
    disk_gb: float | None = Field(default=None, ge=0.1, le=10**9, allow_inf_nan=False)
    max_cuda: str | None = Field(default=None, pattern=CUDA_PATTERN)
    vram_gb: float | None = Field(
        default=None, ge=0.1, le=10**5, allow_inf_nan=False, description="override catalog VRAM, GB"
    )
    disk_type: Literal["hdd", "ssd", "nvme"] | None = None

    @field_validator("interconnect", mode="before")
    @classmethod
    def _offer_interconnect(cls, value: object) -> object:
        """Offers' words are accepted too: ``nvswitch`` and ``sxm`` boards link their GPUs by
        NVLink (``nvlink``); any case."""
        if isinstance(value, str):
            value = value.strip().lower()
            return "nvlink" if value in ("nvswitch", "sxm") else value
        return value


def _upper_currency(value: object) -> object:
    """Currency codes in any case (``cny`` → ``CNY``)."""
    return value.strip().upper() if isinstance(value, str) else value


class EstimateRequest(SpotIn):
    """``POST /v1/estimate`` body. ``price_per_hour`` (optional, in ``currency``) prices it;
    ``billing`` ``spot`` adds the interruption warning and the expected cost."""

    model_config = ConfigDict(extra="forbid")

    workload: WorkloadIn
    hardware: HardwareIn
    currency: str = Field(default="USD", pattern=CURRENCY_PATTERN)
    price_per_hour: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)
    billing: Billing | None = None

    _currency = field_validator("currency", mode="before")(_upper_currency)


class OfferFilters(BaseModel):
    """Offer filters shared by ``GET /v1/offers`` and ``POST /v1/rank``."""

    model_config = ConfigDict(extra="forbid")

    gpu: str | None = Field(default=None, max_length=MAX_TEXT, description="GPU name or alias")
    min_vram_gb: float | None = Field(default=None, ge=0, le=10**5, allow_inf_nan=False)
    gpu_count: float | None = Field(default=None, gt=0, le=1024, allow_inf_nan=False)
    min_gpu_count: float | None = Field(default=None, gt=0, le=1024, allow_inf_nan=False)
    provider: str | None = Field(default=None, max_length=MAX_TEXT, description="provider slug")
    region: str | None = Field(
        default=None, max_length=MAX_TEXT, description="case-insensitive substring"
    )
    billing: Billing | None = None
    max_price_per_hour: float | None = Field(
        default=None,
        gt=0,
        le=MAX_PRICE,
        allow_inf_nan=False,
        description="in the request's currency",
    )
    available_only: bool = True
    include_suspect: bool = Field(
        default=False,
        description="also list offers that failed a plausibility check at ingest (marked "
        "suspect, with the reason)",
    )


class RankRequest(SpotIn):
    """``POST /v1/rank`` body. ``max_total_cost`` (in ``currency``) and ``max_total_hours``
    (wall clock, all epochs) keep only the offers that meet them; spot offers are judged by
    their expected time and cost with interruptions."""

    model_config = ConfigDict(extra="forbid")

    workload: WorkloadIn
    filters: OfferFilters = Field(default_factory=OfferFilters)
    sort: Literal[
        "cost_per_epoch", "epoch_hours", "total_cost", "price_per_hour", "samples_per_s"
    ] = "cost_per_epoch"
    currency: str = Field(default="USD", pattern=CURRENCY_PATTERN)
    _currency = field_validator("currency", mode="before")(_upper_currency)
    limit: int = Field(default=50, ge=1, le=1000)
    drop_oom: bool = Field(default=False, description="leave out offers predicted to OOM")
    exclude_spot: bool = Field(default=False, description="leave out spot/preemptible offers")
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


class ErrorOut(BaseModel):
    """An error answer: 400 (``extra`` names each bad field), 404, 413, 503 (with
    ``Retry-After``)."""

    status_code: int
    detail: str
    extra: list[dict[str, object]] | dict[str, object] | None = None


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


class MemoryFixOut(BaseModel):
    """A change predicted to fit when ``oom_risk`` is high: fields to set, predicted peak."""

    label: str
    changes: dict[str, str]
    peak_memory_gib: float
    oom_risk: OomRisk
    oom_probability: float | None


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
        description="what the throughput rests on: measured, scaled or flops_model"
    )
    situation: str | None = Field(
        default=None,
        description="which evidence the throughput stands on: measured (this GPU), sibling "
        "(a GPU of the same architecture), extrapolated (other architectures), flops_model "
        "(workload never measured), derived (custom workload from its preset) or "
        "precision_switch (workload measured only at another precision class); the first "
        "note says it in words",
    )
    epoch_hours: float = Field(description="wall-clock hours of one epoch")
    epoch_hours_low: float = Field(description="epoch hours at the high throughput")
    epoch_hours_high: float = Field(description="epoch hours at the low throughput")
    total_hours: float = Field(description="wall-clock hours of all epochs")
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
    currency: str = Field(description="ISO 4217 code of every cost field (USD, CNY)")
    peak_memory_gib: float = Field(description="predicted peak memory per GPU, GiB")
    memory_utilization: float = Field(
        description="peak memory / usable VRAM (above 1: does not fit)"
    )
    oom_risk: OomRisk = Field(
        description="out-of-memory verdict: low (fits), medium (tight), high (predicted OOM)"
    )
    max_micro_batch_size: int = Field(
        description="largest micro-batch per GPU predicted to fit (0: none fits)"
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
    gpu_count: float = Field(description="GPUs in the instance (fractions only for shared GPUs)")
    vram_gb_per_gpu: float | None = Field(description="VRAM per GPU as listed, GB")
    vcpus: float | None = Field(description="vCPUs of the instance")
    ram_gb: float | None = Field(description="host RAM, GB")
    disk_gb: float | None = Field(description="system plus data disk, GB")
    max_cuda: str | None = Field(description="highest CUDA version the driver supports, e.g. 12.4")
    driver_version: str | None = Field(description="NVIDIA driver version, when listed")
    interconnect: str | None = Field(
        description="GPU-to-GPU link: nvlink, nvswitch or pcie; null when unknown"
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
    stale: bool = Field(description="not seen recently (older than the stale limit) or undated")
    last_seen_at: str | None = Field(
        description="when the source last showed the offer (ISO 8601); null: the source gives "
        "no date"
    )
    source: str = Field(description="where the offer comes from (API, page or seed file)")
    age_days: float | None = Field(
        default=None,
        description="days since last_seen_at; null when undated (then stale is true)",
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
        description="the provider's page or console link for this offer; the provider's home "
        "page when the offer has none of its own",
    )


class OfferPage(BaseModel):
    """A page of offers."""

    items: list[OfferOut] = Field(description="the offers of this page")
    total: int = Field(description="offers matching the filters")
    limit: int = Field(description="page size asked for")
    offset: int = Field(description="offers skipped before this page")


class RankedOfferOut(BaseModel):
    """One ranked offer: the offer, its price in the asked currency, and the estimate."""

    rank: int = Field(description="position in the full ranking, 1 = best")
    pareto_optimal: bool = Field(
        description="on the cost/time Pareto frontier (nothing is both cheaper and faster)"
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
    results: list[RankedOfferOut] = Field(description="the best offers by sort, at most limit")
    frontier: list[RankedOfferOut] = Field(
        default_factory=list, description="Pareto-optimal offers ranked below limit"
    )
    unestimable: list[UnestimableOfferOut] = Field(
        default_factory=list,
        description="offers matching the filters that cannot be estimated, each with the "
        "reason (listed, not dropped)",
    )


class PricePointOut(BaseModel):
    """One observed price of an offer: ``price_per_hour`` per instance in ``currency``, as
    listed (``GET /v1/offers/{id}/prices`` and ``GET /v1/offers/{id}``)."""

    observed_at: str
    price_per_hour: float | None
    currency: str
    source: str


class OfferDetailsOut(BaseModel):
    """Listing details beyond :class:`OfferOut` (disks in GB, network in Mbit/s)."""

    cpu_model: str | None
    system_disk_gb: float | None
    data_disk_gb: float | None
    disk_type: str | None
    network_up_mbps: float | None
    network_down_mbps: float | None
    first_seen_at: str
    seen_on: str | None
    notes: str | None


class OfferDetailResponse(BaseModel):
    """``GET /v1/offers/{id}``: one offer, its price history and, for a workload, the estimate.

    ``price_per_hour`` is in ``currency``; ``estimate`` is ``null`` without workload parameters
    or when the offer's GPU is not in the catalog.
    """

    offer: OfferOut
    details: OfferDetailsOut
    currency: str
    price_per_hour: float | None
    workload: dict[str, object] | None
    estimate: EstimateOut | None
    price_history: list[PricePointOut]
