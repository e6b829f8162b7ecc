"""What the offer page shows beyond the ranking row: host details and price history."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Float, cast, select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, PriceObservation

#: Price observations returned per offer (newest kept when there are more).
MAX_PRICE_POINTS = 2000


@dataclass(frozen=True, slots=True)
class OfferExtras:
    """Listing details the ranking does not need (disk split, CPU, network, provenance)."""

    cpu_model: str | None
    system_disk_gb: float | None
    data_disk_gb: float | None
    disk_type: str | None
    network_up_mbps: float | None
    network_down_mbps: float | None
    first_seen_at: dt.datetime
    seen_on: dt.date | None
    notes: str | None


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One observed price of an offer (for the whole instance, per hour, as listed)."""

    observed_at: dt.datetime
    price_per_hour: float | None
    currency: str
    source: str


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def offer_extras(session: Session, offer_id: int) -> OfferExtras | None:
    """The listing details of one offer, ``None`` if it does not exist."""
    row = session.execute(
        select(InstanceOffer.cpu_model, InstanceOffer.system_disk_gb, InstanceOffer.data_disk_gb,
               InstanceOffer.disk_type, InstanceOffer.network_up_mbps,
               InstanceOffer.network_down_mbps, InstanceOffer.first_seen_at,
               InstanceOffer.seen_on, InstanceOffer.notes)
        .where(InstanceOffer.id == offer_id)
    ).first()
    if row is None:
        return None
    values = row._asdict()
    values["first_seen_at"] = _aware(values["first_seen_at"])
    return OfferExtras(**values)


def price_history(session: Session, offer_id: int) -> list[PricePoint]:
    """The offer's price observations, oldest first (at most :data:`MAX_PRICE_POINTS`)."""
    rows = session.execute(
        select(PriceObservation.observed_at, cast(PriceObservation.price_per_hour, Float),
               PriceObservation.currency, PriceObservation.source)
        .where(PriceObservation.offer_id == offer_id)
        .order_by(PriceObservation.observed_at.desc(), PriceObservation.id.desc())
        .limit(MAX_PRICE_POINTS)
    ).all()
    return [PricePoint(observed_at=_aware(t), price_per_hour=p, currency=c, source=s)
            for t, p, c, s in reversed(rows)]
