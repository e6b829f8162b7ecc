"""Where the CLI and the MCP server get their answers: the local database or a running server.

Both backends answer an :class:`~app.operations.Operation` with the bytes the API would send
(:class:`Answer`): :class:`LocalBackend` runs the operation's handler on the database the
server would use (``GPUCOST_DATABASE_URL``, by default the SQLite file ``gpucost.db`` in the
current directory, migrated and seeded on first use), :class:`HttpBackend` sends the request
to a running gpucost (``--server URL``) with httpx. The same request gives the same bytes
either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from app.operations import Deps, Operation, OperationError, encode
from app.settings import Settings

#: Seconds the HTTP backend waits for a server's answer (a ranking takes well under one).
HTTP_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer as the API sends it: status code, body bytes and content type."""

    status: int
    body: bytes
    media_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


def error_answer(err: OperationError) -> Answer:
    """An :class:`~app.operations.OperationError` as the API's answer."""
    return Answer(err.status_code, encode(err.body()))


class Backend(Protocol):
    """What the CLI and the MCP server ask: an operation for a JSON body, the offer list and
    an offer's launch file for flat parameters."""

    def call(self, op: Operation[Any, Any], body: Any) -> Answer:
        """The answer of ``op`` for ``body`` (``None`` for an operation without input)."""
        ...

    def offers(self, params: Mapping[str, str]) -> Answer:
        """``GET /v1/offers`` with these query parameters."""
        ...

    def launch(self, offer_id: int, params: Mapping[str, str]) -> Answer:
        """``GET /v1/offers/{offer_id}/launch`` with these query parameters."""
        ...


class LocalBackend:
    """Answers from the local database, with the handlers the server runs.

    Args:
        settings: the server's settings (the database URL, the seed folder).
        prepare: migrate the database and seed an empty one first (``gpucost serve`` does the
            same); off when the caller knows it is ready.
    """

    def __init__(self, settings: Settings, *, prepare: bool = True):
        from app.db.session import create_engine_from_url, create_session_factory
        from app.services.reference_cache import ReferenceCache

        self.settings = settings
        self.engine = create_engine_from_url(settings.database_url)
        if prepare:
            from app.cli import ensure_database

            ensure_database(self.engine, settings.seed_dir)
        self.factory = create_session_factory(self.engine)
        self.reference = ReferenceCache(self.factory, settings.seed_dir)

    def close(self) -> None:
        """Close the database connections."""
        self.engine.dispose()

    @contextmanager
    def deps(self) -> Iterator[Deps]:
        """A session, the reference data and the settings for one answer."""
        ref = self.reference.get()
        with self.factory() as session:
            yield Deps(session, ref, self.settings)

    def call(self, op: Operation[Any, Any], body: Any) -> Answer:
        """``op`` on the local database."""
        with self.deps() as deps:
            try:
                return Answer(200, encode(op.call(body, deps)))
            except OperationError as err:
                return error_answer(err)

    def offers(self, params: Mapping[str, str]) -> Answer:
        """The offer list (:func:`app.operations.offer_page`) for flat parameters."""
        from pydantic import ValidationError

        from app.interface.query import ParamError
        from app.interface.schemas import OfferFilters
        from app.operations import FIELD_ERRORS, field_error, offer_page, param_error

        known = {*OfferFilters.model_fields, "currency", "limit", "offset"}
        unknown = [(k, "unknown parameter") for k in params if k not in known]
        try:
            if unknown:
                raise param_error(ParamError(unknown))
            filters = OfferFilters.model_validate(
                {k: v for k, v in params.items() if k in OfferFilters.model_fields}, strict=False
            )
            with self.deps() as deps:
                page = offer_page(
                    filters,
                    params.get("currency", "USD").upper(),
                    int(params.get("limit", 100)),
                    int(params.get("offset", 0)),
                    deps,
                )
            return Answer(200, encode(page))
        except ValidationError as exc:
            errors = [(str(e["loc"][0]), e["msg"]) for e in exc.errors(include_url=False)]
            return error_answer(param_error(ParamError(errors)))
        except FIELD_ERRORS as exc:
            return error_answer(field_error(exc))
        except OperationError as err:
            return error_answer(err)

    def launch(self, offer_id: int, params: Mapping[str, str]) -> Answer:
        """The offer's launch file (:func:`app.operations.launch_file`)."""
        from app.operations import launch_file

        with self.deps() as deps:
            try:
                out = launch_file(offer_id, params, deps)
            except OperationError as err:
                return error_answer(err)
        return Answer(
            200,
            out.text.encode(),
            out.media_type,
            {"content-disposition": f'attachment; filename="{out.filename}"'},
        )


class HttpBackend:
    """Answers from a running gpucost at ``base_url`` (``http://127.0.0.1:8000``).

    Raises (from each call):
        httpx.HTTPError: the server could not be reached or did not answer in time.
    """

    def __init__(self, base_url: str, *, transport: httpx.BaseTransport | None = None):
        self.client = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=HTTP_TIMEOUT_S, transport=transport
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()

    @staticmethod
    def _answer(r: httpx.Response) -> Answer:
        media = r.headers.get("content-type", "application/json").split(";")[0]
        disposition = r.headers.get("content-disposition")
        headers = {"content-disposition": disposition} if disposition else {}
        return Answer(r.status_code, r.content, media, headers)

    def call(self, op: Operation[Any, Any], body: Any) -> Answer:
        """``op`` as the server's ``method path`` (a JSON body for ``POST``)."""
        if op.method == "GET":
            return self._answer(self.client.get(op.path))
        return self._answer(self.client.request(op.method, op.path, json=body))

    def offers(self, params: Mapping[str, str]) -> Answer:
        """``GET /v1/offers``."""
        return self._answer(self.client.get("/v1/offers", params=dict(params)))

    def launch(self, offer_id: int, params: Mapping[str, str]) -> Answer:
        """``GET /v1/offers/{offer_id}/launch``."""
        return self._answer(self.client.get(f"/v1/offers/{offer_id}/launch", params=dict(params)))
