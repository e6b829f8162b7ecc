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
import io
import json
import threading
import time
import zipfile
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
#: The fixture API keys of the providers that need one (the fake checks each is sent).
TEST_KEYS = {
    "gcp": "gcp-test-key",
    "tensordock": "tensordock-test-key",
    "verda": "verda-test-secret",
    "hyperstack": "hyperstack-test-key",
    "fluidstack": "fluidstack-test-key",
    "shadeform": "shadeform-test-key",
}
VERDA_CLIENT_ID = "verda-test-client"
VERDA_TOKEN = "verda-fixture-access-token"
#: The providers of the first six scrapers: what a refresh without ``--provider`` runs in tests
#: (the newer providers are refreshed by the tests that name them; ``ALL_PROVIDERS`` is all).
ORIGINAL_PROVIDERS = ("vast", "runpod", "azure", "aws", "lambda", "vultr")
NEW_PROVIDERS = ("gcp", "oci", "tensordock", "verda", "hyperstack", "fluidstack", "shadeform")
CATALOG_PROVIDERS = ("nebius", "cloudrift", "cudo")
ALL_PROVIDERS = ORIGINAL_PROVIDERS + NEW_PROVIDERS + CATALOG_PROVIDERS

#: Small run-time settings for tests: few queries, fast retries.
TEST_SETTINGS: dict[str, str] = {
    "GPUCOST_SCRAPER_VAST_GPU_NAMES": "RTX 4090,H100 SXM,A100 SXM4,RTX 4070S Ti,GTX 1660 S,"
    "RTX PRO 6000 WS",
    "GPUCOST_SCRAPER_RUNPOD_GPU_COUNTS": "1,2",
    "GPUCOST_SCRAPER_AZURE_REGIONS": "eastus",
    "GPUCOST_SCRAPER_AWS_REGIONS": "us-east-1",
    "GPUCOST_SCRAPER_LAMBDA_API_KEY": LAMBDA_TEST_KEY,
    **{f"GPUCOST_SCRAPER_{slug.upper()}_API_KEY": key for slug, key in TEST_KEYS.items()},
    "GPUCOST_SCRAPER_VERDA_CLIENT_ID": VERDA_CLIENT_ID,
    "GPUCOST_SCRAPER_PROVIDERS": ",".join(ORIGINAL_PROVIDERS),
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
    "gcp": {"skus": [], "nextPageToken": ""},
    "oci": {"items": []},
    "tensordock": {"data": {"locations": []}},
    "verda": [],
    "hyperstack": {"status": True, "message": "ok", "data": []},
    "hyperstack-pricebook": [],
    "fluidstack": [],
    "shadeform": {"instance_types": []},
}
#: URL path prefix → provider, for the prefixes that are not the provider's slug.
_PREFIX_PROVIDER = {"aws-spot": "aws", "oci-prices": "oci"}


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
        "GPUCOST_SCRAPER_GCP_URL": f"{base_url}/gcp/v1",
        "GPUCOST_SCRAPER_OCI_URL": f"{base_url}/oci/data",
        "GPUCOST_SCRAPER_OCI_PRICES_URL": f"{base_url}/oci-prices/products/",
        "GPUCOST_SCRAPER_TENSORDOCK_URL": f"{base_url}/tensordock/api/v2",
        "GPUCOST_SCRAPER_VERDA_URL": f"{base_url}/verda/v1",
        "GPUCOST_SCRAPER_HYPERSTACK_URL": f"{base_url}/hyperstack/v1",
        "GPUCOST_SCRAPER_FLUIDSTACK_URL": f"{base_url}/fluidstack",
        "GPUCOST_SCRAPER_SHADEFORM_URL": f"{base_url}/shadeform/v1",
        "GPUCOST_SCRAPER_GPUHUNT_URL": f"{base_url}/gpuhunt/v3",
        "GPUCOST_SCRAPER_SKYPILOT_URL": f"{base_url}/skypilot/v8",
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
        provider = _PREFIX_PROVIDER.get(slug, slug)
        if slug in ("gpuhunt", "skypilot"):  # a catalog: faults go by the provider it covers
            provider = _catalog_provider(path)
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
            return _echo_401(path, headers, query, body)
        catalog = slug in ("gpuhunt", "skypilot")
        if (
            provider == "lambda"
            and not catalog
            and headers.get("authorization") != f"Bearer {LAMBDA_TEST_KEY}"
        ):
            return Answer(401, b'{"error": {"code": "global/invalid-api-key"}}')
        if not _authorised(provider, path, query, body, headers):
            return Answer(401, b'{"error": "invalid or missing API key"}')
        kind, payload = self._route(method, path, query, body)
        if payload is None:
            return Answer(404, b'{"error": "no such fixture"}')
        if fault == "empty":
            payload = _empty(kind, payload)
        elif fault == "one_gpu":
            payload = _one_gpu(kind, payload)
        elif fault == "shrink":
            payload = _shrink(kind, payload)
        elif fault == "missing_field":
            payload = _missing_field(kind, payload)
        if kind.startswith("gpuhunt-zip:"):
            return Answer(200, _zip(kind.split(":", 1)[1], payload), "application/zip")
        if kind == "text":
            return Answer(200, payload.encode(), "text/plain")
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
        return self._route_new(method, path, query)

    def _route_new(self, method: str, path: str, query: dict[str, str]) -> tuple[str, Any]:
        """The routes of the providers added with issue 29 and of the public catalogs."""
        if path == "/gcp/v1/services/6F81-5844-456A/skus":
            return "gcp", self._json(f"gcp/skus_page{2 if query.get('pageToken') else 1}.json")
        if path == "/oci/data/shapes.json":
            return "oci", self._json("oci/shapes.json")
        if path == "/oci-prices/products/":
            return "oci", self._json("oci/products.json")
        if path == "/tensordock/api/v2/locations":
            return "tensordock", self._json("tensordock/locations.json")
        if path == "/verda/v1/oauth2/token" and method == "POST":
            return "verda-token", {"access_token": VERDA_TOKEN, "token_type": "Bearer"}
        if path == "/verda/v1/instance-types":
            return "verda", self._json("verda/instance-types.json")
        if path == "/verda/v1/instance-availability":
            spot = query.get("is_spot") == "true"
            return "verda", self._json(f"verda/availability{'_spot' if spot else ''}.json")
        if path == "/hyperstack/v1/core/flavors":
            return "hyperstack", self._json("hyperstack/flavors.json")
        if path == "/hyperstack/v1/pricebook":
            return "hyperstack-pricebook", self._json("hyperstack/pricebook.json")
        if path == "/fluidstack/list_available_configurations":
            return "fluidstack", self._json("fluidstack/configurations.json")
        if path == "/shadeform/v1/instances/types":
            return "shadeform", self._json("shadeform/instance-types.json")
        parts = path.strip("/").split("/")
        if parts[:2] == ["gpuhunt", "v3"] and len(parts) >= 4:
            folder = FIXTURES / "gpuhunt" / parts[2]
            if not folder.is_dir():
                return "none", None
            if parts[3] == "version":
                return "text", (folder / "version").read_text(encoding="utf-8")
            csv_text = self._file(f"gpuhunt/{parts[2]}/{parts[2]}.csv").read_text(encoding="utf-8")
            return f"gpuhunt-zip:{parts[2]}", csv_text
        if parts[:2] == ["skypilot", "v8"] and len(parts) == 4:
            file = FIXTURES / "skypilot" / parts[2] / "vms.csv"
            return "skypilot", file.read_text(encoding="utf-8") if file.exists() else None
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


def _catalog_provider(path: str) -> str:
    """The gpucost provider a catalog URL covers (gpuhunt ``lambdalabs`` → ``lambda``)."""
    name = [*path.strip("/").split("/"), "", ""][2]
    return {"lambdalabs": "lambda"}.get(name, name)


def _authorised(
    provider: str, path: str, query: dict[str, str], body: bytes, headers: dict[str, str]
) -> bool:
    """Whether the request carries the provider's fixture credentials (the real header)."""
    key = TEST_KEYS.get(provider)
    if key is None or path.startswith(("/gpuhunt/", "/skypilot/")):
        return True
    if provider == "gcp":
        return query.get("key") == key
    if provider == "tensordock":
        return headers.get("authorization") == f"Bearer {key}"
    if provider == "verda":
        if path.endswith("/oauth2/token"):
            sent = json.loads(body or b"{}")
            return (sent.get("client_id"), sent.get("client_secret")) == (VERDA_CLIENT_ID, key)
        return headers.get("authorization") == f"Bearer {VERDA_TOKEN}"
    header = {"hyperstack": "api_key", "fluidstack": "api-key", "shadeform": "x-api-key"}
    return headers.get(header[provider]) == key


def _empty(kind: str, payload: Any) -> Any:
    """A well-formed answer with no offers (CSV: the header only)."""
    if isinstance(payload, str):
        return _csv_head(payload) if kind == "aws-csv" else payload.splitlines(keepends=True)[0]
    return _EMPTY.get(kind, payload)


def _missing_field(kind: str, payload: Any) -> Any:
    """The payload with its top-level keys (a list: its envelope; CSV: a column) renamed."""
    if isinstance(payload, dict):
        return {f"x_{k}": v for k, v in payload.items()}
    if isinstance(payload, list):
        return {"x_items": payload}
    if kind == "aws-csv":
        return payload.replace('"PricePerUnit"', '"Price"')
    return payload if kind == "text" else "x_" + payload


def _shrink(kind: str, payload: Any) -> Any:
    """A partial answer: well under half of the provider's offers (the shrink guard's case)."""
    if kind == "gcp":  # the first page's SKUs, in one region: A2 machines only
        last_page = not payload.get("nextPageToken")
        skus = [] if last_page else [{**s, "serviceRegions": ["us-east1"]} for s in payload["skus"]]
        return {**payload, "skus": skus}
    if kind == "oci" and "items" in payload and payload["items"][:1]:
        first = payload["items"][0]
        return {**payload, "items": [first]} if "gpuQty" in first else payload
    if kind == "tensordock":
        first = payload["data"]["locations"][0]
        return {"data": {"locations": [{**first, "gpus": first["gpus"][:1]}]}}
    if kind == "verda" and payload and "instance_type" in payload[0]:
        return payload[:1]
    if kind == "hyperstack":
        return {**payload, "data": payload["data"][:1]}
    if kind == "fluidstack":
        return payload[:1]
    if kind == "shadeform":
        return {**payload, "instance_types": payload["instance_types"][:1]}
    if isinstance(payload, str) and kind != "text":  # a catalog CSV: its header and one row
        return "".join(payload.splitlines(keepends=True)[:2])
    return payload


def _zip(name: str, csv_text: str) -> bytes:
    """gpuhunt's ``catalog.zip``: one member, ``{name}.csv``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{name}.csv", csv_text)
    return buffer.getvalue()


def _echo_401(
    path: str, headers: dict[str, str], query: dict[str, str] | None = None, body: bytes = b""
) -> Answer:
    """A 401 that quotes the request back, key included (as some providers' errors do): its
    URL with the query and ``?api_key=…``, every credential header, the body and the bare key
    (whichever way the provider sends it: ``Authorization: Bearer``, ``api_key``,
    ``X-API-KEY``, ``api-key``, ``?key=``, an OAuth ``client_secret``)."""
    query = query or {}
    auth = headers.get("authorization", "")
    sent = {
        k: v
        for k, v in headers.items()
        if k in ("authorization", "api_key", "x-api-key", "api-key")
    }
    try:
        secret = json.loads(body or b"{}").get("client_secret", "")
    except (ValueError, AttributeError):
        secret = ""
    key = (
        auth.removeprefix("Bearer ")
        or next(iter(v for k, v in sent.items() if k != "authorization"), "")
        or query.get("key", "")
        or secret
    )
    pairs = "&".join(f"{k}={v}" for k, v in query.items())
    body_out = {
        "error": "invalid_api_key",
        "request": {
            "headers": {
                "Authorization": auth,
                **{k: v for k, v in sent.items() if k != "authorization"},
            },
            "url": f"{path}?{pairs + '&' if pairs else ''}api_key={key}&limit=9",
            "body": body.decode(errors="replace"),
        },
        "msg": f"API key {key} is not valid for this account",
    }
    return Answer(401, json.dumps(body_out).encode())


def _csv_head(text: str) -> str:
    """The price list's preamble and header only (no rows)."""
    return "".join(text.splitlines(keepends=True)[:6])
