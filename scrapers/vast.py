"""Vast.ai marketplace offers ("bundles" search).

API: ``POST {GPUCOST_SCRAPER_VAST_URL}/bundles/`` with a JSON query, one query per GPU name with
a ``limit`` (without one Vast returns only a subset: vast-cli issue #268), plus one catch-all
query for every other name (``gpu_name notin [...]``) so new models show up as unknown names.
No key is needed for search; when ``GPUCOST_SCRAPER_VAST_API_KEY`` is set it is sent as
``Authorization: Bearer``.
Field names and units follow ``vast-ai/vast-cli`` ``vastai/data/offer.py`` and
``vastai/api/offers.py`` (see ``../shared/docs/providers.md`` §1):

- ``gpu_ram`` MiB per GPU; ``cpu_ram`` MB for the **whole host**; ``cpu_cores`` whole host,
  ``cpu_cores_effective`` the offer's share: RAM is prorated by effective cores (as gpuhunt).
- ``dph_total`` USD/h for the whole offer incl. ``allocated_storage`` GB of disk; ``min_bid``
  the current minimum interruptible bid (USD/h, whole offer) → a ``spot`` offer, estimate.
- ``cuda_max_good`` highest CUDA version the host driver supports; ``bw_nvlink`` GB/s (> 0 on
  multi-GPU offers means NVLink).

Offers are keyed on the host machine and GPU count (``m<machine_id>-<n>x``), which outlives a
single ask id, so price history follows the machine.

Fractional GPUs: none. Vast offers whole cards (``num_gpus`` is an integer ≥ 1, the query asks
for ``gte 1``); ``gpu_frac`` is the share of the *host's* GPUs an offer takes (4 of 8 = 0.5),
not a slice of one card, and is not used as a count.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from scrapers.base import Scraper, ScrapeResult, gather_parts
from scrapers.http import Http
from scrapers.records import mib_to_gib, positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://vast.ai/developers/api"


class VastOffer(BaseModel):
    """One ``offers[]`` entry (only the fields we use; extra fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: int
    machine_id: int | None = None
    num_gpus: int
    gpu_name: str
    gpu_ram: float | None = None
    cpu_name: str | None = None
    cpu_cores: float | None = None
    cpu_cores_effective: float | None = None
    cpu_ram: float | None = None
    disk_space: float | None = None
    cuda_max_good: float | None = None
    driver_version: str | None = None
    bw_nvlink: float | None = None
    inet_up: float | None = None
    inet_down: float | None = None
    dph_base: float | None = None
    dph_total: float | None = None
    min_bid: float | None = None
    geolocation: str | None = None
    reliability: float | None = None
    verification: str | None = None
    rentable: bool | None = True
    rented: bool | None = False


class VastBundles(BaseModel):
    """The ``/bundles/`` answer: ``{"offers": [...]}`` (rows are validated one by one)."""

    model_config = ConfigDict(extra="ignore")

    offers: list[dict[str, Any]]


def _interconnect(o: VastOffer) -> str | None:
    name = o.gpu_name.upper()
    if (o.bw_nvlink or 0) > 0 and o.num_gpus > 1:
        return "nvlink"
    if "SXM" in name:
        return "sxm"
    if "PCIE" in name:
        return "pcie"
    return None


def _ram_gib(o: VastOffer) -> float | None:
    if not (o.cpu_ram and o.cpu_cores and o.cpu_cores_effective):
        return None  # cpu_cores can be null: RAM cannot be prorated (providers.md §1)
    return positive(round(o.cpu_ram * o.cpu_cores_effective / o.cpu_cores / 1024, 2))


def parse_offers(
    payload: Any, *, source: str, storage_gb: float = 0, only_gpu_name: str | None = None
) -> ScrapeResult:
    """Vast ``/bundles/`` payload → offers (pure).

    Args:
        payload: the decoded JSON answer.
        source: the endpoint, stored as the offers' source.
        storage_gb: the ``allocated_storage`` the query priced into ``dph_total``.
        only_gpu_name: keep only offers with exactly this ``gpu_name`` (a name query can match
            other GPUs fuzzily: skypilot issue #9733).

    Raises:
        ScraperError: the payload has no ``offers`` list.
    """
    result = ScrapeResult()
    bundles = validate_payload(VastBundles, payload, "vast bundles")
    for o in validate_rows(VastOffer, bundles.offers, "vast offers", result):
        if only_gpu_name is not None and o.gpu_name != only_gpu_name:
            continue
        if o.num_gpus <= 0:
            result.warn(f"vast offer {o.id} skipped: num_gpus={o.num_gpus}")
            continue
        key = f"m{o.machine_id}-{o.num_gpus}x" if o.machine_id is not None else f"ask{o.id}"
        notes = [f"ask {o.id}"]
        if o.reliability is not None:
            notes.append(f"reliability {o.reliability:.4f}")
        if o.verification:
            notes.append(f"verification {o.verification}")
        if (o.bw_nvlink or 0) > 0:
            notes.append(f"NVLink {o.bw_nvlink:g} GB/s (bw_nvlink)")
        common: dict[str, Any] = {
            "provider": "vast",
            "offer_key": key,
            "instance_type": f"{o.num_gpus}x {o.gpu_name}",
            "region": (o.geolocation or "").strip() or "unknown",
            "gpu_name_raw": o.gpu_name,
            "gpu_count": o.num_gpus,
            "vram_gib_per_gpu": mib_to_gib(o.gpu_ram),
            "vcpus": positive(o.cpu_cores_effective),
            "cpu_model": o.cpu_name,
            "ram_gib": _ram_gib(o),
            "disk_gb": positive(o.disk_space),
            "max_cuda": f"{o.cuda_max_good:g}" if positive(o.cuda_max_good) else None,
            "driver_version": o.driver_version,
            "interconnect": _interconnect(o),
            "network_up_mbps": positive(o.inet_up),
            "network_down_mbps": positive(o.inet_down),
            "currency": "USD",
            "available": bool(o.rentable) and not o.rented,
            "source": source,
        }
        total = o.dph_total if o.dph_total is not None else o.dph_base
        build_offer(
            result,
            f"vast offer {o.id}",
            billing="on_demand",
            price_per_hour=to_price(total),
            notes="; ".join([*notes, f"price incl. {storage_gb:g} GB disk (dph_total)"]),
            **common,
        )
        spot = to_price(o.min_bid)
        if spot is not None:
            build_offer(
                result,
                f"vast offer {o.id} (bid)",
                billing="spot",
                price_per_hour=spot,
                price_is_estimate=True,
                notes="; ".join([*notes, "interruptible: current minimum bid (min_bid)"]),
                **common,
            )
    return result


def query_body(gpu_name: str | list[str], *, limit: int, storage_gb: float) -> dict[str, Any]:
    """The search query for one GPU name, or (a list) for every *other* name.

    Operators as in vast-cli ``search_offers``; the ``notin`` query is the catch-all that
    brings in GPU models missing from ``vast_gpu_names`` (stored raw and reported).
    """
    name_filter = {"notin": gpu_name} if isinstance(gpu_name, list) else {"eq": gpu_name}
    return {
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "num_gpus": {"gte": 1},
        "gpu_name": name_filter,
        "type": "on-demand",
        "allocated_storage": storage_gb,
        "order": [["dph_total", "asc"]],
        "limit": limit,
    }


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Query every name in ``settings.vast_gpu_names`` (in parallel) and parse the answers.

    Raises:
        ScraperError: any query failed or answered garbage (the whole provider is skipped).
    """
    url = settings.vast_url.rstrip("/") + "/bundles/"
    key = settings.api_key("vast")
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def one(name: str | list[str]) -> ScrapeResult:
        body = query_body(name, limit=settings.vast_limit, storage_gb=settings.vast_storage_gb)
        payload = await http.json("POST", url, json=body, headers=headers)
        result = parse_offers(
            payload,
            source=url,
            storage_gb=settings.vast_storage_gb,
            only_gpu_name=name if isinstance(name, str) else None,
        )
        if isinstance(name, list):  # the catch-all must not repeat the named queries
            result.offers = [o for o in result.offers if o.gpu_name_raw not in name]
        return result

    names: list[str | list[str]] = list(settings.vast_gpu_names)
    if settings.vast_other_gpus:
        names.append(list(settings.vast_gpu_names))
    return await gather_parts((one(n) for n in names), http.concurrency)


SCRAPER = Scraper(
    slug="vast",
    name="Vast.ai",
    homepage_url="https://vast.ai",
    kind="marketplace",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
)
