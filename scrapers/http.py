"""The one shared HTTP client of the scrapers: timeouts, User-Agent, retries with back-off.

Retries (tenacity) cover HTTP 429 and 5xx answers, timeouts and connection errors; the wait
doubles from ``backoff_s`` up to ``backoff_max_s`` and a numeric ``Retry-After`` header wins
(capped by the same maximum). Anything else that goes wrong (another 4xx, malformed JSON, the
last failed attempt) becomes a :class:`ScraperError` whose message says what happened; the
refresh job records it and skips that provider for this run.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from scrapers.redact import redact
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


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """Caps on what one response may make us read (bytes).

    ``buffered``: a body read whole into memory (JSON answers); ``streamed``: a body parsed
    line by line (:meth:`Http.stream_lines`); ``line``: the longest line a stream may have.
    """

    buffered: int = 64 * 2**20
    streamed: int = 8 * 2**30
    line: int = 2**20


class Http:
    """An ``httpx.AsyncClient`` plus the retry policy; what every ``fetch_offers`` receives.

    Args:
        client: the shared client (see :func:`make_client`); the caller closes it.
        retry: attempts and back-off.
        concurrency: parallel requests a single provider may make.
        limits: body-size caps; a larger body aborts the read (the provider fails this run).
        secrets: credential values masked in every error message (besides the patterns of
            :func:`scrapers.redact.redact`).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        retry: RetryPolicy | None = None,
        concurrency: int = 4,
        limits: BodyLimits | None = None,
        secrets: Sequence[str] = (),
    ):
        self.client = client
        self.retry = retry or RetryPolicy()
        self.concurrency = concurrency
        self.limits = limits or BodyLimits()
        self.secrets = tuple(secrets)

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

    def error(self, message: str) -> ScraperError:
        """A :class:`ScraperError` whose message is redacted (URLs, echoed keys, headers)."""
        return ScraperError(redact(message, self.secrets))

    def _failure(self, method: str, url: str, exc: Exception) -> ScraperError:
        tries = f"after {self.retry.attempts} attempt{'s' if self.retry.attempts > 1 else ''}"
        if isinstance(exc, _RetryableStatus):
            return self.error(f"{method} {url}: HTTP {exc.status_code} {tries}")
        if isinstance(exc, httpx.TimeoutException):
            return self.error(f"{method} {url}: timed out {tries} ({type(exc).__name__})")
        return self.error(f"{method} {url}: connection failed {tries}: {type(exc).__name__}: {exc}")

    def _check(self, method: str, url: str, response: httpx.Response, body: str) -> None:
        if response.status_code >= 400:
            snippet = " ".join((redact(body, self.secrets) or "").split())[:200]
            raise self.error(f"{method} {url}: HTTP {response.status_code}: {snippet}")

    def _too_large(self, method: str, url: str, read: int, cap: int, what: str) -> ScraperError:
        return self.error(
            f"{method} {url}: {what} larger than the cap of {cap / 2**20:.0f} MiB "
            f"(aborted after {read / 2**20:.1f} MiB; GPUCOST_SCRAPER_MAX_RESPONSE_MB / "
            "MAX_STREAM_MB); provider skipped, stored offers kept"
        )

    async def _open(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send with retries and return the streamed (unread) response of the last attempt."""
        try:
            async for attempt in self._retrying():
                with attempt:
                    request = self.client.build_request(method, url, **kwargs)
                    response = await self.client.send(request, stream=True)
                    if _retryable_status(response.status_code):
                        await response.aclose()
                        raise _RetryableStatus(response)
        except (_RetryableStatus, httpx.TransportError) as exc:
            raise self._failure(method, url, exc) from exc
        return response

    async def _read_capped(self, method: str, url: str, response: httpx.Response) -> bytes:
        """The whole (decoded) body, aborting as soon as it passes ``limits.buffered``."""
        cap = self.limits.buffered
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            raise self._too_large(method, url, 0, cap, f"body of {int(declared)} bytes")
        chunks: list[bytes] = []
        read = 0
        try:
            async for chunk in response.aiter_bytes():
                read += len(chunk)
                if read > cap:
                    raise self._too_large(method, url, read, cap, "body")
                chunks.append(chunk)
        except httpx.TransportError as exc:
            raise self.error(
                f"{method} {url}: connection failed while reading: {type(exc).__name__}: {exc}"
            ) from exc
        return b"".join(chunks)

    async def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send a request with retries; returns a successful (< 400), fully read response.

        The body is streamed and the read aborted past ``limits.buffered`` bytes.

        Raises:
            ScraperError: non-retryable status, every attempt failed, or the body is too large.
        """
        response = await self._open(method, url, **kwargs)
        try:
            body = await self._read_capped(method, url, response)
        finally:
            await response.aclose()
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        full = httpx.Response(
            response.status_code, headers=headers, content=body, request=response.request
        )
        self._check(method, url, full, full.text)
        return full

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
            raise self.error(
                f"{method} {url}: malformed JSON ({reason}); body starts {snippet!r}"
            ) from exc

    async def _lines(self, url: str, response: httpx.Response) -> AsyncIterator[str]:
        """The body's text lines, within ``limits.streamed`` bytes and ``limits.line`` per line."""
        decoder = codecs.getincrementaldecoder(response.encoding or "utf-8")(errors="replace")
        read, pending = 0, ""
        async for chunk in response.aiter_bytes():
            read += len(chunk)
            if read > self.limits.streamed:
                raise self._too_large("GET", url, read, self.limits.streamed, "streamed body")
            pending += decoder.decode(chunk)
            if "\n" in pending:
                *complete, pending = pending.split("\n")
                for line in complete:
                    yield line.removesuffix("\r")
            if len(pending) > self.limits.line:
                raise self.error(
                    f"GET {url}: a line longer than {self.limits.line} characters; "
                    "provider skipped, stored offers kept"
                )
        pending += decoder.decode(b"", final=True)
        if pending:
            yield pending.removesuffix("\r")

    @asynccontextmanager
    async def stream_lines(self, url: str, **kwargs: Any) -> AsyncIterator[AsyncIterator[str]]:
        """GET ``url`` and yield an async iterator over its text lines (for large files).

        Opening the response is retried like :meth:`request`; an error while reading the body,
        a body past ``limits.streamed`` or a line past ``limits.line`` raises
        :class:`ScraperError` (the provider fails for this run). Memory stays at one line.
        """
        response = await self._open("GET", url, **kwargs)
        try:
            if response.status_code >= 400:
                body = await self._read_capped("GET", url, response)
                self._check("GET", url, response, body.decode(errors="replace"))
            yield self._lines(url, response)
        except httpx.TransportError as exc:
            raise self.error(
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
        BodyLimits(
            buffered=int(settings.max_response_mb * 2**20),
            streamed=int(settings.max_stream_mb * 2**20),
            line=int(settings.max_line_kb * 2**10),
        ),
        settings.secret_values(),
    )
