"""The public-catalog fallback: offers from maintained public catalogs, labelled ``catalog``.

For providers with no API of their own that gpucost can call (or whose API needs a key that is
not set), offers can be loaded from two maintained public catalogs. They are **not first-hand
prices**: every offer built here has ``source_kind = "catalog"``, an offer key prefixed with the
catalog's name (so it never overwrites a first-hand row of the same instance), a ``source``
naming the catalog file and version, and ``seen_on`` = the catalog's publication date when the
catalog states one (else the row is undated: a copy is never dated by the day it was read;
its age tiers: ``app/price_age.py``, price kind ``catalog``). Ingest never lets a catalog run
retire first-hand (``api``) rows, and the offer queries hide a catalog row when a first-hand
row of the same provider + instance type + region + billing is available
(``app.services.offers``).

Formats:

- **gpuhunt** (dstackai/gpuhunt, MPL-2.0; ``src/gpuhunt/_internal/catalog.py`` and
  ``storage.py``): ``GET {GPUCOST_SCRAPER_GPUHUNT_URL}/{provider}/version`` (default base
  ``https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3``) answers the latest version, a
  text ``YYYYMMDD-<run>`` (``.github/scripts/publish_catalog.sh``: ``date +%Y%m%d``-run
  number); ``GET …/{provider}/{version}/catalog.zip`` holds ``{provider}.csv`` with the columns
  ``instance_name, location, price, cpu, memory, gpu_count, gpu_name, gpu_memory, spot,
  disk_size, gpu_vendor, flags, cpu_arch, provider_data`` (``CATALOG_V2_FIELDS``): price USD
  per instance-hour, memory and gpu_memory (per GPU) in GB, spot ``True``/``False``. Rows with
  ``flags`` are items gpuhunt hides from older clients (DWS calendar mode, OCI spot …) and are
  skipped; CPU-only rows (``gpu_count`` 0) are not GPU offers.
- **SkyPilot** (skypilot-org/skypilot-catalog, Apache-2.0; README and ``catalogs/v8``):
  ``GET {GPUCOST_SCRAPER_SKYPILOT_URL}/{cloud}/vms.csv`` (default base
  ``https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8``), parsed
  by header name (column order differs per cloud): ``InstanceType, AcceleratorName,
  AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region[, AvailabilityZone]``.
  ``GpuInfo`` is a Python-literal dict (``ast.literal_eval``) whose ``SizeInMiB`` is per GPU;
  a value below 1024 is read as GB (the v8 shadeform file writes GB there:
  ``../shared/docs/providers-2026.md`` §1). Rows repeated per availability zone collapse to one
  per instance × region. The file states no date: its rows are undated (``seen_on`` None).

:data:`CATALOG_SOURCES` says which catalog covers which provider. No public catalog covers the
CNY platforms (AutoDL, 恒源云, 矩池云 …: ``../shared/docs/providers-2026.md`` §2, "no CNY
aggregator with an API was found"), so they stay hand-kept seed data.
"""

from __future__ import annotations

import ast
import csv
import datetime as dt
import io
import json
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scrapers.base import Scraper, ScrapeResult
from scrapers.http import Http, ScraperError
from scrapers.records import positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer

GPUHUNT_DOCS = "https://github.com/dstackai/gpuhunt"
SKYPILOT_DOCS = "https://github.com/skypilot-org/skypilot-catalog"
GPUHUNT_COLUMNS = ("instance_name", "location", "price", "gpu_count", "spot")
SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
_VERSION = re.compile(r"^(\d{8})-[A-Za-z0-9._-]+$")


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """Which catalog file holds a provider: ``format`` ``gpuhunt`` or ``skypilot`` and the
    catalog's own name of the provider (gpuhunt ``lambdalabs``, SkyPilot ``cudo``).
    ``zones``: the catalog's locations are zones (gpuhunt's GCP rows: ``us-central1-a``), read
    as their region (``us-central1``) so a row names the same place as a first-hand offer."""

    format: str
    name: str
    zones: bool = False


#: provider slug → its catalog (gpuhunt's published "offline" providers,
#: ``_internal/catalog.py`` ``OFFLINE_PROVIDERS``; SkyPilot's ``catalogs/v8/<cloud>``).
CATALOG_SOURCES: dict[str, CatalogSource] = {
    "nebius": CatalogSource("gpuhunt", "nebius"),
    "cloudrift": CatalogSource("gpuhunt", "cloudrift"),
    "cudo": CatalogSource("skypilot", "cudo"),
    # fallbacks of providers whose own API needs a key
    "gcp": CatalogSource("gpuhunt", "gcp", zones=True),
    "verda": CatalogSource("gpuhunt", "verda"),
    "lambda": CatalogSource("gpuhunt", "lambdalabs"),
    "hyperstack": CatalogSource("skypilot", "hyperstack"),
}


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _rows(text: str, required: Iterable[str], what: str) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise ScraperError(f"{what}: unexpected payload shape: column(s) {', '.join(missing)}")
    return list(reader)


def version_date(version: str) -> dt.date | None:
    """The publication date in a gpuhunt version (``20261201-4211`` → 2026-12-01)."""
    m = _VERSION.match(version)
    if m is None:
        return None
    digits = m.group(1)
    try:
        return dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        return None


_ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")


def zone_region(location: str) -> str:
    """A GCP zone's region (``us-central1-a`` → ``us-central1``); other names unchanged."""
    m = _ZONE.match(location)
    return m.group(1) if m else location


def parse_gpuhunt(
    text: str,
    *,
    provider: str,
    version: str,
    source: str,
    zones: bool = False,
    result: ScrapeResult | None = None,
) -> ScrapeResult:
    """A gpuhunt ``{provider}.csv`` → catalog offers of ``provider`` (pure); ``zones``: read
    locations as their region (:class:`CatalogSource`; the cheapest row of a region is kept at
    ingest, one per offer key).

    Raises:
        ScraperError: a required column is missing.
    """
    result = result or ScrapeResult()
    published = version_date(version)
    for i, row in enumerate(_rows(text, GPUHUNT_COLUMNS, f"gpuhunt {provider}.csv")):
        count = _number(row.get("gpu_count"))
        if (row.get("flags") or "").strip() or not count:
            continue  # flagged (special capacity) or CPU-only
        spot = (row.get("spot") or "").strip().lower()
        if spot not in ("true", "false"):
            result.warn(f"gpuhunt {provider}.csv row {i + 2}: spot {row.get('spot')!r}")
            continue
        name, location = row.get("instance_name") or "", row.get("location") or ""
        location = zone_region(location) if zones else location
        build_offer(
            result,
            f"gpuhunt {provider}.csv row {i + 2}",
            provider=provider,
            offer_key=f"gpuhunt:{name}",
            instance_type=name,
            region=location,
            billing="spot" if spot == "true" else "on_demand",
            gpu_name_raw=row.get("gpu_name") or "unknown",
            gpu_count=count,
            vram_gib_per_gpu=positive(_number(row.get("gpu_memory"))),
            vcpus=positive(_number(row.get("cpu"))),
            ram_gib=positive(_number(row.get("memory"))),
            disk_gb=positive(_number(row.get("disk_size"))),
            price_per_hour=to_price(row.get("price")),
            currency="USD",
            source_kind="catalog",
            seen_on=published,
            source=source,
            notes=f"public catalog (gpuhunt {provider} {version}"
            + (f", published {published}" if published else "")
            + "), not a first-hand price",
        )
    return result


def _gpu_info(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        try:
            value = json.loads(text.replace("'", '"'))
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _vram_gb(info: dict[str, Any]) -> float | None:
    gpus = info.get("Gpus") or [{}]
    size = _number(str(((gpus[0] or {}).get("MemoryInfo") or {}).get("SizeInMiB", "")))
    if not size:
        return None
    return size if size < 1024 else round(size / 1024, 2)  # GB written into SizeInMiB


def parse_skypilot(
    text: str, *, provider: str, cloud: str, source: str, result: ScrapeResult | None = None
) -> ScrapeResult:
    """A SkyPilot ``vms.csv`` → catalog offers of ``provider`` (pure); on-demand from ``Price``,
    spot from ``SpotPrice`` where listed; one per instance × region.

    Raises:
        ScraperError: a required column is missing.
    """
    result = result or ScrapeResult()
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(_rows(text, SKYPILOT_COLUMNS, f"skypilot {cloud}/vms.csv")):
        count = _number(row.get("AcceleratorCount"))
        name, region = row.get("InstanceType") or "", row.get("Region") or ""
        if not count or not row.get("AcceleratorName") or (name, region) in seen:
            continue
        seen.add((name, region))
        common: dict[str, Any] = {
            "provider": provider,
            "offer_key": f"skypilot:{name}",
            "instance_type": name,
            "region": region,
            "gpu_name_raw": row["AcceleratorName"],
            "gpu_count": count,
            "vram_gib_per_gpu": positive(_vram_gb(_gpu_info(row.get("GpuInfo")))),
            "vcpus": positive(_number(row.get("vCPUs"))),
            "ram_gib": positive(_number(row.get("MemoryGiB"))),
            "currency": "USD",
            "source_kind": "catalog",
            "source": source,
            "notes": f"public catalog (SkyPilot {cloud}/vms.csv, undated file), "
            "not a first-hand price",
        }
        build_offer(
            result,
            f"skypilot {cloud} row {i + 2}",
            billing="on_demand",
            price_per_hour=to_price(row.get("Price")),
            **common,
        )
        spot = to_price(row.get("SpotPrice"))
        if spot is not None:
            build_offer(
                result,
                f"skypilot {cloud} row {i + 2} spot",
                billing="spot",
                price_per_hour=spot,
                **common,
            )
    return result


async def fetch_gpuhunt(
    http: Http, settings: ScraperSettings, provider: str, name: str, zones: bool = False
) -> ScrapeResult:
    """The latest gpuhunt catalog of ``name``, as offers of ``provider``.

    Raises:
        ScraperError: a request failed, the version is not ``YYYYMMDD-…``, the zip is
            malformed or lacks ``{name}.csv``, or a required column is missing.
    """
    base = f"{settings.gpuhunt_url.rstrip('/')}/{name}"
    version = (await http.request("GET", f"{base}/version")).text.strip()
    if version_date(version) is None:
        raise ScraperError(f"gpuhunt {name}: unexpected version {version[:40]!r}")
    url = f"{base}/{version}/catalog.zip"
    body = (await http.request("GET", url)).content
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            text = archive.read(f"{name}.csv").decode("utf-8")
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError) as exc:
        raise ScraperError(f"gpuhunt {url}: malformed catalog.zip ({exc})") from exc
    return parse_gpuhunt(text, provider=provider, version=version, source=url, zones=zones)


async def fetch_skypilot(
    http: Http, settings: ScraperSettings, provider: str, cloud: str
) -> ScrapeResult:
    """SkyPilot's ``{cloud}/vms.csv`` as offers of ``provider``.

    Raises:
        ScraperError: the request failed or a required column is missing.
    """
    url = f"{settings.skypilot_url.rstrip('/')}/{cloud}/vms.csv"
    text = (await http.request("GET", url)).text
    return parse_skypilot(text, provider=provider, cloud=cloud, source=url)


def catalog_scraper(slug: str, name: str, homepage_url: str, kind: str = "cloud") -> Scraper:
    """The :class:`Scraper` that loads ``slug``'s offers from its entry in
    :data:`CATALOG_SOURCES` (``source_kind = "catalog"``)."""
    source = CATALOG_SOURCES[slug]

    async def fetch(http: Http, settings: ScraperSettings) -> ScrapeResult:
        if source.format == "gpuhunt":
            return await fetch_gpuhunt(http, settings, slug, source.name, source.zones)
        return await fetch_skypilot(http, settings, slug, source.name)

    return Scraper(
        slug=slug,
        name=name,
        homepage_url=homepage_url,
        kind=kind,
        docs_url=GPUHUNT_DOCS if source.format == "gpuhunt" else SKYPILOT_DOCS,
        fetch=fetch,
        source_kind="catalog",
    )
