"""RunPod GPU pods (GraphQL ``gpuTypes`` with ``lowestPrice``).

API: ``POST {GPUCOST_SCRAPER_RUNPOD_URL}`` (default ``https://api.runpod.io/graphql``) with
``{"query", "variables"}``; the ``gpuTypes`` query is public (gpuhunt posts it without a key).
A key in ``GPUCOST_SCRAPER_RUNPOD_API_KEY`` is sent as ``Authorization: Bearer``. Query and
field names follow ``dstackai/gpuhunt`` ``providers/runpod.py`` and ``runpod/runpod-python``
``runpod/api/queries/gpus.py`` (see ``../shared/docs/providers.md`` §2):

- every price is **per GPU-hour** in USD: it is multiplied by the queried ``gpuCount``;
- ``lowestPrice(input: {gpuCount, secureCloud})`` gives, for that count, the lowest on-demand
  (``uninterruptablePrice``) and interruptible (``minimumBidPrice``) price per GPU, the pod's
  ``minVcpu``/``minMemory`` (GB) and ``stockStatus`` (``High``/``Medium``/``Low``; null = none);
- secure and community cloud are separate offers (``tier`` in the key); spot prices are
  bid floors, so they are stored as estimates (skypilot issue #4914).

One query per (GPU count × cloud); the region is ``any`` (the lowest price over the cloud; the
country of that price is in ``notes``).

API status (2026-12): REST v1 is retired (we never used it); GraphQL is announced to follow in
early 2027, REST v2 ``/v2/catalog/gpus`` (key required) being its successor. Why this module
stays on GraphQL until a v2 answer is recorded: ``docs/providers-2026-check.md``.

Fractional GPUs: none. RunPod rents whole GPUs; a pod is ``gpuCount`` ≥ 1 cards of one type
(the queries ask for the counts in ``GPUCOST_SCRAPER_RUNPOD_GPU_COUNTS``), so every offer has
an integer ``gpu_count`` and the card's full VRAM.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from scrapers.base import Scraper, ScrapeResult, gather_parts
from scrapers.http import Http, ScraperError
from scrapers.records import positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer, validate_payload

DOCS_URL = "https://docs.runpod.io/api-reference"

LOWEST_PRICE_QUERY = """
query GpuTypesLowestPrice($lowestPriceInput: GpuLowestPriceInput) {
  gpuTypes {
    id
    displayName
    manufacturer
    memoryInGb
    maxGpuCount
    maxGpuCountSecureCloud
    maxGpuCountCommunityCloud
    secureCloud
    communityCloud
    securePrice
    communityPrice
    secureSpotPrice
    communitySpotPrice
    lowestPrice(input: $lowestPriceInput) {
      minimumBidPrice
      uninterruptablePrice
      minVcpu
      minMemory
      stockStatus
      countryCode
    }
  }
}
""".strip()


class LowestPrice(BaseModel):
    """``gpuTypes[].lowestPrice`` for the queried count and cloud (prices per GPU-hour)."""

    model_config = ConfigDict(extra="ignore")

    minimumBidPrice: float | None = None
    uninterruptablePrice: float | None = None
    minVcpu: float | None = None
    minMemory: float | None = None
    stockStatus: str | None = None
    countryCode: str | None = None


class GpuType(BaseModel):
    """One ``gpuTypes[]`` entry."""

    model_config = ConfigDict(extra="ignore")

    id: str
    displayName: str | None = None
    manufacturer: str | None = None
    memoryInGb: float | None = None
    maxGpuCount: int | None = None
    maxGpuCountSecureCloud: int | None = None
    maxGpuCountCommunityCloud: int | None = None
    secureCloud: bool | None = None
    communityCloud: bool | None = None
    securePrice: float | None = None
    communityPrice: float | None = None
    secureSpotPrice: float | None = None
    communitySpotPrice: float | None = None
    lowestPrice: LowestPrice | None = None


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore")

    gpuTypes: list[GpuType]


class GraphQLAnswer(BaseModel):
    """``{"data": {"gpuTypes": [...]}}``, or ``{"errors": [...]}``."""

    model_config = ConfigDict(extra="ignore")

    data: _Data | None = None
    errors: list[dict[str, Any]] | None = None


def _interconnect(name: str) -> str | None:
    upper = name.upper()
    if "SXM" in upper:
        return "sxm"
    if "PCIE" in upper:
        return "pcie"
    return None


def parse_offers(
    payload: Any, *, gpu_count: int, secure: bool, source: str, min_cuda: str | None = None
) -> ScrapeResult:
    """One ``lowestPrice`` answer → offers for ``gpu_count`` GPUs in one cloud (pure).

    Raises:
        ScraperError: GraphQL errors, or no ``data.gpuTypes``.
    """
    answer = validate_payload(GraphQLAnswer, payload, "runpod gpuTypes")
    if answer.errors:
        messages = "; ".join(str(e.get("message", e)) for e in answer.errors[:3])
        raise ScraperError(f"runpod GraphQL error: {messages}")
    if answer.data is None:
        raise ScraperError("runpod gpuTypes: unexpected payload shape: data: missing")
    result = ScrapeResult()
    tier = "secure" if secure else "community"
    for t in answer.data.gpuTypes:
        offered = t.secureCloud if secure else t.communityCloud
        most = (
            t.maxGpuCountSecureCloud if secure else t.maxGpuCountCommunityCloud
        ) or t.maxGpuCount
        if offered is False or (most is not None and gpu_count > most):
            continue
        lp = t.lowestPrice or LowestPrice()
        list_price = t.securePrice if secure else t.communityPrice
        list_spot = t.secureSpotPrice if secure else t.communitySpotPrice
        on_demand = to_price(lp.uninterruptablePrice or list_price, multiplier=gpu_count)
        spot = to_price(lp.minimumBidPrice or list_spot, multiplier=gpu_count)
        in_stock = lp.stockStatus is not None
        if not in_stock and on_demand is None and spot is None:
            continue  # not offered for this count/cloud
        name = t.displayName or t.id
        notes = [
            f"lowest price over {tier} cloud (lowestPrice)",
            f"stock {lp.stockStatus or 'none'}",
        ]
        if lp.countryCode:
            notes.append(f"country {lp.countryCode}")
        if min_cuda:
            notes.append(f"filtered to hosts with CUDA >= {min_cuda}")
        common: dict[str, Any] = {
            "provider": "runpod",
            "offer_key": f"{t.id}|{gpu_count}x|{tier}",
            "instance_type": f"{gpu_count}x {name} ({tier.title()} Cloud)",
            "region": "any",
            "gpu_name_raw": name,
            "gpu_count": gpu_count,
            "vram_gib_per_gpu": positive(t.memoryInGb),
            "vcpus": positive(lp.minVcpu),
            "ram_gib": positive(lp.minMemory),
            "interconnect": _interconnect(name),
            "currency": "USD",
            "available": in_stock,
            "source": source,
        }
        build_offer(
            result,
            f"runpod {t.id} {tier} x{gpu_count}",
            billing="on_demand",
            price_per_hour=on_demand,
            notes="; ".join(notes),
            **common,
        )
        if spot is not None:
            build_offer(
                result,
                f"runpod {t.id} {tier} x{gpu_count} spot",
                billing="spot",
                price_per_hour=spot,
                price_is_estimate=True,
                notes="; ".join([*notes, "interruptible: bid floor"]),
                **common,
            )
    return result


def variables(gpu_count: int, secure: bool, min_cuda: str | None) -> dict[str, Any]:
    """GraphQL variables for one query (``GpuLowestPriceInput``)."""
    lowest: dict[str, Any] = {"gpuCount": gpu_count, "secureCloud": secure}
    if min_cuda:
        lowest["minCudaVersion"] = min_cuda
    return {"lowestPriceInput": lowest}


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Query ``lowestPrice`` for every count in ``runpod_gpu_counts`` × secure/community.

    Raises:
        ScraperError: any query failed or answered garbage.
    """
    url = settings.runpod_url
    key = settings.api_key("runpod")
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def one(count: int, secure: bool) -> ScrapeResult:
        body = {
            "query": LOWEST_PRICE_QUERY,
            "variables": variables(count, secure, settings.runpod_min_cuda),
        }
        payload = await http.json("POST", url, json=body, headers=headers)
        return parse_offers(
            payload, gpu_count=count, secure=secure, source=url, min_cuda=settings.runpod_min_cuda
        )

    parts = (one(c, s) for c in settings.runpod_gpu_counts for s in (True, False))
    return await gather_parts(parts, http.concurrency)


SCRAPER = Scraper(
    slug="runpod",
    name="RunPod",
    homepage_url="https://www.runpod.io",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
)
