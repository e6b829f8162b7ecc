"""``/v1/watches``: a team's saved job with a budget or deadline (bearer token, as for
``POST /v1/benchmarks``), checked after every refresh (:mod:`app.watches`).

``POST /v1/watches`` saves one (201) and answers with its current matches; ``GET
/v1/watches/{id}`` lists its matches and the events the checks found (what was posted to the
webhook, and how the post went); ``DELETE`` removes it. A watch is visible only to the token
identity that saved it (another token gets 404); no token: 401.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any
from urllib.parse import urlsplit

from litestar import Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.exceptions import NotAuthorizedException, NotFoundException
from litestar.params import JSONBody, PathParameter
from pydantic import BaseModel, Field, field_validator
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.params import ResourceController
from app.db.models import Watch, WatchEvent, WatchMatch, as_utc
from app.fields import same_named
from app.interface.deps import MAX_ID, error_responses
from app.interface.schemas import MAX_TEXT, REQUEST_CONFIG, RankRequest
from app.operations import Deps, validate_body, validation_error
from app.services.reference import ReferenceData
from app.services.submissions import identify, parse_tokens
from app.settings import Settings
from app.watches import create_watch

#: Most events listed by ``GET /v1/watches/{id}`` (newest first).
MAX_EVENTS = 200


class WatchIn(BaseModel):
    """A job to watch: the ``POST /v1/rank`` body with a budget (``max_total_cost``) or a
    deadline (``max_total_hours``), where to post what the checks find, and the price move
    that counts."""

    model_config = REQUEST_CONFIG

    name: str = Field(min_length=1, max_length=MAX_TEXT, description="what the team calls it")
    request: RankRequest = Field(
        description="the POST /v1/rank body; needs max_total_cost or max_total_hours"
    )
    webhook_url: str | None = Field(
        default=None,
        max_length=2000,
        pattern=r"^https?://[^\s/]+(/\S*)?$",
        description='where to POST Slack-compatible JSON {"text": ...} for each event',
    )
    price_move_fraction: float = Field(
        default=0.1,
        gt=0,
        le=10,
        allow_inf_nan=False,
        description="a matching offer's price moving by this fraction (0.1 = 10 %) is an event",
    )

    @field_validator("request")
    @classmethod
    def _budget(cls, value: RankRequest) -> RankRequest:
        if value.max_total_cost is None and value.max_total_hours is None:
            raise ValueError(
                "a watch needs a budget or a deadline: max_total_cost or max_total_hours"
            )
        return value


class WatchMatchOut(BaseModel):
    """An offer that meets the job (``active``) or did (``active`` false)."""

    offer_id: int = Field(description="GET /v1/offers/{offer_id}")
    price_per_hour: float | None = Field(description="price last notified, in the currency")
    total_cost: float | None = Field(description="all epochs, in the currency (spot: expected)")
    total_hours: float = Field(description="wall-clock hours of all epochs (spot: expected)")
    active: bool = Field(description="meets the job at the last check")
    first_seen_at: str = Field(description="ISO 8601, UTC")
    last_seen_at: str = Field(description="ISO 8601, UTC")


class WatchEventOut(BaseModel):
    """What a check found, and how its post went."""

    id: int = Field(description="event id")
    kind: str = Field(description="new (an offer now meets the job) or price (price moved)")
    offer_id: int | None = Field(description="the offer; null if it was deleted since")
    message: str = Field(description="the text posted to the webhook")
    old_price_per_hour: float | None = Field(description="price before (kind price)")
    new_price_per_hour: float | None = Field(description="price now")
    created_at: str = Field(description="ISO 8601, UTC")
    delivered_at: str | None = Field(description="when the webhook took it; null: not (yet)")
    delivery_error: str | None = Field(description="why the post failed; null: it did not")


class WatchOut(BaseModel):
    """A watch, its matching offers and its events (newest first)."""

    id: int = Field(description="watch id")
    name: str = Field(description="what the team calls it")
    owner: str = Field(description="the token identity that saved it")
    request: dict[str, Any] = Field(description="the POST /v1/rank body it ranks")
    currency: str = Field(description="ISO 4217 code of the prices and costs")
    webhook: str | None = Field(description="the webhook's scheme and host (the path is secret)")
    price_move_fraction: float = Field(description="price move that counts")
    created_at: str = Field(description="ISO 8601, UTC")
    last_checked_at: str | None = Field(description="the last check (after a refresh)")
    matches: list[WatchMatchOut] = Field(description="offers that meet (or met) the job")
    events: list[WatchEventOut] = Field(description=f"newest first, at most {MAX_EVENTS}")


def _iso(value: dt.datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def watch_out(session: Session, watch: Watch) -> WatchOut:
    """A stored watch as the answer."""
    matches = session.scalars(
        select(WatchMatch)
        .where(WatchMatch.watch_id == watch.id)
        .order_by(WatchMatch.active.desc(), WatchMatch.total_cost, WatchMatch.offer_id)
    )
    events = session.scalars(
        select(WatchEvent)
        .where(WatchEvent.watch_id == watch.id)
        .order_by(WatchEvent.created_at.desc(), WatchEvent.id.desc())
        .limit(MAX_EVENTS)
    )
    url = urlsplit(watch.webhook_url) if watch.webhook_url else None
    return same_named(
        WatchOut,
        watch,
        currency=str(watch.request.get("currency", "USD")).upper(),
        webhook=f"{url.scheme}://{url.hostname}" if url else None,
        created_at=_iso(watch.created_at) or "",
        last_checked_at=_iso(watch.last_checked_at),
        matches=[
            same_named(
                WatchMatchOut,
                m,
                first_seen_at=_iso(m.first_seen_at) or "",
                last_seen_at=_iso(m.last_seen_at) or "",
            )
            for m in matches
        ],
        events=[
            same_named(
                WatchEventOut,
                e,
                created_at=_iso(e.created_at) or "",
                delivered_at=_iso(e.delivered_at),
            )
            for e in events
        ],
    )


def _owner(request: Request[Any, Any, Any], settings: Settings) -> str:
    who = identify(request.headers.get("authorization"), parse_tokens(settings.api_tokens))
    if who is None:
        raise NotAuthorizedException(
            detail="a valid bearer token is required (Authorization: Bearer <token>)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return who


def _own_watch(session: Session, watch_id: int, owner: str) -> Watch:
    watch = session.get(Watch, watch_id)
    if watch is None or watch.owner != owner:
        raise NotFoundException(f"no watch {watch_id}")
    return watch


WatchId = Annotated[int, PathParameter(ge=1, le=MAX_ID, description="watch id")]


class WatchController(ResourceController):
    """Saved jobs checked after every refresh."""

    path = "/v1/watches"
    tags = ["watches"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/",
        sync_to_thread=True,
        status_code=201,
        summary="Watch a job with a budget or deadline",
        responses=error_responses(400, 401),
    )
    def create(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[dict[str, Any]],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> WatchOut:
        """Save a job (``Authorization: Bearer <token>``). Body: ``name``, ``request`` (the
        ``POST /v1/rank`` body with ``max_total_cost`` and/or ``max_total_hours``),
        ``webhook_url`` and ``price_move_fraction`` (default 0.1). The offers that meet it
        now are its baseline; after each refresh, offers that newly meet it or whose price
        moved by the fraction are events, posted to the webhook as ``{"text": ...}``."""
        owner = _owner(request, settings)  # before reading the body, as for submissions
        try:
            watch_in = validate_body(WatchIn, data)
        except PydanticValidationError as exc:
            raise validation_error("POST /v1/watches", exc, WatchIn) from None
        watch = create_watch(
            session,
            owner,
            watch_in.name,
            watch_in.request,
            watch_in.webhook_url,
            watch_in.price_move_fraction,
            Deps(session, ref, settings),
        )
        session.commit()
        return watch_out(session, watch)

    @get(
        "/{watch_id:int}",
        sync_to_thread=True,
        summary="A watch, its matching offers and events",
        responses=error_responses(400, 401, 404),
    )
    def read(
        self,
        watch_id: WatchId,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        settings: NamedDependency[Settings],
    ) -> WatchOut:
        """The watch (its owner's token only), the offers that meet it and the events of the
        checks after each refresh, newest first, with how each webhook post went."""
        return watch_out(session, _own_watch(session, watch_id, _owner(request, settings)))

    @delete(
        "/{watch_id:int}",
        sync_to_thread=True,
        summary="Stop watching a job",
        responses=error_responses(400, 401, 404),
    )
    def remove(
        self,
        watch_id: WatchId,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        settings: NamedDependency[Settings],
    ) -> Response[None]:
        """Delete the watch with its matches and events (its owner's token only)."""
        session.delete(_own_watch(session, watch_id, _owner(request, settings)))
        session.commit()
        return Response(None, status_code=204)
