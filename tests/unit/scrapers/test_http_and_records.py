"""The shared HTTP client (retries, errors), the record helpers, settings and package rules."""

from __future__ import annotations

import ast
import asyncio
import re
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

import scrapers
from scrapers.http import Http, RetryPolicy, ScraperError, make_client
from scrapers.records import ScrapedOffer, to_price
from scrapers.settings import ScraperSettings


def call(handler, attempts: int = 3, max_wait: float = 0):  # type: ignore[no-untyped-def]
    calls: list[httpx.Request] = []

    def counting(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return handler(request, len(calls))

    async def run():  # type: ignore[no-untyped-def]
        async with make_client(ScraperSettings(), httpx.MockTransport(counting)) as client:
            http = Http(client, RetryPolicy(attempts=attempts, backoff_s=0, backoff_max_s=max_wait))
            return await http.json("GET", "http://p.test/x")

    return asyncio.run(run()), calls


def test_429_then_success_is_retried() -> None:
    def handler(request, n):  # type: ignore[no-untyped-def]
        if n == 1:
            return httpx.Response(429, headers={"Retry-After": "0"})
        return httpx.Response(200, json={"ok": True})

    body, calls = call(handler)
    assert body == {"ok": True} and len(calls) == 2
    assert calls[0].headers["User-Agent"].startswith("gpucost-refresh/")


def test_retry_after_is_honoured() -> None:
    import time

    def handler(request, n):  # type: ignore[no-untyped-def]
        if n == 1:
            return httpx.Response(503, headers={"Retry-After": "0.2"})
        return httpx.Response(200, json={})

    started = time.monotonic()
    assert call(handler, max_wait=5)[0] == {}
    assert time.monotonic() - started >= 0.2
    started = time.monotonic()
    assert call(handler, max_wait=0)[0] == {}  # capped by backoff_max_s
    assert time.monotonic() - started < 0.2


def test_500_every_time_fails_after_all_attempts() -> None:
    with pytest.raises(ScraperError, match="HTTP 500 after 3 attempts"):
        call(lambda r, n: httpx.Response(500))


def test_timeouts_and_connection_errors_are_retried_then_reported() -> None:
    def timeout(request, n):  # type: ignore[no-untyped-def]
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(ScraperError, match="timed out after 2 attempts"):
        call(timeout, attempts=2)

    def refused(request, n):  # type: ignore[no-untyped-def]
        if n < 2:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json=[1])

    assert call(refused)[0] == [1]


def test_other_client_errors_are_not_retried() -> None:
    with pytest.raises(ScraperError, match="HTTP 404"):
        call(lambda r, n: httpx.Response(404, text="nope"))


def test_malformed_json_is_a_scraper_error() -> None:
    with pytest.raises(ScraperError, match="malformed JSON"):
        call(lambda r, n: httpx.Response(200, text="<html>oops"))


@pytest.mark.parametrize(
    ("value", "kwargs", "expected"),
    [
        (None, {}, None),
        ("N/A*", {}, None),
        (0, {}, None),
        ("0.0000", {}, None),
        (-1, {}, None),
        (float("nan"), {}, None),
        (True, {}, None),
        ("0.0615", {}, Decimal("0.0615")),
        (149, {"cents": True}, Decimal("1.49")),
        (2.69, {"multiplier": 2}, Decimal("5.38")),
    ],
)
def test_to_price(value, kwargs, expected) -> None:  # type: ignore[no-untyped-def]
    assert to_price(value, **kwargs) == expected


def test_a_record_never_carries_a_zero_price() -> None:
    base = {
        "provider": "x",
        "offer_key": "k",
        "instance_type": "t",
        "region": "r",
        "billing": "on_demand",
        "gpu_name_raw": "L4",
        "gpu_count": 1,
        "source": "s",
    }
    assert ScrapedOffer(**base).price_per_hour is None
    with pytest.raises(ValidationError):
        ScrapedOffer(**base, price_per_hour=Decimal(0))


def test_settings_lists_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCOST_SCRAPER_AZURE_REGIONS", "eastus, westus2")
    monkeypatch.setenv("GPUCOST_SCRAPER_AWS_REGIONS", '["eu-west-1"]')
    monkeypatch.setenv("GPUCOST_SCRAPER_VAST_URL", "http://mirror/vast")
    monkeypatch.setenv("GPUCOST_SCRAPER_LAMBDA_API_KEY", "  ")
    s = ScraperSettings()
    assert s.azure_regions == ["eastus", "westus2"] and s.aws_regions == ["eu-west-1"]
    assert s.vast_url == "http://mirror/vast" and s.api_key("lambda") is None
    assert "secret" not in repr(ScraperSettings(lambda_api_key="secret"))


def test_scrapers_package_stands_alone() -> None:
    root = Path(scrapers.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            )
            for name in names:
                assert not name.startswith(("app", "sqlalchemy", "litestar")), (path, name)


def test_registry_slugs_match_the_seed_providers() -> None:
    import csv

    from app.settings import PROJECT_ROOT

    seed: set[str] = set()
    for path in (PROJECT_ROOT / "seed_data").glob("providers*.csv"):
        with path.open(encoding="utf-8") as f:
            seed |= {row["slug"] for row in csv.DictReader(f)}
    assert set(scrapers.SCRAPERS) <= seed
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"pulls current offers for (\d+) providers", readme)
    assert stated and int(stated.group(1)) == len(scrapers.SCRAPERS)
    assert {"vast", "runpod", "azure", "aws", "lambda", "vultr"} <= set(scrapers.SCRAPERS)
