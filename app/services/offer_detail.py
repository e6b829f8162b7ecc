"""What the offer page shows beyond the ranking row: the listing's host details.

The price history comes from :func:`app.services.refresh_runs.price_history`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, as_utc


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


def offer_extras(session: Session, offer_id: int) -> OfferExtras | None:
    """The listing details of one offer, ``None`` if it does not exist."""
    row = session.execute(
        select(
            InstanceOffer.cpu_model,
            InstanceOffer.system_disk_gb,
            InstanceOffer.data_disk_gb,
            InstanceOffer.disk_type,
            InstanceOffer.network_up_mbps,
            InstanceOffer.network_down_mbps,
            InstanceOffer.first_seen_at,
            InstanceOffer.seen_on,
            InstanceOffer.notes,
        ).where(InstanceOffer.id == offer_id)
    ).first()
    if row is None:
        return None
    values = row._asdict()
    values["first_seen_at"] = as_utc(values["first_seen_at"])
    return OfferExtras(**values)
