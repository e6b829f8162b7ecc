"""How old a price is and what kind of price it is: the one definition. Pure (no I/O).

Every offer has a ``price_kind`` (stored on ``instance_offer``):

* ``scraped``: the provider's own price, read from its API by ``gpucost refresh``;
* ``catalog``: the provider's own price as a maintained public catalog copied it (gpuhunt's
  versioned ``catalog.zip``, SkyPilot's ``vms.csv``: :mod:`scrapers.catalogs`), loaded by
  ``gpucost refresh`` for a provider with no API gpucost calls, or as the fallback of one
  whose key is not set: second-hand;
* ``hand_kept``: the provider's own price, kept by hand in ``seed_data/`` from a catalog
  snapshot or a dated capture of its price list;
* ``price_index``: an aggregate (a day's lowest listing of a GPU across platforms, a
  marketplace median): a market signal, not a machine anyone rents at that price;
* ``quoted_example``: a listing a document quotes as an example (the user guide's ¥0.75/h
  RTX 3090).

``scraped``, ``catalog`` and ``hand_kept`` are **bookable**: the offer can be rented as
listed. A catalog row is: it names the provider's own instance type, region and billing at
the provider's list price, the very row the catalog's launcher (dstack, SkyPilot) provisions
from; only its price is second-hand, which its age tier (below) accounts for. A catalog row
is never listed beside an available scraped row of the same instance
(:func:`app.services.offers.shadowed_by_first_hand`), so it never outranks a first-hand price.

The **source kind** of an offer (:func:`source_kind`) is what wrote it: ``api`` (``scraped``),
``catalog`` (``catalog``) or ``seed`` (the three seed kinds). It is derived from the price
kind, never stored on an offer; a refresh run stores the source kind it ran
(``refresh_run.source_kind``) and its offers get :data:`PRICE_KIND_OF_SOURCE`.

The price's **age** is the days since its source last showed it (``price_seen_at``: the scrape
time, or a seed row's ``seen_on``); a source that gives no date leaves it **undated** (never
dated by the day it was read). Its **tier** compares the age with the thresholds of its kind
(:data:`AGE_TIERS_DAYS`): ``fresh``, ``aging``, ``old`` or ``undated``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

PriceKind = Literal["scraped", "catalog", "hand_kept", "price_index", "quoted_example"]
PriceTier = Literal["fresh", "aging", "old", "undated"]
SourceKind = Literal["api", "catalog", "seed"]

#: every kind, in the order a ranking prefers them
PRICE_KINDS: tuple[PriceKind, ...] = (
    "scraped",
    "catalog",
    "hand_kept",
    "price_index",
    "quoted_example",
)
#: the kinds a seed file may give (``scraped`` and ``catalog`` are the refresh job's)
SEED_PRICE_KINDS: tuple[PriceKind, ...] = ("hand_kept", "price_index", "quoted_example")
#: kinds whose offers can be rented as listed
BOOKABLE_KINDS: frozenset[str] = frozenset({"scraped", "catalog", "hand_kept"})
TIERS: tuple[PriceTier, ...] = ("fresh", "aging", "old", "undated")
#: source kinds, first-hand first: a refresh run retires rows of its own and later kinds only
SOURCE_KINDS: tuple[SourceKind, ...] = ("api", "catalog", "seed")
#: the price kind of the offers a refresh run of each source kind stores
PRICE_KIND_OF_SOURCE: dict[str, PriceKind] = {"api": "scraped", "catalog": "catalog"}

#: (fresh up to, aging up to) days of age per kind; older is ``old``.
#:
#: * ``scraped``: the refresh job runs nightly; a price one missed night old (48 h, the
#:   refresh's own stale window, ``Settings.stale_after_hours``) is still fresh, one a week
#:   without a successful scrape old (a marketplace's host-set prices and availability change
#:   constantly: the Vast.ai rows' notes in seed_data/offers_public.csv).
#: * ``catalog``: a second-hand copy of a price, dated by the catalog (gpuhunt's version
#:   ``YYYYMMDD``, read as 00:00 UTC that day; SkyPilot's files state no date, so their rows
#:   are undated). The catalogs are rebuilt at least daily by their builders (gpuhunt's
#:   "Collect and publish catalogs" workflow, dstackai/gpuhunt .github/workflows/catalogs.yml;
#:   SkyPilot's AWS/GCP/Lambda every 7 h, ../shared/docs/providers.md §8), so a live catalog's
#:   date is at most a day behind its provider: fresh up to the scrape's 2 days plus that day
#:   (3). A copy is one step further from the provider than a scrape, so it gets no more
#:   slack before ``old`` than a scrape does (7 days): a catalog without a new version for a
#:   week has stopped being rebuilt (its builder failing), whatever the provider did since.
#: * ``price_index``: a daily index (the CNY index in the seed publishes a figure a day), so
#:   it ages like a scrape.
#: * ``hand_kept`` / ``quoted_example``: list prices a person re-reads; a month is fresh, a
#:   quarter old: cloud list prices move in steps months apart, and the June 2025 GPU price
#:   cuts (AWS p5.48xlarge from about $98/h to about $55/h) left hand-kept tables wrong for
#:   months (../shared/docs/providers-2026.md §2, AWS).
AGE_TIERS_DAYS: dict[str, tuple[float, float]] = {
    "scraped": (2.0, 7.0),
    "catalog": (3.0, 7.0),
    "price_index": (2.0, 7.0),
    "hand_kept": (30.0, 90.0),
    "quoted_example": (30.0, 90.0),
}

#: tiers whose price a default ranking places after the fresh dated prices of the same GPU and
#: count (:func:`app.model.rank.rank_columns`, ``demoted``)
DEMOTED_TIERS: frozenset[str] = frozenset({"old", "undated"})


def bookable(kind: str) -> bool:
    """Whether an offer of this ``price_kind`` can be rented as listed."""
    return kind in BOOKABLE_KINDS


def source_kind(kind: str) -> SourceKind:
    """What wrote an offer of price kind ``kind``: ``api`` (``scraped``), ``catalog``
    (``catalog``) or ``seed`` (any other kind: the seed files')."""
    if kind == "scraped":
        return "api"
    return "catalog" if kind == "catalog" else "seed"


def best_tier(counts: Mapping[str, int]) -> PriceTier:
    """The tier of a set of prices counted per tier (``{"fresh": n, ...}``): the freshest tier
    any of them has, ``undated`` when none is dated (or there are none). A provider's age
    tier (``GET /v1/providers``)."""
    return next((t for t in TIERS if counts.get(t, 0) > 0 and t != "undated"), "undated")


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
