"""The one shared HTTP client of the scrapers: timeouts, User-Agent, retries with back-off.

Retries (tenacity) cover HTTP 429 and 5xx answers, timeouts and connection errors; the wait
doubles from ``backoff_s`` up to ``backoff_max_s`` and a numeric ``Retry-After`` header wins
(capped by the same maximum). Anything else that goes wrong (another 4xx, malformed JSON, the
last failed attempt) becomes a :class:`ScraperError` whose message says what happened; the
refresh job records it and skips that provider for this run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from scrapers.settings import ScraperSettings


class ScraperError(Exception):
    """A provider could not be scraped this run (the message says why; no secrets in it)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts per request and the exponential back-off between them (seconds)."""

    attempts: int = 4
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0


class _RetryableStatus(Exception):
    def __init__(self, response: httpx.Response):
        super().__init__(f"HTTP {response.status_code}")
        self.status_code = response.status_code
        self.retry_after = _retry_after(response)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "").strip()
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to the exponential wait


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, _RetryableStatus | httpx.TransportError)


def _retryable_status(status: int) -> bool:
    return status == 429 or 500 <= status <= 599


class Http:
    """An ``httpx.AsyncClient`` plus the retry policy; what every ``fetch_offers`` receives.

    Args:
        client: the shared client (see :func:`make_client`); the caller closes it.
        retry: attempts and back-off.
        concurrency: parallel requests a single provider may make.
    """

    def __init__(
        self, client: httpx.AsyncClient, retry: RetryPolicy | None = None, concurrency: int = 4
    ):
        self.client = client
        self.retry = retry or RetryPolicy()
        self.concurrency = concurrency

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        cap = self.retry.backoff_max_s
        if isinstance(exc, _RetryableStatus) and exc.retry_after is not None:
            return min(exc.retry_after, cap)
        return min(self.retry.backoff_s * 2.0 ** (state.attempt_number - 1), cap)

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(
            stop=stop_after_attempt(self.retry.attempts),
            wait=self._wait,
            retry=retry_if_exception(_is_retryable),
            reraise=True,
        )

    def _failure(self, method: str, url: str, exc: Exception) -> ScraperError:
        tries = f"after {self.retry.attempts} attempt{'s' if self.retry.attempts > 1 else ''}"
        if isinstance(exc, _RetryableStatus):
            return ScraperError(f"{method} {url}: HTTP {exc.status_code} {tries}")
        if isinstance(exc, httpx.TimeoutException):
            return ScraperError(f"{method} {url}: timed out {tries} ({type(exc).__name__})")
        return ScraperError(
            f"{method} {url}: connection failed {tries}: {type(exc).__name__}: {exc}"
        )

    @staticmethod
    def _check(method: str, url: str, response: httpx.Response, body: str) -> None:
        if response.status_code >= 400:
            snippet = " ".join(body.split())[:200]
            raise ScraperError(f"{method} {url}: HTTP {response.status_code}: {snippet}")

    async def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send a request with retries; returns a successful (< 400) response.

        Raises:
            ScraperError: non-retryable status, or every attempt failed.
        """
        try:
            async for attempt in self._retrying():
                with attempt:
                    response = await self.client.request(method, url, **kwargs)
                    if _retryable_status(response.status_code):
                        raise _RetryableStatus(response)
        except (_RetryableStatus, httpx.TransportError) as exc:
            raise self._failure(method, url, exc) from exc
        self._check(method, url, response, response.text)
        return response

    async def json(self, method: str, url: str, **kwargs: Any) -> Any:
        """:meth:`request` and decode the JSON body.

        Raises:
            ScraperError: as :meth:`request`, or the body is not JSON.
        """
        response = await self.request(method, url, **kwargs)
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            snippet = " ".join(response.text.split())[:80]
            raise ScraperError(
                f"{method} {url}: malformed JSON ({reason}); body starts {snippet!r}"
            ) from exc

    @asynccontextmanager
    async def stream_lines(self, url: str, **kwargs: Any) -> AsyncIterator[AsyncIterator[str]]:
        """GET ``url`` and yield an async iterator over its text lines (for large files).

        Opening the response is retried like :meth:`request`; an error while reading the body
        propagates (the provider fails for this run).
        """
        try:
            async for attempt in self._retrying():
                with attempt:
                    request = self.client.build_request("GET", url, **kwargs)
                    response = await self.client.send(request, stream=True)
                    if _retryable_status(response.status_code):
                        await response.aclose()
                        raise _RetryableStatus(response)
        except (_RetryableStatus, httpx.TransportError) as exc:
            raise self._failure("GET", url, exc) from exc
        try:
            if response.status_code >= 400:
                await response.aread()
                self._check("GET", url, response, response.text)
            yield response.aiter_lines()
        except httpx.TransportError as exc:
            raise ScraperError(
                f"GET {url}: connection failed while reading: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            await response.aclose()


def make_client(
    settings: ScraperSettings, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """The shared ``httpx.AsyncClient``: timeouts, User-Agent, connection limits.

    ``transport`` replaces the network (``httpx.MockTransport`` in tests).
    """
    return httpx.AsyncClient(
        timeout=httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
        headers={"User-Agent": settings.user_agent, "Accept": "application/json"},
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
        follow_redirects=True,
        transport=transport,
    )


def make_http(settings: ScraperSettings, client: httpx.AsyncClient) -> Http:
    """:class:`Http` over ``client`` with the retry policy and concurrency of ``settings``."""
    return Http(
        client,
        RetryPolicy(settings.retries, settings.backoff_s, settings.backoff_max_s),
        settings.concurrency,
    )
