"""SQLAlchemy 2 typed models (tables are created by Alembic migrations only).

Units live in column names: ``*_gb`` are vendor (decimal-ish) gigabytes as printed on
datasheets and price pages, ``*_gib`` binary GiB, ``*_gbs`` GB/s, ``*_tflops`` dense TFLOPS,
``price_per_hour`` is in the row's ``currency`` per hour for the whole instance.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, overload

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: BigInteger primary keys that are still autoincrementing INTEGER PRIMARY KEY on SQLite.
PK = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> dt.datetime:
    """Current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


@overload
def as_utc(value: dt.datetime) -> dt.datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """A stored timestamp as timezone-aware UTC (``None`` stays ``None``).

    Every timestamp is stored in UTC; SQLite hands them back naive, PostgreSQL aware.
    """
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=dt.UTC)


class Base(DeclarativeBase):
    """Declarative base with stable constraint names (reliable Alembic diffs)."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Provider(Base):
    """A cloud or marketplace that sells GPU instances (AWS, RunPod, Vast.ai, 恒源云 …)."""

    __tablename__ = "provider"

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    homepage_url: Mapped[str | None] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(32), default="cloud")
    source: Mapped[str] = mapped_column(Text)

    offers: Mapped[list[InstanceOffer]] = relationship(back_populates="provider", lazy="raise")


class GpuModel(Base):
    """A GPU model from the spec catalog (one row per SKU, e.g. ``H100 SXM 80GB``).

    Tensor columns are dense TFLOPS (sparsity halved). ``fp16_tflops``/``fp8_tflops`` are the
    FP16-accumulate peaks; ``fp16_fp32acc_tflops``/``fp8_fp32acc_tflops`` the FP32-accumulate
    rates that mixed-precision training uses (half rate on GeForce cards). Source of every row:
    ``source`` (``../shared/data/gpu_specs.csv`` as compiled from vendor datasheets/TechPowerUp).
    """

    __tablename__ = "gpu_model"

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    canonical_name: Mapped[str] = mapped_column(String(100), unique=True)
    vendor: Mapped[str] = mapped_column(String(32))
    architecture: Mapped[str] = mapped_column(String(64))
    compute_capability: Mapped[str | None] = mapped_column(String(16))
    #: memory per GPU, GiB: datasheet sizes are binary (an "80 GB" A100 has 81920 MiB in nvidia-smi)
    vram_gib: Mapped[float] = mapped_column(Float)
    memory_type: Mapped[str | None] = mapped_column(String(32))
    memory_bandwidth_gbs: Mapped[float | None] = mapped_column(Float)
    fp32_tflops: Mapped[float | None] = mapped_column(Float)
    tf32_tflops: Mapped[float | None] = mapped_column(Float)
    fp16_tflops: Mapped[float | None] = mapped_column(Float)
    bf16_tflops: Mapped[float | None] = mapped_column(Float)
    fp8_tflops: Mapped[float | None] = mapped_column(Float)
    fp16_fp32acc_tflops: Mapped[float | None] = mapped_column(Float)
    fp8_fp32acc_tflops: Mapped[float | None] = mapped_column(Float)
    tdp_w: Mapped[float | None] = mapped_column(Float)
    nvlink: Mapped[bool] = mapped_column(Boolean, default=False)
    nvlink_bandwidth_gbs: Mapped[float | None] = mapped_column(Float)
    form_factor: Mapped[str | None] = mapped_column(String(32))
    release_year: Mapped[int | None] = mapped_column(Integer)
    market: Mapped[str | None] = mapped_column(String(32))
    aliases: Mapped[list[str]] = mapped_column(JSON, default=list)
    uncertain_fields: Mapped[list[str]] = mapped_column(JSON, default=list)
    source: Mapped[str] = mapped_column(Text)
    seen_on: Mapped[dt.date | None] = mapped_column(Date)
    notes: Mapped[str | None] = mapped_column(Text)


class InstanceOffer(Base):
    """One purchasable machine shape at a price: provider × offer id × region × billing.

    ``price_per_hour`` is for the whole instance (all its GPUs), in ``currency``; ``NULL`` when
    unknown (never 0). ``gpu_count`` may be fractional (a third of an A10). Disk sizes in GB as
    listed, RAM in GiB, internet up/down in Mbit/s, the network between machines in Gbit/s.
    """

    __tablename__ = "instance_offer"
    __table_args__ = (
        UniqueConstraint("provider_id", "offer_key", "region", "billing"),
        Index("ix_instance_offer_gpu_model_id_available", "gpu_model_id", "available"),
        Index("ix_instance_offer_row_version", "row_version"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    provider_id: Mapped[int] = mapped_column(ForeignKey("provider.id", ondelete="CASCADE"))
    offer_key: Mapped[str] = mapped_column(String(200))
    instance_type: Mapped[str] = mapped_column(String(200))
    region: Mapped[str] = mapped_column(String(200))
    gpu_model_id: Mapped[int | None] = mapped_column(ForeignKey("gpu_model.id"))
    gpu_name_raw: Mapped[str] = mapped_column(String(200))
    gpu_count: Mapped[float] = mapped_column(Float)
    vram_gib_per_gpu: Mapped[float | None] = mapped_column(Float)
    vcpus: Mapped[float | None] = mapped_column(Float)
    cpu_model: Mapped[str | None] = mapped_column(String(200))
    ram_gib: Mapped[float | None] = mapped_column(Float)
    system_disk_gb: Mapped[float | None] = mapped_column(Float)
    data_disk_gb: Mapped[float | None] = mapped_column(Float)
    disk_type: Mapped[str | None] = mapped_column(String(32))
    max_cuda: Mapped[str | None] = mapped_column(String(16))
    driver_version: Mapped[str | None] = mapped_column(String(32))
    interconnect: Mapped[str | None] = mapped_column(String(16))
    network_up_mbps: Mapped[float | None] = mapped_column(Float)
    network_down_mbps: Mapped[float | None] = mapped_column(Float)
    #: The network between machines, Gbit/s per machine, as the provider states it
    #: (``scrapers.records.network_gbps``); ``NULL`` where not stated (the multi-node model
    #: then takes its default and says so).
    network_gbps: Mapped[float | None] = mapped_column(Float)
    billing: Mapped[str] = mapped_column(String(32))
    price_per_hour: Mapped[Decimal | None] = mapped_column(Numeric(14, 6))
    currency: Mapped[str] = mapped_column(String(3))
    price_is_estimate: Mapped[bool] = mapped_column(Boolean, default=False)
    available: Mapped[bool] = mapped_column(Boolean, default=True)
    first_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: When the source last showed the offer (scrape time; a public catalog's own date, 00:00
    #: UTC of its version day; a seed row's ``seen_on`` date); ``NULL`` when the source gives
    #: no date (never the load time).
    last_seen_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    source: Mapped[str] = mapped_column(Text)
    seen_on: Mapped[dt.date | None] = mapped_column(Date)
    notes: Mapped[str | None] = mapped_column(Text)
    #: Failed a plausibility rule at ingest (:mod:`app.plausibility`); ``suspect_reason`` says
    #: which, in words. Suspect offers are kept out of rankings unless asked for.
    suspect: Mapped[bool] = mapped_column(Boolean, default=False, server_default="false")
    suspect_reason: Mapped[str | None] = mapped_column(Text)
    #: What the GPU-name normaliser noticed (VRAM mismatch, ambiguity resolved or not).
    gpu_note: Mapped[str | None] = mapped_column(Text)
    #: The provider's page or console link for this offer, where one exists.
    offer_url: Mapped[str | None] = mapped_column(Text)
    #: What the price is (:mod:`app.price_age`): ``scraped`` (a provider's own price,
    #: read from its API by ``gpucost refresh``), ``catalog`` (a provider's price as a
    #: maintained public catalog copied it, gpuhunt or SkyPilot, loaded by the refresh: never
    #: listed beside an available scraped row of the same instance), ``hand_kept`` (a
    #: provider's own price kept in the seed data), ``price_index`` (an aggregate such as a
    #: day's lowest listing across platforms) or ``quoted_example`` (a listing a document
    #: quotes as an example). The first three can be rented as listed; each kind ages at its
    #: own pace. The offer's source kind (api / catalog / seed) is derived from it
    #: (:func:`app.price_age.source_kind`), never stored.
    price_kind: Mapped[str] = mapped_column(
        String(16), default="hand_kept", server_default="hand_kept"
    )
    #: The catalog version that last inserted or updated this row (migration
    #: ``0011_offer_row_version``: a trigger stamps it; never written by the application), so a
    #: worker reads only the offers changed since the version it holds.
    row_version: Mapped[int] = mapped_column(BigInteger, server_default="0")

    provider: Mapped[Provider] = relationship(back_populates="offers", lazy="raise")
    gpu_model: Mapped[GpuModel | None] = relationship(lazy="raise")


class PriceObservation(Base):
    """Append-only price history of an offer (never updated, never deleted)."""

    __tablename__ = "price_observation"
    __table_args__ = (
        Index("ix_price_observation_offer_id_observed_at", "offer_id", "observed_at"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("instance_offer.id", ondelete="CASCADE"))
    observed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    price_per_hour: Mapped[Decimal | None] = mapped_column(Numeric(14, 6))
    currency: Mapped[str] = mapped_column(String(3))
    source: Mapped[str] = mapped_column(Text)


class ThroughputBenchmark(Base):
    """A published, measured training throughput.

    ``throughput`` is copied as published with ``throughput_scope`` saying whether it is the
    total over ``gpu_count`` GPUs or per GPU; ``throughput_total`` is the normalised total for
    the whole GPU set, in ``throughput_unit`` (images/s, sequences/s, tokens/s, mel_frames/s,
    audio_samples/s, samples/s). ``peak_memory_gib`` is per GPU.
    """

    __tablename__ = "throughput_benchmark"
    __table_args__ = (
        Index("ix_throughput_benchmark_workload_gpu", "workload", "gpu_model_id"),
        Index("ix_throughput_benchmark_status", "status"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    #: Stable hash of the seed row's identifying fields (idempotent re-seeding).
    seed_key: Mapped[str | None] = mapped_column(String(40), unique=True)
    gpu_model_id: Mapped[int | None] = mapped_column(ForeignKey("gpu_model.id"))
    gpu_label: Mapped[str] = mapped_column(String(100))
    gpu_count: Mapped[int] = mapped_column(Integer)
    interconnect: Mapped[str | None] = mapped_column(String(16))
    workload: Mapped[str] = mapped_column(String(100))
    task: Mapped[str] = mapped_column(Text)
    method: Mapped[str] = mapped_column(String(16))
    precision: Mapped[str] = mapped_column(String(16))
    precision_label: Mapped[str] = mapped_column(String(32))
    batch_size_per_gpu: Mapped[int | None] = mapped_column(Integer)
    seq_len: Mapped[int | None] = mapped_column(Integer)
    throughput: Mapped[float] = mapped_column(Float)
    throughput_scope: Mapped[str] = mapped_column(String(16))
    throughput_total: Mapped[float] = mapped_column(Float)
    throughput_unit: Mapped[str] = mapped_column(String(32))
    peak_memory_gib: Mapped[float | None] = mapped_column(Float)
    framework: Mapped[str] = mapped_column(String(200))
    framework_version: Mapped[str | None] = mapped_column(String(64))
    suspect: Mapped[bool] = mapped_column(Boolean, default=False)
    source: Mapped[str] = mapped_column(String(64))
    source_ref: Mapped[str] = mapped_column(Text)
    seen_on: Mapped[dt.date | None] = mapped_column(Date)
    notes: Mapped[str | None] = mapped_column(Text)
    #: ``accepted`` (feeds the estimates) or ``held`` (stored for review, never used: a
    #: submitted row far outside the model's range, or on a GPU the catalog does not know).
    status: Mapped[str] = mapped_column(String(16), default="accepted", server_default="accepted")
    #: Why a ``held`` row is held, in words.
    hold_reason: Mapped[str | None] = mapped_column(Text)
    #: Client-supplied id of a submitted run (``POST /v1/benchmarks`` is idempotent on it).
    run_id: Mapped[str | None] = mapped_column(String(100), unique=True)
    #: The machine a submitted row was measured on (GPU name from the driver, driver, CUDA,
    #: torch version, CPU, vCPUs, RAM GiB, topology, step-time spread), as sent.
    environment: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: Identity of the API token that submitted the row (its name, never the token).
    submitted_by: Mapped[str | None] = mapped_column(String(100))
    submitted_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: Who corroborated a submitted row that alone would have moved an answer past the bound
    #: (:data:`app.services.submitted.MAX_UNCORROBORATED_MOVE`): another submitter's identity,
    #: or ``maintainer:<name>``; ``NULL``: not corroborated.
    corroborated_by: Mapped[str | None] = mapped_column(String(100))
    corroborated_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class RevokedSubmitter(Base):
    """A submitter identity (an API token's name) a maintainer revoked: its token is refused
    and every row it submitted is ``revoked`` (``gpucost submissions revoke``)."""

    __tablename__ = "revoked_submitter"

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    identity: Mapped[str] = mapped_column(String(100), unique=True)
    revoked_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    revoked_by: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(Text)
    rows_revoked: Mapped[int] = mapped_column(Integer, default=0)


class SubmissionEvent(Base):
    """The audit trail of submitted measurements (append-only): who did what, when, and what
    it moved: the served answer for the row's configuration before and after, in
    ``unit`` (samples/s of the whole GPU set)."""

    __tablename__ = "submission_event"
    __table_args__ = (
        Index("ix_submission_event_submitter", "submitter"),
        Index("ix_submission_event_at", "at"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    #: ``submitted``, ``held``, ``corroborated``, ``approved``, ``revoked`` or ``reheld``
    action: Mapped[str] = mapped_column(String(16))
    #: who acted: the submitter's identity, or ``maintainer:<name>``
    actor: Mapped[str] = mapped_column(String(100))
    #: whose row it concerns (the submitter identity)
    submitter: Mapped[str] = mapped_column(String(100))
    benchmark_id: Mapped[int | None] = mapped_column(
        ForeignKey("throughput_benchmark.id", ondelete="SET NULL")
    )
    #: the row's configuration: preset, workload, gpu, gpu_count, precision, micro_batch_size
    configuration: Mapped[dict[str, Any]] = mapped_column(JSON)
    answer_before: Mapped[float | None] = mapped_column(Float)
    answer_after: Mapped[float | None] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(32), default="samples/s")
    detail: Mapped[str | None] = mapped_column(Text)


class WorkloadPreset(Base):
    """A named workload profile (``resnet50-imagenet`` …); ``fields`` holds the flat workload."""

    __tablename__ = "workload_preset"

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    benchmark_workloads: Mapped[list[str]] = mapped_column(JSON, default=list)
    benchmark_method: Mapped[str | None] = mapped_column(String(16))
    units_per_sample: Mapped[float | None] = mapped_column(Float)
    throughput_unit: Mapped[str | None] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(Text)
    seen_on: Mapped[dt.date | None] = mapped_column(Date)
    notes: Mapped[str | None] = mapped_column(Text)


class CurrencyRate(Base):
    """An exchange rate as published: 1 ``base`` = ``rate`` ``quote`` on ``seen_on``."""

    __tablename__ = "currency_rate"
    __table_args__ = (UniqueConstraint("base", "quote", "seen_on"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    base: Mapped[str] = mapped_column(String(3))
    quote: Mapped[str] = mapped_column(String(3))
    rate: Mapped[Decimal] = mapped_column(Numeric(18, 8))
    source: Mapped[str] = mapped_column(Text)
    seen_on: Mapped[dt.date] = mapped_column(Date)


class RefreshRun(Base):
    """One provider's part of a price-refresh run (the nightly job).

    ``status``: ``running`` (committed when the provider starts), then ``ok``, ``error``
    (with ``error``) or ``suspect`` (the answer shrank by more than the allowed fraction against
    the last successful run, whose ``offers_seen`` is ``baseline_offers``; nothing applied); a
    ``running`` row left by a killed process becomes ``interrupted`` on the next run or the
    next stale-lock check. ``unknown_gpu_names`` lists GPU labels stored without a catalog match;
    ``warnings`` the rows the scraper skipped and why (capped list).
    """

    __tablename__ = "refresh_run"
    __table_args__ = (Index("ix_refresh_run_provider_id_started_at", "provider_id", "started_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    provider_id: Mapped[int] = mapped_column(ForeignKey("provider.id", ondelete="CASCADE"))
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16))
    offers_seen: Mapped[int] = mapped_column(Integer, default=0)
    offers_new: Mapped[int] = mapped_column(Integer, default=0)
    offers_changed: Mapped[int] = mapped_column(Integer, default=0)
    offers_gone: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    unknown_gpu_names: Mapped[list[str] | None] = mapped_column(JSON)
    warnings: Mapped[list[str] | None] = mapped_column(JSON)
    #: ``offers_seen`` of the last successful run this run was compared against (shrink guard).
    baseline_offers: Mapped[int | None] = mapped_column(Integer)
    #: Offers of this run stored ``suspect`` (failed a plausibility rule).
    offers_suspect: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: What the run read: ``api`` (the provider's own API) or ``catalog`` (a public catalog:
    #: the provider's only source, or its fallback when the key is not set); its offers get
    #: the matching price kind (:data:`app.price_age.PRICE_KIND_OF_SOURCE`). The shrink guard
    #: compares runs of one kind only.
    source_kind: Mapped[str] = mapped_column(String(16), default="api", server_default="api")


class Watch(Base):
    """A saved job with a budget or deadline (``POST /v1/watches``): after each refresh the
    offers that newly meet it, or whose price moved by more than ``price_move_fraction``, are
    recorded as :class:`WatchEvent` rows and posted to ``webhook_url``.

    ``request`` is the ``POST /v1/rank`` body (JSON, as given); ``owner`` the identity of the
    bearer token that saved it (``GPUCOST_API_TOKENS``; the token itself is never stored).
    """

    __tablename__ = "watch"

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    name: Mapped[str] = mapped_column(String(200))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    webhook_url: Mapped[str | None] = mapped_column(Text)
    price_move_fraction: Mapped[float] = mapped_column(Float)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_checked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class WatchMatch(Base):
    """An offer that meets a watch: its price (per instance-hour, in the watch's currency),
    total cost and hours when last notified. ``active`` is false once it stopped meeting it."""

    __tablename__ = "watch_match"
    __table_args__ = (UniqueConstraint("watch_id", "offer_id"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    watch_id: Mapped[int] = mapped_column(ForeignKey("watch.id", ondelete="CASCADE"))
    offer_id: Mapped[int] = mapped_column(ForeignKey("instance_offer.id", ondelete="CASCADE"))
    price_per_hour: Mapped[float | None] = mapped_column(Float)
    total_cost: Mapped[float | None] = mapped_column(Float)
    total_hours: Mapped[float] = mapped_column(Float)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    first_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class WatchEvent(Base):
    """What a check after a refresh found for a watch: ``new`` (an offer newly meets it) or
    ``price`` (a matching offer's price moved past the threshold), with the message posted to
    the webhook and how the post went (``delivered_at`` or ``delivery_error``)."""

    __tablename__ = "watch_event"
    __table_args__ = (Index("ix_watch_event_watch_id_created_at", "watch_id", "created_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    watch_id: Mapped[int] = mapped_column(ForeignKey("watch.id", ondelete="CASCADE"))
    offer_id: Mapped[int | None] = mapped_column(
        ForeignKey("instance_offer.id", ondelete="SET NULL")
    )
    kind: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    old_price_per_hour: Mapped[float | None] = mapped_column(Float)
    new_price_per_hour: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    delivered_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    delivery_error: Mapped[str | None] = mapped_column(Text)


class CatalogVersion(Base):
    """The catalog's version: one row (``id`` 1) that database triggers bump in the same
    transaction as every write to the offers, prices, providers, refresh runs, GPU catalog,
    benchmarks, presets or exchange rates (migration ``0010_catalog_version``).

    ``version`` rises on every such write; ``reference_version`` is the ``version`` of the
    last write to the reference tables (GPU catalog, benchmarks, presets, rates), so a worker
    whose reference data is of that version can keep it (and its memoised estimates) when
    only offers changed. Never written by the application.
    """

    __tablename__ = "catalog_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)
    reference_version: Mapped[int] = mapped_column(BigInteger)
    changed_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
