"""FluidStack available configurations (API key required).

API: ``GET {GPUCOST_SCRAPER_FLUIDSTACK_URL}/list_available_configurations`` (default
``https://platform.fluidstack.io``) with header ``api-key: <GPUCOST_SCRAPER_FLUIDSTACK_API_KEY>``
(SkyPilot ``sky/catalog/data_fetchers/fetch_fluidstack.py``; ``../shared/docs/providers.md``
§7.7). The answer is a bare list of plans::

    [{"gpu_type": "H100_SXM5_80GB", "gpu_counts": [1, 2, 4, 8],
      "price_per_gpu_hr": 2.89, "regions": ["norway_4_eu", …]}, …]

``price_per_gpu_hr`` is USD per **GPU**-hour, so an offer's price = count × it. The plan list
has no vCPU or RAM figures (SkyPilot keeps a hand-written table of "minimum" CPUs and memory per
plan); gpucost stores them as unknown rather than copy a third party's guesses. The GPU label is
``gpu_type`` with ``_`` read as spaces (``H100 SXM5 80GB``), its last token the VRAM. One offer
per plan × GPU count × region; the list holds only configurations available now.
Fractional GPUs: none.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, RootModel

from scrapers.base import ScrapeResult, keyed_scraper
from scrapers.records import to_price
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://docs.fluidstack.io"
_VRAM = re.compile(r"(\d+)GB$", re.IGNORECASE)


class FluidStackPlan(BaseModel):
    """One configuration plan."""

    model_config = ConfigDict(extra="ignore")

    gpu_type: str
    gpu_counts: list[int] = []
    price_per_gpu_hr: str | float | None = None
    regions: list[str] = []


class FluidStackPlans(RootModel[list[dict[str, Any]]]):
    """The bare list."""


def parse_plans(payload: Any, *, source: str) -> ScrapeResult:
    """Plans → offers, one per plan × count × region (pure).

    Raises:
        ScraperError: the answer is not a list.
    """
    result = ScrapeResult()
    rows = validate_payload(FluidStackPlans, payload, "fluidstack configurations").root
    for plan in validate_rows(FluidStackPlan, rows, "fluidstack", result):
        label = plan.gpu_type.replace("_", " ").strip()
        vram = _VRAM.search(plan.gpu_type)
        upper = plan.gpu_type.upper()
        for count in sorted({c for c in plan.gpu_counts if c > 0}):
            link = None
            if "SXM" in upper or "NVLINK" in upper:
                link = "nvswitch" if count >= 8 else ("sxm" if "SXM" in upper else "nvlink")
            elif "PCIE" in upper:
                link = "pcie"
            for region in plan.regions:
                build_offer(
                    result,
                    f"fluidstack {plan.gpu_type} x{count} {region}",
                    provider="fluidstack",
                    offer_key=f"{plan.gpu_type}::{count}",
                    instance_type=f"{count}x {plan.gpu_type}",
                    region=region,
                    billing="on_demand",
                    gpu_name_raw=label,
                    gpu_count=count,
                    vram_gib_per_gpu=float(vram.group(1)) if vram else None,
                    interconnect=link,
                    price_per_hour=to_price(plan.price_per_gpu_hr, multiplier=count),
                    currency="USD",
                    source=source,
                    notes="price per GPU-hour x GPUs; vCPUs and RAM not listed by the API",
                )
    return result


#: GET the configurations with the key in header ``api-key`` and parse them.
SCRAPER = keyed_scraper(
    "fluidstack",
    "FluidStack",
    "https://www.fluidstack.io",
    "cloud",
    DOCS_URL,
    path="/list_available_configurations",
    parse=parse_plans,
    header="api-key",
)
fetch_offers = SCRAPER.fetch
