"""Azure GPU VMs from the public Retail Prices API (no key).

API: ``GET {GPUCOST_SCRAPER_AZURE_URL}?api-version=2023-01-01-preview&$filter=…`` (default
``https://prices.azure.com/api/retail/prices``), documented at
https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices.
One walk per region in ``GPUCOST_SCRAPER_AZURE_REGIONS``, following ``NextPageLink`` (its query
string is re-applied to the configured URL, so a mirror keeps serving the later pages; a full
page without a link falls back to ``$skip``: MS Q&A 1188465). A walk that reaches
``azure_max_pages`` fails the provider instead of truncating (LeanerCloud/CUDly #1963).

Rows used (``../shared/docs/providers.md`` §4): ``type`` = ``Consumption``, ``unitOfMeasure`` =
``1 Hour``; Windows (`` Windows``/`` Win``), Cloud Services and retiring ``Low Priority`` rows
are dropped; a ``Spot`` ``skuName``/``meterName`` is the spot price. ``retailPrice`` is USD (or
``currencyCode``) per VM-hour. The price API has no GPU data: :data:`AZURE_SIZES` gives each VM
size's GPU, count, vCPUs and RAM. A GPU size (``Standard_N…``) missing from the table is
reported, not guessed.

Fractional GPUs: the small NVadsA10 v5 sizes are a sixth, a third or half of one A10 (the SKU
API says "1 GPU"); :data:`AZURE_SIZES` gives them ``gpu_count`` < 1 with the whole card's
24 GB, and the offers show the share (``app.model.memory.vram_per_gpu_gib``). No other size
in the table is a slice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict

from scrapers.base import Scraper, ScrapeResult, gather_parts
from scrapers.http import Http, ScraperError
from scrapers.records import to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_listed_offer, validate_payload, validate_rows

DOCS_URL = "https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices"
API_VERSION = "2023-01-01-preview"
PAGE_SIZE = 1000


@dataclass(frozen=True, slots=True)
class AzureSize:
    """What Azure's price API does not say about a VM size. RAM in GiB as Azure lists it."""

    gpu: str
    vram_gib: float
    gpu_count: float
    vcpus: int
    ram_gib: float
    interconnect: str | None = None


_ASPIRE = (
    "microsoft/aspire src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs "
    "(vCPUs, RAM, GPU count per size)"
)
#: Sources: vCPU/RAM/GPU count from :data:`_ASPIRE` (generated from Azure's SKU API), except
#: the NCasT4_v3 sizes (Azure "NCasT4_v3-series" size page); GPU model and per-GPU VRAM per
#: series from the Azure size pages as summarised in providers.md §4 (gpuhunt
#: ``gpu_vm_series``). NVadsA10 v5 sizes are fractions of one A10 (1/6, 1/3, 1/2: SkyPilot
#: ``AZURE_FRACTIONAL_A10_INS_TYPE_TO_NUM_GPUS``), although the SKU API reports "1 GPU".
AZURE_SIZES: dict[str, AzureSize] = {
    "Standard_NC24ads_A100_v4": AzureSize("A100 PCIe 80GB", 80, 1, 24, 220, "pcie"),
    "Standard_NC48ads_A100_v4": AzureSize("A100 PCIe 80GB", 80, 2, 48, 440, "pcie"),
    "Standard_NC96ads_A100_v4": AzureSize("A100 PCIe 80GB", 80, 4, 96, 880, "pcie"),
    "Standard_ND96asr_v4": AzureSize("A100 SXM4 40GB", 40, 8, 96, 900, "nvswitch"),
    "Standard_ND96amsr_A100_v4": AzureSize("A100 SXM4 80GB", 80, 8, 96, 1800, "nvswitch"),
    "Standard_NC40ads_H100_v5": AzureSize("H100 NVL", 94, 1, 40, 320),
    "Standard_NCC40ads_H100_v5": AzureSize("H100 NVL", 94, 1, 40, 320),
    "Standard_NC80adis_H100_v5": AzureSize("H100 NVL", 94, 2, 80, 640, "nvlink"),
    "Standard_ND96isr_H100_v5": AzureSize("H100 SXM", 80, 8, 96, 1900, "nvswitch"),
    "Standard_ND96isr_H200_v5": AzureSize("H200 SXM", 141, 8, 96, 1850, "nvswitch"),
    "Standard_ND96is_MI300X_v5": AzureSize("MI300X", 192, 8, 96, 1850),
    "Standard_ND96isr_MI300X_v5": AzureSize("MI300X", 192, 8, 96, 1850),
    "Standard_NV6ads_A10_v5": AzureSize("A10", 24, 1 / 6, 6, 55),
    "Standard_NV12ads_A10_v5": AzureSize("A10", 24, 1 / 3, 12, 110),
    "Standard_NV18ads_A10_v5": AzureSize("A10", 24, 1 / 2, 18, 220),
    "Standard_NV36ads_A10_v5": AzureSize("A10", 24, 1, 36, 440),
    "Standard_NV36adms_A10_v5": AzureSize("A10", 24, 1, 36, 880),
    "Standard_NV72ads_A10_v5": AzureSize("A10", 24, 2, 72, 880),
    "Standard_NC4as_T4_v3": AzureSize("T4", 16, 1, 4, 28),
    "Standard_NC8as_T4_v3": AzureSize("T4", 16, 1, 8, 56),
    "Standard_NC16as_T4_v3": AzureSize("T4", 16, 1, 16, 110),
    "Standard_NC64as_T4_v3": AzureSize("T4", 16, 4, 64, 440),
}

_WINDOWS = re.compile(r"\bWin(dows)?\b")


class AzurePriceItem(BaseModel):
    """One ``Items[]`` row (field names as in the Retail Prices API docs)."""

    model_config = ConfigDict(extra="ignore")

    armSkuName: str
    armRegionName: str
    retailPrice: float | None = None
    currencyCode: str = "USD"
    meterName: str = ""
    skuName: str = ""
    productName: str = ""
    serviceName: str | None = None
    unitOfMeasure: str | None = None
    type: str | None = None
    effectiveStartDate: str | None = None
    location: str | None = None


class AzurePage(BaseModel):
    """One page: ``{"Items": [...], "NextPageLink": str | null, "Count": n, …}``."""

    model_config = ConfigDict(extra="ignore")

    Items: list[dict[str, Any]]
    NextPageLink: str | None = None
    Count: int | None = None
    BillingCurrency: str | None = None


def region_filter(region: str) -> str:
    """OData ``$filter`` for one region's Linux-or-Windows GPU (``Standard_N…``) VM meters.

    Values are case-sensitive since ``2023-01-01-preview`` (API docs).
    """
    return (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        f"and armRegionName eq '{region}' and contains(armSkuName, 'Standard_N')"
    )


def parse_items(pages: list[Any], *, source: str) -> ScrapeResult:
    """All pages of one or more regions → offers (pure).

    Raises:
        ScraperError: a page has no ``Items`` list.
    """
    result = ScrapeResult()
    chosen: dict[tuple[str, str, str], AzurePriceItem] = {}
    unknown: set[str] = set()
    for page in pages:
        items = validate_payload(AzurePage, page, "azure prices page").Items
        for item in validate_rows(AzurePriceItem, items, "azure Items", result):
            text = f"{item.skuName} {item.meterName}"
            if (
                item.type not in (None, "Consumption")
                or (item.unitOfMeasure or "1 Hour") != "1 Hour"
                or _WINDOWS.search(item.productName)
                or "Cloud Services" in item.productName
                or "Low Priority" in text
            ):
                continue
            if item.armSkuName not in AZURE_SIZES:
                if item.armSkuName.startswith("Standard_N"):
                    unknown.add(item.armSkuName)
                continue
            billing = "spot" if "Spot" in text else "on_demand"
            key = (item.armSkuName, item.armRegionName.lower(), billing)
            previous = chosen.get(key)
            if previous is None or (item.effectiveStartDate or "") > (
                previous.effectiveStartDate or ""
            ):
                chosen[key] = item
    for name in sorted(unknown):
        result.warn(f"azure VM size {name} is not in AZURE_SIZES (GPU unknown): not stored")
    for (sku, region, billing), item in chosen.items():
        size = AZURE_SIZES[sku]
        build_listed_offer(
            result,
            "azure",
            sku,
            region,
            billing,
            gpu_name_raw=size.gpu,
            gpu_count=round(size.gpu_count, 4),
            vram_gib_per_gpu=size.vram_gib,
            vcpus=size.vcpus,
            ram_gib=size.ram_gib,
            interconnect=size.interconnect,
            price_per_hour=to_price(item.retailPrice),
            currency=item.currencyCode.upper(),
            source=source,
            notes=f"meter '{item.meterName}'; listed price (no capacity data in the price API)",
        )
    return result


def next_url(base_url: str, next_link: str | None) -> tuple[str, dict[str, str]] | None:
    """Where the next page is: the ``NextPageLink`` query re-applied to ``base_url``."""
    if not next_link:
        return None
    return base_url, dict(parse_qsl(urlsplit(next_link).query, keep_blank_values=True))


async def fetch_region(http: Http, settings: ScraperSettings, region: str) -> list[Any]:
    """Every page of one region's walk (raw JSON pages).

    Raises:
        ScraperError: a page failed, or the walk hit ``azure_max_pages``.
    """
    base = settings.azure_url
    params: dict[str, str] = {"api-version": API_VERSION, "$filter": region_filter(region)}
    pages: list[Any] = []
    fetched = 0
    while True:
        if len(pages) >= settings.azure_max_pages:
            raise ScraperError(
                f"azure {region}: more than {settings.azure_max_pages} pages; "
                "refusing to store a truncated price list"
            )
        page = await http.json("GET", base, params=params)
        pages.append(page)
        parsed = validate_payload(AzurePage, page, f"azure prices page ({region})")
        fetched += len(parsed.Items)
        following = next_url(base, parsed.NextPageLink)
        if following is not None:
            params = following[1]
        elif len(parsed.Items) >= PAGE_SIZE:  # full page but no link: fall back to $skip
            params = {**params, "$skip": str(fetched)}
        else:
            return pages


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Walk every region in ``azure_regions`` and parse the GPU VM rows.

    Raises:
        ScraperError: any page failed or answered garbage.
    """

    async def one(region: str) -> ScrapeResult:
        pages = await fetch_region(http, settings, region)
        return parse_items(pages, source=settings.azure_url)

    return await gather_parts((one(r) for r in settings.azure_regions), http.concurrency)


SCRAPER = Scraper(
    slug="azure",
    name="Microsoft Azure",
    homepage_url="https://azure.microsoft.com",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
)
