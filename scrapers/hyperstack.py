"""Hyperstack (NexGen Cloud) flavors and pricebook (API key required).

API (default base ``https://infrahub-api.nexgencloud.com/v1``, ``GPUCOST_SCRAPER_HYPERSTACK_URL``;
header ``api_key: <GPUCOST_SCRAPER_HYPERSTACK_API_KEY>``; docs "List Flavors" and "Retrieve
Pricebook", https://docs.hyperstack.cloud/docs/api-reference/; SkyPilot
``fetch_hyperstack.py``; ``../shared/docs/providers.md`` §7.6):

- ``GET /core/flavors`` → ``{"status": true, "message", "data": [{"gpu": "A100-80G-PCIe",
  "region_name": "CANADA-1", "flavors": [{"id", "name": "n3-A100x1", "region_name", "cpu",
  "ram" (GB), "disk" (GB, root), "ephemeral" (GB), "gpu", "gpu_count",
  "stock_available"}]}]}``; groups with ``gpu`` "" are CPU flavors;
- ``GET /pricebook`` → a **bare array** ("Non-standard envelope: returns a bare JSON array")
  of ``{"id", "name": "A100-80G-PCIe", "value": "1.35", "original_value",
  "discount_applied", "start_time", "end_time"}``: USD per **GPU**-hour.

Price = ``gpu_count × value`` of the flavor's GPU (the same figure SkyPilot computes). A GPU
listed without a price (H200-141G-SXM5 at the time of SkyPilot's fetcher) gets no offer and a
warning. ``stock_available`` false → the offer is stored unavailable. Disk = root + ephemeral.
GPU memory is read from the name's ``-80G-`` token by the normaliser (VRAM given from it here
too). Fractional GPUs: none.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, RootModel

from scrapers.base import Scraper, ScrapeResult, key_header
from scrapers.http import Http
from scrapers.records import positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://docs.hyperstack.cloud/docs/api-reference/"
_VRAM = re.compile(r"-(\d+)G-", re.IGNORECASE)


class HyperstackFlavor(BaseModel):
    """``data[].flavors[]``."""

    model_config = ConfigDict(extra="ignore")

    name: str
    region_name: str | None = None
    cpu: float | None = None
    ram: float | None = None
    disk: float | None = None
    ephemeral: float | None = None
    gpu: str | None = None
    gpu_count: int = 0
    stock_available: bool | None = None


class HyperstackGroup(BaseModel):
    """``data[]``: one GPU model in one region."""

    model_config = ConfigDict(extra="ignore")

    gpu: str | None = None
    region_name: str
    flavors: list[dict[str, Any]] = []


class HyperstackFlavors(BaseModel):
    """``{"status", "message", "data": [...]}``."""

    model_config = ConfigDict(extra="ignore")

    status: bool | None = None
    data: list[dict[str, Any]]


class HyperstackPrice(BaseModel):
    """One pricebook entry."""

    model_config = ConfigDict(extra="ignore")

    name: str
    value: str | float | None = None


class HyperstackPricebook(RootModel[list[dict[str, Any]]]):
    """The bare pricebook array."""


def parse_offers(flavors: Any, pricebook: Any, *, source: str) -> ScrapeResult:
    """Flavors × pricebook → one offer per GPU flavor and region (pure).

    Raises:
        ScraperError: the flavors answer has no ``data`` list or the pricebook is not a list.
    """
    result = ScrapeResult()
    groups = validate_payload(HyperstackFlavors, flavors, "hyperstack flavors").data
    rows = validate_payload(HyperstackPricebook, pricebook, "hyperstack pricebook").root
    prices = {p.name: p.value for p in validate_rows(HyperstackPrice, rows, "pricebook", result)}
    unpriced: set[str] = set()
    for group in validate_rows(HyperstackGroup, groups, "hyperstack flavors", result):
        for f in validate_rows(HyperstackFlavor, group.flavors, "hyperstack flavor", result):
            gpu = f.gpu or group.gpu
            if not gpu or f.gpu_count <= 0:
                continue  # CPU flavor
            if to_price(prices.get(gpu)) is None:
                unpriced.add(gpu)
                continue
            vram = _VRAM.search(gpu)
            disk = (f.disk or 0) + (f.ephemeral or 0)
            build_offer(
                result,
                f"hyperstack {f.name} {group.region_name}",
                provider="hyperstack",
                offer_key=f.name,
                instance_type=f.name,
                region=f.region_name or group.region_name,
                billing="on_demand",
                gpu_name_raw=gpu,
                gpu_count=f.gpu_count,
                vram_gib_per_gpu=float(vram.group(1)) if vram else None,
                vcpus=positive(f.cpu),
                ram_gib=positive(f.ram),
                disk_gb=disk or None,
                interconnect=_link(gpu, f.gpu_count),
                price_per_hour=to_price(prices.get(gpu), multiplier=f.gpu_count),
                currency="USD",
                available=f.stock_available is not False,
                source=source,
                notes="pricebook price per GPU-hour x GPUs"
                + ("; out of stock now" if f.stock_available is False else ""),
            )
    for gpu in sorted(unpriced):
        result.warn(f"hyperstack {gpu}: listed in flavors but not in the pricebook; skipped")
    return result


def _link(gpu: str, count: int) -> str | None:
    name = gpu.upper()
    if "SXM" in name:
        return "nvswitch" if count >= 8 else "sxm"
    if "NVLINK" in name:
        return "nvlink"
    return "pcie" if "PCIE" in name else None


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """GET flavors and the pricebook with the key, then parse.

    Raises:
        ScraperError: no key, or a request failed or answered garbage.
    """
    headers = key_header(settings, "hyperstack", "api_key")
    base = settings.hyperstack_url.rstrip("/")
    flavors = await http.json("GET", f"{base}/core/flavors", headers=headers)
    pricebook = await http.json("GET", f"{base}/pricebook", headers=headers)
    return parse_offers(flavors, pricebook, source=f"{base}/core/flavors + /pricebook")


SCRAPER = Scraper(
    slug="hyperstack",
    name="Hyperstack",
    homepage_url="https://www.hyperstack.cloud",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
    needs_api_key=True,
)
