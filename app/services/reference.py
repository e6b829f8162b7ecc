"""Reference data (GPU catalog, benchmarks, presets, exchange rates) as pure core types.

Loaded from the database once per catalog version per process
(:class:`app.services.reference_cache.ReferenceCache`): the catalog and the benchmarks change
only when ``gpucost seed``/``refresh`` or a submission writes them.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.data.load import (
    SeedPreset,
    benchmark_point,
    load_extra_aliases,
    stated_checkpointing,
    stored_gpu_spec,
)
from app.db.models import CurrencyRate, GpuModel, ThroughputBenchmark, WorkloadPreset
from app.db.seed import catalog_gpus
from app.fields import same_named
from app.gpu_names import CatalogGpu, GpuIdentity, GpuMatch, GpuNameNormaliser, LabelError
from app.model.evidence import flops_table, throughput_data
from app.model.flops import RunRecompute
from app.model.pooled import PooledData
from app.model.types import BenchmarkPoint, GpuSpec, Precision
from app.services.submitted import SUBMITTED, ConfigKey, SubmittedRun

log = logging.getLogger(__name__)

T = TypeVar("T")


#: values a :class:`ReferenceData`'s memo keeps: the estimator and the per-workload
#: estimates of the workloads asked last (:func:`app.services.estimates.config_estimates`:
#: ~1.1 MiB each for the ~840 hardware configurations of 100,000 offers, most of it the
#: multi-GPU model's memo; 64 of them grew a worker by ~100 MiB). A workload's ranking
#: figures per configuration outlive its entry here, as columns with the offers
#: (:class:`app.services.config_table.ConfigTable`), so a workload asked again re-makes only
#: the full estimates of the offers it shows.
MEMO_ENTRIES = 16


class Memo:
    """A bounded, thread-safe memo of values derived from one :class:`ReferenceData`.

    Lives on the reference data it derives from (:attr:`ReferenceData.memo`), so a reload
    (new catalog, benchmarks or submissions) starts with an empty memo, but for the model
    of the same published tables (:meth:`carry`): what it holds is always what computing
    afresh from that reference data gives. Least recently used entries
    go first past ``max_entries``. Two threads asking for a missing key at once may both
    compute it; the values are equal, and the first one stored is kept.
    """

    def __init__(self, max_entries: int = MEMO_ENTRIES):
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], T]) -> T:
        """The value stored under ``key``, made with ``make()`` (outside the lock) if absent."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[no-any-return]
        value = make()
        with self._lock:
            value = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
        return value

    def carry(self, other: Memo, key: Hashable) -> None:
        """Hold ``other``'s value under ``key`` too, if it has one (a value derived only from
        what both memos' data have in common: :data:`PUBLISHED_MODEL_KEY`)."""
        with other._lock:
            if key not in other._items:
                return
            value = other._items[key]
        with self._lock:
            self._items.setdefault(key, value)

    def __len__(self) -> int:
        return len(self._items)


#: the memo key of the model built on the published measurements alone
#: (:func:`app.services.estimates.model_of`): carried to the data of a later version whose
#: :class:`Published` tables are the same (:func:`load_reference`)
PUBLISHED_MODEL_KEY = ("model",)


#: a workload preset: its flat field values and the measurements it stands for (the seed's
#: type: the stored row holds the same fields)
Preset = SeedPreset


@dataclass(frozen=True, slots=True)
class Published:
    """What the model reads of the reference tables (:func:`read_published`), compared
    between two versions to keep what derives from it (:func:`load_reference`)."""

    #: the accepted published measurements of known scope (submitted rows never enter)
    points: tuple[BenchmarkPoint, ...]
    #: by point id, the activation checkpointing its run states
    recompute: dict[int, RunRecompute]
    gpus: dict[str, GpuSpec]
    #: GPU id → catalog name
    names: dict[int, str]
    #: the name normaliser's catalog rows and the seed's extra aliases
    catalog: tuple[CatalogGpu, ...]
    aliases: dict[str, list[str]]
    presets: dict[str, Preset]


@dataclass(frozen=True, slots=True)
class ReferenceData:
    """Everything the estimators need besides the offers."""

    gpus: dict[str, GpuSpec]
    gpu_names_by_id: dict[int, str]
    gpu_ids_by_name: dict[str, int]
    normaliser: GpuNameNormaliser
    points: tuple[BenchmarkPoint, ...]
    presets: dict[str, Preset]
    #: latest rate per (base, quote): units of quote per base
    rates: dict[tuple[str, str], float]
    #: (benchmark label, method) → (family, training FLOPs per published unit)
    flops_table: dict[tuple[str, str], tuple[str, float, float, int | None]]
    #: the measurements organised for the pooled throughput model (fits memoised)
    throughput_data: PooledData
    #: accepted submitted runs by the configuration whose answer they may move
    #: (:mod:`app.services.submitted`; never in ``points``: the model is the published one)
    submitted: dict[ConfigKey, tuple[SubmittedRun, ...]] = field(default_factory=dict)
    #: (base, quote) → (the day the rate in ``rates`` was published, where it was read)
    rate_sources: dict[tuple[str, str], tuple[dt.date, str]] = field(default_factory=dict)
    #: values derived from this reference data, shared by requests and by the data of later
    #: catalog versions with the same ``reference_version`` (:meth:`without_offers`):
    #: per-workload estimates of each hardware configuration
    #: (:func:`app.services.estimates.config_estimates`); never copied by ``dataclasses.replace``
    memo: Memo = field(default_factory=Memo, init=False, compare=False, repr=False)
    #: the catalog version this data was read at (``catalog_version.version``; 0: not known)
    version: int = 0
    #: ``catalog_version.reference_version`` when read: the tables above last changed then
    reference_version: int = 0
    #: every offer of ``version`` as columns (an :class:`app.services.snapshot.OfferSnapshot`,
    #: typed ``Any`` here because that module builds on this one); ``None`` when loaded without
    #: them (then services read the offers from their session)
    offers: Any = field(default=None, compare=False, repr=False)
    #: what :func:`load_reference` read of the tables the model reads (``None``: not loaded
    #: from a database)
    published: Published | None = field(default=None, compare=False, repr=False)

    def without_offers(self) -> ReferenceData:
        """This data without :attr:`offers`, sharing :attr:`memo`: what a value kept in the
        memo may hold on to (the memo outlives the offers of one version)."""
        if self.offers is None:
            return self
        copy = replace(self, offers=None)
        object.__setattr__(copy, "memo", self.memo)
        return copy

    @property
    def currencies(self) -> list[str]:
        """Currencies prices can be shown in: USD and every currency with a stored rate."""
        return sorted({"USD", *(c for pair in self.rates for c in pair)})

    def resolve_gpu_filter(self, name: str) -> list[str]:
        """Catalog names a GPU filter means, in catalog order, any case: the exact model, or
        every model of the family that has the size and form the name gives (``A100`` →
        every A100; ``A100 80GB`` → A100 SXM4 80GB and A100 PCIe 80GB:
        :meth:`app.gpu_names.GpuNameNormaliser.family_members`), or every model a name left
        ambiguous by :meth:`identify_gpu` could be (``RTX 6000`` → RTX A6000, RTX 6000 Ada and
        Quadro RTX 6000). Empty when unknown, or when the name states a VRAM no model of it has
        (``4060-12GB``; :meth:`app.gpu_names.GpuNameNormaliser.resolve_label`)."""
        if name in self.gpus:
            return [name]
        members = self.normaliser.family_members(name)
        if len(members) > 1:
            return members
        identity = self.identify_gpu(name)
        if identity.match and identity.match.vram_mismatch:
            # a VRAM the label states that the matched card lacks: the label rule decides
            # (a recorded memory-modified board, else no model: "4060-12GB")
            try:
                return [self.normaliser.resolve_label(name).canonical_name]
            except LabelError:
                return []
        if identity.match:
            return [identity.match.canonical_name]
        return list(identity.candidates)

    def identify_gpu(self, name: str) -> GpuIdentity:
        """What a GPU name typed by a user names (a catalog search, a GPU page, the GPU of a
        benchmark submission): the catalog name itself, else
        :meth:`app.gpu_names.GpuNameNormaliser.identify` without the providers' naming
        conventions (``conventions=False``, the rule ``/v1/estimate`` applies), so a bare
        ``A100`` is ``ambiguous`` with the four A100s as candidates instead of the model one
        provider means by it. The conventions stay for offers (a provider's own listing)."""
        if name in self.gpus:
            return GpuIdentity("match", GpuMatch(name, "alias", False), candidates=(name,))
        return self.normaliser.identify(name, conventions=False)

    def resolve_gpu(self, name: str) -> str | None:
        """Canonical name of the one catalog GPU a typed name identifies
        (:meth:`identify_gpu`); ``None`` when it names none, or several."""
        identity = self.identify_gpu(name)
        return identity.match.canonical_name if identity.match else None


def submitted_run(row: ThroughputBenchmark, gpu: str) -> SubmittedRun:
    """A submitted row as :class:`app.services.submitted.SubmittedRun` on the catalog GPU
    ``gpu`` (a row not yet flushed has id 0; an unknown micro-batch is 0)."""
    return same_named(
        SubmittedRun,
        row,
        id=row.id or 0,
        submitter=row.submitted_by or "",
        gpu=gpu,
        precision=Precision(row.precision),
        batch_size_per_gpu=row.batch_size_per_gpu or 0,
    )


def submitted_runs(session: Session, names: dict[int, str]) -> list[SubmittedRun]:
    """The accepted submitted rows (GPU in the catalog, micro-batch known) as
    :class:`app.services.submitted.SubmittedRun`."""
    return [
        submitted_run(b, names[b.gpu_model_id])
        for b in session.scalars(
            select(ThroughputBenchmark)
            .where(
                ThroughputBenchmark.source == SUBMITTED,
                ThroughputBenchmark.status == "accepted",
                ThroughputBenchmark.gpu_model_id.is_not(None),
                ThroughputBenchmark.batch_size_per_gpu.is_not(None),
            )
            .order_by(ThroughputBenchmark.id)
        )
        if b.gpu_model_id in names and b.batch_size_per_gpu
    ]


def load_reference(
    session: Session, seed_dir: Path, held: ReferenceData | None = None
) -> ReferenceData:
    """Read the reference tables into pure types.

    ``held``: the data of an earlier version (without offers). When what the model reads
    (:class:`Published`: GPU catalog, published measurements, presets, GPU names) is the same,
    its objects and everything derived from them (the pooled data with its fits, the FLOPs
    table, the name normaliser, the model memoised on them) are kept instead of rebuilt: a
    submission, a revoke or a rate touches none of it. When the submitted runs and the rates
    are the same too, ``held`` itself is returned, memo and all (a held submission moves no
    answer)."""
    read = read_published(session, seed_dir)
    rates, rate_sources = read_rates(session)
    runs: dict[ConfigKey, list[SubmittedRun]] = {}
    for run in submitted_runs(session, read.names):
        runs.setdefault(run.key, []).append(run)
    submitted = {k: tuple(v) for k, v in runs.items()}
    if held is not None and held.published == read:
        if (held.rates, held.rate_sources, held.submitted) == (rates, rate_sources, submitted):
            return held
        out = replace(held, rates=rates, rate_sources=rate_sources, submitted=submitted)
        out.memo.carry(held.memo, PUBLISHED_MODEL_KEY)
        return out
    pairs = [(p.fields, p.meta) for p in read.presets.values()]
    return ReferenceData(
        gpus=read.gpus,
        gpu_names_by_id=read.names,
        gpu_ids_by_name={v: k for k, v in read.names.items()},
        normaliser=GpuNameNormaliser(read.catalog, read.aliases),
        points=read.points,
        presets=read.presets,
        rates=rates,
        rate_sources=rate_sources,
        submitted=submitted,
        flops_table=flops_table(pairs),
        throughput_data=throughput_data(read.points, read.gpus, pairs, recompute=read.recompute),
        published=read,
    )


def read_published(session: Session, seed_dir: Path) -> Published:
    """The GPU catalog, the published measurements and the presets as stored now."""
    gpu_rows = list(session.scalars(select(GpuModel).order_by(GpuModel.id)))
    names = {g.id: g.canonical_name for g in gpu_rows}
    points = []
    #: the activation checkpointing each run states (app.data.load.stated_checkpointing)
    recompute: dict[int, RunRecompute] = {}
    # published rows only: submitted rows never enter the model (app/services/submitted.py)
    for b in session.scalars(
        select(ThroughputBenchmark).where(
            ThroughputBenchmark.source != SUBMITTED, ThroughputBenchmark.status == "accepted"
        )
    ):
        if b.throughput_scope == "unknown":
            continue
        gpu = names.get(b.gpu_model_id, "") if b.gpu_model_id else ""
        points.append(benchmark_point(b, b.id, gpu))
        stated = stated_checkpointing(b.notes or "")
        if stated is not None:
            recompute[b.id] = stated
    presets = {
        p.slug: same_named(
            Preset,
            p,
            fields=dict(p.fields),
            benchmark_workloads=tuple(p.benchmark_workloads or ()),
        )
        for p in session.scalars(select(WorkloadPreset).order_by(WorkloadPreset.slug))
    }
    return Published(
        points=tuple(points),
        recompute=recompute,
        gpus={g.canonical_name: stored_gpu_spec(g) for g in gpu_rows},
        names=names,
        catalog=catalog_gpus(gpu_rows),
        aliases=load_extra_aliases(seed_dir),
        presets=presets,
    )


def read_rates(
    session: Session,
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], tuple[dt.date, str]]]:
    """The latest exchange rate per (base, quote), and the day and source of each."""
    rates: dict[tuple[str, str], float] = {}
    rate_sources: dict[tuple[str, str], tuple[dt.date, str]] = {}
    for r in session.scalars(select(CurrencyRate).order_by(CurrencyRate.seen_on)):
        rates[(r.base, r.quote)] = float(r.rate)
        rate_sources[(r.base, r.quote)] = (r.seen_on, r.source)
    return rates, rate_sources
