"""What every provider module provides: a :class:`Scraper` entry and a :class:`ScrapeResult`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from scrapers.http import Http, ScraperError
from scrapers.records import ScrapedOffer, SourceKind
from scrapers.settings import ScraperSettings

#: How many skipped-row messages a result keeps (the count is always complete).
MAX_WARNINGS = 50


@dataclass
class ScrapeResult:
    """Offers of one provider for one run, and what was skipped on the way (human-readable)."""

    offers: list[ScrapedOffer] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0

    def warn(self, message: str) -> None:
        """Record a skipped row or other oddity (kept up to :data:`MAX_WARNINGS`)."""
        self.skipped += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)

    def extend(self, other: ScrapeResult) -> None:
        """Merge another partial result into this one."""
        self.offers.extend(other.offers)
        self.skipped += other.skipped
        room = MAX_WARNINGS - len(self.warnings)
        self.warnings.extend(other.warnings[: max(room, 0)])


async def gather_parts(
    parts: Iterable[Coroutine[Any, Any, ScrapeResult]], limit: int = 4
) -> ScrapeResult:
    """Run partial fetches, ``limit`` at a time, and merge them in order.

    The first failure cancels the rest and is raised (a provider is all or nothing).
    """
    gate = asyncio.Semaphore(limit)

    async def gated(part: Coroutine[Any, Any, ScrapeResult]) -> ScrapeResult:
        async with gate:
            return await part

    pending = list(parts)
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(gated(p)) for p in pending]
    except* Exception as eg:
        for part in pending:
            part.close()  # parts cancelled before they started (no "never awaited" warning)
        raise eg.exceptions[0] from None
    result = ScrapeResult()
    for task in tasks:
        result.extend(task.result())
    return result


FetchFn = Callable[[Http, ScraperSettings], Awaitable[ScrapeResult]]


class ParseFn(Protocol):
    """A provider's pure parser: one JSON answer → offers, ``source`` the URL it came from."""

    def __call__(self, payload: Any, *, source: str) -> ScrapeResult: ...


@dataclass(frozen=True, slots=True)
class Scraper:
    """A provider's scraper as the registry lists it.

    ``slug`` matches the provider slug of the seed data (``vast``, ``runpod`` …);
    ``needs_api_key`` providers are skipped, with a message, when their key is not set.
    """

    slug: str
    name: str
    homepage_url: str
    kind: str
    docs_url: str
    fetch: FetchFn
    needs_api_key: bool = False
    #: Other settings that must be set with the key (Verda's OAuth ``verda_client_id``).
    required_settings: tuple[str, ...] = ()
    #: Where the offers come from: ``api`` (the provider's own API, first-hand) or
    #: ``catalog`` (a maintained public catalog, :mod:`scrapers.catalogs`).
    source_kind: SourceKind = "api"
    #: What runs instead when the credentials are missing (a public-catalog loader), if any.
    fallback: Scraper | None = None

    def missing_credentials(self, settings: ScraperSettings) -> str | None:
        """Why this scraper cannot run with ``settings`` (a sentence), or ``None`` when it can."""
        missing = [
            f"GPUCOST_SCRAPER_{name.upper()}"
            for name in self.required_settings
            if not str(getattr(settings, name, None) or "").strip()
        ]
        if self.needs_api_key and not settings.api_key(self.slug):
            missing.insert(0, f"GPUCOST_SCRAPER_{self.slug.upper()}_API_KEY")
        return f"no API key: set {' and '.join(missing)}" if missing else None


def require_key(settings: ScraperSettings, slug: str) -> str:
    """The provider's API key (``GPUCOST_SCRAPER_<SLUG>_API_KEY``).

    Raises:
        ScraperError: it is not set (the refresh skips such providers before fetching; this
            guards a direct call).
    """
    key = settings.api_key(slug)
    if not key:
        raise ScraperError(f"{slug}: no API key (set GPUCOST_SCRAPER_{slug.upper()}_API_KEY)")
    return key


def key_header(settings: ScraperSettings, slug: str, header: str) -> dict[str, str]:
    """The request header that carries the provider's API key.

    ``Authorization`` carries ``Bearer <key>``; any other header (``api-key``, ``X-API-KEY``)
    the bare key.

    Raises:
        ScraperError: the key is not set (see :func:`require_key`).
    """
    key = require_key(settings, slug)
    return {header: f"Bearer {key}" if header == "Authorization" else key}


def keyed_json_fetch(
    slug: str, path: str, parse: ParseFn, header: str = "Authorization"
) -> FetchFn:
    """The fetch of a provider answered by one GET with its API key in a header.

    The fetch GETs ``settings.<slug>_url`` + ``path`` with :func:`key_header` and returns
    ``parse(payload, source=url)``; it raises :class:`ScraperError` when the key is not set,
    the request failed or the answer is not what ``parse`` expects (the refresh then skips
    the provider for this run and keeps what is stored).
    """

    async def fetch(http: Http, settings: ScraperSettings) -> ScrapeResult:
        headers = key_header(settings, slug, header)
        url = str(getattr(settings, f"{slug}_url")).rstrip("/") + path
        return parse(await http.json("GET", url, headers=headers), source=url)

    return fetch


def keyed_scraper(
    slug: str,
    name: str,
    homepage_url: str,
    kind: str,
    docs_url: str,
    *,
    path: str,
    parse: ParseFn,
    header: str = "Authorization",
) -> Scraper:
    """The :class:`Scraper` of a provider answered by one GET with its API key in a header:
    :func:`keyed_json_fetch` of ``path`` and ``parse``, skipped while the key is not set."""
    fetch = keyed_json_fetch(slug, path, parse, header)
    return Scraper(slug, name, homepage_url, kind, docs_url, fetch, needs_api_key=True)


async def fetch_pages(
    http: Http,
    url: str,
    params: dict[str, str],
    next_params: Callable[[Any], dict[str, str] | None],
    *,
    max_pages: int,
    too_many: str,
) -> list[Any]:
    """Every page of a cursor-paged JSON list (Vultr ``meta.links.next``, GCP ``pageToken``).

    GETs ``url`` with ``params``, then with ``params`` and ``next_params(page)`` for as long as
    that names a next page (``None`` or empty: the last page). Pages are returned raw.

    Raises:
        ScraperError: a page failed or answered garbage (``next_params`` validates it), or
            there are more than ``max_pages`` pages (message ``too_many``): a truncated list is
            never returned.
    """
    pages: list[Any] = []
    query = dict(params)
    while len(pages) < max_pages:
        page = await http.json("GET", url, params=query)
        pages.append(page)
        following = next_params(page)
        if not following:
            return pages
        query = {**params, **following}
    raise ScraperError(too_many)
