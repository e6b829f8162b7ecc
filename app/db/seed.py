"""Load ``seed_data/*.csv`` into the database, idempotently (``gpucost seed``).

Every row must carry a source; a row without one is rejected (``SeedError``). Re-running
changes nothing: rows are matched on natural keys (GPU canonical name, provider slug, offer
provider × offer key × region × billing, benchmark seed key, preset slug, rate base × quote ×
date) and only updated when a value differs; price observations are appended only when the
same (offer, price, source) is not already recorded.
"""

from __future__ import annotations

import csv
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
from app.model.types import WORKLOAD_INPUTS, interconnect_label
from app.price_age import SEED_PRICE_KINDS

log = logging.getLogger(__name__)


def _cell_kind(kind: type) -> type:
    """The type a workload field's seed cell is read as (:func:`_opt`): numbers and booleans as
    themselves, enums and lists as text (``cuda_only_libraries`` as ``bitsandbytes|flash-attn``,
    split by :func:`app.services.presets.build_workload`)."""
    return kind if kind in (int, float, bool) else str


#: Workload fields a preset row carries (the flat workload of the API), with their cell types:
#: every outside-given field of the core workload (:data:`app.model.types.WORKLOAD_INPUTS`)
#: but ``preset``, which is the row's own slug.
PRESET_FIELDS: dict[str, type] = {
    name: _cell_kind(given.kind) for name, given in WORKLOAD_INPUTS.items() if name != "preset"
}


class SeedError(ValueError):
    """A seed file is malformed or a row lacks its source."""


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


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for i, row in enumerate(rows, start=2):
        if not (row.get("source") or "").strip():
            raise SeedError(f"{path.name}:{i}: row has no source")
    return rows


def _opt(value: str | None, kind: type = str) -> Any:
    value = (value or "").strip()
    if value == "":
        return None
    if kind is bool:
        return value.lower() in ("true", "yes", "1")
    if kind is int:
        return int(float(value))
    if kind is float:
        return float(value)
    if kind is Decimal:
        return Decimal(value)
    return value


def workload_cells(row: Mapping[str, str | None]) -> dict[str, Any]:
    """The workload fields of a seed row (:data:`PRESET_FIELDS`) that have a non-empty cell,
    read as their types (booleans: ``true``/``yes``/``1`` are true, anything else false).

    Raises:
        ValueError: a number cell that is not a number.
    """
    values = {k: _opt(row.get(k), kind) for k, kind in PRESET_FIELDS.items()}
    return {k: v for k, v in values.items() if v is not None}


def _date(value: str | None) -> dt.date | None:
    value = (value or "").strip()
    return dt.date.fromisoformat(value) if value else None


def _split(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split("|") if p.strip()]


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
    for path in sorted(seed_dir.glob("providers*.csv")):
        for row in _read(path):
            values = {
                "slug": row["slug"],
                "name": row["name"],
                "homepage_url": _opt(row.get("homepage_url")),
                "kind": row.get("kind") or "cloud",
                "source": row["source"],
            }
            by_slug[row["slug"]] = _upsert(
                session, report, Provider, by_slug.get(row["slug"]), values
            )
    session.flush()
    return by_slug


def seed_gpus(session: Session, seed_dir: Path, report: SeedReport) -> dict[str, GpuModel]:
    """Load ``gpus.csv``; returns GPU models by canonical name."""
    by_name = {g.canonical_name: g for g in session.scalars(select(GpuModel))}
    floats = [
        "vram_gib",
        "memory_bandwidth_gbs",
        "fp32_tflops",
        "tf32_tflops",
        "fp16_tflops",
        "bf16_tflops",
        "fp8_tflops",
        "fp16_fp32acc_tflops",
        "fp8_fp32acc_tflops",
        "tdp_w",
        "nvlink_bandwidth_gbs",
    ]
    for row in _read(seed_dir / "gpus.csv"):
        values: dict[str, Any] = {k: _opt(row[k], float) for k in floats}
        values.update(
            canonical_name=row["canonical_name"],
            vendor=row["vendor"],
            architecture=row["architecture"],
            compute_capability=_opt(row["compute_capability"]),
            memory_type=_opt(row["memory_type"]),
            nvlink=row["nvlink"].strip() == "yes",
            form_factor=_opt(row["form_factor"]),
            release_year=_opt(row["release_year"], int),
            market=_opt(row["market"]),
            aliases=_split(row["aliases"]),
            uncertain_fields=_split(row["uncertain_fields"]),
            source=row["source"],
            seen_on=_date(row["seen_on"]),
            notes=_opt(row["notes"]),
        )
        name = row["canonical_name"]
        by_name[name] = _upsert(session, report, GpuModel, by_name.get(name), values)
    session.flush()
    return by_name


def load_extra_aliases(seed_dir: Path) -> dict[str, list[str]]:
    """``gpu_aliases.csv`` as alias → canonical names (a label listed under several GPUs is
    ambiguous: ingest resolves it from the offer's context or reports it)."""
    path = seed_dir / "gpu_aliases.csv"
    if not path.exists():
        return {}
    out: dict[str, list[str]] = {}
    for row in _read(path):
        out.setdefault(row["alias"], []).append(row["canonical_name"])
    return out


def build_normaliser(
    gpus: list[GpuModel], extra_aliases: Mapping[str, str | Sequence[str]]
) -> GpuNameNormaliser:
    """Normaliser over ORM GPU rows (catalog order = id order)."""
    return GpuNameNormaliser(
        (
            CatalogGpu(g.canonical_name, g.vram_gib, g.form_factor, tuple(g.aliases or ()))
            for g in sorted(gpus, key=lambda g: g.id)
        ),
        extra_aliases,
    )


def _bench_key(row: dict[str, str]) -> str:
    ident = "\x1f".join(
        row[k]
        for k in (
            "source",
            "source_ref",
            "gpu_label",
            "gpu_count",
            "workload",
            "task",
            "precision_label",
            "batch_size_per_gpu",
            "throughput",
            "notes",
        )
    )
    return hashlib.sha1(ident.encode("utf-8")).hexdigest()


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
    for path in sorted(seed_dir.glob("benchmarks*.csv")):
        for row in _read(path):
            key = _bench_key(row)
            gpu = gpus.get(row["gpu"]) if row["gpu"] else None
            if row["gpu"] and gpu is None:
                raise SeedError(f"{path.name}: unknown GPU {row['gpu']!r}")
            values = {
                "seed_key": key,
                "gpu_model_id": gpu.id if gpu else None,
                "gpu_label": row["gpu_label"],
                "gpu_count": int(row["gpu_count"]),
                "interconnect": _opt(row["interconnect"]),
                "workload": row["workload"],
                "task": row["task"],
                "method": row["method"],
                "precision": row["precision"],
                "precision_label": row["precision_label"],
                "batch_size_per_gpu": _opt(row["batch_size_per_gpu"], int),
                "seq_len": _opt(row["seq_len"], int),
                "throughput": float(row["throughput"]),
                "throughput_scope": row["throughput_scope"],
                "throughput_total": float(row["throughput_total"]),
                "throughput_unit": row["throughput_unit"],
                "peak_memory_gib": _opt(row["peak_memory_gib"], float),
                "framework": row["framework"],
                "framework_version": _opt(row["framework_version"]),
                "suspect": row["suspect"] == "true",
                "source": row["source"],
                "source_ref": row["source_ref"],
                "seen_on": _date(row["seen_on"]),
                "notes": _opt(row["notes"]),
            }
            existing[key] = _upsert(session, report, ThroughputBenchmark, existing.get(key), values)
            seen.add(key)
    # seed rows whose source row changed or was removed are replaced, not duplicated
    for stale_key, stale in existing.items():
        if stale_key not in seen:
            session.delete(stale)
            report.updated["throughput_benchmark (removed)"] += 1
    session.flush()


def memory_overlay(seed_dir: Path) -> dict[str, dict[str, str]]:
    """``workloads_memory.csv``: memory set-up fields of presets, by preset slug (non-empty
    cells only; the file is optional). Its source is appended to the preset's."""
    path = seed_dir / "workloads_memory.csv"
    if not path.exists():
        return {}
    out: dict[str, dict[str, str]] = {}
    for row in _read(path):
        cells = {k: v for k, v in row.items() if k not in ("preset", "seen_on", "notes") and v}
        out[row["preset"]] = cells
    return out


def with_memory_overlay(row: dict[str, str], overlay: dict[str, dict[str, str]]) -> dict[str, str]:
    """``row`` of workloads.csv with its preset's memory overlay applied."""
    extra = overlay.get(row["preset"])
    if not extra:
        return row
    merged = {**row, **extra}
    merged["source"] = f"{row['source']} ; {extra['source']}"
    return merged


def seed_presets(session: Session, seed_dir: Path, report: SeedReport) -> None:
    """Load ``workloads.csv`` (workload presets) with ``workloads_memory.csv`` applied."""
    path = seed_dir / "workloads.csv"
    if not path.exists():
        return
    by_slug = {p.slug: p for p in session.scalars(select(WorkloadPreset))}
    overlay = memory_overlay(seed_dir)
    facts = read_preset_facts(seed_dir)
    for raw in _read(path):
        row = with_memory_overlay(raw, overlay)
        fields = workload_cells(row)
        values = {
            "slug": row["preset"],
            "name": row["name"],
            "fields": fields,
            "benchmark_workloads": _split(row.get("benchmark_workloads")),
            "benchmark_method": _opt(row.get("benchmark_method")),
            "units_per_sample": _opt(row.get("units_per_sample"), float),
            "throughput_unit": _opt(row.get("throughput_unit")),
            "source": row["source"],
            "seen_on": _date(row.get("seen_on")),
            "notes": _opt(row.get("notes")),
        }
        values["fields"].update(facts.pop(row["preset"], {}))
        by_slug[row["preset"]] = _upsert(
            session, report, WorkloadPreset, by_slug.get(row["preset"]), values
        )
    if facts:
        raise SeedError(f"preset_facts.csv: unknown preset(s) {', '.join(sorted(facts))}")
    session.flush()


def read_preset_facts(seed_dir: Path) -> dict[str, dict[str, Any]]:
    """``preset_facts.csv``: one sourced workload figure per row (preset, field, value, unit,
    source, seen_on, notes), merged over the preset's ``workloads.csv`` fields.

    Raises:
        SeedError: an unknown field, a row without its source, or a value of the wrong type.
    """
    path = seed_dir / "preset_facts.csv"
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    if not path.exists():
        return out
    for i, row in enumerate(_read(path), start=2):
        kind = PRESET_FIELDS.get(row["field"])
        if kind is None:
            raise SeedError(f"{path.name}:{i}: unknown workload field {row['field']!r}")
        if not (row.get("source") or "").strip():
            raise SeedError(f"{path.name}:{i}: no source")
        try:
            out[row["preset"]][row["field"]] = _opt(row["value"], kind)
        except ValueError as exc:
            raise SeedError(f"{path.name}:{i}: {row['field']}: {exc}") from exc
    return out


def seed_rates(session: Session, seed_dir: Path, report: SeedReport) -> None:
    """Load ``currency_rates.csv``."""
    path = seed_dir / "currency_rates.csv"
    existing = {(r.base, r.quote, r.seen_on): r for r in session.scalars(select(CurrencyRate))}
    for row in _read(path):
        seen_on = _date(row["seen_on"])
        if seen_on is None:
            raise SeedError(f"{path.name}: a rate without seen_on ({row['base']}/{row['quote']})")
        key = (row["base"], row["quote"], seen_on)
        values = {
            "base": row["base"],
            "quote": row["quote"],
            "rate": Decimal(row["rate"]),
            "source": row["source"],
            "seen_on": seen_on,
        }
        existing[key] = _upsert(session, report, CurrencyRate, existing.get(key), values)
    session.flush()


def price_kind(row: Mapping[str, str | None], file: str) -> str:
    """A seed offer's ``price_kind`` (``hand_kept``, ``price_index`` or ``quoted_example``:
    :data:`app.price_age.SEED_PRICE_KINDS`).

    Raises:
        SeedError: a missing or unknown kind (``scraped`` is the refresh's, never a seed's).
    """
    kind = (row.get("price_kind") or "").strip()
    if kind not in SEED_PRICE_KINDS:
        raise SeedError(
            f"{file}: offer {row.get('offer_key')!r}: price_kind {kind!r} is not one of "
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
    groups: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    path_of: dict[tuple[str, str, str, str], str] = {}
    for path in sorted(seed_dir.glob("offers*.csv")):
        for row in _read(path):
            natural = (row["provider"], row["offer_key"], row["region"], row["billing"])
            groups[natural].append(row)
            path_of[natural] = path.name
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
        rows.sort(key=lambda r: r["seen_on"] or "")
        latest = rows[-1]
        interconnect = _opt(latest["interconnect"])
        vram = _opt(latest["vram_gib_per_gpu"], float)
        identity = normaliser.identify(
            latest["gpu_name_raw"],
            vram_gib=vram,
            form_hint=form_hint(interconnect),
            context=(latest["instance_type"], offer_key),
            gpu_count=float(latest["gpu_count"]),
        )
        match = identity.match
        gpu = gpus[match.canonical_name] if match else None
        # the same VRAM rule as the refresh (app/db/ingest.py): app.gpu_names.offer_vram
        vram, note = offer_vram(
            identity, vram, gpu.vram_gib if gpu else None, float(latest["gpu_count"])
        )
        if match is None:
            unknown.append(latest["gpu_name_raw"])
        dates = [d for r in rows if (d := _date(r["seen_on"])) is not None]
        first = dt.datetime.combine(min(dates), dt.time(), dt.UTC) if dates else now
        # the date the source was seen, never the load time (NULL: the source gives none)
        last = dt.datetime.combine(max(dates), dt.time(), dt.UTC) if dates else None
        price = _opt(latest["price_per_hour"], Decimal)
        values = {
            "provider_id": provider.id,
            "offer_key": offer_key,
            "instance_type": latest["instance_type"],
            "region": region,
            "gpu_model_id": gpu.id if gpu else None,
            "gpu_name_raw": latest["gpu_name_raw"],
            "gpu_count": float(latest["gpu_count"]),
            "vram_gib_per_gpu": vram,
            "vcpus": _opt(latest["vcpus"], float),
            "cpu_model": _opt(latest["cpu_model"]),
            "ram_gib": _opt(latest["ram_gib"], float),
            "system_disk_gb": _opt(latest["system_disk_gb"], float),
            "data_disk_gb": _opt(latest["data_disk_gb"], float),
            "disk_type": _opt(latest["disk_type"]),
            "max_cuda": _opt(latest["max_cuda"]),
            "driver_version": _opt(latest["driver_version"]),
            "interconnect": interconnect_label(interconnect),
            "network_up_mbps": _opt(latest["network_up_mbps"], float),
            "network_down_mbps": _opt(latest["network_down_mbps"], float),
            "billing": billing,
            "price_per_hour": price,
            "currency": latest["currency"],
            "price_is_estimate": latest["price_is_estimate"] == "true",
            "available": True,
            "source": latest["source"],
            "seen_on": _date(latest["seen_on"]),
            "notes": _opt(latest["notes"]),
            "last_seen_at": last,
            "gpu_note": note,
            "price_kind": price_kind(latest, path_of[(slug, offer_key, region, billing)]),
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
            p = _opt(r["price_per_hour"], Decimal)
            obs_key = (offer.id, p, r["currency"], r["source"])
            if p is None or obs_key in observed:
                continue
            seen_on = _date(r["seen_on"])
            when = dt.datetime.combine(seen_on, dt.time(), dt.UTC) if seen_on else now
            session.add(
                PriceObservation(
                    offer_id=offer.id,
                    observed_at=when,
                    price_per_hour=p,
                    currency=r["currency"],
                    source=r["source"],
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
