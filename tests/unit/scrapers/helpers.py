"""Helpers for the scraper tests: fixtures, settings and a fetch through a MockTransport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from scrapers.base import Scraper, ScrapeResult
from scrapers.http import make_client, make_http
from scrapers.settings import ScraperSettings
from tests.fake_providers import FIXTURES, FakeProviders, scraper_env


def load(relative: str) -> Any:
    """A recorded JSON fixture."""
    return json.loads((FIXTURES / relative).read_text(encoding="utf-8"))


def settings(**overrides: Any) -> ScraperSettings:
    """Settings pointing at the fake providers (``http://fake``), overrides win."""
    env = {
        k.removeprefix("GPUCOST_SCRAPER_").lower(): v for k, v in scraper_env("http://fake").items()
    }
    env.update(overrides)
    return ScraperSettings(**env)


def fetch(scraper: Scraper, fake: FakeProviders | None = None, **overrides: Any) -> ScrapeResult:
    """Run ``scraper.fetch`` against the fake providers through ``httpx.MockTransport``."""
    fake = fake or FakeProviders()
    s = settings(**overrides)

    async def run() -> ScrapeResult:
        async with make_client(s, fake.transport()) as client:
            return await scraper.fetch(make_http(s, client), s)

    return asyncio.run(run())
