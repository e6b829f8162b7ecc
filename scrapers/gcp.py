"""Google Cloud GPU machine types: Cloud Billing Catalog SKUs + a sourced machine table (key).

API: ``GET {GPUCOST_SCRAPER_GCP_URL}/services/6F81-5844-456A/skus?key=<API key>&currencyCode=USD
&pageSize=5000[&pageToken=…]`` (default ``https://cloudbilling.googleapis.com/v1``; service
``6F81-5844-456A`` is Compute Engine; "Get Google Cloud pricing information",
https://cloud.google.com/billing/v1/how-tos/catalog-api). A free API key from any project with
the Cloud Billing API enabled is required (``GPUCOST_SCRAPER_GCP_API_KEY``); without it the
refresh skips GCP (or loads the public-catalog fallback, :mod:`scrapers.catalogs`). Pages are
followed while ``nextPageToken`` is non-empty, at most ``GPUCOST_SCRAPER_GCP_MAX_PAGES`` (a
longer walk fails the provider, never truncates). Shape (``../shared/docs/providers.md`` §6)::

    {"skus": [{"skuId", "description": "Nvidia Tesla A100 GPU running in Americas",
               "category": {"resourceFamily": "Compute", "resourceGroup": "GPU",
                            "usageType": "OnDemand" | "Preemptible" | "Commit1Yr" …},
               "serviceRegions": ["us-central1", …],
               "pricingInfo": [{"pricingExpression": {"usageUnit": "h",
                   "tieredRates": [{"unitPrice": {"currencyCode": "USD",
                                                  "units": "2", "nanos": 933908000}}]}}]}],
     "nextPageToken": "…"}

Price of one SKU = ``units + nanos / 1e9`` per unit-hour (SkyPilot ``_get_unit_price``). The
catalog has no machine shapes (those need ``compute.machineTypes.list`` with OAuth), so the
GPU machine types come from :data:`MACHINES`: vCPUs and memory as listed in the SkyPilot GCP
catalog (``skypilot-org/skypilot-catalog`` ``catalogs/v8/gcp/vms.csv`` at commit
``006059e0f18a``), GPU count from the machine name, GPU model/VRAM from
https://cloud.google.com/compute/docs/gpus (A2 = A100 40 GB / 80 GB "ultra", A3 = H100 80 GB).
An instance's price is vCPUs × the series' ``… Instance Core`` SKU + GiB × its ``… Instance
Ram`` SKU + GPUs × the GPU SKU of the same region and usage type (host and GPU are billed apart:
skypilot-catalog issue #31); a missing part drops that region with a warning (SKUs lag machine
types, skypilot issue #3150). ``Preemptible`` SKUs (descriptions ``Spot Preemptible …``) give
``spot`` offers. Commitment, custom, premium, reserved, sole-tenancy and DWS SKUs are ignored.
A4 (B200) and A3 Ultra (H200) are billed by slice or calendar mode and are not listed here.

One offer per machine type × region where every SKU is offered (a price row is not capacity).
Fractional GPUs: none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scrapers.base import Scraper, ScrapeResult, fetch_pages, require_key
from scrapers.http import Http
from scrapers.records import to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_listed_offer, validate_payload, validate_rows

DOCS_URL = "https://cloud.google.com/billing/v1/how-tos/catalog-api"
COMPUTE_SERVICE = "6F81-5844-456A"
#: Where the machine shapes of :data:`MACHINES` come from.
SHAPES_SOURCE = "skypilot-org/skypilot-catalog@006059e0f18a catalogs/v8/gcp/vms.csv"
MACHINE_TABLE_SOURCE = (
    f"{SHAPES_SOURCE} (vCPUs, MemoryGiB); "
    "https://cloud.google.com/compute/docs/gpus (GPU model and memory)"
)
#: Description words of SKUs that are not plain on-demand / spot list prices.
_EXCLUDED = ("commit", "custom", "premium", "reserved", "sole tenancy", "dws", "calendar")


@dataclass(frozen=True, slots=True)
class Machine:
    """A GPU machine type: its host series SKU prefix, GPU SKU names, shape and GPU."""

    series: tuple[str, ...]  # description prefixes of its Core/Ram SKUs
    gpu_skus: tuple[str, ...]  # description fragments of its GPU SKU
    gpu_label: str
    vram_gb: float
    gpus: int
    vcpus: float
    ram_gib: float
    interconnect: str | None

    def offer_shape(self) -> dict[str, Any]:
        """The :class:`~scrapers.records.ScrapedOffer` fields this machine type states."""
        return {
            "gpu_name_raw": self.gpu_label,
            "gpu_count": self.gpus,
            "vram_gib_per_gpu": self.vram_gb,
            "vcpus": self.vcpus,
            "ram_gib": self.ram_gib,
            "interconnect": self.interconnect,
        }


def _family(
    prefix: str,
    series: tuple[str, ...],
    gpu_skus: tuple[str, ...],
    label: str,
    vram: float,
    shapes: dict[int, tuple[float, float]],
) -> dict[str, Machine]:
    return {
        f"{prefix}-{n}g": Machine(
            series, gpu_skus, label, vram, n, cpus, ram, "nvswitch" if n >= 8 else "sxm"
        )
        for n, (cpus, ram) in shapes.items()
    }


#: GPU machine types by name (sources: :data:`MACHINE_TABLE_SOURCE`).
MACHINES: dict[str, Machine] = {
    **_family(
        "a2-highgpu",
        ("A2 Instance",),
        ("A100 GPU",),
        "A100 SXM4 40GB",
        40,
        {1: (12, 85), 2: (24, 170), 4: (48, 340), 8: (96, 680)},
    ),
    **_family(
        "a2-megagpu", ("A2 Instance",), ("A100 GPU",), "A100 SXM4 40GB", 40, {16: (96, 1360)}
    ),
    **_family(
        "a2-ultragpu",
        ("A2 Instance",),
        ("A100 80GB GPU",),
        "A100 SXM4 80GB",
        80,
        {1: (12, 170), 2: (24, 340), 4: (48, 680), 8: (96, 1360)},
    ),
    **_family(
        "a3-highgpu",
        ("A3 Instance",),
        ("H100 80GB GPU",),
        "H100 SXM 80GB",
        80,
        {1: (26, 234), 2: (52, 468), 4: (104, 936), 8: (208, 1872)},
    ),
    **_family(
        "a3-megagpu",
        ("A3Plus Instance", "A3 Plus Instance"),
        ("H100 80GB Mega GPU", "H100 Mega 80GB GPU", "H100 80GB Plus GPU"),
        "H100 SXM 80GB",
        80,
        {8: (208, 1872)},
    ),
}


class _Category(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    resource_family: str | None = Field(default=None, alias="resourceFamily")
    resource_group: str | None = Field(default=None, alias="resourceGroup")
    usage_type: str | None = Field(default=None, alias="usageType")


class _Money(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    currency_code: str | None = Field(default=None, alias="currencyCode")
    units: str | int | None = None
    nanos: int | None = None


class _Rate(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    unit_price: _Money = Field(alias="unitPrice")


class _Expression(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    usage_unit: str | None = Field(default=None, alias="usageUnit")
    tiered_rates: list[_Rate] = Field(default=[], alias="tieredRates")


class _PricingInfo(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    pricing_expression: _Expression = Field(alias="pricingExpression")


class GcpSku(BaseModel):
    """One ``skus[]`` entry (the fields used)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    description: str
    category: _Category
    service_regions: list[str] = Field(default=[], alias="serviceRegions")
    pricing_info: list[_PricingInfo] = Field(default=[], alias="pricingInfo")

    def hourly_usd(self) -> float | None:
        """``units + nanos/1e9`` of the first tier, when it is USD per hour."""
        if not self.pricing_info:
            return None
        expression = self.pricing_info[0].pricing_expression
        if expression.usage_unit not in (None, "h") or not expression.tiered_rates:
            return None
        money = expression.tiered_rates[-1].unit_price
        if money.currency_code not in (None, "USD"):
            return None
        try:
            return int(money.units or 0) + (money.nanos or 0) / 1e9
        except ValueError:
            return None


class GcpPage(BaseModel):
    """One page of ``services/…/skus``."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    skus: list[dict[str, Any]]
    next_page_token: str | None = Field(default=None, alias="nextPageToken")


#: (resource, usage type, region) → USD per unit-hour; resource = "core:<series prefix>",
#: "ram:<series prefix>" or "gpu:<SKU fragment>".
PriceTable = dict[tuple[str, str, str], float]


def _resource(sku: GcpSku) -> str | None:
    text = re.sub(r"^Spot Preemptible\s+", "", sku.description.strip(), flags=re.IGNORECASE)
    group = (sku.category.resource_group or "").upper()
    for machine in MACHINES.values():
        if group == "GPU":
            for fragment in machine.gpu_skus:
                if fragment.lower() in text.lower():
                    return f"gpu:{fragment}"
            continue
        for series in machine.series:
            if re.match(rf"{re.escape(series)}\s+(Core|Ram)\b", text, flags=re.IGNORECASE):
                kind = "core" if re.search(r"\bCore\b", text, flags=re.IGNORECASE) else "ram"
                return f"{kind}:{series}"
    return None


def price_table(skus: list[GcpSku]) -> PriceTable:
    """The SKUs gpucost uses, by resource × usage type × region (others ignored)."""
    table: PriceTable = {}
    for sku in skus:
        usage = sku.category.usage_type
        if usage not in ("OnDemand", "Preemptible") or sku.category.resource_family != "Compute":
            continue
        if any(word in sku.description.lower() for word in _EXCLUDED):
            continue
        resource = _resource(sku)
        price = sku.hourly_usd()
        if resource is None or not price:
            continue
        for region in sku.service_regions:
            table[(resource, usage, region)] = price
    return table


def _machine_price(
    machine: Machine, table: PriceTable, usage: str, region: str
) -> tuple[float | None, str | None]:
    """(USD per hour, None) or (None, the SKU that is missing)."""

    def find(kind: str, names: tuple[str, ...]) -> float | None:
        return next(
            (table[k] for n in names if (k := (f"{kind}:{n}", usage, region)) in table), None
        )

    core, ram = find("core", machine.series), find("ram", machine.series)
    gpu = find("gpu", machine.gpu_skus)
    for value, what in ((core, "core"), (ram, "ram"), (gpu, "GPU")):
        if value is None:
            return None, what
    assert core is not None and ram is not None and gpu is not None
    return machine.vcpus * core + machine.ram_gib * ram + machine.gpus * gpu, None


def parse_skus(pages: list[Any], *, source: str) -> ScrapeResult:
    """SKU pages → one offer per machine type × region × usage type with every SKU (pure).

    Raises:
        ScraperError: a page has no ``skus`` list.
    """
    result = ScrapeResult()
    skus: list[GcpSku] = []
    for page in pages:
        rows = validate_payload(GcpPage, page, "gcp skus").skus
        skus.extend(validate_rows(GcpSku, rows, "gcp skus", result))
    table = price_table(skus)
    regions = sorted({region for (_, _, region) in table})
    for name, machine in MACHINES.items():
        for region in regions:
            for usage, billing in (("OnDemand", "on_demand"), ("Preemptible", "spot")):
                if not any((f"gpu:{n}", usage, region) in table for n in machine.gpu_skus):
                    continue  # this GPU is not sold there
                price, missing = _machine_price(machine, table, usage, region)
                if price is None:
                    result.warn(f"gcp {name} {region} {usage}: no {missing} SKU; skipped")
                    continue
                build_listed_offer(
                    result,
                    "gcp",
                    name,
                    region,
                    billing,
                    **machine.offer_shape(),
                    price_per_hour=to_price(price),
                    currency="USD",
                    source=source,
                    notes=f"vCPU + RAM + GPU SKUs summed; shape from {SHAPES_SOURCE}"
                    + ("; Spot VM list price (can change)" if billing == "spot" else ""),
                )
    return result


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Walk every SKU page of Compute Engine and parse.

    Raises:
        ScraperError: no key, a page failed, or more than ``gcp_max_pages`` pages.
    """
    key = require_key(settings, "gcp")
    url = f"{settings.gcp_url.rstrip('/')}/services/{COMPUTE_SERVICE}/skus"

    def next_params(page: Any) -> dict[str, str] | None:
        token = validate_payload(GcpPage, page, "gcp skus").next_page_token
        return {"pageToken": token} if token else None

    pages = await fetch_pages(
        http,
        url,
        {"key": key, "currencyCode": "USD", "pageSize": "5000"},
        next_params,
        max_pages=settings.gcp_max_pages,
        too_many=f"gcp {url}: more than {settings.gcp_max_pages} pages "
        "(GPUCOST_SCRAPER_GCP_MAX_PAGES); not truncated, provider skipped",
    )
    return parse_skus(pages, source=url)


SCRAPER = Scraper(
    slug="gcp",
    name="Google Cloud",
    homepage_url="https://cloud.google.com",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
    needs_api_key=True,
)
