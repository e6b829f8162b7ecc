"""Write path of the nightly refresh: scraped offers → ``instance_offer`` + ``price_observation``.

:func:`apply_offers` applies one provider's complete result inside the caller's transaction:

- offers are upserted on their natural key (provider × ``offer_key`` × region × billing); two
  records with the same key in one result keep the cheapest known price;
- GPU names go through the one normaliser (:mod:`app.gpu_names`, built from the catalog in the
  database plus ``seed_data/gpu_aliases.csv``), which weighs the instance's context (VRAM,
  interconnect, instance type); a name that matches nothing, or stays ambiguous ("H100" with
  nothing telling SXM from PCIe), is stored with its raw name, ``gpu_model_id`` NULL and the
  reason in ``gpu_note``, and is reported in the counts;
- listed VRAM that is the matched GPU's full memory written another way (the driver-reported
  capacity a little below the catalog size: a Vast L40S's 44.99 GiB; marketed GB a little
  above) is stored as that GPU's catalog size, the listing kept in ``gpu_note``
  (:func:`app.gpu_names.offer_vram`, the same rule as the seed data); slices keep their share;
- a price observation is appended when the price changed, or when the offer's last observation
  is older than a day (unknown prices are not observed);
- every offer of the result is judged by the plausibility rules (:mod:`app.db.trust`, the
  same as for seed data) against bands built from the history stored before it; one that
  fails is stored with ``suspect = true`` and the reason, and counted;
- the provider's offers that this result does not contain are marked ``available = false``;
  nothing is ever deleted. A result retires offers of its own source kind and of the kinds
  after it (:data:`app.price_age.SOURCE_KINDS`: api, catalog, seed; an offer's source kind
  follows from its ``price_kind``), never those before: a first-hand API run replaces a
  public-catalog or seed snapshot, a public-catalog run never touches first-hand rows, and a
  record never overwrites a stored row of an earlier kind;
- each offer's ``price_kind`` is the one of its record's ``source_kind``
  (:data:`app.price_age.PRICE_KIND_OF_SOURCE`: ``scraped`` or ``catalog``), and its
  ``last_seen_at`` when its source showed the price (:func:`price_seen_at`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.data.load import load_extra_aliases
from app.db.models import GpuModel, InstanceOffer, PriceObservation, Provider, as_utc
from app.db.seed import build_normaliser
from app.db.trust import assess_offers, load_trust_context
from app.gpu_names import GpuNameNormaliser, form_hint, offer_vram
from app.model.types import interconnect_label
from app.price_age import PRICE_KIND_OF_SOURCE, SOURCE_KINDS
from app.price_age import source_kind as source_of
from scrapers.records import ScrapedOffer

log = logging.getLogger(__name__)

#: An offer whose price did not change still gets an observation once a day.
OBSERVATION_INTERVAL = dt.timedelta(days=1)
#: Prefix of an offer's stored ``source`` by source kind.
SOURCE_PREFIX = {"api": "live: ", "catalog": "catalog: "}


def _precedence(kind: str) -> int:
    """A source kind's place in :data:`app.price_age.SOURCE_KINDS` (0: first-hand)."""
    return SOURCE_KINDS.index(kind)


def price_seen_at(offer: ScrapedOffer, observed_at: dt.datetime) -> dt.datetime | None:
    """When ``offer``'s source showed its price: the source's own date (00:00 UTC of
    ``offer.seen_on``, a catalog's version day) when it gives one, else the fetch time for a
    provider's own API, else ``None``: an undated catalog row stays undated, never dated by
    the day it was read (:mod:`app.price_age`)."""
    if offer.seen_on is not None:
        return dt.datetime.combine(offer.seen_on, dt.time(0), tzinfo=dt.UTC)
    return observed_at if offer.source_kind == "api" else None


@dataclass(frozen=True)
class Catalog:
    """What ingest needs of the GPU catalog: the normaliser, ids, and each GPU's VRAM."""

    normaliser: GpuNameNormaliser
    gpu_ids: dict[str, int]
    #: datasheet VRAM of each catalog GPU, GiB (an offer is compared with its matched GPU's)
    vram_by_name: dict[str, float] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """No GPU models loaded (every name would be unknown)."""
        return not self.gpu_ids


def load_catalog(session: Session, seed_dir: Path) -> Catalog:
    """Build the :class:`Catalog` from the ``gpu_model`` table and the extra alias file."""
    gpus = list(session.scalars(select(GpuModel).order_by(GpuModel.id)))
    return Catalog(
        normaliser=build_normaliser(gpus, load_extra_aliases(seed_dir)),
        gpu_ids={g.canonical_name: g.id for g in gpus},
        vram_by_name={g.canonical_name: g.vram_gib for g in gpus if g.vram_gib},
    )


@dataclass
class IngestCounts:
    """What :func:`apply_offers` did for one provider."""

    seen: int = 0
    new: int = 0
    changed: int = 0
    gone: int = 0
    observations: int = 0
    duplicates: int = 0
    #: offers of this result stored ``suspect`` (:mod:`app.db.trust`)
    suspect: int = 0
    unknown_gpu_names: list[str] = field(default_factory=list)


def dedupe(offers: Sequence[ScrapedOffer]) -> tuple[list[ScrapedOffer], int]:
    """One record per natural key (the cheapest known price wins); returns the dropped count."""
    best: dict[tuple[str, str, str], ScrapedOffer] = {}
    for offer in offers:
        kept = best.get(offer.key)
        if kept is None or (
            offer.price_per_hour is not None
            and (kept.price_per_hour is None or offer.price_per_hour < kept.price_per_hour)
        ):
            best[offer.key] = offer
    return list(best.values()), len(offers) - len(best)


def _same_price(a: Decimal | None, b: Decimal | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return Decimal(a) == Decimal(b)


def apply_offers(
    session: Session,
    provider: Provider,
    offers: Sequence[ScrapedOffer],
    catalog: Catalog,
    observed_at: dt.datetime,
    source_kind: str = "api",
) -> IngestCounts:
    """Apply one provider's complete scrape (see the module docstring); flushes, never commits.

    Args:
        session: inside the caller's transaction (one transaction per provider).
        provider: the provider row the offers belong to.
        offers: every offer of this provider from this run.
        catalog: from :func:`load_catalog`.
        observed_at: the run's timestamp (UTC), used for ``last_seen_at`` and observations.
        source_kind: the run's kind (``api`` or ``catalog``): which stored rows it may retire.
    """
    rank = _precedence(source_kind)
    counts = IngestCounts()
    trust = load_trust_context(session)  # bands from the history stored before this result
    unique, counts.duplicates = dedupe(offers)
    counts.seen = len(unique)
    existing = {
        (o.offer_key, o.region, o.billing): o
        for o in session.scalars(
            select(InstanceOffer).where(InstanceOffer.provider_id == provider.id)
        )
    }
    last_observed = dict(
        session.execute(
            select(PriceObservation.offer_id, func.max(PriceObservation.observed_at))
            .join(InstanceOffer, InstanceOffer.id == PriceObservation.offer_id)
            .where(InstanceOffer.provider_id == provider.id)
            .group_by(PriceObservation.offer_id)
        ).all()
    )
    unknown: set[str] = set()
    to_observe: list[tuple[InstanceOffer, ScrapedOffer, bool]] = []
    batch: list[InstanceOffer] = []
    for o in unique:
        identity = catalog.normaliser.identify(
            o.gpu_name_raw,
            vram_gib=o.vram_gib_per_gpu,
            form_hint=form_hint(o.interconnect),
            context=(o.instance_type, o.offer_key),
            gpu_count=o.gpu_count,
        )
        match = identity.match
        if identity.status == "ambiguous":
            unknown.add(f"{o.gpu_name_raw} (ambiguous: {' or '.join(identity.candidates)})")
        elif match is None:
            unknown.add(o.gpu_name_raw)
        # the matched GPU's own size only (an L4 listed at 178.75 GiB stays 178.75)
        own = catalog.vram_by_name.get(match.canonical_name) if match else None
        vram, note = offer_vram(identity, o.vram_gib_per_gpu, own, o.gpu_count)
        seen_at = price_seen_at(o, observed_at)
        values = {
            "instance_type": o.instance_type,
            "gpu_model_id": catalog.gpu_ids[match.canonical_name] if match else None,
            "gpu_name_raw": o.gpu_name_raw,
            "gpu_count": o.gpu_count,
            "vram_gib_per_gpu": vram,
            "gpu_note": note,
            "vcpus": o.vcpus,
            "cpu_model": o.cpu_model,
            "ram_gib": o.ram_gib,
            "system_disk_gb": None,
            "data_disk_gb": o.disk_gb,
            "disk_type": None,
            "max_cuda": o.max_cuda,
            "driver_version": o.driver_version,
            "interconnect": interconnect_label(o.interconnect),
            "network_up_mbps": o.network_up_mbps,
            "network_down_mbps": o.network_down_mbps,
            "network_gbps": o.network_gbps,
            "price_per_hour": o.price_per_hour,
            "currency": o.currency,
            "price_is_estimate": o.price_is_estimate,
            "available": o.available,
            "last_seen_at": seen_at,
            "source": SOURCE_PREFIX[o.source_kind] + o.source,
            "seen_on": seen_at.date() if seen_at is not None else None,
            "notes": o.notes,
            "price_kind": PRICE_KIND_OF_SOURCE[o.source_kind],
        }
        row = existing.get(o.key)
        if row is not None and _precedence(source_of(row.price_kind)) < _precedence(o.source_kind):
            counts.duplicates += 1  # a later source never overwrites a first-hand row
            continue
        if row is None:
            row = InstanceOffer(
                provider_id=provider.id,
                offer_key=o.offer_key,
                region=o.region,
                billing=o.billing,
                first_seen_at=observed_at,
                **values,
            )
            session.add(row)
            counts.new += 1
            to_observe.append((row, o, True))
            batch.append(row)
            continue
        price_changed = not _same_price(row.price_per_hour, o.price_per_hour)
        if price_changed:
            counts.changed += 1
        for key, value in values.items():
            setattr(row, key, value)
        to_observe.append((row, o, price_changed))
        batch.append(row)
    counts.suspect = assess_offers(batch, trust, same_provider=existing.values())
    session.flush()  # new offers get their ids

    for row, o, price_changed in to_observe:
        if o.price_per_hour is None:
            continue
        last = last_observed.get(row.id)
        due = last is None or observed_at - as_utc(last) >= OBSERVATION_INTERVAL
        if price_changed or due:
            session.add(
                PriceObservation(
                    offer_id=row.id,
                    observed_at=observed_at,
                    price_per_hour=o.price_per_hour,
                    currency=o.currency,
                    source=SOURCE_PREFIX[o.source_kind] + o.source,
                )
            )
            counts.observations += 1

    seen_keys = {o.key for o in unique}
    for offer_key, row in existing.items():
        if _precedence(source_of(row.price_kind)) < rank:
            continue  # never retire a row of an earlier source (a catalog run, first-hand rows)
        if offer_key not in seen_keys and row.available:
            row.available = False
            counts.gone += 1
    session.flush()
    counts.unknown_gpu_names = sorted(unknown)
    for name in counts.unknown_gpu_names:
        log.warning(
            "%s: GPU %r matches no catalog model; stored with its raw name", provider.slug, name
        )
    return counts
