"""The scraper → app contract: :class:`ScrapedOffer`, plus unit helpers the parsers share.

A scraper emits one validated ``ScrapedOffer`` per purchasable shape (provider × offer key ×
region × billing). It carries the GPU name exactly as the provider writes it and the VRAM as
listed (converted to GiB); the app's ingest layer maps names to the catalog and stores a driver's
reading of a card's full memory as its catalog size.

Units (all fields): prices are per **instance** and per **hour** in ``currency`` (cents are
converted, per-GPU prices are multiplied by the GPU count before a record is built); memory in
GiB; disk in GB as listed; internet up/down in Mbit/s; the network between machines
(``network_gbps``) in Gbit/s per machine, read by :func:`network_gbps` (one rule). An unknown
price is ``None``, never 0.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Billing = Literal["on_demand", "spot"]
#: ``api``: the provider's own API (first-hand); ``catalog``: a maintained public catalog
#: (:mod:`scrapers.catalogs`). Ingest stores the matching price kind (``scraped`` or
#: ``catalog``, ``app.price_age.PRICE_KIND_OF_SOURCE``); seed data is never a scraper's.
SourceKind = Literal["api", "catalog"]
Interconnect = Literal["nvswitch", "nvlink", "sxm", "pcie"]

#: Prices are stored as ``Numeric(14, 6)``: six decimal places.
PRICE_QUANTUM = Decimal("0.000001")


class ScrapedOffer(BaseModel):
    """One offer as a scraper saw it (validated; immutable).

    ``offer_key``/``region``/``billing`` are the natural key inside a provider. ``gpu_count``
    may be fractional (a sixth of an A10); ``vram_gib_per_gpu`` is then the full card's VRAM
    (the scrapers here send that; a slice's own memory is also understood at ingest).
    ``price_per_hour`` is for the whole instance, in ``currency``, ``None`` when unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1, max_length=64)
    offer_key: str = Field(min_length=1, max_length=200)
    instance_type: str = Field(min_length=1, max_length=200)
    region: str = Field(min_length=1, max_length=200)
    billing: Billing
    gpu_name_raw: str = Field(min_length=1, max_length=200)
    gpu_count: float = Field(gt=0)
    vram_gib_per_gpu: float | None = Field(default=None, gt=0)
    vcpus: float | None = Field(default=None, gt=0)
    cpu_model: str | None = Field(default=None, max_length=200)
    ram_gib: float | None = Field(default=None, gt=0)
    disk_gb: float | None = Field(default=None, ge=0)
    max_cuda: str | None = Field(default=None, max_length=16)
    driver_version: str | None = Field(default=None, max_length=32)
    interconnect: Interconnect | None = None
    network_up_mbps: float | None = Field(default=None, ge=0)
    network_down_mbps: float | None = Field(default=None, ge=0)
    #: The network between machines, Gbit/s per machine, as the provider states it
    #: (InfiniBand, RoCE, EFA or Ethernet: :func:`network_gbps`); ``None`` where not stated.
    network_gbps: float | None = Field(default=None, gt=0)
    price_per_hour: Decimal | None = Field(default=None, gt=0, max_digits=14, decimal_places=6)
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    price_is_estimate: bool = False
    available: bool = True
    source: str = Field(min_length=1)
    #: Where the price comes from (first-hand API or a public catalog).
    source_kind: SourceKind = "api"
    #: The date the source published the price (a catalog's version date); ``None``: a
    #: provider API's fetch itself is the observation, a catalog row is undated.
    seen_on: dt.date | None = None
    notes: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """Natural key inside the provider: (offer key, region, billing)."""
        return (self.offer_key, self.region, self.billing)


#: A sustained network rate as providers write it: a number, then a unit of G or T (``3200
#: Gigabit``: AWS price list "Network Performance"; ``400 Gbps``, ``100 Gb/s``, ``3.2 Tbps``,
#: ``900 GB/s``); :func:`network_gbps` reads the unit.
_NETWORK = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([GgTt])(.*?)\s*")
#: How a rate's unit ends: per second (``Gb/s``, ``Gbps``, ``gigabytes per second``). ``ps``
#: only in lower case: ``GBPS`` (all capitals) does not say bit or byte.
_PER_SECOND = re.compile(r"(?:/s|/sec|ps|(?i: per second))$")
#: The unit's G or T written out (``Gigabit``, ``terabytes``), any case.
_SPELLED = {"g": "iga", "t": "era"}


def _bits_per_unit(letter: str, rest: str) -> float | None:
    """Gbit/s in one of the unit ``letter`` + ``rest`` (``G`` + ``B/s``): 1 or 1000 for G or
    T, times 8 when the unit is bytes; ``None`` when it does not say bits or bytes.

    Bit or byte: a word (``bit``, ``Bit``, ``bits``, ``byte``, ``bytes``) says it in any case
    (``GBit/s`` is gigabits, as German listings write it); a single letter says it by its
    case, ``b`` a bit and ``B`` a byte (IEEE 1541-2002 "b" for bit, "B" for byte; IEC
    80000-13:2008 "B" for byte): ``Gb/s``/``Gbps`` gigabits, ``GB/s``/``GBps`` gigabytes, as
    NVLink bandwidth is written ("900 GB/s" = 7,200 Gbit/s). Anything else (``GBPS``,
    ``Gx``) is ``None``: read as bits it could be 8× off."""
    rest = _PER_SECOND.sub("", rest)
    if rest.lower().startswith(_SPELLED[letter.lower()]):
        rest = rest[3:]
    scale = 1000.0 if letter.lower() == "t" else 1.0
    if rest.lower() in ("bit", "bits") or rest == "b":
        return scale
    if rest.lower() in ("byte", "bytes") or rest == "B":
        return scale * 8
    return None


def network_gbps(text: str | None) -> float | None:
    """The network between machines a provider states, in Gbit/s per machine: ``"3200
    Gigabit"`` → 3200.0, ``"400 Gbps"`` → 400.0, ``"3.2 Tbps"`` → 3200.0, and a rate in bytes
    times 8: ``"900 GB/s"`` → 7200.0, ``"3.2 TB/s"`` → 25600.0 (bit or byte:
    :func:`_bits_per_unit`). The one rule every scraper uses for
    :attr:`ScrapedOffer.network_gbps`.

    ``None`` when the text states no sustained rate: empty, a word (``"High"``, ``"Moderate"``:
    older AWS types), a unit that does not say bits or bytes (``"100 GBPS"``) or a ceiling
    (``"Up to 25 Gigabit"``: AWS, "Amazon EC2 instance network
    bandwidth", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth
    (seen 2026-12-04): an "up to" figure is a burst ceiling above the instance's baseline, which
    the listing does not give). A training job's all-reduce is sustained traffic, so only a
    plain figure is taken; the model then uses its stated default and says so."""
    match = _NETWORK.fullmatch(text or "")
    if not match:
        return None
    per_unit = _bits_per_unit(match.group(2), match.group(3))
    if per_unit is None:
        return None
    value = float(match.group(1)) * per_unit
    return value if value > 0 else None


def to_price(value: object, *, multiplier: float = 1, cents: bool = False) -> Decimal | None:
    """A listed price as a positive ``Decimal`` per instance-hour, or ``None``.

    Args:
        value: the number or numeric string the provider sent (``"0.0615"``, ``2.69``, ``149``).
        multiplier: GPU count for providers that price per GPU-hour (RunPod, …).
        cents: the value is in cents (Lambda ``price_cents_per_hour``).

    Returns:
        ``None`` for a missing, non-numeric (``"N/A*"``), zero or negative price: an unknown
        price is stored as NULL, never 0.
    """
    if value is None or isinstance(value, bool):
        return None
    try:
        price = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    if not price.is_finite() or price <= 0:
        return None
    price *= Decimal(str(multiplier))
    if cents:
        price /= 100
    price = price.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)
    return price if price > 0 else None


def mib_to_gib(value: float | None) -> float | None:
    """MiB → GiB (2 decimals); ``None`` for missing or non-positive values."""
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return round(value / 1024, 2)


def card_share(slice_vram_gib: float | None, card_vram_gib: float | None) -> float | None:
    """The share of one card a fractional GPU is, from the memory it lists: ``slice / card``
    (4 decimals; Vultr's 4 GB of an 80 GB A100 → 0.05, AWS's 3 GiB of a 24 GB L4 → 0.125).

    The scrapers' one rule for slices sold by memory. ``None`` when either figure is missing or
    the slice is not below the card (then it is not a fraction).
    """
    if not slice_vram_gib or not card_vram_gib or slice_vram_gib <= 0 or card_vram_gib <= 0:
        return None
    if slice_vram_gib >= card_vram_gib:
        return None
    return round(slice_vram_gib / card_vram_gib, 4)


def positive(value: float | None) -> float | None:
    """``value`` when it is a finite positive number, else ``None``."""
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return float(value)
