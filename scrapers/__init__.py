"""Provider scrapers: one module per provider, an explicit registry, no database access.

Each provider module has (a) pydantic models of the provider's raw payload (extra fields
ignored, optional fields optional), (b) a pure ``parse_*`` function from payload to
:class:`scrapers.records.ScrapedOffer` records and (c) ``fetch_offers(http, settings)`` that
makes the HTTP calls through the shared :class:`scrapers.http.Http` client. This package never
imports ``app``: the app's ingest layer maps the raw GPU names to the catalog and stores rows.

:data:`SCRAPERS` lists first-hand API scrapers (``source_kind = "api"``) and, for providers
with no API gpucost calls, public-catalog loaders (``"catalog"``, :mod:`scrapers.catalogs`);
an API scraper that needs a key may carry a catalog ``fallback`` that runs when the key is not
set.
"""

from __future__ import annotations

from dataclasses import replace

from scrapers import (
    aws,
    azure,
    fluidstack,
    gcp,
    hyperstack,
    lambda_cloud,
    oci,
    runpod,
    shadeform,
    tensordock,
    vast,
    verda,
    vultr,
)
from scrapers.base import Scraper, ScrapeResult
from scrapers.catalogs import CATALOG_SOURCES, catalog_scraper
from scrapers.http import ScraperError
from scrapers.records import ScrapedOffer


def _with_fallback(scraper: Scraper) -> Scraper:
    """``scraper`` with its public-catalog fallback attached, when it needs credentials and a
    catalog covers its provider."""
    needs = scraper.needs_api_key or scraper.required_settings
    if scraper.source_kind != "api" or not needs or scraper.slug not in CATALOG_SOURCES:
        return scraper
    fallback = catalog_scraper(scraper.slug, scraper.name, scraper.homepage_url, scraper.kind)
    return replace(scraper, fallback=fallback)


#: Every scraper by provider slug (the slugs of ``seed_data/providers*.csv``).
SCRAPERS: dict[str, Scraper] = {
    s.slug: _with_fallback(s)
    for s in (
        vast.SCRAPER,
        runpod.SCRAPER,
        azure.SCRAPER,
        aws.SCRAPER,
        lambda_cloud.SCRAPER,
        vultr.SCRAPER,
        gcp.SCRAPER,
        oci.SCRAPER,
        tensordock.SCRAPER,
        verda.SCRAPER,
        hyperstack.SCRAPER,
        fluidstack.SCRAPER,
        shadeform.SCRAPER,
        catalog_scraper("nebius", "Nebius", "https://nebius.com"),
        catalog_scraper("cloudrift", "CloudRift", "https://www.cloudrift.ai", "marketplace"),
        catalog_scraper("cudo", "Cudo Compute", "https://www.cudocompute.com"),
    )
}

__all__ = ["SCRAPERS", "ScrapeResult", "ScrapedOffer", "Scraper", "ScraperError"]
