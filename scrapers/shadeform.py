"""Shadeform instance types: one key, many second-tier clouds (API key required).

API: ``GET {GPUCOST_SCRAPER_SHADEFORM_URL}/instances/types`` (default
``https://api.shadeform.ai/v1``) with header ``X-API-KEY: <GPUCOST_SCRAPER_SHADEFORM_API_KEY>``
(docs https://docs.shadeform.ai/api-reference/instances/instances-types; SkyPilot
``fetch_shadeform.py``; ``../shared/docs/providers.md`` §7.3). Shape::

    {"instance_types": [{"cloud": "hyperstack", "shade_instance_type": "A6000",
        "cloud_instance_type": "gpu_1x_a6000",
        "configuration": {"memory_in_gb", "storage_in_gb", "vcpus", "num_gpus", "gpu_type",
                          "interconnect": "pcie" | "sxm", "vram_per_gpu_in_gb",
                          "os_options": [...], "gpu_manufacturer", "nvlink"},
        "hourly_price": 210, "deployment_type": "vm",
        "availability": [{"region", "available", "display_name"}]}]}

``hourly_price`` is US **cents** per instance-hour; ``vram_per_gpu_in_gb`` is per GPU. The
docs' own example pairs ``shade_instance_type`` "A6000" with ``gpu_type`` "A100", so the GPU
label is ``gpu_type`` (underscores read as spaces, ``A100_80G`` → ``A100 80G``) and the VRAM
the one the configuration lists. Shadeform resells other clouds: every offer keeps the
underlying ``cloud`` in its key and note (the same machine may also be listed by that cloud's
own scraper; both are kept, each under its own provider). One offer per instance type × region
(``available`` false → stored unavailable). No spot prices. Fractional GPUs: none.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from scrapers.base import ScrapeResult, keyed_scraper
from scrapers.records import positive, to_price
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://docs.shadeform.ai/api-reference/instances/instances-types"


class _Configuration(BaseModel):
    model_config = ConfigDict(extra="ignore")

    memory_in_gb: float | None = None
    storage_in_gb: float | None = None
    vcpus: float | None = None
    num_gpus: int = 0
    gpu_type: str | None = None
    interconnect: str | None = None
    vram_per_gpu_in_gb: float | None = None
    nvlink: bool | None = None


class _Availability(BaseModel):
    model_config = ConfigDict(extra="ignore")

    region: str
    available: bool = True
    display_name: str | None = None


class ShadeformType(BaseModel):
    """One ``instance_types[]`` entry."""

    model_config = ConfigDict(extra="ignore")

    cloud: str
    shade_instance_type: str
    cloud_instance_type: str | None = None
    configuration: _Configuration
    hourly_price: float | None = None
    availability: list[_Availability] = []


class ShadeformAnswer(BaseModel):
    """``{"instance_types": [...]}``."""

    model_config = ConfigDict(extra="ignore")

    instance_types: list[dict[str, Any]]


def _link(c: _Configuration) -> str | None:
    if (c.interconnect or "").lower() == "sxm":
        return "nvswitch" if c.num_gpus >= 8 else "sxm"
    if c.nvlink:
        return "nvlink"
    return "pcie" if (c.interconnect or "").lower() == "pcie" else None


def parse_types(payload: Any, *, source: str) -> ScrapeResult:
    """``/instances/types`` → offers, one per type × region (pure).

    Raises:
        ScraperError: no ``instance_types`` list.
    """
    answer = validate_payload(ShadeformAnswer, payload, "shadeform instances/types")
    result = ScrapeResult()
    for t in validate_rows(ShadeformType, answer.instance_types, "shadeform", result):
        c = t.configuration
        if c.num_gpus <= 0:
            continue
        label = (c.gpu_type or t.shade_instance_type).replace("_", " ")
        key = f"{t.cloud}/{t.cloud_instance_type or t.shade_instance_type}"
        for place in t.availability:
            build_offer(
                result,
                f"shadeform {key} {place.region}",
                provider="shadeform",
                offer_key=key,
                instance_type=t.cloud_instance_type or t.shade_instance_type,
                region=f"{t.cloud}:{place.region}",
                billing="on_demand",
                gpu_name_raw=label,
                gpu_count=c.num_gpus,
                vram_gib_per_gpu=positive(c.vram_per_gpu_in_gb),
                vcpus=positive(c.vcpus),
                ram_gib=positive(c.memory_in_gb),
                disk_gb=positive(c.storage_in_gb),
                interconnect=_link(c),
                price_per_hour=to_price(t.hourly_price, cents=True),
                currency="USD",
                available=place.available,
                source=source,
                notes=f"resold by Shadeform from {t.cloud} ({t.shade_instance_type}"
                + (f", {place.display_name}" if place.display_name else "")
                + ")",
            )
    return result


#: GET ``/instances/types`` with the key in header ``X-API-KEY`` and parse it.
SCRAPER = keyed_scraper(
    "shadeform",
    "Shadeform",
    "https://www.shadeform.ai",
    "marketplace",
    DOCS_URL,
    path="/instances/types",
    parse=parse_types,
    header="X-API-KEY",
)
fetch_offers = SCRAPER.fetch
