"""Vultr cloud GPU and bare-metal GPU plans (public plan lists, no key).

API: ``GET {GPUCOST_SCRAPER_VULTR_URL}/plans?type=all&per_page=500`` and
``GET {…}/plans-metal?per_page=500`` (default ``https://api.vultr.com/v2``), paged by cursor:
``meta.links.next`` is passed back as ``cursor`` until it is empty. Shape as in gpuhunt
``providers/vultr.py`` and its test payloads (``src/tests/providers/test_vultr.py``), see
``../shared/docs/providers.md`` §7.1:

- ``hourly_cost`` USD per plan-hour; ``hourly_cost_preemptible`` (bare metal) → spot;
- ``ram`` MB (÷ 1024 → GiB); ``disk`` GB per disk × ``disk_count``;
- cloud GPU plans (``vcg-…``): ``gpu_type`` (``NVIDIA_A100``) and ``gpu_vram_gb``, the
  **total** for the plan, so a plan below one card is a fraction of a GPU (``gpu_count`` < 1)
  and several cards give ``total / card``; when those fields are missing the plan id
  (``vcg-a40-24c-120g-48vram``) says the same;
- bare-metal GPU details exist only in the plan id (``vbm-112c-2048gb-8-h100-gpu``), read with
  :data:`BARE_METAL_GPUS` (``l40`` there is an L40S, as gpuhunt maps it).

One offer per plan × location (the list has no capacity data); a location where the plan cannot
be deployed on demand (``deploy_ondemand: false``) gets no on-demand offer.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from scrapers.base import Scraper, ScrapeResult, fetch_pages
from scrapers.http import Http, ScraperError
from scrapers.records import card_share, positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://www.vultr.com/api/#tag/plans"
#: Safety stop for one plan list's cursor walk; hitting it fails the provider (never truncates).
MAX_PAGES = 100
#: Nominal VRAM (GB) of one card, to turn a plan's total VRAM into a GPU count.
CARD_VRAM_GB = {
    "A100": 80,
    "A40": 48,
    "A16": 16,
    "L40S": 48,
    "L40": 48,
    "H100": 80,
    "H200": 141,
    "GH200": 96,
    "B200": 180,
    "MI300X": 192,
    "MI325X": 256,
}
#: Bare-metal plan id token → (GPU label, VRAM GB per GPU, link between the GPUs).
BARE_METAL_GPUS: dict[str, tuple[str, float, str | None]] = {
    "h100": ("H100 SXM", 80, "nvswitch"),
    "h200": ("H200 SXM", 141, "nvswitch"),
    "a100": ("A100 SXM4 80GB", 80, "nvswitch"),
    "b200": ("B200", 180, "nvswitch"),
    "l40": ("L40S", 48, "pcie"),
    "l40s": ("L40S", 48, "pcie"),
    "gh200": ("GH200", 96, None),
    "mi300x": ("MI300X", 192, None),
    "mi325x": ("MI325X", 256, None),
}
_VCG_ID = re.compile(r"^vcg-([a-z0-9]+)-\d+c-\d+g-(\d+)vram$")
_VBM_ID = re.compile(r"^vbm-\d+c-\d+gb-(?:(\d+)-)?([a-z0-9]+)-gpu$")


class VultrPlan(BaseModel):
    """A ``plans[]`` or ``plans_metal[]`` entry (fields of both; extra fields ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    type: str | None = None
    vcpu_count: float | None = None
    cpu_threads: float | None = None
    cpu_model: str | None = None
    ram: float | None = None
    disk: float | None = None
    disk_count: int | None = None
    hourly_cost: float | None = None
    hourly_cost_preemptible: float | None = None
    locations: list[str] = []
    gpu_type: str | None = None
    gpu_vram_gb: float | None = None
    gpu_count: float | None = None
    deploy_ondemand: bool | None = None
    deploy_preemptible: bool | None = None


class _Links(BaseModel):
    model_config = ConfigDict(extra="ignore")
    next: str | None = None


class _Meta(BaseModel):
    model_config = ConfigDict(extra="ignore")
    total: int | None = None
    links: _Links | None = None


class VultrPage(BaseModel):
    """``{"plans": [...]}`` or ``{"plans_metal": [...]}`` with ``meta.links.next``."""

    model_config = ConfigDict(extra="ignore")

    plans: list[dict[str, Any]] | None = None
    plans_metal: list[dict[str, Any]] | None = None
    meta: _Meta | None = None


def _vm_gpu(p: VultrPlan) -> tuple[str, float, float | None, str | None] | None:
    """(label, count, VRAM per GPU, interconnect) of a cloud GPU plan, or ``None``."""
    m = _VCG_ID.match(p.id)
    if p.gpu_type:
        label = p.gpu_type
        model = p.gpu_type.split("_")[1] if "_" in p.gpu_type else p.gpu_type
    elif m:
        label, model = m.group(1).upper(), m.group(1).upper()
    else:
        return None
    total = p.gpu_vram_gb or (float(m.group(2)) if m else None)
    card = CARD_VRAM_GB.get(model.upper())
    if p.gpu_count:
        return label, p.gpu_count, (total / p.gpu_count if total else card), None
    if card is None or not total:
        return label, 1, total, None
    if total >= card:
        return label, round(total / card), card, None
    return label, card_share(total, card) or 1, card, None  # a slice of one card


def _metal_gpu(p: VultrPlan) -> tuple[str, float, float | None, str | None] | None:
    m = _VBM_ID.match(p.id)
    if not m:
        return None
    token = m.group(2)
    label, vram, link = BARE_METAL_GPUS.get(token, (token.upper(), None, None))
    count = p.gpu_count or (int(m.group(1)) if m.group(1) else 1)
    if p.gpu_vram_gb and count:
        vram = p.gpu_vram_gb / count
    return label, count, vram, link if count > 1 else None


def parse_plans(pages: list[Any], *, source: str, metal: bool) -> ScrapeResult:
    """Plan pages → offers for GPU plans, one per location (pure).

    Raises:
        ScraperError: a page holds neither ``plans`` nor ``plans_metal``.
    """
    result = ScrapeResult()
    what = "vultr plans_metal" if metal else "vultr plans"
    for page in pages:
        parsed = validate_payload(VultrPage, page, what)
        rows = parsed.plans_metal if metal else parsed.plans
        if rows is None:
            raise ScraperError(
                f"{what}: unexpected payload shape: {'plans_metal' if metal else 'plans'}: missing"
            )
        for p in validate_rows(VultrPlan, rows, what, result):
            gpu = _metal_gpu(p) if metal else _vm_gpu(p)
            if gpu is None:
                continue  # not a GPU plan
            label, count, vram, link = gpu
            disk = p.disk * (p.disk_count or 1) if p.disk else None
            common: dict[str, Any] = {
                "provider": "vultr",
                "offer_key": p.id,
                "instance_type": p.id,
                "gpu_name_raw": label,
                "gpu_count": count,
                "vram_gib_per_gpu": positive(vram),
                "vcpus": positive(p.cpu_threads if metal else p.vcpu_count),
                "cpu_model": p.cpu_model,
                "ram_gib": positive(round((p.ram or 0) / 1024, 2)),
                "disk_gb": disk,
                "interconnect": link,
                "currency": "USD",
                "source": source,
            }
            note = "fraction of one GPU" if count < 1 else "plan list (no capacity data)"
            for location in (loc.strip() for loc in p.locations):
                if not location:
                    continue
                if p.deploy_ondemand is not False:
                    build_offer(
                        result,
                        f"vultr {p.id} {location}",
                        region=location,
                        billing="on_demand",
                        price_per_hour=to_price(p.hourly_cost),
                        notes=note,
                        **common,
                    )
                spot = to_price(p.hourly_cost_preemptible)
                if spot is not None and p.deploy_preemptible is not False:
                    build_offer(
                        result,
                        f"vultr {p.id} {location} preemptible",
                        region=location,
                        billing="spot",
                        price_per_hour=spot,
                        notes="preemptible list price",
                        **common,
                    )
    return result


async def _plan_pages(http: Http, url: str, params: dict[str, str]) -> list[Any]:
    """Every page of one plan list (cursor ``meta.links.next``, at most :data:`MAX_PAGES`).

    Raises:
        ScraperError: a page failed, or more than :data:`MAX_PAGES` pages.
    """

    def next_params(page: Any) -> dict[str, str] | None:
        meta = validate_payload(VultrPage, page, f"vultr {url}").meta
        cursor = meta.links.next if meta and meta.links else None
        return {"cursor": cursor} if cursor else None

    too_many = f"vultr {url}: more than {MAX_PAGES} pages"
    return await fetch_pages(http, url, params, next_params, max_pages=MAX_PAGES, too_many=too_many)


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Both plan lists → offers.

    Raises:
        ScraperError: any page failed or answered garbage.
    """
    base = settings.vultr_url.rstrip("/")
    vm = await _plan_pages(http, f"{base}/plans", {"type": "all", "per_page": "500"})
    metal = await _plan_pages(http, f"{base}/plans-metal", {"per_page": "500"})
    result = parse_plans(vm, source=f"{base}/plans", metal=False)
    result.extend(parse_plans(metal, source=f"{base}/plans-metal", metal=True))
    return result


SCRAPER = Scraper(
    slug="vultr",
    name="Vultr",
    homepage_url="https://www.vultr.com",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
)
