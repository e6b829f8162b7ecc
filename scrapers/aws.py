"""AWS EC2 GPU instances: the public per-region price list (on-demand) and spot feed (no key).

On-demand: ``GET {GPUCOST_SCRAPER_AWS_URL}/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv``
(default host ``https://pricing.us-east-1.amazonaws.com``, the same for every region), one file
per region in ``GPUCOST_SCRAPER_AWS_REGIONS``. The files are hundreds of MB: they are streamed
line by line and only lines that mention a GPU family in :data:`AWS_FAMILIES` are parsed. The CSV
opens with five metadata lines (``FormatVersion``, ``Disclaimer``, ``Publication Date``,
``Version``, ``OfferCode``) before the header. Row filter as gpuhunt ``PRICING_FILTERS``
(``../shared/docs/providers.md`` §5): OnDemand, Shared tenancy, Linux, ``CapacityStatus`` Used,
no pre-installed software, ``Hrs``, USD. ``PricePerUnit`` is USD per instance-hour.

Spot: ``GET {GPUCOST_SCRAPER_AWS_SPOT_URL}`` (default
``https://website.spot.ec2.aws.a2z.com/spot.json``, the undocumented feed behind the EC2 spot
pricing page): ``config.regions[].instanceTypes[].sizes[].valueColumns[name=linux].prices.USD``,
a string; ``N/A*`` or ``0`` means no price. Spot offers reuse the on-demand row's specs.

The price list gives a GPU *count* only; model and VRAM come from :data:`AWS_FAMILIES`.

Fractional GPUs: g6f/gr6f instances are slices of one L4 (1/8, 1/4, 1/2; EC2 reports them as
Count 1 with scaled memory, providers.md §5 "Fractional L4 on g6f/gr6f"). Their offers get
``gpu_count`` < 1 from the price list's ``GPU`` column when it is below one (the price list
writes the share there, e.g. ``0.125``: it broke gpuhunt's ``int()`` parse, dstackai/gpuhunt
PR #164), else from its ``GPU Memory`` against the card's nominal VRAM
(:func:`scrapers.records.card_share`);
``vram_gib_per_gpu`` stays the whole card's, as for every fractional offer. A slice whose share
the row does not tell is reported and not stored (a whole L4 would be wrong). Every other
family sells whole GPUs.

The network between machines: the ``Network Performance`` column (``3200 Gigabit`` on
p5.48xlarge, ``400 Gigabit`` on p4d.24xlarge), read by :func:`scrapers.records.network_gbps`
into ``network_gbps``; an ``Up to …`` ceiling or a word is no stated rate (``None``).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from scrapers.base import Scraper, ScrapeResult, gather_parts
from scrapers.http import Http, ScraperError
from scrapers.records import card_share, network_gbps, positive, to_price
from scrapers.settings import ScraperSettings
from scrapers.validate import build_offer, validate_payload, validate_rows

DOCS_URL = "https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-ppslong.html"


@dataclass(frozen=True, slots=True)
class AwsFamily:
    """GPU of an instance family: label, nominal VRAM per GPU (GB), link between its GPUs."""

    gpu: str
    vram_gib: float
    interconnect: str | None
    #: instances are slices of one card (``gpu_count`` < 1)
    fractional: bool = False


#: Instance family → GPU (providers.md §5 static family table; AWS instance type pages).
#: VRAM is nominal: AWS itself reports 22888 MiB for A10G and L4 (gpuhunt issue #91).
AWS_FAMILIES: dict[str, AwsFamily] = {
    "p3": AwsFamily("V100 SXM2 16GB", 16, "nvlink"),
    "p3dn": AwsFamily("V100 SXM2 32GB", 32, "nvlink"),
    "p4d": AwsFamily("A100 SXM4 40GB", 40, "nvswitch"),
    "p4de": AwsFamily("A100 SXM4 80GB", 80, "nvswitch"),
    "p5": AwsFamily("H100 SXM", 80, "nvswitch"),
    "p5e": AwsFamily("H200 SXM", 141, "nvswitch"),
    "p5en": AwsFamily("H200 SXM", 141, "nvswitch"),
    "p6-b200": AwsFamily("B200", 180, "nvswitch"),
    "p6-b300": AwsFamily("B300", 268, "nvswitch"),
    "g4dn": AwsFamily("T4", 16, "pcie"),
    "g5": AwsFamily("A10G", 24, "pcie"),
    "g6": AwsFamily("L4", 24, "pcie"),
    "g6e": AwsFamily("L40S", 48, "pcie"),
    "g6f": AwsFamily("L4", 24, None, fractional=True),
    "gr6f": AwsFamily("L4", 24, None, fractional=True),
    "g7e": AwsFamily("RTX PRO Server 6000", 96, "pcie"),
}

#: A quoted instance type of a GPU-style family (p…, g…, gr…): cheap to test on every line.
_GPU_TYPE = re.compile(r'"((?:p|g|gr)\d[a-z0-9-]*)\.[a-z0-9]+"')
_MEMORY = re.compile(r"([\d.,]+)\s*GiB", re.IGNORECASE)
_STORAGE = re.compile(r"(\d+)\s*x\s*([\d.,]+)")
#: Legacy region names of the old spot.js feed (still seen in mirrors).
_SPOT_REGION_ALIASES = {
    "us-east": "us-east-1",
    "us-west": "us-west-1",
    "eu-ireland": "eu-west-1",
    "apac-sin": "ap-southeast-1",
    "apac-syd": "ap-southeast-2",
    "apac-tokyo": "ap-northeast-1",
}


def keep_line(line: str) -> bool:
    """Cheap prefilter while streaming: the line mentions a p/g/gr instance type."""
    return _GPU_TYPE.search(line) is not None


@dataclass(frozen=True, slots=True)
class OnDemandRow:
    """A filtered price-list row (Linux, shared, on-demand)."""

    instance_type: str
    region: str
    price: str
    vcpus: float | None
    ram_gib: float | None
    disk_gb: float | None
    gpu_count: float | None
    #: the ``GPU Memory`` column in GiB (``None`` when ``NA``)
    gpu_memory_gib: float | None = None
    #: the ``Network Performance`` column as written (``3200 Gigabit``, ``Up to 25 Gigabit``)
    network: str | None = None


def _number(text: str | None, pattern: re.Pattern[str] | None = None) -> float | None:
    if not text:
        return None
    if pattern is not None:
        m = pattern.search(text)
        if not m:
            return None
        text = m.group(1)
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _disk_gb(storage: str | None) -> float | None:
    m = _STORAGE.search(storage or "")
    if not m:
        return None  # "EBS only"
    return float(m.group(1)) * float(m.group(2).replace(",", ""))


def parse_price_list(lines: Iterable[str], result: ScrapeResult | None = None) -> list[OnDemandRow]:
    """Price-list CSV lines (preamble, header, rows; may be prefiltered) → GPU rows (pure).

    A family with GPUs that :data:`AWS_FAMILIES` does not know is reported in ``result``
    (its model is unknown, so it is not stored).

    Raises:
        ScraperError: no header line (``"SKU",…``) or a required column is missing.
    """
    header: dict[str, int] | None = None
    rows: list[OnDemandRow] = []
    unknown: set[str] = set()
    for line in lines:
        if header is None:
            if line.startswith(('"SKU"', "SKU,")):
                names = next(csv.reader([line]))
                header = {name: i for i, name in enumerate(names)}
                missing = {"Instance Type", "TermType", "PricePerUnit"} - header.keys()
                if missing:
                    raise ScraperError(f"aws price list: header lacks {sorted(missing)}")
            continue
        if not keep_line(line):
            continue
        fields = next(csv.reader([line]), [])
        if len(fields) < len(header):
            continue
        row = {name: fields[i].strip() for name, i in header.items()}

        def col(name: str, row: dict[str, str] = row) -> str:
            return row.get(name, "")

        if (
            col("TermType") != "OnDemand"
            or col("Unit") not in ("", "Hrs")
            or col("Currency") not in ("", "USD")
            or col("Tenancy") not in ("", "Shared")
            or col("Operating System") not in ("", "Linux")
            or col("CapacityStatus") not in ("", "Used")
            or col("Pre Installed S/W") not in ("", "NA")
            or col("MarketOption") not in ("", "OnDemand")
            or not col("Product Family").startswith("Compute Instance")
        ):
            continue
        instance_type = col("Instance Type")
        family = instance_type.split(".")[0]
        if family not in AWS_FAMILIES:
            if (_number(col("GPU")) or 0) > 0:
                unknown.add(family)
            continue
        rows.append(
            OnDemandRow(
                instance_type=instance_type,
                region=col("Region Code"),
                price=col("PricePerUnit"),
                vcpus=_number(col("vCPU")),
                ram_gib=_number(col("Memory"), _MEMORY),
                disk_gb=_disk_gb(col("Storage")),
                gpu_count=_number(col("GPU")),
                gpu_memory_gib=_number(col("GPU Memory"), _MEMORY),
                network=col("Network Performance") or None,
            )
        )
    if header is None:
        raise ScraperError('aws price list: no CSV header line ("SKU",…) found')
    for family in sorted(unknown):
        if result is not None:
            result.warn(
                f"aws instance family {family} has GPUs but is not in AWS_FAMILIES "
                "(GPU model unknown): not stored"
            )
    return rows


class _SpotValue(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    prices: dict[str, str | None] = {}


class _SpotSize(BaseModel):
    model_config = ConfigDict(extra="ignore")
    size: str
    valueColumns: list[_SpotValue] = []


class _SpotType(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str | None = None
    sizes: list[_SpotSize] = []


class _SpotRegion(BaseModel):
    model_config = ConfigDict(extra="ignore")
    region: str
    instanceTypes: list[dict[str, Any]] = []


class _SpotConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")
    regions: list[_SpotRegion]


class SpotFeed(BaseModel):
    """``{"vers": …, "config": {"rate": "perhr", "regions": [...]}}``."""

    model_config = ConfigDict(extra="ignore")
    config: _SpotConfig


def parse_spot(payload: Any, result: ScrapeResult) -> dict[tuple[str, str], str]:
    """spot.json → ``{(region, instance type): linux USD price string}`` (pure).

    Raises:
        ScraperError: no ``config.regions``.
    """
    feed = validate_payload(SpotFeed, payload, "aws spot feed")
    prices: dict[tuple[str, str], str] = {}
    for region in feed.config.regions:
        name = _SPOT_REGION_ALIASES.get(region.region, region.region)
        for itype in validate_rows(
            _SpotType, region.instanceTypes, "aws spot instanceTypes", result
        ):
            for size in itype.sizes:
                if size.size.split(".")[0] not in AWS_FAMILIES:
                    continue
                for column in size.valueColumns:
                    if column.name == "linux" and column.prices.get("USD"):
                        prices[(name, size.size)] = column.prices["USD"] or ""
    return prices


def decode_spot(text: str) -> Any:
    """The spot feed as JSON (it may come wrapped as ``callback(...);``).

    Raises:
        ScraperError: not JSON.
    """
    body = text.strip()
    if body.startswith("callback("):
        body = body[len("callback(") :].rstrip(";").rstrip(")")
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise ScraperError(
            f"aws spot feed: malformed JSON ({exc.msg}); body starts {body[:60]!r}"
        ) from exc


def build_offers(
    rows: list[OnDemandRow],
    spot: dict[tuple[str, str], str],
    *,
    price_list_base: str,
    spot_source: str,
    result: ScrapeResult | None = None,
) -> ScrapeResult:
    """On-demand rows + spot prices → offers (pure); sources are the URLs read."""
    result = result or ScrapeResult()
    for row in rows:
        family = AWS_FAMILIES[row.instance_type.split(".")[0]]
        count = row.gpu_count
        if not count or count <= 0:
            result.warn(f"aws {row.instance_type} {row.region}: no GPU count; skipped")
            continue
        if family.fractional:
            share = count if count < 1 else card_share(row.gpu_memory_gib, family.vram_gib)
            if share is None:
                result.warn(
                    f"aws {row.instance_type} {row.region}: a slice of one {family.gpu} whose "
                    "share the price list does not give (GPU Memory missing); skipped"
                )
                continue
            count = share
        common: dict[str, Any] = {
            "provider": "aws",
            "offer_key": row.instance_type,
            "instance_type": row.instance_type,
            "region": row.region or "unknown",
            "gpu_name_raw": family.gpu,
            "gpu_count": count,
            "vram_gib_per_gpu": family.vram_gib,
            "vcpus": positive(row.vcpus),
            "ram_gib": positive(row.ram_gib),
            "disk_gb": row.disk_gb,
            "interconnect": family.interconnect if count > 1 else None,
            "network_gbps": network_gbps(row.network),
            "currency": "USD",
        }
        build_offer(
            result,
            f"aws {row.instance_type} {row.region}",
            billing="on_demand",
            price_per_hour=to_price(row.price),
            source=price_list_url(price_list_base, row.region),
            notes="public price list; GPU model from the family table"
            + (f"; {count:g} of one {family.gpu}" if count < 1 else ""),
            **common,
        )
        spot_price = to_price(spot.get((row.region, row.instance_type)))
        if spot_price is not None:
            build_offer(
                result,
                f"aws {row.instance_type} {row.region} spot",
                billing="spot",
                price_per_hour=spot_price,
                source=spot_source,
                notes="spot.json linux price for the region",
                **common,
            )
    return result


def price_list_url(base: str, region: str) -> str:
    """The per-region on-demand CSV (the host is us-east-1 for every region)."""
    return f"{base.rstrip('/')}/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"


async def fetch_region(http: Http, url: str, result: ScrapeResult) -> list[OnDemandRow]:
    """Stream one region's CSV, keeping the preamble, the header and GPU lines."""
    kept: list[str] = []
    async with http.stream_lines(url, headers={"Accept": "text/csv"}) as lines:
        head = 0
        async for line in lines:
            if head < 8 or keep_line(line):
                kept.append(line)
            head += 1
    return parse_price_list(kept, result)


async def fetch_offers(http: Http, settings: ScraperSettings) -> ScrapeResult:
    """Price lists of ``aws_regions`` plus the spot feed → offers.

    Raises:
        ScraperError: any download failed or was malformed.
    """
    result = ScrapeResult()
    spot_response = await http.request("GET", settings.aws_spot_url)
    spot = parse_spot(decode_spot(spot_response.text), result)
    rows: list[OnDemandRow] = []

    async def one(region: str) -> ScrapeResult:
        part = ScrapeResult()
        rows.extend(await fetch_region(http, price_list_url(settings.aws_url, region), part))
        return part

    result.extend(await gather_parts((one(r) for r in settings.aws_regions), http.concurrency))
    return build_offers(
        rows,
        spot,
        price_list_base=settings.aws_url,
        spot_source=settings.aws_spot_url,
        result=result,
    )


SCRAPER = Scraper(
    slug="aws",
    name="Amazon Web Services",
    homepage_url="https://aws.amazon.com",
    kind="cloud",
    docs_url=DOCS_URL,
    fetch=fetch_offers,
)
