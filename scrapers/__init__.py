"""Provider scrapers: one module per provider, an explicit registry, no database access.

Each provider module has (a) pydantic models of the provider's raw payload (extra fields
ignored, optional fields optional), (b) a pure ``parse_*`` function from payload to
:class:`scrapers.records.ScrapedOffer` records and (c) ``fetch_offers(http, settings)`` that
makes the HTTP calls through the shared :class:`scrapers.http.Http` client. This package never
imports ``app``: the app's ingest layer maps the raw GPU names to the catalog and stores rows.
"""

from __future__ import annotations

from scrapers import aws, azure, lambda_cloud, runpod, vast, vultr
from scrapers.base import Scraper, ScrapeResult
from scrapers.http import ScraperError
from scrapers.records import ScrapedOffer

#: Every scraper by provider slug (the slugs of ``seed_data/providers.csv``).
SCRAPERS: dict[str, Scraper] = {
    s.slug: s
    for s in (
        vast.SCRAPER,
        runpod.SCRAPER,
        azure.SCRAPER,
        aws.SCRAPER,
        lambda_cloud.SCRAPER,
        vultr.SCRAPER,
    )
}

__all__ = ["SCRAPERS", "ScrapeResult", "ScrapedOffer", "Scraper", "ScraperError"]
