"""TensorDock marketplace locations (API v2, key required).

API: ``GET {GPUCOST_SCRAPER_TENSORDOCK_URL}/locations`` (default
``https://dashboard.tensordock.com/api/v2``) with ``Authorization: Bearer
<GPUCOST_SCRAPER_TENSORDOCK_API_KEY>`` (the v2 API's only security scheme). Shape from the
v2 docs "Fetch Hostnodes and Locations" (https://dashboard.tensordock.com/api/docs/fetch-hostnodes,
``../shared/docs/providers.md`` §7.4)::

    {"data": {"locations": [{"id", "city", "stateprovince", "country", "tier",
        "gpus": [{"v0Name": "h100-sxm5-80gb", "displayName": "H100 SXM5 80GB",
                  "max_count": 8, "price_per_hr": 2.2,
                  "resources": {"max_vcpus", "max_ram_gb", "max_storage_gb"},
                  "pricing": {"per_vcpu_hr", "per_gb_ram_hr", "per_gb_storage_hr"}}]}]}}

A TensorDock VM is composed by the renter: GPUs at ``price_per_hr`` each plus vCPUs, RAM and
disk at the location's per-unit prices. gpucost lists one composition per GPU count (1, 2, 4, 8
up to ``max_count``): the location's maximum vCPUs and RAM shared in proportion to the GPUs
(vCPUs rounded down to an even number, at least 2; RAM down to a multiple of 8 GB, at least 8:
the steps of "Modify Instance", https://dashboard.tensordock.com/api/docs/instance-management)
and the 100 GB minimum disk ("Create Instance": minimum storage 100 GB). The price is exactly
what that composition costs (``count × price_per_hr + vCPUs × per_vcpu_hr + RAM ×
per_gb_ram_hr + 100 × per_gb_storage_hr``); the note on each offer says so.

The GPU label is ``displayName`` (``v0Name`` when absent), whose memory token gives the VRAM.
Region = ``city, stateprovince, country``. Listed locations have the capacity to deploy now.
Fractional GPUs: none.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scrapers.base import ScrapeResult, keyed_scraper
from scrapers.records import positive, to_price
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://dashboard.tensordock.com/api/docs/fetch-hostnodes"
GPU_COUNTS = (1, 2, 4, 8)
#: The smallest disk a VM can have, GB (v2 "Create Instance" docs).
MIN_STORAGE_GB = 100
_VRAM = re.compile(r"(\d+)\s*gb\b", re.IGNORECASE)


class _Resources(BaseModel):
    model_config = ConfigDict(extra="ignore")
    max_vcpus: float | None = None
    max_ram_gb: float | None = None
    max_storage_gb: float | None = None


class _Pricing(BaseModel):
    model_config = ConfigDict(extra="ignore")
    per_vcpu_hr: float = 0
    per_gb_ram_hr: float = 0
    per_gb_storage_hr: float = 0


class TensorDockGpu(BaseModel):
    """``locations[].gpus[]``."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    v0_name: str = Field(alias="v0Name")
    display_name: str | None = Field(default=None, alias="displayName")
    max_count: int = Field(ge=1)
    price_per_hr: float
    resources: _Resources = _Resources()
    pricing: _Pricing = _Pricing()


class TensorDockLocation(BaseModel):
    """``data.locations[]``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    city: str | None = None
    stateprovince: str | None = None
    country: str | None = None
    gpus: list[dict[str, Any]] = []


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore")
    locations: list[dict[str, Any]]


class TensorDockAnswer(BaseModel):
    """``{"data": {"locations": [...]}}``."""

    model_config = ConfigDict(extra="ignore")
    data: _Data


def composition(gpu: TensorDockGpu, count: int) -> tuple[float | None, float | None]:
    """(vCPUs, RAM GB) of the composition for ``count`` GPUs (see the module docstring)."""
    share = count / gpu.max_count
    cpus = gpu.resources.max_vcpus
    ram = gpu.resources.max_ram_gb
    vcpus = max(2, 2 * math.floor(cpus * share / 2)) if cpus else None
    ram_gb = max(8, 8 * math.floor(ram * share / 8)) if ram else None
    return vcpus, ram_gb


def parse_locations(payload: Any, *, source: str) -> ScrapeResult:
    """``/locations`` → offers, one per location × GPU × count (pure).

    Raises:
        ScraperError: no ``data.locations``.
    """
    answer = validate_payload(TensorDockAnswer, payload, "tensordock locations")
    result = ScrapeResult()
    for loc in validate_rows(TensorDockLocation, answer.data.locations, "tensordock", result):
        region = ", ".join(p for p in (loc.city, loc.stateprovince, loc.country) if p) or loc.id
        for gpu in validate_rows(TensorDockGpu, loc.gpus, f"tensordock {loc.id} gpus", result):
            label = gpu.display_name or gpu.v0_name
            vram = _VRAM.search(gpu.v0_name) or _VRAM.search(label)
            form = "sxm" if "sxm" in gpu.v0_name.lower() else "pcie"
            for count in (n for n in GPU_COUNTS if n <= gpu.max_count):
                vcpus, ram = composition(gpu, count)
                price = (
                    count * gpu.price_per_hr
                    + (vcpus or 0) * gpu.pricing.per_vcpu_hr
                    + (ram or 0) * gpu.pricing.per_gb_ram_hr
                    + MIN_STORAGE_GB * gpu.pricing.per_gb_storage_hr
                )
                build_offer(
                    result,
                    f"tensordock {loc.id} {gpu.v0_name} x{count}",
                    provider="tensordock",
                    offer_key=f"{gpu.v0_name}|{count}x|{vcpus}c|{ram}g",
                    instance_type=f"{count}x {gpu.v0_name}",
                    region=region,
                    billing="on_demand",
                    gpu_name_raw=label,
                    gpu_count=count,
                    vram_gib_per_gpu=positive(float(vram.group(1))) if vram else None,
                    vcpus=vcpus,
                    ram_gib=ram,
                    disk_gb=MIN_STORAGE_GB,
                    interconnect=("nvswitch" if count >= 8 else "sxm") if form == "sxm" else None,
                    price_per_hour=to_price(price),
                    currency="USD",
                    source=source,
                    notes=f"composition chosen by gpucost: {vcpus} vCPUs and {ram} GB RAM "
                    f"({count}/{gpu.max_count} of the location's maximum), "
                    f"{MIN_STORAGE_GB} GB disk; marketplace location {loc.id}",
                )
    return result


#: GET ``/locations`` with ``Authorization: Bearer <key>`` and parse it.
SCRAPER = keyed_scraper(
    "tensordock",
    "TensorDock",
    "https://www.tensordock.com",
    "marketplace",
    DOCS_URL,
    path="/locations",
    parse=parse_locations,
)
fetch_offers = SCRAPER.fetch
