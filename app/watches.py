"""Watches: a team's saved job with a budget or deadline, checked after every refresh.

A watch is a ``POST /v1/rank`` body with ``max_total_cost`` and/or ``max_total_hours`` (the
budget, the deadline), an optional webhook URL and a price threshold. :func:`check_watches`
(run by :func:`after_refresh` once a refresh has committed) ranks each watch's job with the
shared handler (:data:`app.operations.RANK`); the offers in its answer meet the job (within
budget and deadline, by the request's filters and ``limit``). Compared with the offers stored
for the watch, it records

- ``new``: an offer that meets the job and did not at the last check (or since it was saved);
- ``price``: a matching offer whose price per instance-hour (in the watch's currency) moved
  by at least ``price_move_fraction`` from the price last notified;

as :class:`~app.db.models.WatchEvent` rows, in the same transaction. The posts to the
webhooks happen afterwards on a background thread (:class:`WebhookSender`), each with a
timeout, so a refresh never waits on a webhook; a failed post is logged and recorded on the
event (``delivery_error``), never raised. The message is Slack-compatible JSON,
``{"text": "..."}`` (https://api.slack.com/messaging/webhooks).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import Watch, WatchEvent, WatchMatch, utcnow
from app.interface.schemas import RankedOfferOut, RankRequest, RankResponse
from app.operations import RANK, Deps
from app.services.reference import ReferenceData, load_reference
from app.settings import Settings

log = logging.getLogger(__name__)

#: Seconds one webhook post may take (connect + answer).
WEBHOOK_TIMEOUT_S = 5.0
#: Seconds all posts of one check may take together; the rest are recorded as not sent.
DELIVERY_DEADLINE_S = 30.0


@dataclass(frozen=True, slots=True)
class Found:
    """One event a check found, to post: the event row's id, the URL, the message."""

    event_id: int
    url: str
    text: str


def _offer_line(r: RankedOfferOut, currency: str) -> str:
    o, e = r.offer, r.estimate
    total = e.expected_total_cost or e.total_cost
    hours = e.expected_total_hours or e.total_hours
    price = "no price" if r.price_per_hour is None else f"{r.price_per_hour:.4g} {currency}/h"
    cost = "" if total is None else f", all epochs {total:.4g} {currency}"
    link = f" {o.offer_url}" if o.offer_url else ""
    return (
        f"{o.provider} {o.instance_type} ({o.gpu or o.gpu_name_raw} x {o.gpu_count:g}, "
        f"{o.region}, {o.billing}) at {price}: {hours:.3g} h{cost} (offer {o.id}){link}"
    )


def message(watch: Watch, kind: str, line: str, old: float | None, new: float | None) -> str:
    """The webhook text of one event."""
    head = f"gpucost watch {watch.name!r} (#{watch.id})"
    if kind == "new":
        return f"{head}: an offer now meets the job: {line}"
    moved = f"{old:.4g} -> {new:.4g}" if old is not None and new is not None else "changed"
    return f"{head}: price moved {moved}: {line}"


def rank_watch(watch: Watch, deps: Deps) -> RankResponse:
    """The watch's job ranked now (the shared ``POST /v1/rank`` handler).

    Raises:
        OperationError: the saved request no longer validates (a removed preset).
    """
    return RANK.call(watch.request, deps)


def _moved(old: float | None, new: float | None, fraction: float) -> bool:
    if old is None or new is None:
        return old != new
    return abs(new - old) >= fraction * old if old > 0 else new != old


def check_watch(watch: Watch, deps: Deps, now: dt.datetime) -> list[WatchEvent]:
    """Compare a watch's current matches with those stored; update them and return the new
    events (added to the session, not committed)."""
    session = deps.db()
    answer = rank_watch(watch, deps)
    current = {r.offer.id: r for r in answer.results}
    stored = {
        m.offer_id: m
        for m in session.scalars(select(WatchMatch).where(WatchMatch.watch_id == watch.id))
    }
    events: list[WatchEvent] = []
    for offer_id, r in current.items():
        price = r.price_per_hour
        m = stored.get(offer_id)
        kind = None
        old = None
        if m is None or not m.active:
            kind = "new"
        elif _moved(m.price_per_hour, price, watch.price_move_fraction):
            kind, old = "price", m.price_per_hour
        if m is None:
            m = WatchMatch(watch_id=watch.id, offer_id=offer_id, first_seen_at=now)
            session.add(m)
        if kind is not None:
            text = message(watch, kind, _offer_line(r, answer.currency), old, price)
            events.append(
                WatchEvent(
                    watch_id=watch.id,
                    offer_id=offer_id,
                    kind=kind,
                    message=text,
                    old_price_per_hour=old,
                    new_price_per_hour=price,
                    created_at=now,
                )
            )
            m.price_per_hour = price  # the price last notified
        elif m.price_per_hour is None:
            m.price_per_hour = price
        m.total_cost = r.estimate.expected_total_cost or r.estimate.total_cost
        m.total_hours = r.estimate.expected_total_hours or r.estimate.total_hours
        m.active = True
        m.last_seen_at = now
    for offer_id, m in stored.items():
        if offer_id not in current:
            m.active = False
    watch.last_checked_at = now
    session.add_all(events)
    return events


def check_watches(
    factory: sessionmaker[Session],
    ref: ReferenceData,
    settings: Settings,
    now: dt.datetime | None = None,
) -> list[Found]:
    """Check every watch (one transaction each: a broken watch does not stop the others) and
    return what to post (committed events of watches with a webhook)."""
    now = now or utcnow()
    with factory() as session:
        ids = list(session.scalars(select(Watch.id).order_by(Watch.id)))
    found: list[Found] = []
    for watch_id in ids:
        try:
            with factory() as session, session.begin():
                watch = session.get(Watch, watch_id)
                if watch is None:
                    continue
                events = check_watch(watch, Deps(session, ref, settings), now)
                session.flush()
                if watch.webhook_url:
                    found += [Found(e.id, watch.webhook_url, e.message) for e in events]
        except Exception:  # a watch whose request stopped validating must not stop the rest
            log.exception("watch %s could not be checked", watch_id)
    return found


class WebhookSender:
    """Posts found events to their webhooks on a background thread, each post bounded by
    :data:`WEBHOOK_TIMEOUT_S`, all of them by :data:`DELIVERY_DEADLINE_S`; records each
    outcome on its event row. Never raises to the caller; :meth:`join` waits (bounded) for
    the thread, for a process about to exit."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        found: Sequence[Found],
        *,
        transport: httpx.BaseTransport | None = None,
        deadline_s: float = DELIVERY_DEADLINE_S,
    ):
        self.factory = factory
        self.found = list(found)
        self.transport = transport
        self.deadline_s = deadline_s
        self.thread = threading.Thread(target=self._run, name="gpucost-webhooks", daemon=True)

    def start(self) -> WebhookSender:
        """Start posting (returns at once)."""
        self.thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        """Wait for the posts (at most ``timeout`` seconds; default the delivery deadline)."""
        self.thread.join(self.deadline_s if timeout is None else timeout)

    def _run(self) -> None:
        end = time.monotonic() + self.deadline_s
        with httpx.Client(timeout=WEBHOOK_TIMEOUT_S, transport=self.transport) as client:
            for f in self.found:
                error = None
                if time.monotonic() > end:
                    error = "not sent: the delivery deadline passed"
                else:
                    try:
                        r = client.post(f.url, json={"text": f.text})
                        if r.status_code >= 400:
                            error = f"webhook answered {r.status_code}"
                    except httpx.HTTPError as exc:
                        error = f"webhook post failed: {type(exc).__name__}: {exc}"
                if error:
                    log.warning("watch event %s: %s", f.event_id, error)
                self._record(f.event_id, error)

    def _record(self, event_id: int, error: str | None) -> None:
        try:
            with self.factory() as session, session.begin():
                event = session.get(WatchEvent, event_id)
                if event is not None:
                    event.delivered_at = None if error else utcnow()
                    event.delivery_error = error
        except Exception:
            log.exception("could not record the delivery of watch event %s", event_id)


def after_refresh(
    factory: sessionmaker[Session],
    seed_dir: Path,
    settings: Settings | None = None,
    *,
    start: Callable[[WebhookSender], WebhookSender] = WebhookSender.start,
) -> WebhookSender | None:
    """Check the watches after a committed refresh and start posting what they found
    (returns the sender, already running, or ``None`` without watches). Errors are logged,
    never raised: a refresh never fails because of a watch or a webhook."""
    from app.settings import get_settings

    try:
        with factory() as session:
            if session.scalar(select(Watch.id).limit(1)) is None:
                return None
            ref = load_reference(session, seed_dir)
        found = check_watches(factory, ref, settings or get_settings())
        return start(WebhookSender(factory, found)) if found else None
    except Exception:
        log.exception("checking the watches after the refresh failed")
        return None


def create_watch(
    session: Session,
    owner: str,
    name: str,
    request: RankRequest,
    webhook_url: str | None,
    price_move_fraction: float,
    deps: Deps,
) -> Watch:
    """Store a watch and its current matches (the baseline: only offers that meet the job
    later, or move in price, are notified).

    Raises:
        OperationError: the request does not rank (a 400 naming the field).
    """
    body: dict[str, Any] = request.model_dump(mode="json", exclude_unset=True)
    now = utcnow()
    watch = Watch(
        owner=owner,
        name=name,
        request=body,
        webhook_url=webhook_url,
        price_move_fraction=price_move_fraction,
        created_at=now,
    )
    answer = rank_watch(watch, deps)  # validates before anything is stored
    session.add(watch)
    session.flush()
    for r in answer.results:
        session.add(
            WatchMatch(
                watch_id=watch.id,
                offer_id=r.offer.id,
                price_per_hour=r.price_per_hour,
                total_cost=r.estimate.expected_total_cost or r.estimate.total_cost,
                total_hours=r.estimate.expected_total_hours or r.estimate.total_hours,
                active=True,
                first_seen_at=now,
                last_seen_at=now,
            )
        )
    watch.last_checked_at = now
    return watch
