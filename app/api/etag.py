"""``ETag`` and ``If-None-Match`` on the GET answers that depend on the catalog only.

An answer of ``GET /v1/rank``, ``/v1/offers``, ``/v1/offers/{id}``, ``/v1/gpus``,
``/v1/benchmarks``, ``/v1/workloads`` and ``/v1/providers`` is a function of the request, the
catalog version (:mod:`app.services.reference_cache`) and the clock (prices age: ``age_days``,
the age tiers). Its tag is weak (``W/``: the same answer, not necessarily the same bytes) and
names the version, the minute-long slot of the clock the answers are kept for
(:data:`app.services.snapshot.ANSWER_TTL_S`) and a hash of the path, the query and the
``Accept``/``Accept-Language`` headers. A request whose ``If-None-Match`` names the tag this
worker would give is answered ``304 Not Modified`` before any handler runs.
"""

from __future__ import annotations

import hashlib
import re
import time

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)

from app.interface.deps import SCOPE_KEY
from app.model.calibration import load_calibration
from app.services.reference_cache import ReferenceCache
from app.services.snapshot import ANSWER_TTL_S

#: the paths whose GET answers carry a tag (watches, submissions and refresh runs do not:
#: they change with writes the catalog version does not count)
TAGGED = re.compile(r"^/v1/(rank|offers|offers/\d+|gpus|benchmarks|workloads|providers)/?$")


def etag(version: int, scope: Scope, now: float | None = None) -> str:
    """The weak tag of the answer to ``scope`` at catalog ``version`` and time ``now``, under
    the served calibration (its ``version``, :func:`app.model.calibration.load_calibration`):
    a deploy with a new ``calibration.json`` never answers 304 to a tag of the old one."""
    headers = dict(scope.get("headers") or [])
    request = b"\n".join(
        (
            scope["path"].encode(),
            scope.get("query_string", b""),
            headers.get(b"accept", b""),
            headers.get(b"accept-language", b""),
        )
    )
    digest = hashlib.blake2b(request, digest_size=10).hexdigest()
    slot = int((time.time() if now is None else now) // ANSWER_TTL_S)
    return f'W/"c{version}.{load_calibration().version}-{slot}-{digest}"'


def _matches(header: bytes, tag: str) -> bool:
    """``If-None-Match`` (a list of tags, or ``*``) names ``tag``; weak comparison."""
    wanted = tag.removeprefix("W/")
    for item in header.decode("latin-1").split(","):
        item = item.strip()
        if item == "*" or item.removeprefix("W/") == wanted:
            return True
    return False


def etag_middleware(app: ASGIApp) -> ASGIApp:
    """ASGI middleware: the tag on 200 answers of :data:`TAGGED` GETs, and 304 answers."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != ScopeType.HTTP
            or scope.get("method") not in ("GET", "HEAD")
            or not TAGGED.match(scope["path"])
        ):
            await app(scope, receive, send)
            return
        cache: ReferenceCache = scope["litestar_app"].state.reference
        try:
            held = await cache.aget()
        except Exception:  # the handler reports the database's state
            await app(scope, receive, send)
            return
        tag = etag(held.version, scope)
        given = dict(scope.get("headers") or []).get(b"if-none-match")
        if given is not None and _matches(given, tag):
            start: HTTPResponseStartEvent = {
                "type": "http.response.start",
                "status": 304,
                "headers": [(b"etag", tag.encode())],
            }
            await send(start)
            end: HTTPResponseBodyEvent = {
                "type": "http.response.body",
                "body": b"",
                "more_body": False,
            }
            await send(end)
            return

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                version = int(scope.get(SCOPE_KEY, held.version))  # type: ignore[call-overload]
                used = tag if version == held.version else etag(version, scope)
                message["headers"] = [*message.get("headers", []), (b"etag", used.encode())]
            await send(message)

        await app(scope, receive, tagged)

    return middleware
