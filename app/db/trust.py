"""Plausibility at ingest, database side: the one place scraped and seed offers are judged.

:func:`load_trust_context` builds the price bands (:class:`app.plausibility.PriceBands`) from
the stored price history of non-suspect offers, one point per offer (the median of its
observed prices, converted to USD with the stored exchange rates, divided by its GPU count).
:func:`assess_offers` runs :func:`app.plausibility.check_offer` on ORM offers and sets
``suspect`` / ``suspect_reason``. Both ``gpucost refresh`` (:mod:`app.db.ingest`) and
``gpucost seed`` (:mod:`app.db.seed`) call it.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import CurrencyRate, GpuModel, InstanceOffer, PriceObservation
from app.model.cost import UnknownCurrencyError, convert
from app.plausibility import OfferFacts, PriceBands, PricePoint, check_offer


@dataclass(frozen=True)
class TrustContext:
    """Bands, exchange rates (``(base, quote) → rate``) and the catalog's VRAM by GPU id."""

    bands: PriceBands
    rates: dict[tuple[str, str], float]
    gpu_names: dict[int, str]
    gpu_vram_gib: dict[int, float]

    def usd_rate(self, currency: str) -> float | None:
        """USD per one unit of ``currency`` (``None`` when no stored rate links them)."""
        try:
            return convert(1.0, currency, "USD", self.rates)
        except UnknownCurrencyError:
            return None


def load_rates(session: Session) -> dict[tuple[str, str], float]:
    """The newest stored rate of every currency pair."""
    rates: dict[tuple[str, str], float] = {}
    newest: dict[tuple[str, str], dt.date] = {}
    for r in session.scalars(select(CurrencyRate)):
        key = (r.base, r.quote)
        if key not in newest or r.seen_on > newest[key]:
            newest[key], rates[key] = r.seen_on, float(r.rate)
    return rates


def load_trust_context(session: Session) -> TrustContext:
    """Price bands from the stored history (see the module docstring)."""
    rates = load_rates(session)
    gpus = {g.id: g for g in session.scalars(select(GpuModel))}
    rows = session.execute(
        select(
            PriceObservation.offer_id,
            InstanceOffer.gpu_model_id,
            InstanceOffer.billing,
            InstanceOffer.gpu_count,
            InstanceOffer.provider_id,
            InstanceOffer.instance_type,
            InstanceOffer.region,
            PriceObservation.price_per_hour,
            PriceObservation.currency,
        )
        .join(InstanceOffer, InstanceOffer.id == PriceObservation.offer_id)
        .where(
            InstanceOffer.suspect.is_(False),
            InstanceOffer.gpu_model_id.is_not(None),
            PriceObservation.price_per_hour.is_not(None),
        )
    ).all()
    ctx = TrustContext(
        bands=PriceBands(),
        rates=rates,
        gpu_names={i: g.canonical_name for i, g in gpus.items()},
        gpu_vram_gib={i: g.vram_gib for i, g in gpus.items()},
    )
    per_offer: dict[int, list[float]] = defaultdict(list)
    shape: dict[int, tuple[int, str, tuple[object, ...]]] = {}
    for offer_id, gpu_id, billing, count, pid, itype, region, price, currency in rows:
        rate = ctx.usd_rate(currency)
        # gpu_id is never None here (the query keeps matched offers only)
        if rate is None or gpu_id is None or not count or price is None or price <= 0:
            continue
        per_offer[offer_id].append(float(price) * rate / count)
        shape[offer_id] = (gpu_id, billing, (pid, itype, region))
    points = [
        PricePoint(ctx.gpu_names[shape[o][0]], shape[o][1], median(prices), shape[o][2])
        for o, prices in per_offer.items()
    ]
    return TrustContext(
        bands=PriceBands.build(points),
        rates=rates,
        gpu_names=ctx.gpu_names,
        gpu_vram_gib=ctx.gpu_vram_gib,
    )


def _instance(o: InstanceOffer) -> tuple[int, str, str, str]:
    return (o.provider_id, o.instance_type, o.region, o.currency)


def assess_offers(
    offers: Iterable[InstanceOffer], ctx: TrustContext, *, same_provider: Iterable[InstanceOffer]
) -> int:
    """Judge ``offers`` and set ``suspect``/``suspect_reason`` on each; returns how many are
    suspect.

    ``same_provider`` are the stored offers the spot rule compares with (the on-demand price of
    the same provider × instance type × region × currency); ``offers`` are included in it.
    """
    offers = list(offers)
    on_demand: dict[tuple[int, str, str, str], float] = {}
    for o in (*same_provider, *offers):
        if o.billing == "on_demand" and o.price_per_hour is not None and o.available:
            key = _instance(o)
            price = float(o.price_per_hour)
            on_demand[key] = min(price, on_demand.get(key, price))
    suspects = 0
    for o in offers:
        reasons = check_offer(
            OfferFacts(
                gpu=ctx.gpu_names.get(o.gpu_model_id) if o.gpu_model_id else None,
                gpu_count=o.gpu_count,
                billing=o.billing,
                price_per_hour=float(o.price_per_hour) if o.price_per_hour is not None else None,
                usd_rate=ctx.usd_rate(o.currency),
                vram_gib_per_gpu=o.vram_gib_per_gpu,
                catalog_vram_gib=ctx.gpu_vram_gib.get(o.gpu_model_id) if o.gpu_model_id else None,
                ram_gib=o.ram_gib,
                on_demand_price_per_hour=on_demand.get(_instance(o)),
            ),
            ctx.bands,
        )
        o.suspect = bool(reasons)
        o.suspect_reason = "; ".join(reasons) if reasons else None
        suspects += bool(reasons)
    return suspects
