"""Load ``seed_data/*.csv`` into the database, idempotently (``gpucost seed``).

Every row must carry a source; a row without one is rejected (``SeedError``). Re-running
changes nothing: rows are matched on natural keys (GPU canonical name, provider slug, offer
provider × offer key × region × billing, benchmark seed key, preset slug, rate base × quote ×
date) and only updated when a value differs; price observations are appended only when the
same (offer, price, source) is not already recorded.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.data.load import (
    load_extra_aliases,
    load_presets,
    read_benchmarks,
    read_gpus,
    read_offers,
    read_providers,
    read_rates,
)
from app.data.rows import BenchmarkRow, GpuRow, OfferRow, SeedError
from app.db.models import (
    CurrencyRate,
    GpuModel,
    InstanceOffer,
    PriceObservation,
    Provider,
    ThroughputBenchmark,
    WorkloadPreset,
    utcnow,
)
from app.db.trust import assess_offers, load_trust_context
from app.gpu_names import CatalogGpu, GpuNameNormaliser, form_hint, offer_vram
from app.model.types import interconnect_label
from app.price_age import SEED_PRICE_KINDS

log = logging.getLogger(__name__)

__all__ = [
    "SeedError",
    "SeedReport",
    "build_normaliser",
    "catalog_gpus",
    "load_extra_aliases",
    "seed_all",
]


@dataclass
class SeedReport:
    """Rows inserted and updated per table."""

    inserted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    updated: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: seed offers stored ``suspect`` (failed a plausibility rule, :mod:`app.db.trust`)
    suspect: int = 0

    @property
    def changed(self) -> int:
        """Total rows inserted or updated."""
        return sum(self.inserted.values()) + sum(self.updated.values())


def _apply(obj: Any, values: dict[str, Any]) -> bool:
    changed = False
    for key, value in values.items():
        current = getattr(obj, key)
        if isinstance(current, Decimal) and value is not None:
            same = current == Decimal(str(value))
        elif isinstance(current, dt.datetime) and isinstance(value, dt.datetime):
            # SQLite hands back naive UTC datetimes
            same = current.replace(tzinfo=current.tzinfo or dt.UTC) == value
        elif isinstance(current, float) and isinstance(value, float):
            same = abs(current - value) <= 1e-9 * max(1.0, abs(value))
        else:
            same = current == value
        if not same:
            setattr(obj, key, value)
            changed = True
    return changed


def _upsert(
    session: Session, report: SeedReport, model: type, existing: Any, values: dict[str, Any]
) -> Any:
    table = model.__tablename__  # type: ignore[attr-defined]
    if existing is None:
        obj = model(**values)
        session.add(obj)
        report.inserted[table] += 1
        return obj
    if _apply(existing, values):
        report.updated[table] += 1
    return existing


def seed_providers(session: Session, seed_dir: Path, report: SeedReport) -> dict[str, Provider]:
    """Load ``providers*.csv``; returns providers by slug."""
    by_slug = {p.slug: p for p in session.scalars(select(Provider))}
    for row in read_providers(seed_dir):
        values = {
            "slug": row.slug,
            "name": row.name,
            "homepage_url": row.homepage_url,
            "kind": row.kind,
            "source": row.source,
        }
        by_slug[row.slug] = _upsert(session, report, Provider, by_slug.get(row.slug), values)
    session.flush()
    return by_slug


#: the ``gpus.csv`` columns stored as they are read (the two lists are stored as lists)
_GPU_COLUMNS = GpuRow.columns() - {"aliases", "uncertain_fields"}


def seed_gpus(session: Session, seed_dir: Path, report: SeedReport) -> dict[str, GpuModel]:
    """Load ``gpus.csv``; returns GPU models by canonical name."""
    by_name = {g.canonical_name: g for g in session.scalars(select(GpuModel))}
    for row in read_gpus(seed_dir):
        values: dict[str, Any] = {k: getattr(row, k) for k in _GPU_COLUMNS}
        values.update(aliases=list(row.aliases), uncertain_fields=list(row.uncertain_fields))
        name = row.canonical_name
        by_name[name] = _upsert(session, report, GpuModel, by_name.get(name), values)
    session.flush()
    return by_name


def catalog_gpus(gpus: list[GpuModel]) -> tuple[CatalogGpu, ...]:
    """What the name normaliser reads of ORM GPU rows, in catalog order (id order)."""
    return tuple(
        CatalogGpu(g.canonical_name, g.vram_gib, g.form_factor, tuple(g.aliases or ()))
        for g in sorted(gpus, key=lambda g: g.id)
    )


def build_normaliser(
    gpus: list[GpuModel], extra_aliases: Mapping[str, str | Sequence[str]]
) -> GpuNameNormaliser:
    """Normaliser over ORM GPU rows (catalog order = id order)."""
    return GpuNameNormaliser(catalog_gpus(gpus), extra_aliases)


def _bench_key(row: BenchmarkRow) -> str:
    """The row's seed key: a hash of its identifying cells as written."""
    return hashlib.sha1("\x1f".join(row.key_cells).encode("utf-8")).hexdigest()


def _bench_values(row: BenchmarkRow, gpu: GpuModel | None) -> dict[str, Any]:
    return {
        "seed_key": _bench_key(row),
        "gpu_model_id": gpu.id if gpu else None,
        "gpu_label": row.gpu_label,
        "gpu_count": row.gpu_count,
        "interconnect": row.interconnect,
        "workload": row.workload,
        "task": row.task,
        "method": row.method,
        "precision": row.precision,
        "precision_label": row.precision_label,
        "batch_size_per_gpu": row.batch_size_per_gpu,
        "seq_len": row.seq_len,
        "throughput": row.throughput,
        "throughput_scope": row.throughput_scope,
        "throughput_total": row.throughput_total,
        "throughput_unit": row.throughput_unit,
        "peak_memory_gib": row.peak_memory_gib,
        "framework": row.framework,
        "framework_version": row.framework_version,
        "suspect": row.suspect,
        "source": row.source,
        "source_ref": row.source_ref,
        "seen_on": row.seen_on,
        "notes": row.notes.strip() or None,
    }


def seed_benchmarks(
    session: Session, seed_dir: Path, gpus: dict[str, GpuModel], report: SeedReport
) -> None:
    """Load ``benchmarks*.csv`` (normalised measurements)."""
    existing = {
        b.seed_key: b
        for b in session.scalars(
            select(ThroughputBenchmark).where(ThroughputBenchmark.seed_key.is_not(None))
        )
    }
    seen: set[str] = set()
    for row in read_benchmarks(seed_dir):
        gpu = gpus.get(row.gpu) if row.gpu else None
        if row.gpu and gpu is None:
            raise SeedError(f"{row.file}:{row.line}: column gpu: unknown GPU {row.gpu!r}")
        values = _bench_values(row, gpu)
        key = values["seed_key"]
        existing[key] = _upsert(session, report, ThroughputBenchmark, existing.get(key), values)
        seen.add(key)
    # seed rows whose source row changed or was removed are replaced, not duplicated
    for stale_key, stale in existing.items():
        if stale_key not in seen:
            session.delete(stale)
            report.updated["throughput_benchmark (removed)"] += 1
    session.flush()


def seed_presets(session: Session, seed_dir: Path, report: SeedReport) -> None:
    """Load ``workloads.csv`` (workload presets) with ``workloads_memory.csv`` laid over and
    ``preset_facts.csv`` merged (:func:`app.data.load.load_presets`)."""
    by_slug = {p.slug: p for p in session.scalars(select(WorkloadPreset))}
    for preset in load_presets(seed_dir):
        values = {
            "slug": preset.slug,
            "name": preset.name,
            "fields": dict(preset.fields),
            "benchmark_workloads": list(preset.benchmark_workloads),
            "benchmark_method": preset.benchmark_method,
            "units_per_sample": preset.units_per_sample,
            "throughput_unit": preset.throughput_unit,
            "source": preset.source,
            "seen_on": preset.seen_on,
            "notes": preset.notes,
        }
        by_slug[preset.slug] = _upsert(
            session, report, WorkloadPreset, by_slug.get(preset.slug), values
        )
    session.flush()


def seed_rates(session: Session, seed_dir: Path, report: SeedReport) -> None:
    """Load ``currency_rates.csv``."""
    existing = {(r.base, r.quote, r.seen_on): r for r in session.scalars(select(CurrencyRate))}
    for row in read_rates(seed_dir):
        key = (row.base, row.quote, row.seen_on)
        values = {
            "base": row.base,
            "quote": row.quote,
            "rate": row.rate,
            "source": row.source,
            "seen_on": row.seen_on,
        }
        existing[key] = _upsert(session, report, CurrencyRate, existing.get(key), values)
    session.flush()


def price_kind(row: OfferRow) -> str:
    """A seed offer's ``price_kind`` (``hand_kept``, ``price_index`` or ``quoted_example``:
    :data:`app.price_age.SEED_PRICE_KINDS`).

    Raises:
        SeedError: a missing or unknown kind (``scraped`` is the refresh's, never a seed's).
    """
    kind = row.price_kind.strip()
    if kind not in SEED_PRICE_KINDS:
        raise SeedError(
            f"{row.file}:{row.line}: column price_kind: offer {row.offer_key!r}: "
            f"price_kind {kind!r} is not one of "
            f"{', '.join(SEED_PRICE_KINDS)}"
        )
    return kind


def seed_offers(
    session: Session,
    seed_dir: Path,
    providers: dict[str, Provider],
    normaliser: GpuNameNormaliser,
    gpus: dict[str, GpuModel],
    report: SeedReport,
) -> list[str]:
    """Load ``offers*.csv``; rows sharing a natural key are the offer's price history.

    Returns GPU names that matched no catalog model (stored raw, reported).
    """
    groups: dict[tuple[str, str, str, str], list[OfferRow]] = defaultdict(list)
    for row in read_offers(seed_dir):
        groups[(row.provider, row.offer_key, row.region, row.billing)].append(row)
    existing = {
        (o.provider_id, o.offer_key, o.region, o.billing): o
        for o in session.scalars(select(InstanceOffer))
    }
    observed = {
        (po.offer_id, po.price_per_hour, po.currency, po.source)
        for po in session.scalars(select(PriceObservation))
    }
    unknown: list[str] = []
    seeded: list[InstanceOffer] = []
    now = utcnow()
    for (slug, offer_key, region, billing), rows in groups.items():
        provider = providers.get(slug)
        if provider is None:
            raise SeedError(f"offer {offer_key!r}: unknown provider {slug!r}")
        rows.sort(key=lambda r: r.seen_on or dt.date.min)
        latest = rows[-1]
        interconnect = latest.interconnect
        vram = latest.vram_gib_per_gpu
        identity = normaliser.identify(
            latest.gpu_name_raw,
            vram_gib=vram,
            form_hint=form_hint(interconnect),
            context=(latest.instance_type, offer_key),
            gpu_count=latest.gpu_count,
        )
        match = identity.match
        gpu = gpus[match.canonical_name] if match else None
        # the same VRAM rule as the refresh (app/db/ingest.py): app.gpu_names.offer_vram
        vram, note = offer_vram(identity, vram, gpu.vram_gib if gpu else None, latest.gpu_count)
        if match is None:
            unknown.append(latest.gpu_name_raw)
        dates = [r.seen_on for r in rows if r.seen_on is not None]
        first = dt.datetime.combine(min(dates), dt.time(), dt.UTC) if dates else now
        # the date the source was seen, never the load time (NULL: the source gives none)
        last = dt.datetime.combine(max(dates), dt.time(), dt.UTC) if dates else None
        price = latest.price_per_hour
        values = {
            "provider_id": provider.id,
            "offer_key": offer_key,
            "instance_type": latest.instance_type,
            "region": region,
            "gpu_model_id": gpu.id if gpu else None,
            "gpu_name_raw": latest.gpu_name_raw,
            "gpu_count": latest.gpu_count,
            "vram_gib_per_gpu": vram,
            "vcpus": latest.vcpus,
            "cpu_model": latest.cpu_model,
            "ram_gib": latest.ram_gib,
            "system_disk_gb": latest.system_disk_gb,
            "data_disk_gb": latest.data_disk_gb,
            "disk_type": latest.disk_type,
            "max_cuda": latest.max_cuda,
            "driver_version": latest.driver_version,
            "interconnect": interconnect_label(interconnect),
            "network_up_mbps": latest.network_up_mbps,
            "network_down_mbps": latest.network_down_mbps,
            "billing": billing,
            "price_per_hour": price,
            "currency": latest.currency,
            "price_is_estimate": latest.price_is_estimate,
            "available": True,
            "source": latest.source,
            "seen_on": latest.seen_on,
            "notes": latest.notes,
            "last_seen_at": last,
            "gpu_note": note,
            "price_kind": price_kind(latest),
        }
        key = (provider.id, offer_key, region, billing)
        offer = existing.get(key)
        if offer is not None and offer.source.startswith("live: "):
            continue  # stored by `gpucost refresh` (app/db/ingest.py): newer than the seed
        if offer is None:
            values.update(first_seen_at=first)
        else:
            del values["available"]  # after the first load, availability is the refresh's
        offer = _upsert(session, report, InstanceOffer, offer, values)
        existing[key] = offer
        seeded.append(offer)
        session.flush()
        for r in rows:
            p = r.price_per_hour
            obs_key = (offer.id, p, r.currency, r.source)
            if p is None or obs_key in observed:
                continue
            seen_on = r.seen_on
            when = dt.datetime.combine(seen_on, dt.time(), dt.UTC) if seen_on else now
            session.add(
                PriceObservation(
                    offer_id=offer.id,
                    observed_at=when,
                    price_per_hour=p,
                    currency=r.currency,
                    source=r.source,
                )
            )
            observed.add(obs_key)
            report.inserted["price_observation"] += 1
    session.flush()
    # plausibility (app/db/trust.py, the same rules as the refresh), bands from stored history
    before = {o.id: (o.suspect, o.suspect_reason) for o in seeded}
    report.suspect = assess_offers(
        seeded, load_trust_context(session), same_provider=existing.values()
    )
    judged = sum(before[o.id] != (o.suspect, o.suspect_reason) for o in seeded)
    if judged:
        report.updated["instance_offer (suspect)"] += judged
    for o in seeded:
        if o.suspect:
            log.warning("seed offer %r is suspect: %s", o.offer_key, o.suspect_reason)
    session.flush()
    return unknown


def seed_all(session: Session, seed_dir: Path) -> SeedReport:
    """Load every seed file in dependency order inside the caller's transaction."""
    report = SeedReport()
    providers = seed_providers(session, seed_dir, report)
    gpus = seed_gpus(session, seed_dir, report)
    seed_benchmarks(session, seed_dir, gpus, report)
    seed_presets(session, seed_dir, report)
    seed_rates(session, seed_dir, report)
    normaliser = build_normaliser(list(gpus.values()), load_extra_aliases(seed_dir))
    unknown = seed_offers(session, seed_dir, providers, normaliser, gpus, report)
    for name in sorted(set(unknown)):
        log.warning("offer GPU %r matches no catalog model; stored with its raw name", name)
    return report
