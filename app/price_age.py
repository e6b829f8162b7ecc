"""How old a price is and what kind of price it is: the one definition. Pure (no I/O).

Every offer has a ``price_kind`` (stored on ``instance_offer``):

* ``scraped``: the provider's own price, read from its API by ``gpucost refresh``;
* ``hand_kept``: the provider's own price, kept by hand in ``seed_data/`` from a catalog
  snapshot or a dated capture of its price list;
* ``price_index``: an aggregate (a day's lowest listing of a GPU across platforms, a
  marketplace median): a market signal, not a machine anyone rents at that price;
* ``quoted_example``: a listing a document quotes as an example (the user guide's ¥0.75/h
  RTX 3090).

Only the first two are **bookable**: the offer can be rented as listed.

The price's **age** is the days since its source last showed it (``price_seen_at``: the scrape
time, or a seed row's ``seen_on``); a source that gives no date leaves it **undated** (never
dated by the day it was read). Its **tier** compares the age with the thresholds of its kind
(:data:`AGE_TIERS_DAYS`): ``fresh``, ``aging``, ``old`` or ``undated``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

PriceKind = Literal["scraped", "hand_kept", "price_index", "quoted_example"]
PriceTier = Literal["fresh", "aging", "old", "undated"]

#: every kind, in the order a ranking prefers them
PRICE_KINDS: tuple[PriceKind, ...] = ("scraped", "hand_kept", "price_index", "quoted_example")
#: the kinds a seed file may give (``scraped`` is the refresh job's)
SEED_PRICE_KINDS: tuple[PriceKind, ...] = ("hand_kept", "price_index", "quoted_example")
#: kinds whose offers can be rented as listed
BOOKABLE_KINDS: frozenset[str] = frozenset({"scraped", "hand_kept"})
TIERS: tuple[PriceTier, ...] = ("fresh", "aging", "old", "undated")

#: (fresh up to, aging up to) days of age per kind; older is ``old``.
#:
#: * ``scraped``: the refresh job runs nightly; a price one missed night old (48 h, the
#:   refresh's own stale window, ``Settings.stale_after_hours``) is still fresh, one a week
#:   without a successful scrape old (a marketplace's host-set prices and availability change
#:   constantly: the Vast.ai rows' notes in seed_data/offers_public.csv).
#: * ``price_index``: a daily index (the CNY index in the seed publishes a figure a day), so
#:   it ages like a scrape.
#: * ``hand_kept`` / ``quoted_example``: list prices a person re-reads; a month is fresh, a
#:   quarter old: cloud list prices move in steps months apart, and the June 2025 GPU price
#:   cuts (AWS p5.48xlarge from about $98/h to about $55/h) left hand-kept tables wrong for
#:   months (../shared/docs/providers-2026.md §2, AWS).
AGE_TIERS_DAYS: dict[str, tuple[float, float]] = {
    "scraped": (2.0, 7.0),
    "price_index": (2.0, 7.0),
    "hand_kept": (30.0, 90.0),
    "quoted_example": (30.0, 90.0),
}

#: tiers whose price a default ranking places after the fresh dated prices of the same GPU and
#: count (:func:`app.estimate.rank.rank_columns`, ``demoted``)
DEMOTED_TIERS: frozenset[str] = frozenset({"old", "undated"})


def bookable(kind: str) -> bool:
    """Whether an offer of this ``price_kind`` can be rented as listed."""
    return kind in BOOKABLE_KINDS


def age_days(seen_at: dt.datetime | None, now: dt.datetime) -> float | None:
    """Days since ``seen_at`` (aware UTC; never negative), ``None`` when undated."""
    if seen_at is None:
        return None
    if seen_at.tzinfo is None:
        seen_at = seen_at.replace(tzinfo=dt.UTC)
    return max((now - seen_at).total_seconds() / 86400.0, 0.0)


def tier(kind: str, age: float | None) -> PriceTier:
    """The age tier of a price of ``kind`` that is ``age`` days old (``None``: undated).

    An unknown kind ages as ``hand_kept`` (the slowest: it never calls a price fresher than
    the strictest rule would).
    """
    if age is None:
        return "undated"
    fresh, aging = AGE_TIERS_DAYS.get(kind, AGE_TIERS_DAYS["hand_kept"])
    if age <= fresh:
        return "fresh"
    return "aging" if age <= aging else "old"


@dataclass(frozen=True, slots=True)
class PriceAge:
    """A price's age (days, ``None`` when undated), tier, kind and whether it is bookable."""

    kind: str
    age_days: float | None
    tier: PriceTier
    bookable: bool

    @property
    def demoted(self) -> bool:
        """Old or undated: ranked after fresh dated prices of the same GPU and count."""
        return self.tier in DEMOTED_TIERS


def price_age(kind: str, seen_at: dt.datetime | None, now: dt.datetime) -> PriceAge:
    """Everything this module says about one price."""
    age = age_days(seen_at, now)
    return PriceAge(kind=kind, age_days=age, tier=tier(kind, age), bookable=bookable(kind))


def age_text(age: float | None) -> str:
    """``seen 23 d ago``, ``seen 5 h ago``, ``seen today``, or ``undated``."""
    if age is None:
        return "undated"
    if age >= 1.0:
        return f"seen {age:.0f} d ago"
    hours = age * 24.0
    return f"seen {hours:.0f} h ago" if hours >= 1.0 else "seen just now"
