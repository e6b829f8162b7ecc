"""Oracle Cloud Infrastructure GPU shapes (public Cost Estimator data + price list, no key).

API (both public, no credentials; SkyPilot ``sky/catalog/data_fetchers/fetch_oci.py``: "needs no
cloud credentials"; ``../shared/docs/providers.md`` §7.2):

- ``GET {GPUCOST_SCRAPER_OCI_URL}/shapes.json`` (default
  ``https://www.oracle.com/a/ocom/docs/cloudestimator2/data``), the JSON behind the OCI Cost
  Estimator: ``items[]`` of ``{name, status, hidden, allowPreemptible, bundleMemoryQty, gpuQty,
  gpuMemoryQty, processorType{value}, shapeType{value}, subType{value},
  products[{partNumber, qty, type{value}}]}`` (field list as in gpuhunt
  ``providers/oci.py`` and its trimmed real excerpt in ``src/tests/providers/test_oci.py``);
- ``GET {GPUCOST_SCRAPER_OCI_PRICES_URL}?currencyCode=USD`` (default
  ``https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/``), the public price list:
  ``items[]`` of ``{partNumber, displayName, metricName, serviceCategory,
  currencyCodeLocalizations[{currencyCode, prices[{model, value}]}]}``.

A GPU shape's ``ocpu`` product is billed per GPU (``metricName`` ``GPU Per Hour``: price ×
``gpuQty``) or per OCPU (``OCPU Per Hour``: price × OCPUs); the ``PAY_AS_YOU_GO`` USD value is
used. OCPUs are cores: 2 vCPUs each on x86, 1 on Arm hosts (Ampere, Grace), except the A10 and
GPU4 shapes whose estimator entry says Arm but whose hosts are x86 (gpuhunt
``CostEstimatorShape.is_arm_cpu``). ``bundleMemoryQty`` is the host RAM in GB.

The price is the same in every commercial region and **no regional availability is published**
(SkyPilot fetch_oci.py), so each shape is one offer in region ``all-regions``. Preemptible
capacity "costs 50% less than on-demand"
(https://docs.oracle.com/en-us/iaas/Content/Compute/Concepts/preemptible.htm): shapes with
``allowPreemptible`` get a ``spot`` offer at half price, flagged as an estimate (derived, not
listed). Per-GPU memory comes from :data:`GPU_MEMORY_GB` (the estimator's ``gpuMemoryQty`` is
the shape total for most shapes but per GPU for a few, SkyPilot fetch_oci.py); an unknown GPU
falls back to ``gpuMemoryQty / gpuQty``.

Fractional GPUs: none (OCI GPU shapes have whole GPUs).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scrapers.base import Scraper, ScrapeResult
from scrapers.http import Http
from scrapers.records import positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://www.oracle.com/cloud/price-list/"
SHAPES_DOCS = "https://docs.oracle.com/en-us/iaas/Content/Compute/References/computeshapes.htm"
REGION = "all-regions"
#: Preemptible = on-demand × this (OCI docs, see the module docstring).
PREEMPTIBLE_SHARE = 0.5
#: Shape-name token → GPU label for tokens that do not spell the model (SkyPilot fetch_oci.py
#: ``ACCELERATOR_NAME_OVERRIDES``, gpuhunt ``get_gpu_name``).
TOKEN_LABELS = {
    "GPU2": "P100",
    "GPU3": "V100",
    "GPU4": "A100 SXM4 40GB",
    "A100-v2": "A100 SXM4 80GB",
    "RTXPRO": "RTX PRO 6000",
}
#: GB of memory per GPU by label, from the OCI shape table (:data:`SHAPES_DOCS`, as
#: transcribed in SkyPilot fetch_oci.py ``GPU_MEMORY_GB``).
GPU_MEMORY_GB = {
    "P100": 16.0,
    "V100": 16.0,
    "A10": 24.0,
    "A100 SXM4 40GB": 40.0,
    "A100 SXM4 80GB": 80.0,
    "H100": 80.0,
    "H200": 141.0,
    "L40S": 48.0,
    "B200": 180.0,
    "B300": 262.5,
    "GB200": 192.0,
    "GB300": 278.0,
    "RTX PRO 6000": 96.0,
    "MI300X": 192.0,
    "MI355X": 288.0,
}
#: Tokens of GPU boards whose GPUs are linked by NVLink/NVSwitch on the bare-metal shapes.
SXM_TOKENS = {"GPU4", "A100-v2", "H100", "H200", "B200", "B300", "GB200", "GB300"}
_SHAPE = re.compile(r"^(?:BM|VM)\.(GPU\d?)(?:\.([A-Za-z0-9-]+))?\.(\d+)$")


class _Value(BaseModel):
    model_config = ConfigDict(extra="ignore")
    value: str | None = None


class OciShapeProduct(BaseModel):
    """``products[]`` of a shape: what it is billed under."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    part_number: str = Field(alias="partNumber")
    qty: float | None = None
    type: _Value | None = None


class OciShape(BaseModel):
    """One ``shapes.json`` item (the fields used)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str
    status: str | None = None
    hidden: bool | None = None
    allow_preemptible: bool | None = Field(default=None, alias="allowPreemptible")
    bundle_memory_qty: float | None = Field(default=None, alias="bundleMemoryQty")
    gpu_qty: float | None = Field(default=None, alias="gpuQty")
    gpu_memory_qty: float | None = Field(default=None, alias="gpuMemoryQty")
    processor_type: _Value | None = Field(default=None, alias="processorType")
    sub_type: _Value | None = Field(default=None, alias="subType")
    products: list[OciShapeProduct] = []


class _Price(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    value: float | None = None


class _Localization(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    currency_code: str | None = Field(default=None, alias="currencyCode")
    prices: list[_Price] = []


class OciProduct(BaseModel):
    """One price-list item."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    part_number: str = Field(alias="partNumber")
    metric_name: str | None = Field(default=None, alias="metricName")
    localizations: list[_Localization] = Field(default=[], alias="currencyCodeLocalizations")

    def usd_per_hour(self) -> float | None:
        """The ``PAY_AS_YOU_GO`` USD value, if listed."""
        for loc in self.localizations:
            if loc.currency_code == "USD":
                for price in loc.prices:
                    if price.model == "PAY_AS_YOU_GO" and price.value is not None:
                        return price.value
        return None


class OciItems(BaseModel):
    """``{"items": [...]}`` (both documents)."""

    model_config = ConfigDict(extra="ignore")
    items: list[dict[str, Any]]


def shape_gpu(name: str) -> tuple[str, str, int] | None:
    """(GPU label, shape token, GPUs) from a GPU shape name (``BM.GPU.H100.8`` → H100, 8)."""
    m = _SHAPE.match(re.sub(r"\s*\(.*\)\s*$", "", name).strip())
    if m is None:
        return None
    token = m.group(2) or m.group(1)
    return TOKEN_LABELS.get(token, token), token, int(m.group(3))


def _vcpus(shape: OciShape, ocpus: float, token: str) -> float:
    arm = (shape.processor_type.value if shape.processor_type else "") == "arm"
    if arm and token not in ("GPU4", "A10"):
        return ocpus
    return ocpus * 2


def parse_offers(shapes: Any, products: Any, *, source: str) -> ScrapeResult:
    """Shapes + price list → one on-demand (and maybe one spot) offer per GPU shape (pure).

    Raises:
        ScraperError: either document lacks ``items``.
    """
    result = ScrapeResult()
    shape_rows = validate_payload(OciItems, shapes, "oci shapes.json").items
    product_rows = validate_payload(OciItems, products, "oci price list").items
    prices = {p.part_number: p for p in validate_rows(OciProduct, product_rows, "oci", result)}
    for shape in validate_rows(OciShape, shape_rows, "oci shapes", result):
        if shape.status != "ACTIVE" or shape.hidden or not shape.gpu_qty:
            continue
        if (shape.sub_type.value if shape.sub_type else None) != "gpu":
            continue
        gpu = shape_gpu(shape.name)
        if gpu is None:
            result.warn(f"oci {shape.name}: not a recognised GPU shape name; skipped")
            continue
        label, token, _ = gpu
        count = int(shape.gpu_qty)
        ocpu = next((p for p in shape.products if p.type and p.type.value == "ocpu"), None)
        product = prices.get(ocpu.part_number) if ocpu else None
        unit = product.usd_per_hour() if product else None
        if ocpu is None or product is None or unit is None:
            result.warn(f"oci {shape.name}: no USD pay-as-you-go price for its part; skipped")
            continue
        metric = (product.metric_name or "").upper()
        quantity = count if "GPU" in metric else (ocpu.qty or 0) if "OCPU" in metric else 0
        if not quantity:
            result.warn(f"oci {shape.name}: unknown billing metric {product.metric_name!r}")
            continue
        memory = GPU_MEMORY_GB.get(label) or (
            shape.gpu_memory_qty / count if shape.gpu_memory_qty else None
        )
        link = "nvswitch" if token in SXM_TOKENS and count >= 4 else None
        common: dict[str, Any] = {
            "provider": "oci",
            "offer_key": shape.name,
            "instance_type": shape.name,
            "region": REGION,
            "gpu_name_raw": label,
            "gpu_count": count,
            "vram_gib_per_gpu": positive(memory),
            "vcpus": positive(_vcpus(shape, ocpu.qty or 0, token)),
            "ram_gib": positive(shape.bundle_memory_qty),
            "interconnect": link,
            "currency": "USD",
            "source": source,
        }
        price = to_price(unit, multiplier=quantity)
        build_offer(
            result,
            f"oci {shape.name}",
            billing="on_demand",
            price_per_hour=price,
            notes=f"list price, the same in every commercial region; no availability data "
            f"({product.metric_name})",
            **common,
        )
        if shape.allow_preemptible and price is not None:
            build_offer(
                result,
                f"oci {shape.name} preemptible",
                billing="spot",
                price_per_hour=to_price(price, multiplier=PREEMPTIBLE_SHARE),
                price_is_estimate=True,
                notes="preemptible: 50 % of the on-demand list price (OCI docs), not listed",
                **common,
            )
    return result


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """GET the shapes and the price list, then parse.

    Raises:
        ScraperError: either request failed or answered garbage.
    """
    shapes_url = settings.oci_url.rstrip("/") + "/shapes.json"
    shapes = await http.json("GET", shapes_url)
    products = await http.json("GET", settings.oci_prices_url, params={"currencyCode": "USD"})
    return parse_offers(shapes, products, source=f"{shapes_url} + {settings.oci_prices_url}")


SCRAPER = Scraper(
    slug="oci",
    name="Oracle Cloud Infrastructure",
    homepage_url="https://www.oracle.com/cloud",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
)
