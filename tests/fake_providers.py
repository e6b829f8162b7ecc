"""A fake of every provider API, serving the recorded fixtures (no network).

One router answers both ways the tests talk to it: as an ``httpx.MockTransport`` (in-process
fetch tests) and as a small threaded stdlib HTTP server (``gpucost refresh`` as a subprocess).
Routes mirror the real endpoints under a per-provider prefix; :func:`scraper_env` points the
``GPUCOST_SCRAPER_*_URL`` settings at it.

Faults per provider (``FakeProviders.faults[slug]``): ``500``, ``429once`` (one 429, then
normal answers), ``timeout`` (MockTransport raises ``ReadTimeout``; the server sleeps),
``garbage`` (HTTP 200 with an HTML body), ``missing_field`` (the payload's top-level keys are
renamed), ``empty`` (a well-formed answer with no offers), ``stall`` (the server blocks until
:attr:`FakeProviders.release` is set), ``one_gpu`` (Vast answers only its RTX 4090 rows, Lambda
only its first instance type: a partial catalog), ``echo401`` (HTTP 401 whose body quotes the
request back: its URL with ``?api_key=…``, its ``Authorization`` header and the bare key, as
some providers do), ``drip`` (the real answer, one byte every :attr:`FakeProviders.drip_s`:
never a read timeout; both adaptors) and the MockTransport-only ``huge`` (a valid answer padded to
:attr:`FakeProviders.huge_bytes`, streamed in 64 KiB chunks without a ``Content-Length``;
:attr:`FakeProviders.chunks_sent` counts what the client pulled).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

FIXTURES = Path(__file__).parent / "fixtures" / "scrapers"
LAMBDA_TEST_KEY = "test-key"

#: Small run-time settings for tests: few queries, fast retries.
TEST_SETTINGS: dict[str, str] = {
    "GPUCOST_SCRAPER_VAST_GPU_NAMES": "RTX 4090,H100 SXM,A100 SXM4,RTX 4070S Ti,GTX 1660 S,"
    "RTX PRO 6000 WS",
    "GPUCOST_SCRAPER_RUNPOD_GPU_COUNTS": "1,2",
    "GPUCOST_SCRAPER_AZURE_REGIONS": "eastus",
    "GPUCOST_SCRAPER_AWS_REGIONS": "us-east-1",
    "GPUCOST_SCRAPER_LAMBDA_API_KEY": LAMBDA_TEST_KEY,
    "GPUCOST_SCRAPER_RETRIES": "2",
    "GPUCOST_SCRAPER_BACKOFF_S": "0",
    "GPUCOST_SCRAPER_TIMEOUT_S": "2",
}

_EMPTY: dict[str, Any] = {
    "vast": {"offers": []},
    "runpod": {"data": {"gpuTypes": []}},
    "azure": {"Items": [], "NextPageLink": None, "Count": 0},
    "lambda": {"data": {}},
    "vultr-plans": {"plans": [], "meta": {"links": {"next": ""}}},
    "vultr-metal": {"plans_metal": [], "meta": {"links": {"next": ""}}},
    "aws-spot": {"config": {"regions": []}},
}


def scraper_env(base_url: str) -> dict[str, str]:
    """``GPUCOST_SCRAPER_*`` settings pointing every provider at ``base_url``."""
    return {
        **TEST_SETTINGS,
        "GPUCOST_SCRAPER_VAST_URL": f"{base_url}/vast/api/v0",
        "GPUCOST_SCRAPER_RUNPOD_URL": f"{base_url}/runpod/graphql",
        "GPUCOST_SCRAPER_AZURE_URL": f"{base_url}/azure/api/retail/prices",
        "GPUCOST_SCRAPER_AWS_URL": f"{base_url}/aws",
        "GPUCOST_SCRAPER_AWS_SPOT_URL": f"{base_url}/aws-spot/spot.json",
        "GPUCOST_SCRAPER_LAMBDA_URL": f"{base_url}/lambda/api/v1",
        "GPUCOST_SCRAPER_VULTR_URL": f"{base_url}/vultr/v2",
    }


@dataclass
class Answer:
    """What the fake sends back."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class Timeout(Exception):
    """The fake wants the client to see a timeout."""


class Stall(Exception):
    """The fake wants the request to hang until released."""


@dataclass
class FakeProviders:
    """The router. ``version`` 2 serves ``*.v2.*`` fixtures where they exist; ``variant``
    ``"implausible"`` serves ``*.implausible.*`` ones (see ``fixtures/scrapers/README.md``)."""

    version: int = 1
    variant: str | None = None
    faults: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    drip_s: float = 0.05
    huge_bytes: int = 8 * 2**20
    chunks_sent: int = 0
    _seen_429: set[str] = field(default_factory=set)

    def _file(self, relative: str) -> Path:
        path = FIXTURES / relative
        if self.variant:
            other = path.with_name(f"{path.stem}.{self.variant}{path.suffix}")
            if other.exists():
                return other
        if self.version >= 2:
            v2 = path.with_name(path.stem + ".v2" + path.suffix)
            if v2.exists():
                return v2
        return path

    def _json(self, relative: str) -> Any:
        return json.loads(self._file(relative).read_text(encoding="utf-8"))

    def handle(
        self, method: str, path: str, query: dict[str, str], body: bytes, headers: dict[str, str]
    ) -> Answer:
        """Answer one request (raises :class:`Timeout`/:class:`Stall` for those faults)."""
        slug = path.strip("/").split("/")[0]
        provider = "aws" if slug == "aws-spot" else slug
        self.requests.append((provider, method, path))
        fault = self.faults.get(provider)
        if fault == "500":
            return Answer(500, b'{"error": "internal"}')
        if fault == "429once" and provider not in self._seen_429:
            self._seen_429.add(provider)
            return Answer(429, b'{"error": "slow down"}', headers={"Retry-After": "0"})
        if fault == "timeout":
            raise Timeout
        if fault == "stall":
            raise Stall
        if fault == "garbage":
            return Answer(200, b"<html><body>502 Bad Gateway</body></html>")
        if fault == "echo401":
            return _echo_401(path, headers)
        if provider == "lambda" and headers.get("authorization") != f"Bearer {LAMBDA_TEST_KEY}":
            return Answer(401, b'{"error": {"code": "global/invalid-api-key"}}')
        kind, payload = self._route(method, path, query, body)
        if payload is None:
            return Answer(404, b'{"error": "no such fixture"}')
        if fault == "empty":
            payload = _EMPTY[kind] if kind != "aws-csv" else _csv_head(payload)
        elif fault == "one_gpu":
            payload = _one_gpu(kind, payload)
        elif fault == "missing_field":
            payload = (
                {f"x_{k}": v for k, v in payload.items()}
                if isinstance(payload, dict)
                else payload.replace('"PricePerUnit"', '"Price"')
            )
        if isinstance(payload, str):
            return Answer(200, payload.encode(), "text/csv")
        return Answer(200, json.dumps(payload).encode())

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes) -> tuple[str, Any]:
        if path == "/vast/api/v0/bundles/" and method == "POST":
            name = json.loads(body)["gpu_name"]
            data = self._json("vast/bundles.json")
            data["offers"] = [
                o
                for o in data["offers"]
                if (
                    o["gpu_name"] == name["eq"]
                    if "eq" in name
                    else o["gpu_name"] not in name["notin"]
                )
            ]
            return "vast", data
        if path == "/runpod/graphql" and method == "POST":
            lowest = json.loads(body)["variables"]["lowestPriceInput"]
            tier = "secure" if lowest["secureCloud"] else "community"
            name = f"runpod/lowest_{lowest['gpuCount']}_{tier}.json"
            return "runpod", self._json(name) if (FIXTURES / name).exists() else None
        if path == "/azure/api/retail/prices":
            page = 2 if query.get("$skip") else 1
            return "azure", self._json(f"azure/eastus_page{page}.json")
        if path.startswith("/aws/offers/v1.0/aws/AmazonEC2/current/"):
            region = path.split("/")[-2]
            file = self._file(f"aws/{region}.csv")
            return "aws-csv", file.read_text(encoding="utf-8") if file.exists() else None
        if path == "/aws-spot/spot.json":
            return "aws-spot", self._json("aws/spot.json")
        if path == "/lambda/api/v1/instance-types":
            return "lambda", self._json("lambda/instance-types.json")
        if path == "/vultr/v2/plans":
            page = 2 if query.get("cursor") else 1
            return "vultr-plans", self._json(f"vultr/plans_page{page}.json")
        if path == "/vultr/v2/plans-metal":
            return "vultr-metal", self._json("vultr/plans_metal.json")
        return "none", None

    # --- adaptors -------------------------------------------------------------------------
    def transport(self) -> httpx.MockTransport:
        """An ``httpx.MockTransport`` over this router (timeouts become ``ReadTimeout``)."""

        def handler(request: httpx.Request) -> httpx.Response:
            try:
                answer = self.handle(
                    request.method,
                    request.url.path,
                    dict(request.url.params),
                    request.content,
                    {k.lower(): v for k, v in request.headers.items()},
                )
            except (Timeout, Stall):
                raise httpx.ReadTimeout("fake provider timed out", request=request) from None
            fault = self.faults.get(request.url.path.strip("/").split("/")[0])
            headers = {"Content-Type": answer.content_type, **answer.headers}
            if fault == "drip":
                return httpx.Response(
                    answer.status, content=self._drip(answer.body), headers=headers
                )
            if fault == "huge":
                return httpx.Response(
                    answer.status, content=self._huge(answer.body), headers=headers
                )
            return httpx.Response(answer.status, content=answer.body, headers=headers)

        return httpx.MockTransport(handler)

    async def _drip(self, body: bytes) -> AsyncIterator[bytes]:
        for i in range(len(body)):
            await asyncio.sleep(self.drip_s)
            yield body[i : i + 1]

    async def _huge(self, body: bytes) -> AsyncIterator[bytes]:
        """``body`` (a JSON object or CSV) padded with whitespace to :attr:`huge_bytes`."""
        chunk = 64 * 2**10
        yield body
        self.chunks_sent += 1
        for _ in range(max(self.huge_bytes - len(body), 0) // chunk):
            yield b" " * chunk if body[:1] == b"{" else (b"#" * 1023 + b"\n") * (chunk // 1024)
            self.chunks_sent += 1

    @contextmanager
    def serve(self, timeout_sleep_s: float = 3.0) -> Iterator[str]:
        """Serve over HTTP on 127.0.0.1 (a thread); yields the base URL."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    answer = fake.handle(
                        self.command,
                        url.path,
                        dict(parse_qsl(url.query, keep_blank_values=True)),
                        body,
                        {k.lower(): v for k, v in self.headers.items()},
                    )
                except Timeout:
                    time.sleep(timeout_sleep_s)
                    answer = Answer(504, b"{}")
                except Stall:
                    fake.release.wait(120)
                    answer = Answer(503, b"{}")
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                slug = url.path.strip("/").split("/")[0]
                drip = fake.faults.get("aws" if slug == "aws-spot" else slug) == "drip"
                with suppress(BrokenPipeError, ConnectionResetError):
                    if not drip:
                        self.wfile.write(answer.body)
                    for i in range(len(answer.body) if drip else 0):
                        if fake.release.wait(fake.drip_s):
                            break  # the fake is shutting down
                        self.wfile.write(answer.body[i : i + 1])
                        self.wfile.flush()

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = _Server(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            self.release.set()
            server.shutdown()
            server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # do not wait for handlers still sleeping in a "timeout" fault
    request_queue_size = 128  # the default backlog (5) drops bursts of parallel connects


def _one_gpu(kind: str, payload: Any) -> Any:
    """A partial answer: one GPU model's rows out of the catalog."""
    if kind == "vast":
        return {**payload, "offers": [o for o in payload["offers"] if o["gpu_name"] == "RTX 4090"]}
    if kind == "lambda":
        first = next(iter(payload["data"]))
        return {**payload, "data": {first: payload["data"][first]}}
    return payload


def _echo_401(path: str, headers: dict[str, str]) -> Answer:
    """A 401 that quotes the request back, key included (as some providers' errors do)."""
    auth = headers.get("authorization", "")
    key = auth.removeprefix("Bearer ")
    body = {
        "error": "invalid_api_key",
        "request": {"headers": {"Authorization": auth}, "url": f"{path}?api_key={key}&limit=9"},
        "msg": f"API key {key} is not valid for this account",
    }
    return Answer(401, json.dumps(body).encode())


def _csv_head(text: str) -> str:
    """The price list's preamble and header only (no rows)."""
    return "".join(text.splitlines(keepends=True)[:6])
