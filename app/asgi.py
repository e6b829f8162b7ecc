"""ASGI application factory: the only module that wires settings, database and routes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from functools import partial
from importlib.resources import files
from typing import Any, cast

from litestar import Litestar, Request, Response
from litestar._signature.types import ExtendedMsgSpecValidationError  # Litestar's 400 error
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin, YamlRenderPlugin
from litestar.plugins.pydantic import PydanticInitPlugin
from litestar.static_files import create_static_files_router
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_404_NOT_FOUND,
    HTTP_500_INTERNAL_SERVER_ERROR,
    HTTP_503_SERVICE_UNAVAILABLE,
)
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy import Engine
from sqlalchemy.exc import DataError
from sqlalchemy.orm import Session, sessionmaker

from app.api.benchmarks import BenchmarksController
from app.api.estimate import EstimateController
from app.api.etag import etag_middleware
from app.api.gpus import GpusController
from app.api.health import (
    DatabaseProbe,
    healthz,
    limit_handler_threads,
    stop_handler_threads,
)
from app.api.launch import LaunchController
from app.api.offers import OffersController
from app.api.providers import ProvidersController
from app.api.rank import RankController
from app.api.refresh import RefreshController
from app.api.submissions import SubmissionsController
from app.api.watches import WatchController
from app.api.workloads import WorkloadsController
from app.db.session import DATABASE_UNAVAILABLE, create_engine_from_url, create_session_factory
from app.interface.deps import error_answer
from app.interface.field_names import detail_keys, name_unknown_fields
from app.operations import OperationError, field_error, validate_body
from app.services.estimates import HardwareError
from app.services.heap import tune_malloc
from app.services.offers import FilterError
from app.services.reference_cache import ReferenceCache
from app.services.workloads import WorkloadError
from app.settings import Settings, get_settings
from app.web import WebPlugin

#: where the app serves Swagger UI's static files (from the swagger-ui-py package)
SWAGGER_ASSETS = "/api-viewer-assets"

log = logging.getLogger(__name__)

#: Largest request body accepted, bytes.
MAX_BODY_BYTES = 64 * 1024


def _field_error(request: Request, exc: Exception) -> Response[dict[str, Any]]:
    """A service's field error or an operation's error answer (:mod:`app.operations`: the
    same answer the CLI and the MCP tools give)."""
    err = exc if isinstance(exc, OperationError) else field_error(exc)
    return error_answer(err.status_code, err.detail, err.extra)


#: API paths with an offer id; a segment there that is no integer matches no route (Litestar's
#: 404) but is malformed input like ``-1`` or ``0``, which the ``ge=1`` path bound makes a 400
_OFFER_ID_PATH = re.compile(r"^/v1/offers/(?P<id>[^/]+)(?:/prices|/launch)?/?$")


def _bad_offer_id(request: Request, exc: HTTPException) -> Response[dict[str, Any]] | None:
    """The 400 of a non-integer offer id in an API path, worded as the ``-1`` one is."""
    m = _OFFER_ID_PATH.match(request.url.path)
    if exc.status_code != HTTP_404_NOT_FOUND or not m or re.fullmatch(r"-?\d+", m["id"]):
        return None
    return _validation_error(
        request,
        ValidationException(
            detail=f"Validation failed for {request.method} {request.url.path}",
            extra=[{"message": "Expected `int` >= 1", "key": "offer_id", "source": "path"}],
        ),
    )


def _internal_error(request: Request, exc: Exception) -> Response[dict[str, Any]]:
    if isinstance(exc, HTTPException):
        bad_id = _bad_offer_id(request, exc)
        if bad_id is not None:
            return bad_id
        extra = exc.extra if exc.extra else None
        return error_answer(exc.status_code, exc.detail, extra, exc.headers)
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_answer(HTTP_500_INTERNAL_SERVER_ERROR, "Internal Server Error")


#: what Litestar puts in ``extra`` when a handler's ``data`` is missing: the request had no body
_NO_BODY = [{"message": "'data'", "key": "data", "source": "body"}]


def _validation_error(request: Request, exc: ValidationException) -> Response[dict[str, Any]]:
    extra = exc.extra if isinstance(exc.extra, list) else []
    if extra == _NO_BODY:
        message = "request body is required: a JSON object"
        return error_answer(
            HTTP_400_BAD_REQUEST,
            f"Invalid body: {message}",
            [{"key": "body", "message": message}],
        )
    # a validator's ValueError reads as written, without pydantic's "Value error, "
    # (app.interface.field_names.reason: the same for bodies the handlers validate)
    extra = [
        {**e, "message": e["message"].removeprefix("Value error, ")}
        if isinstance(e, dict) and isinstance(e.get("message"), str)
        else e
        for e in extra
    ]
    keys = detail_keys(extra)
    detail = exc.detail if not keys else f"{exc.detail} ({keys})"
    return error_answer(HTTP_400_BAD_REQUEST, detail, extra)


def _unavailable(request: Request, exc: Exception) -> Response[dict[str, Any]]:
    """The database is down, slow or out of connections: 503 with ``Retry-After``."""
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return error_answer(
        HTTP_503_SERVICE_UNAVAILABLE,
        "The database is unavailable or busy; try again shortly.",
        headers={"Retry-After": str(request.app.state.settings.retry_after_s)},
    )


def _bad_input(request: Request, exc: Exception) -> Response[dict[str, Any]]:
    """Input the database or the JSON decoder cannot take (NUL bytes, absurd nesting)."""
    reason = (
        "a text value contains a character the database cannot store (e.g. NUL)"
        if isinstance(exc, DataError)
        else "the request body is nested too deeply"
    )
    return error_answer(
        HTTP_400_BAD_REQUEST, f"Invalid input: {reason}", [{"key": "request", "message": reason}]
    )


def server_engine(settings: Settings, **overrides: Any) -> Engine:
    """The server's engine: pool size, overflow, pool/connect/statement timeouts from
    ``settings`` (``overrides`` replace any of :func:`create_engine_from_url`'s arguments)."""
    kwargs: dict[str, Any] = {
        "pool_size": settings.db_pool_size,
        "max_overflow": settings.db_max_overflow,
        "pool_timeout_s": settings.db_pool_timeout_s,
        "connect_timeout_s": settings.db_connect_timeout_s,
        "statement_timeout_ms": settings.db_statement_timeout_ms,
    }
    return create_engine_from_url(settings.database_url, **(kwargs | overrides))


def _validate_as_json(model_type: type[BaseModel], value: Any) -> BaseModel:
    """A request body (already parsed from JSON) validated as the JSON it came from, with the
    model's own strictness: strict types, and enum fields by their values (pydantic's strict
    mode takes enum values only from JSON).

    Raises:
        ExtendedMsgSpecValidationError: Litestar's validation error (a 400 naming each field).
    """
    try:
        return validate_body(model_type, value)
    except PydanticValidationError as exc:
        hide = bool(model_type.model_config.get("hide_input_in_errors", False))
        errors = name_unknown_fields(model_type, exc.errors(include_input=not hide))
        raise ExtendedMsgSpecValidationError(errors=cast(list[dict[str, Any]], errors)) from exc


class ModelStrictnessPlugin(PydanticInitPlugin):
    """Litestar's pydantic init plugin, except that a request body is validated with its
    model's own strictness (:data:`app.interface.schemas.REQUEST_CONFIG`), as JSON. Litestar calls
    ``model_validate(..., strict=False)``, which overrides a model's ``strict=True``:
    ``"1.5"`` passed as a number and ``0`` as a boolean, which the OpenAPI document does not
    allow (schemathesis' ``negative_data_rejection``)."""

    @classmethod
    def decoders(
        cls, validate_strict: bool = False
    ) -> list[tuple[Callable[[Any], bool], Callable[[Any, Any], Any]]]:
        """The default decoders, pydantic v2 models validated by :func:`_validate_as_json`."""
        return [
            (test, _validate_as_json)
            if isinstance(dec, partial) and "strict" in dec.keywords
            else (test, dec)
            for test, dec in super().decoders(validate_strict)
        ]


def _watch_catalog(app: Litestar) -> None:
    """Startup hook: load each new catalog version as it commits
    (:meth:`app.services.reference_cache.ReferenceCache.watch`), unless
    ``settings.catalog_listen`` is off."""
    settings: Settings = app.state.settings
    if settings.catalog_listen:
        app.state.catalog_watch = asyncio.get_running_loop().create_task(
            app.state.reference.watch(
                settings.database_url, fallback_s=settings.catalog_fallback_poll_s
            )
        )


async def _stop_watching(app: Litestar) -> None:
    """Shutdown hook: end the catalog watch."""
    task = getattr(app.state, "catalog_watch", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def create_app(
    settings: Settings | None = None, *, session_factory: sessionmaker[Session] | None = None
) -> Litestar:
    """Build the ASGI app.

    Args:
        settings: defaults to :func:`app.settings.get_settings` (environment).
        session_factory: inject a factory (tests); by default one is built from
            ``settings.database_url``.
    """
    tune_malloc()  # glibc heap settings for serving, before the server's threads allocate
    settings = settings or get_settings()
    engine = None
    if session_factory is None:
        engine = server_engine(settings)
        session_factory = create_session_factory(engine)
        probe_engine = server_engine(settings, pool_size=1, max_overflow=0)
        version_engine = server_engine(settings, pool_size=1, max_overflow=0)
    else:
        probe_engine = session_factory.kw["bind"]
        version_engine = None
    probe = DatabaseProbe(
        probe_engine, settings.healthz_timeout_s, fresh_s=settings.healthz_fresh_s
    )

    def _dispose() -> None:
        if engine is not None:
            engine.dispose()
            probe.dispose()
            if version_engine is not None:
                version_engine.dispose()

    app = Litestar(
        route_handlers=[
            # in the order the operations were first registered: the OpenAPI components
            # (a shared model's description, a bound's spelling) come from the first use
            EstimateController,
            OffersController,
            BenchmarksController,
            GpusController,
            WorkloadsController,
            RankController,
            SubmissionsController,
            RefreshController,
            ProvidersController,
            LaunchController,
            WatchController,
            healthz,
            # Swagger UI's files from the swagger-ui-py package, for the offline API viewer
            create_static_files_router(
                path=SWAGGER_ASSETS,
                directories=[str(files("swagger_ui") / "static")],
                include_in_schema=False,
            ),
        ],
        plugins=[WebPlugin(), ModelStrictnessPlugin()],
        middleware=[etag_middleware],
        openapi_config=OpenAPIConfig(
            title="gpucost",
            version="0.1.0",
            description="Where to rent GPUs for a training job: offers, predicted throughput, "
            "cost per epoch and OOM risk.",
            path="/schema",
            # route docstrings are the operations' descriptions
            use_handler_docstrings=True,
            # nothing here may depend on the internet at run time: the Swagger UI viewer loads
            # its JavaScript and CSS from the app (SWAGGER_ASSETS), never from a CDN
            render_plugins=[
                JsonRenderPlugin(path=["/openapi.json", "/"]),
                YamlRenderPlugin(),
                SwaggerRenderPlugin(
                    js_url=f"{SWAGGER_ASSETS}/swagger-ui-bundle.js",
                    css_url=f"{SWAGGER_ASSETS}/swagger-ui.css",
                    standalone_preset_js_url=f"{SWAGGER_ASSETS}/swagger-ui-standalone-preset.js",
                    path="/swagger",
                    favicon=f"<link rel='icon' href='{SWAGGER_ASSETS}/favicon-32x32.png'>",
                ),
            ],
        ),
        exception_handlers={
            WorkloadError: _field_error,
            HardwareError: _field_error,
            FilterError: _field_error,
            OperationError: _field_error,
            ValidationException: _validation_error,
            DataError: _bad_input,
            RecursionError: _bad_input,
            **dict.fromkeys(DATABASE_UNAVAILABLE, _unavailable),
            Exception: _internal_error,
        },
        # the largest valid body is a few kB; a bigger one is a 413 before it is parsed
        request_max_body_size=MAX_BODY_BYTES,
        on_startup=[limit_handler_threads, _watch_catalog],
        on_shutdown=[_stop_watching, stop_handler_threads, _dispose],
        debug=False,
    )
    app.state.settings = settings
    app.state.session_factory = session_factory
    app.state.db_probe = probe
    app.state.reference = ReferenceCache(
        session_factory,
        settings.seed_dir,
        poll_s=settings.catalog_poll_s,
        version_engine=version_engine,
    )
    return app
