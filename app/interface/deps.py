"""Request dependencies and OpenAPI error entries shared by the API's controllers
(:mod:`app.api`) and the pages (:mod:`app.web.pages`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

import anyio.to_thread
from litestar import MediaType, Request, Response
from litestar.di import Provide
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy.orm import Session

from app.interface.schemas import ErrorOut
from app.services.reference import ReferenceData
from app.services.reference_cache import ReferenceCache
from app.settings import Settings

#: where :func:`provide_reference` records the catalog version a request was answered from
#: (read by the ETag middleware, :mod:`app.api.etag`)
SCOPE_KEY = "gpucost.catalog_version"

#: Largest id accepted in a path: 2**53 - 1, the largest integer a JSON number (a double)
#: states exactly, far inside a BIGINT key. The OpenAPI ``maximum`` is such a number: with
#: ``2**63 - 1`` (which a double rounds to 2**63) clients that compare as doubles, schemathesis
#: among them, took ids up to 2**63 + 1023 for valid, and the API rejected them. Bigger ids are
#: a 400 naming the field, never a database error.
MAX_ID = 2**53 - 1


def error_responses(*codes: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the error answers a route gives besides validation's 400."""
    text = {
        400: "Invalid input: `extra` names each field and the reason",
        401: "No valid bearer token (`Authorization: Bearer <token>`); nothing was stored",
        404: "No such offer",
        409: "The `run_id` was already used by another submitter",
        429: "Too many submissions for this token; see `Retry-After`",
        503: "Database unavailable or busy; see `Retry-After`",
    }
    return {
        c: ResponseSpec(data_container=ErrorOut, description=text[c], generate_examples=False)
        for c in codes
    }


def error_answer(
    status: int,
    detail: str,
    extra: list[Any] | dict[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response[dict[str, Any]]:
    """An error answer in the API's one shape (:class:`app.interface.schemas.ErrorOut`):
    ``status_code``, ``detail`` (a sentence naming the fields) and, when given, ``extra`` (for a
    400, one ``{key, message}`` entry per bad field); JSON, with ``headers`` (``Retry-After``,
    ``WWW-Authenticate``)."""
    body: dict[str, Any] = {"status_code": status, "detail": detail}
    if extra is not None:
        body["extra"] = extra
    return Response(body, status_code=status, media_type=MediaType.JSON, headers=headers)


async def provide_session(request: Request) -> AsyncGenerator[Session, None]:
    """One SQLAlchemy session per request (read-only use), closed afterwards.

    The session is created on the event loop (it connects lazily, in the handler's thread)
    and closed on a thread of its own limiter: closing returns the connection to the pool,
    and must not wait for a handler thread, since those may all be waiting for connections
    (see :mod:`app.api.health`).
    """
    session = request.app.state.session_factory()
    try:
        yield session
    finally:
        await anyio.to_thread.run_sync(session.close, limiter=request.app.state.release_limiter)


async def provide_reference(request: Request) -> ReferenceData:
    """The cached reference data (catalog, benchmarks, presets, rates); loads off the loop."""
    cache: ReferenceCache = request.app.state.reference
    data = await cache.aget()
    request.scope[SCOPE_KEY] = data.version  # type: ignore[literal-required]  # for the ETag
    return data


def provide_settings(request: Request) -> Settings:
    """The app's settings."""
    settings: Settings = request.app.state.settings
    return settings


#: The dependencies of every controller and page: a database session, the reference data
#: and the settings (each is resolved only for the handlers that take it).
DEPENDENCIES: dict[str, Provide] = {
    "session": Provide(provide_session),
    "ref": Provide(provide_reference),
    "settings": Provide(provide_settings, sync_to_thread=False),
}
