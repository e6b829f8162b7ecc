"""Lambda Cloud instance types (API key required).

API: ``GET {GPUCOST_SCRAPER_LAMBDA_URL}/instance-types`` (default
``https://cloud.lambda.ai/api/v1``) with ``Authorization: Bearer <GPUCOST_SCRAPER_LAMBDA_API_KEY>``.
Without a key the refresh skips Lambda with a message. Shape per SkyPilot
``fetch_lambda_cloud.py``, gpuhunt ``providers/lambdalabs.py`` and the public API schema
(``../shared/docs/providers.md`` §3)::

    {"data": {"gpu_1x_h100_pcie": {
        "instance_type": {"name", "description", "gpu_description",
                          "price_cents_per_hour", "specs": {"vcpus", "memory_gib",
                          "storage_gib", "gpus"}},
        "regions_with_capacity_available": [{"name", "description"}]}}}

CPU-only types (``cpu_4x_general``, ``cpu_4x_generalx``, added 2026-05; they broke SkyPilot's
fetcher, skypilot PR #9556) are no GPU offers and are passed over without a warning; the GPU
count comes from ``specs.gpus`` first (instance names are irregular: ``gpu_8x_b200_sxm6``).
``price_cents_per_hour`` is US **cents** per instance-hour. One offer per region with capacity
now (a type sold out everywhere yields none, so its earlier offers become unavailable). The GPU
label and VRAM are read from ``gpu_description``/``description`` (``H100 (80 GB SXM5)``; newer
answers may say just ``A10``); ``RTX 6000`` there is the 24 GB Quadro RTX 6000.

Fractional GPUs: none. Every Lambda instance type has whole GPUs (``specs.gpus`` ≥ 1, or the
``gpu_<n>x_…`` name); CPU-only types are skipped as above.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from scrapers.base import ScrapeResult, keyed_scraper
from scrapers.records import positive, to_price
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://docs.lambda.ai/api/cloud"
GIB_TO_GB = 1.073741824

_LABEL = re.compile(
    r"^\s*(?:(\d+)\s*x\s+)?(?P<name>[^(]+?)\s*(?:\((?P<vram>\d+(?:\.\d+)?)\s*GB"
    r"\s*(?P<form>[^)]*)\))?\s*$",
    re.IGNORECASE,
)
_COUNT = re.compile(r"^gpu_(\d+)x_")


class LambdaSpecs(BaseModel):
    """``instance_type.specs``: GiB for memory and storage."""

    model_config = ConfigDict(extra="ignore")

    vcpus: float | None = None
    memory_gib: float | None = None
    storage_gib: float | None = None
    gpus: int | None = None


class LambdaInstanceType(BaseModel):
    """``data.<name>.instance_type``."""

    model_config = ConfigDict(extra="ignore")

    name: str
    description: str | None = None
    gpu_description: str | None = None
    price_cents_per_hour: float | None = None
    specs: LambdaSpecs | None = None
    architecture: str | None = None


class LambdaRegion(BaseModel):
    """One ``regions_with_capacity_available[]`` entry."""

    model_config = ConfigDict(extra="ignore")

    name: str
    description: str | None = None


class LambdaEntry(BaseModel):
    """``data.<name>``."""

    model_config = ConfigDict(extra="ignore")

    instance_type: LambdaInstanceType
    regions_with_capacity_available: list[LambdaRegion] = []


class LambdaAnswer(BaseModel):
    """``{"data": {<instance type name>: {...}}}``."""

    model_config = ConfigDict(extra="ignore")

    data: dict[str, Any]


def gpu_label(t: LambdaInstanceType) -> tuple[str, float | None]:
    """GPU label (with its form token, e.g. ``H100 SXM5``) and VRAM in GB from the texts."""
    for text in (t.gpu_description, t.description):
        if not text:
            continue
        m = _LABEL.match(text)
        if m:
            name = m.group("name").strip()
            form = (m.group("form") or "").strip()
            vram = float(m.group("vram")) if m.group("vram") else None
            return (f"{name} {form}" if form else name), vram
    return t.name, None


def parse_offers(payload: Any, *, source: str) -> ScrapeResult:
    """``/instance-types`` payload → offers, one per region with capacity (pure).

    Raises:
        ScraperError: no ``data`` object.
    """
    answer = validate_payload(LambdaAnswer, payload, "lambda instance-types")
    result = ScrapeResult()
    entries = validate_rows(LambdaEntry, answer.data.values(), "lambda data", result)
    for entry in entries:
        t = entry.instance_type
        specs = t.specs or LambdaSpecs()
        if specs.gpus == 0 or t.name.startswith("cpu_"):
            continue  # CPU-only types (``cpu_4x_generalx``, 2026-05: skypilot PR #9556)
        m = _COUNT.match(t.name)
        count = specs.gpus or (int(m.group(1)) if m else None)
        if not count:
            result.warn(f"lambda {t.name}: no GPU count; skipped")
            continue
        label, vram = gpu_label(t)
        form = f"{label} {t.name}".upper()
        interconnect = "sxm" if "SXM" in form else ("pcie" if "PCIE" in form else None)
        if interconnect == "sxm" and count >= 8:
            interconnect = "nvswitch"  # 8-GPU SXM boards (HGX)
        disk = specs.storage_gib * GIB_TO_GB if specs.storage_gib else None
        for region in entry.regions_with_capacity_available:
            build_offer(
                result,
                f"lambda {t.name} {region.name}",
                provider="lambda",
                offer_key=t.name,
                instance_type=t.name,
                region=region.name,
                billing="on_demand",
                gpu_name_raw=label,
                gpu_count=count,
                vram_gib_per_gpu=vram,
                vcpus=positive(specs.vcpus),
                ram_gib=positive(specs.memory_gib),
                disk_gb=round(disk, 1) if disk else None,
                interconnect=interconnect,
                price_per_hour=to_price(t.price_cents_per_hour, cents=True),
                currency="USD",
                source=source,
                notes=f"{t.description or t.name}; capacity available now",
            )
    return result


#: GET ``/instance-types`` with ``Authorization: Bearer <key>`` and parse it.
SCRAPER = keyed_scraper(
    "lambda",
    "Lambda",
    "https://lambda.ai",
    "cloud",
    DOCS_URL,
    path="/instance-types",
    parse=parse_offers,
)
fetch_offers = SCRAPER.fetch
