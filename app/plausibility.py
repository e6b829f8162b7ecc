"""Plausibility rules for an offer: is its price, VRAM and RAM believable? Pure (no I/O).

Ingest (:mod:`app.db.trust`, called for scraped and seed offers alike) builds
:class:`PriceBands` from the stored price history and calls :func:`check_offer` on each offer;
a non-empty list of reasons marks the offer ``suspect`` (stored, shown marked, left out of
rankings by default).

Price band (per GPU model and billing), in USD per GPU-hour:

- every offer of the GPU contributes one point, the median of its observed prices divided by
  its GPU count (so an offer observed daily weighs as much as one seen once);
- the band is ``median ± K · σ`` in log space with ``σ = 1.4826 · MAD`` (the MAD scaled to a
  normal standard deviation). Log space because prices of one card are spread multiplicatively
  (marketplace vs cloud). ``K = 5`` rather than Iglewicz & Hoaglin's 3.5 (modified z-score,
  *How to Detect and Handle Outliers*, ASQC 1993): provider prices are heavier-tailed than
  normal, and at 3.5 three sourced seed listings (Vast's $0.76/h A100 40GB, gpushare's ¥2.2/h
  A6000, GCP's a3-ultragpu spot) fall outside; at 5 none does, while the sub-cent GPU-hours
  the rule exists for sit 50–2000× (ln 4–7.6, i.e. 11–22 σ) below the median;
- ``σ`` is never below the pooled within-GPU spread of the whole history (a GPU whose few
  offers happen to agree must not get a razor-thin band);
- thin history (fewer than :data:`MIN_POINTS` offers): the GPU's offers of every billing are
  pooled, each divided by its billing's discount measured on the stored instances that have
  both prices (spot / on-demand of the same machine); if still thin, every GPU's offers are
  pooled (a last-resort band that still catches a sub-cent GPU-hour); with no history at all
  no band check is made.

Other rules: a spot price must be below the on-demand price of the same instance; a price must
be finite and positive; listed VRAM above twice the card's datasheet size is impossible (the
largest aftermarket memory mod doubles a card: the 48 GB RTX 4090 in
``seed_data/offers_public.csv``); host RAM above 32 TiB is impossible (the largest published
instance, AWS ``u7inh-32tb.480xlarge``, has 32 TiB).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import median

#: Band half-width in σ (module docstring: why 5, not Iglewicz & Hoaglin's 3.5).
K = 5.0
#: MAD → standard deviation of a normal distribution.
MAD_TO_SIGMA = 1.4826
#: Fewest offers a band is built from before falling back to a wider pool.
MIN_POINTS = 5
#: Listed VRAM above this multiple of the datasheet VRAM is impossible (memory mods double).
MAX_VRAM_FACTOR = 2.0
#: Largest host RAM of any published instance, GiB (AWS u7inh-32tb.480xlarge: 32 TiB).
MAX_RAM_GIB = 32 * 1024


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One offer's typical price: ``usd_per_gpu_hour`` (USD per GPU-hour) of ``gpu``.

    ``instance`` identifies the machine across billings (provider × instance type × region):
    an on-demand and a spot point of the same instance give the billing's discount.
    """

    gpu: str
    billing: str
    usd_per_gpu_hour: float
    instance: tuple[object, ...] | None = None


@dataclass(frozen=True, slots=True)
class PriceBand:
    """A plausible price range in USD per GPU-hour; ``basis`` says which history built it."""

    low: float
    high: float
    n: int
    basis: str

    def contains(self, usd_per_gpu_hour: float) -> bool:
        """Whether the price lies within the band."""
        return self.low <= usd_per_gpu_hour <= self.high


@dataclass(frozen=True, slots=True)
class _Stats:
    center: float  # median of log(USD per GPU-hour)
    sigma: float  # 1.4826 · MAD of the logs
    n: int


def _stats(logs: list[float]) -> _Stats:
    m = median(logs)
    mad = median(abs(x - m) for x in logs)
    return _Stats(center=m, sigma=MAD_TO_SIGMA * mad, n=len(logs))


@dataclass
class PriceBands:
    """Bands by (GPU, billing), by GPU, and over every GPU (see the module docstring).

    ``discount[billing]`` is the log of the median price ratio billing / on-demand over the
    instances stored with both (0 when none is); pooled bands are built from prices divided by
    it, so a spot offer is compared with spot-level prices. ``floor_sigma`` is the pooled
    within-GPU spread: 1.4826 · the median absolute log-distance of every point from its own
    GPU's median (GPUs with two or more offers).
    """

    by_gpu_billing: dict[tuple[str, str], _Stats] = field(default_factory=dict)
    by_gpu: dict[str, _Stats] = field(default_factory=dict)
    overall: _Stats | None = None
    floor_sigma: float = 0.0
    discount: dict[str, float] = field(default_factory=dict)

    @classmethod
    def build(cls, points: Iterable[PricePoint]) -> PriceBands:
        """Bands from one point per stored offer (non-positive prices are ignored)."""
        pts = [p for p in points if p.usd_per_gpu_hour > 0 and math.isfinite(p.usd_per_gpu_hour)]
        on_demand = {p.instance: p.usd_per_gpu_hour for p in pts if p.billing == "on_demand"}
        ratios: dict[str, list[float]] = defaultdict(list)
        for p in pts:
            od = on_demand.get(p.instance) if p.instance is not None else None
            if p.billing != "on_demand" and od:
                ratios[p.billing].append(math.log(p.usd_per_gpu_hour / od))
        discount = {b: median(r) for b, r in ratios.items()}
        by_gb: dict[tuple[str, str], list[float]] = defaultdict(list)
        by_g: dict[str, list[float]] = defaultdict(list)
        every: list[float] = []
        for p in pts:
            x = math.log(p.usd_per_gpu_hour)
            by_gb[(p.gpu, p.billing)].append(x)
            adjusted = x - discount.get(p.billing, 0.0)
            by_g[p.gpu].append(adjusted)
            every.append(adjusted)
        residuals = [abs(x - median(xs)) for xs in by_g.values() if len(xs) >= 2 for x in xs]
        return cls(
            by_gpu_billing={k: _stats(v) for k, v in by_gb.items() if len(v) >= MIN_POINTS},
            by_gpu={k: _stats(v) for k, v in by_g.items() if len(v) >= MIN_POINTS},
            overall=_stats(every) if len(every) >= MIN_POINTS else None,
            floor_sigma=MAD_TO_SIGMA * median(residuals) if residuals else 0.0,
            discount=discount,
        )

    def band(self, gpu: str | None, billing: str) -> PriceBand | None:
        """The band for ``gpu`` at ``billing``, falling back as the module docstring says."""
        stats, basis, shift = None, "", 0.0
        if gpu is not None:
            stats = self.by_gpu_billing.get((gpu, billing))
            basis = f"{gpu} {billing} offers"
            if stats is None:
                stats, shift = self.by_gpu.get(gpu), self.discount.get(billing, 0.0)
                basis = f"{gpu} offers of every billing"
        if stats is None and self.overall is not None:
            stats, shift = self.overall, self.discount.get(billing, 0.0)
            basis = "offers of every GPU"
        if stats is None:
            return None
        half = K * max(stats.sigma, self.floor_sigma)
        return PriceBand(
            low=math.exp(stats.center + shift - half),
            high=math.exp(stats.center + shift + half),
            n=stats.n,
            basis=basis,
        )


@dataclass(frozen=True, slots=True)
class OfferFacts:
    """What the rules need of one offer.

    ``price_per_hour`` is per instance in the offer's currency; ``usd_rate`` converts it to USD
    (``None`` when no rate is known: no band check). ``catalog_vram_gib`` is the matched GPU's
    datasheet VRAM (``None`` when the GPU is unknown). ``on_demand_price_per_hour`` is the
    on-demand price of the same instance (provider × instance type × region), same currency.
    """

    gpu: str | None
    gpu_count: float
    billing: str
    price_per_hour: float | None
    usd_rate: float | None = 1.0
    vram_gib_per_gpu: float | None = None
    catalog_vram_gib: float | None = None
    ram_gib: float | None = None
    on_demand_price_per_hour: float | None = None


def _usd(value: float) -> str:
    return f"${value:.4g}" if value < 0.1 else f"${value:,.2f}"


def check_offer(offer: OfferFacts, bands: PriceBands) -> list[str]:
    """Reasons (readable sentences) why ``offer`` is implausible; empty when it is plausible."""
    reasons: list[str] = []
    price = offer.price_per_hour
    if price is not None and (not math.isfinite(price) or price <= 0):
        reasons.append(f"price {price} per hour is not a positive number")
        price = None
    if (
        price is not None
        and offer.billing == "spot"
        and offer.on_demand_price_per_hour is not None
        and price >= offer.on_demand_price_per_hour
    ):
        reasons.append(
            f"spot price {price:g}/h is not below the on-demand price "
            f"{offer.on_demand_price_per_hour:g}/h of the same instance"
        )
    if price is not None and offer.usd_rate and offer.gpu_count > 0:
        reasons.extend(_price_band_reasons(offer, price * offer.usd_rate, bands))
    vram = offer.vram_gib_per_gpu
    if (
        vram is not None
        and offer.catalog_vram_gib
        and vram > MAX_VRAM_FACTOR * offer.catalog_vram_gib
    ):
        reasons.append(
            f"listed VRAM {vram:g} GiB per GPU is impossible for the {offer.gpu} "
            f"({offer.catalog_vram_gib:g} GiB on the datasheet)"
        )
    ram = offer.ram_gib
    if ram is not None and (not math.isfinite(ram) or ram <= 0 or ram > MAX_RAM_GIB):
        reasons.append(f"listed host RAM {ram:g} GiB is impossible for an instance")
    return reasons


def _price_band_reasons(offer: OfferFacts, usd_per_hour: float, bands: PriceBands) -> list[str]:
    band = bands.band(offer.gpu, offer.billing)
    if band is None:
        return []
    per_gpu = usd_per_hour / offer.gpu_count
    if band.contains(per_gpu):
        return []
    where = (
        f"the plausible band {_usd(band.low)}–{_usd(band.high)} per GPU-hour "
        f"(from {band.n} stored {band.basis})"
    )
    count = offer.gpu_count
    if per_gpu < band.low and count > 1 and band.contains(usd_per_hour):
        return [
            f"price {_usd(usd_per_hour)}/h for {count:g} GPUs looks like a per-GPU price listed "
            f"as the instance price: {_usd(per_gpu)} per GPU-hour is below {where}"
        ]
    if per_gpu > band.high and count > 1 and band.contains(per_gpu / count):
        return [
            f"price {_usd(usd_per_hour)}/h looks multiplied by the GPU count twice: "
            f"{_usd(per_gpu)} per GPU-hour is above {where}"
        ]
    side = "below" if per_gpu < band.low else "above"
    return [f"price {_usd(per_gpu)} per GPU-hour is far {side} {where}"]
