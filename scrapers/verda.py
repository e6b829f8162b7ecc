"""Verda (formerly DataCrunch) instance types and availability (OAuth2 client credentials).

API (default base ``https://api.datacrunch.io/v1``, ``GPUCOST_SCRAPER_VERDA_URL``; SkyPilot
``sky/catalog/data_fetchers/fetch_verda.py``, gpuhunt ``providers/verda.py`` and its test
payloads, ``../shared/docs/providers.md`` §7.5):

1. ``POST /oauth2/token`` with ``{"grant_type": "client_credentials", "client_id",
   "client_secret"}`` → ``{"access_token", "token_type": "Bearer", "expires_in", …}``;
   the client id is ``GPUCOST_SCRAPER_VERDA_CLIENT_ID``, the secret
   ``GPUCOST_SCRAPER_VERDA_API_KEY`` (the refresh skips Verda when either is missing);
2. ``GET /instance-types`` → a bare list of ``{instance_type: "1H100.80S.30V",
   price_per_hour: "3.95", spot_price: "1.70" (strings), cpu{number_of_cores},
   memory{size_in_gigabytes}, gpu{number_of_gpus, description: "1x H100 SXM5 80GB"},
   gpu_memory{size_in_gigabytes}, storage{size_in_gigabytes?}, model, …}``;
3. ``GET /instance-availability?is_spot=false`` and ``?is_spot=true`` → ``[{location_code:
   "FIN-01", availabilities: ["1H100.80S.30V", …]}]``.

``gpu_memory.size_in_gigabytes`` is the **total** of the instance (gpuhunt issue #21), so VRAM
per GPU = total ÷ ``number_of_gpus``. Prices are USD per instance-hour. One offer per instance
type × location where it is available now, on demand and (from the spot list) spot; a type
available nowhere yields no offer (no invented default region, unlike SkyPilot's ``FIN-03``).
The GPU label is the description without its count (``H100 SXM5 80GB``). CPU-only types
(``number_of_gpus`` 0) are not GPU offers. Fractional GPUs: none.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, RootModel

from scrapers.base import Scraper, ScrapeResult
from scrapers.http import Http, ScraperError
from scrapers.records import positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_listed_offer, validate_payload, validate_rows

DOCS_URL = "https://api.datacrunch.io/v1/docs"
_COUNT = re.compile(r"^\s*\d+\s*x\s*", re.IGNORECASE)


class _Size(BaseModel):
    model_config = ConfigDict(extra="ignore")
    size_in_gigabytes: float | None = None


class _Cpu(BaseModel):
    model_config = ConfigDict(extra="ignore")
    number_of_cores: float | None = None


class _Gpu(BaseModel):
    model_config = ConfigDict(extra="ignore")
    number_of_gpus: int = 0
    description: str | None = None


class VerdaInstanceType(BaseModel):
    """One ``/instance-types`` entry (the fields used)."""

    model_config = ConfigDict(extra="ignore")

    instance_type: str
    price_per_hour: str | float | None = None
    spot_price: str | float | None = None
    cpu: _Cpu = _Cpu()
    memory: _Size = _Size()
    gpu: _Gpu = _Gpu()
    gpu_memory: _Size = _Size()
    storage: _Size | None = None
    model: str | None = None
    p2p: str | None = None


class VerdaList(RootModel[list[dict[str, Any]]]):
    """A bare JSON list (instance types, availability)."""


class VerdaAvailability(BaseModel):
    """One ``/instance-availability`` entry."""

    model_config = ConfigDict(extra="ignore")

    location_code: str
    availabilities: list[str] = []


class _Token(BaseModel):
    model_config = ConfigDict(extra="ignore")
    access_token: str


def _where(payload: Any, what: str, result: ScrapeResult) -> dict[str, list[str]]:
    """instance type → locations where it is available (from one availability list)."""
    rows = validate_payload(VerdaList, payload, what).root
    out: dict[str, list[str]] = {}
    for entry in validate_rows(VerdaAvailability, rows, what, result):
        for name in entry.availabilities:
            out.setdefault(name, []).append(entry.location_code)
    return out


def parse_offers(types: Any, on_demand: Any, spot: Any, *, source: str) -> ScrapeResult:
    """Instance types × availability → offers (pure).

    Raises:
        ScraperError: a payload is not a list.
    """
    result = ScrapeResult()
    rows = validate_payload(VerdaList, types, "verda instance-types").root
    where = {
        "on_demand": _where(on_demand, "verda availability", result),
        "spot": _where(spot, "verda spot availability", result),
    }
    for t in validate_rows(VerdaInstanceType, rows, "verda instance-types", result):
        count = t.gpu.number_of_gpus
        if count <= 0:
            continue  # CPU node
        label = _COUNT.sub("", t.gpu.description or "").strip() or (t.model or t.instance_type)
        total = t.gpu_memory.size_in_gigabytes
        for billing, price in (("on_demand", t.price_per_hour), ("spot", t.spot_price)):
            for location in where[billing].get(t.instance_type, []):
                build_listed_offer(
                    result,
                    "verda",
                    t.instance_type,
                    location,
                    billing,
                    gpu_name_raw=label,
                    gpu_count=count,
                    vram_gib_per_gpu=positive(total / count) if total else None,
                    vcpus=positive(t.cpu.number_of_cores),
                    ram_gib=positive(t.memory.size_in_gigabytes),
                    disk_gb=positive(t.storage.size_in_gigabytes) if t.storage else None,
                    interconnect=_link(label, count),
                    price_per_hour=to_price(price),
                    currency="USD",
                    source=source,
                    notes=f"{t.gpu.description or label}; available now"
                    + ("; spot (can be reclaimed)" if billing == "spot" else ""),
                )
    return result


def _link(label: str, count: int) -> str | None:
    if "SXM" in label.upper():
        return "nvswitch" if count >= 8 else "sxm"
    return None


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Token, instance types and both availability lists, then parse.

    Raises:
        ScraperError: no client id or secret, or a request failed or answered garbage.
    """
    secret = settings.api_key("verda")
    client_id = (settings.verda_client_id or "").strip()
    if not secret or not client_id:
        raise ScraperError(
            "verda: no OAuth client (set GPUCOST_SCRAPER_VERDA_CLIENT_ID and "
            "GPUCOST_SCRAPER_VERDA_API_KEY, the client secret)"
        )
    base = settings.verda_url.rstrip("/")
    token = validate_payload(
        _Token,
        await http.json(
            "POST",
            f"{base}/oauth2/token",
            json={
                "grant_type": "client_credentials",
                "client_id": client_id,
                "client_secret": secret,
            },
        ),
        "verda oauth2/token",
    ).access_token
    headers = {"Authorization": f"Bearer {token}"}
    types = await http.json("GET", f"{base}/instance-types", headers=headers)
    on_demand = await http.json(
        "GET", f"{base}/instance-availability", params={"is_spot": "false"}, headers=headers
    )
    spot = await http.json(
        "GET", f"{base}/instance-availability", params={"is_spot": "true"}, headers=headers
    )
    return parse_offers(types, on_demand, spot, source=f"{base}/instance-types")


SCRAPER = Scraper(
    slug="verda",
    name="Verda (formerly DataCrunch)",
    homepage_url="https://verda.com",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
    needs_api_key=True,
    required_settings=("verda_client_id",),
)
