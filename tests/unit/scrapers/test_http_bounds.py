"""Body-size caps and redacted messages of the shared HTTP client (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from scrapers.http import BodyLimits, Http, RetryPolicy, ScraperError


def run(handler: Callable[[httpx.Request], httpx.Response], go: Any, **limits: int) -> Any:
    async def main() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            http = Http(
                client, RetryPolicy(attempts=1), limits=BodyLimits(**limits), secrets=["s3cr3t-key"]
            )
            return await go(http)

    return asyncio.run(main())


def chunks(n: int, size: int, pulled: list[int], line: bytes = b"") -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        for _ in range(n):
            pulled.append(size)
            yield (line * (size // len(line))) if line else b" " * size

    return gen()


def test_buffered_body_is_cut_at_the_cap() -> None:
    pulled: list[int] = []
    handler = lambda r: httpx.Response(200, content=chunks(100, 1000, pulled))  # noqa: E731
    with pytest.raises(ScraperError, match="larger than the cap"):
        run(handler, lambda h: h.json("GET", "http://x/a"), buffered=10_000)
    assert sum(pulled) <= 11_000  # stopped one chunk past the cap, not after 100 kB


def test_declared_length_over_the_cap_is_refused_before_reading() -> None:
    handler = lambda r: httpx.Response(200, content=b"{}" + b" " * 5000)  # noqa: E731
    with pytest.raises(ScraperError, match="body of 5002 bytes"):
        run(handler, lambda h: h.json("GET", "http://x/a"), buffered=1000)


def test_body_under_the_cap_decodes() -> None:
    handler = lambda r: httpx.Response(200, json={"a": [1, 2]})  # noqa: E731
    assert run(handler, lambda h: h.json("GET", "http://x/a"), buffered=1000) == {"a": [1, 2]}


def test_stream_lines_split_across_chunks_and_capped() -> None:
    async def lines(h: Http) -> list[str]:
        async with h.stream_lines("http://x/f.csv") as it:
            return [line async for line in it]

    body = [b"a,b\r\n1,", b"2\n3,4", b"\n5,6"]

    async def gen() -> AsyncIterator[bytes]:
        for part in body:
            yield part

    assert run(lambda r: httpx.Response(200, content=gen()), lines) == ["a,b", "1,2", "3,4", "5,6"]
    pulled: list[int] = []
    with pytest.raises(ScraperError, match="streamed body larger than the cap"):
        run(
            lambda r: httpx.Response(200, content=chunks(100, 1024, pulled, b"x" * 63 + b"\n")),
            lines,
            streamed=4096,
        )
    assert sum(pulled) <= 5 * 1024
    with pytest.raises(ScraperError, match="a line longer than 2048"):
        run(lambda r: httpx.Response(200, content=chunks(100, 1024, [])), lines, line=2048)


def test_error_messages_are_redacted() -> None:
    body = b'{"detail": "bad key s3cr3t-key", "echo": "Authorization: Bearer s3cr3t-key"}'
    handler = lambda r: httpx.Response(401, content=body)  # noqa: E731
    with pytest.raises(ScraperError) as info:
        run(handler, lambda h: h.json("GET", "http://x/a?api_key=s3cr3t-key"))
    message = str(info.value)
    assert "s3cr3t-key" not in message and "HTTP 401" in message and "api_key=[REDACTED]" in message
