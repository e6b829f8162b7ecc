"""The offers of one catalog version as columns: what ranking, listing and filtering read.

Each worker holds one :class:`OfferSnapshot` per catalog version (on its
:class:`app.services.reference.ReferenceData`, built by
:class:`app.services.reference.ReferenceCache` when ``catalog_version`` moves): every offer
(available or not) as numpy columns in id order, with what the filters and the ranking derive
from a row computed once (the VRAM a job gets, the first-hand twin that hides a catalog row,
the hardware configuration, the price's age bounds). A request filters with array masks and
builds full :class:`app.services.offers.OfferRow` objects only for the offers it returns, so
it reads nothing from the database. Answers derived from one version (rank answers, the
providers banner) are cached on the snapshot, so they go when it goes.

Filters mean exactly what :func:`app.services.offers._exact_filtered` says in SQL
(``tests/test_snapshot.py`` compares both on every filter).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, TypeVar

import numpy as np
from cachetools import TTLCache
from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from app.db.models import CatalogVersion
from app.model.cost import UnknownCurrencyError, conversion_steps
from app.services.offers import (
    FilterError,
    OfferRow,
    require_currency,
    resolve_gpu_list,
    resolve_provider,
    resolve_regions,
    stale_provider_ids,
)
from app.services.reference import ReferenceData

T = TypeVar("T")

#: OfferRow fields stored as float64 (``None`` as NaN)
_FLOATS = frozenset(
    {
        "gpu_count",
        "vram_gib_per_gpu",
        "vcpus",
        "ram_gib",
        "system_disk_gb",
        "data_disk_gb",
        "price_per_hour",
        "network_gbps",
    }
)
_INTS = frozenset({"id", "provider_id"})
_BOOLS = frozenset({"price_is_estimate", "available", "suspect"})
_FIELDS = tuple(f.name for f in fields(OfferRow))

#: seconds a cached answer (a rank, the providers banner) is served: prices age with the
#: clock (``age_days``, the age tiers), so an answer of one version is re-made after this
ANSWER_TTL_S = 60.0


def _nbytes(value: Any) -> float:
    return float(value.nbytes)


#: answers kept per snapshot and kind: (most entries, or most bytes where a size is given).
#: A rank answer of 50 results is ~280 kB of JSON and some MB as objects, so objects are kept
#: for a few requests (the pages'), encoded answers up to 16 MiB (the API's: ~55 answers).
CACHE_LIMITS: dict[str, tuple[int, Callable[[Any], float] | None]] = {
    "rank": (16, None),
    "rank_json": (16 * 2**20, len),
    # per workload, its figures of each hardware configuration (a ConfigTable: 26 bytes per
    # configuration, ~22 KiB for the ~840 configurations of 100,000 offers)
    "configs": (4 * 2**20, _nbytes),
}
#: the limit of any other kind (the providers' coverage, the banner: one per setting)
DEFAULT_LIMIT: tuple[int, Callable[[Any], float] | None] = (8, None)


def read_version(conn: Connection | Session) -> tuple[int, int]:
    """``(version, reference_version)`` of the catalog (migration ``0010_catalog_version``)."""
    row = conn.execute(
        select(CatalogVersion.version, CatalogVersion.reference_version).where(
            CatalogVersion.id == 1
        )
    ).one()
    return int(row[0]), int(row[1])


@dataclass(eq=False)
class OfferSnapshot:
    """Every offer of one catalog ``version`` as columns, row ``i`` the ``i``-th by id.

    ``columns`` maps each :class:`OfferRow` field to an array (floats with NaN for ``None``,
    ``gpu_model_id`` -1 for ``None``, text and timestamps as object arrays). Derived, per row:
    ``shadowed`` (a catalog price hidden by an available first-hand twin:
    :func:`app.services.offers.shadowed_by_first_hand`), ``vram_gib`` (the VRAM a job gets:
    :func:`app.services.offers.vram_gib`, NaN when unknown), ``config`` (index into
    ``configs``: distinct (gpu_model_id, gpu_count, interconnect, listed VRAM, stated network
    between machines), what an estimate depends on), ``group`` (distinct (gpu_model_id,
    gpu_count)), ``seen_s`` (the price's date, POSIX seconds, NaN undated),
    ``fresh_days``/``aging_days`` (the age bounds of its kind,
    :data:`app.price_age.AGE_TIERS_DAYS`), ``bookable``. ``ambiguous``: row → the catalog
    models an offer stored without a GPU could be. ``last_ok``/``ran``: the providers'
    refresh history (:func:`app.services.offers.stale_provider_ids`).
    """

    version: int
    columns: dict[str, np.ndarray]
    shadowed: np.ndarray
    vram_gib: np.ndarray
    config: np.ndarray
    configs: tuple[tuple[int | None, float, str | None, float | None, float | None], ...]
    group: np.ndarray
    seen_s: np.ndarray
    fresh_days: np.ndarray
    aging_days: np.ndarray
    bookable: np.ndarray
    ambiguous: dict[int, frozenset[str]]
    region_labels: tuple[str, ...]
    last_ok: dict[int, dt.datetime]
    ran: frozenset[int]
    #: provider id -> (slug, name, homepage) as read with the rows (a change: full re-read)
    providers: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    #: how this version was made: ``full`` (every offer read) or ``delta`` (the previous
    #: version's columns with the rows written since: ``app.services.snapshot_build``)
    built: str = "full"
    #: versions made by ``delta`` since the last full read
    increments: int = 0
    #: bytes of the distinct text and timestamp values held (an upper bound after deltas)
    pool_bytes: int = 0
    build_ms: float = 0.0
    nbytes: int = 0
    _caches: dict[str, TTLCache[Hashable, Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: (kind, key) → the value a thread is making now (:meth:`cached`)
    _making: dict[tuple[str, Hashable], _Making] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.columns["id"])

    # --- rows -------------------------------------------------------------------------

    def row(self, i: int) -> OfferRow:
        """Row ``i`` as an :class:`OfferRow` (the values :func:`select_offers` gives)."""
        return self.rows([i])[0]

    def rows(self, index: Iterable[int]) -> list[OfferRow]:
        """Rows at ``index``, in that order (read column by column)."""
        at = np.fromiter(index, dtype=np.intp)
        values = []
        for name in _FIELDS:
            col = self.columns[name][at].tolist()
            if name in _FLOATS:
                col = [None if v != v else v for v in col]  # NaN: not listed
            elif name == "gpu_model_id":
                col = [None if v < 0 else v for v in col]
            values.append(col)
        return [OfferRow(*row) for row in zip(*values, strict=True)]

    def index_of(self, offer_ids: Iterable[int]) -> dict[int, int]:
        """Row of each offer id present (unknown ids left out)."""
        ids = self.columns["id"]
        wanted = np.array(list(offer_ids), dtype=np.int64).reshape(-1)
        at = np.searchsorted(ids, wanted)
        ok = at < len(ids)
        ok[ok] = ids[at[ok]] == wanted[ok]
        return dict(zip(wanted[ok].tolist(), at[ok].tolist(), strict=True))

    def by_id(self, offer_ids: Iterable[int]) -> dict[int, OfferRow]:
        """Full rows of the offers ``offer_ids`` that exist."""
        found = self.index_of(offer_ids)
        return dict(zip(found, self.rows(found.values()), strict=True))

    def codes(self, name: str) -> tuple[tuple[Any, ...], np.ndarray]:
        """Column ``name`` (text) as (its distinct values in order of first row, each row's
        index among them), kept per version (:meth:`cached`): comparing small ints instead
        of 100,000 Python strings per request."""

        def make() -> tuple[tuple[Any, ...], np.ndarray]:
            index: dict[Any, int] = {}
            at = index.setdefault
            col = self.columns[name].tolist()
            codes = np.fromiter((at(v, len(index)) for v in col), np.intp, count=len(col))
            return tuple(index), codes

        return self.cached("codes", name, make)

    def equals(self, name: str, value: Any) -> np.ndarray:
        """``self.columns[name] == value`` (text column) from :meth:`codes`."""
        values, codes = self.codes(name)
        if value not in values:
            return np.zeros(len(codes), dtype=bool)
        mask: np.ndarray = codes == values.index(value)
        return mask

    # --- filters ------------------------------------------------------------------------

    def matching(
        self,
        filters: dict[str, Any],
        ref: ReferenceData,
        *,
        currency: str = "USD",
        exclude_spot: bool = False,
    ) -> np.ndarray:
        """Rows (ascending, i.e. by offer id) of the offers ``filters`` keep, as
        :func:`app.services.offers.page_offers` and the ranking filter them
        (:class:`app.interface.schemas.OfferFilters`; ``max_price_per_hour`` in ``currency``;
        ``exclude_spot`` drops spot offers).

        Raises:
            FilterError: unknown GPU, provider or region (:func:`resolve_provider`,
                :func:`resolve_regions`), one with a NUL character, or a matching priced
                offer's currency has no rate to ``currency``.
        """
        c = self.columns
        for name in ("provider", "region"):
            if "\x00" in (filters.get(name) or ""):
                raise FilterError(name, f"contains a NUL character, which no {name} label has")
        keep = ~self.shadowed
        if filters.get("available_only", True):
            keep &= c["available"]
        if not filters.get("include_suspect", False):
            keep &= ~c["suspect"]
        if filters.get("gpu"):
            keep &= self._gpu_mask(resolve_gpu_list(ref, filters["gpu"]), ref)
        if filters.get("gpu_count") is not None:
            keep &= c["gpu_count"] == filters["gpu_count"]
        if filters.get("min_gpu_count") is not None:
            keep &= c["gpu_count"] >= filters["min_gpu_count"]
        if filters.get("provider"):
            slug = resolve_provider(filters["provider"], (p[:2] for p in self.providers.values()))
            keep &= self.equals("provider", slug)
        if filters.get("region"):
            wanted = set(resolve_regions(filters["region"], self.region_labels))
            keep &= self._text_mask("region", wanted.__contains__)
        if filters.get("billing"):
            keep &= self.equals("billing", filters["billing"])
        if exclude_spot:
            keep &= ~self.equals("billing", "spot")
        if filters.get("bookable_only", False):
            keep &= self.bookable
        min_vram = filters.get("min_vram_gib")
        if min_vram is not None:
            listed = c["vram_gib_per_gpu"]
            keep &= (np.isnan(listed) | (listed >= min_vram)) & (
                np.nan_to_num(self.vram_gib, nan=0.0) >= min_vram
            )
        if filters.get("max_price_per_hour") is not None:
            keep &= self._price_mask(keep, filters["max_price_per_hour"], ref, currency)
        return np.flatnonzero(keep)

    def _text_mask(self, name: str, test: Callable[[str], bool]) -> np.ndarray:
        col = self.columns[name]
        hits = [v for v in set(col.tolist()) if test(v)]
        return np.isin(col, np.array(hits, dtype=object)) if hits else np.zeros(len(col), bool)

    def _gpu_mask(self, names: list[str], ref: ReferenceData) -> np.ndarray:
        ids = np.array([ref.gpu_ids_by_name[n] for n in names], dtype=np.int64)
        mask = np.isin(self.columns["gpu_model_id"], ids)
        wanted = set(names)
        for i, candidates in self.ambiguous.items():
            if candidates <= wanted:
                mask[i] = True
        return mask

    def _price_mask(
        self, keep: np.ndarray, max_price: float, ref: ReferenceData, currency: str
    ) -> np.ndarray:
        """Priced offers whose price in ``currency`` is at most ``max_price``: each listed
        price converted by :func:`app.model.cost.conversion_steps` (the same float
        operations as :func:`app.model.cost.convert`)."""
        price = self.columns["price_per_hour"]
        currencies = self.columns["currency"]
        priced = ~np.isnan(price)
        converted = np.full(len(price), np.inf)
        for source in sorted(set(currencies[keep & priced].tolist())):
            try:
                steps = conversion_steps(source, currency, ref.rates)
            except UnknownCurrencyError as exc:
                raise FilterError("currency", str(exc)) from exc
            rows = priced & (currencies == source)
            value = price[rows]
            for op, rate in steps:
                value = value * rate if op == "*" else value / rate
            converted[rows] = value
        within: np.ndarray = priced & (converted <= max_price)
        return within

    # --- derived answers ----------------------------------------------------------------

    def price_trust(self, index: np.ndarray, now: dt.datetime) -> dict[str, np.ndarray]:
        """The price-trust columns of :class:`app.model.rank.CandidateColumns` for rows
        ``index`` at ``now``: ``unbookable``, ``demoted`` (old or undated), ``fresh`` and
        ``group``: :func:`app.price_age.price_age` on arrays (age in days since the price's
        date, never negative, against the bounds of its kind)."""
        seen = self.seen_s[index]
        undated = np.isnan(seen)
        age = np.maximum((now.timestamp() - np.where(undated, 0.0, seen)) / 86400.0, 0.0)
        fresh = ~undated & (age <= self.fresh_days[index])
        aging = ~undated & ~fresh & (age <= self.aging_days[index])
        return {
            "unbookable": ~self.bookable[index],
            "demoted": ~fresh & ~aging,
            "fresh": fresh,
            "group": self.group[index],
        }

    def stale_provider_ids(self, stale_after_hours: float, now: dt.datetime) -> set[int]:
        """:func:`app.services.offers.stale_provider_ids` from this version's refresh runs."""
        cutoff = now - dt.timedelta(hours=stale_after_hours)
        return {
            pid
            for pid in self.ran
            if (finished := self.last_ok.get(pid)) is None or finished < cutoff
        }

    def cached(self, kind: str, key: Hashable, make: Callable[[], T]) -> T:
        """The value of ``make()`` for ``key``, kept on this snapshot for
        :data:`ANSWER_TTL_S` seconds (at most :data:`CACHE_LIMITS` per ``kind``, least
        recently used first out). One thread makes a missing value; another asking for it
        meanwhile waits for that one (a kept rank answer expiring under 20 connections had
        both handler threads rank the same request, and the event loop, ``/healthz``,
        waited for the GIL behind both), and asks again only if that one failed."""
        with self._lock:
            cache = self._caches.get(kind)
            if cache is None:
                size, sizeof = CACHE_LIMITS.get(kind, DEFAULT_LIMIT)
                cache = self._caches[kind] = TTLCache(size, ANSWER_TTL_S, getsizeof=sizeof)
            if key in cache:
                return cache[key]  # type: ignore[no-any-return]
            making = self._making.get((kind, key))
            if making is None:
                making = self._making[(kind, key)] = _Making()
                mine = True
            else:
                mine = False
        if not mine:
            making.done.wait()
            value = making.value
            # the other thread failed: ask again (this thread may be the one to make it)
            return self.cached(kind, key, make) if value is _UNSET else value
        try:
            value = making.value = make()
            with self._lock:
                cache[key] = value
            return value
        finally:
            with self._lock:
                self._making.pop((kind, key), None)
            making.done.set()

    def carry_estimates(self, held: OfferSnapshot) -> None:
        """Keep ``held``'s per-workload figures of each configuration (kind ``configs``,
        :class:`app.services.config_table.ConfigTable` rows by index into :attr:`configs`)
        for this snapshot, when its configurations extend ``held``'s and the reference data
        is the same (an estimate depends on nothing else): the first rank after a price
        change does not re-estimate."""
        if self.configs[: len(held.configs)] != held.configs:
            raise ValueError("configurations of the two snapshots differ")
        with held._lock:
            kept = list(held._caches.get("configs", {}).items())
        for key, table in kept:  # a new cache (each snapshot's is guarded by its own lock)
            self.cached("configs", key, partial(table.extended, len(self.configs)))

    def cached_answers(self) -> dict[str, int]:
        """Answers held in the snapshot's caches now, per kind (in bytes where the kind is
        bounded by bytes: ``rank_json``, ``configs``). Read without the snapshot's lock (a
        copy of the kinds, then each cache's size: single reads under the GIL), so
        ``/healthz`` never waits for a handler thread that holds it."""
        return {
            kind: int(c.currsize) if CACHE_LIMITS.get(kind, DEFAULT_LIMIT)[1] else len(c)
            for kind, c in list(self._caches.items())
        }


class _Making:
    """A value one thread is making for :meth:`OfferSnapshot.cached`: ``done`` is set when it
    finished (``value`` is the value, or ``_UNSET`` when making it raised)."""

    __slots__ = ("done", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = _UNSET


_UNSET = object()


def offer_snapshot(session: Session, ref: ReferenceData) -> OfferSnapshot:
    """The offers of ``ref``'s catalog version (:attr:`ReferenceData.offers`); reference data
    loaded without them (a script's :func:`load_reference`) gets them read now from
    ``session``."""
    held: OfferSnapshot | None = ref.offers
    if held is not None:
        return held
    from app.services.snapshot_build import build_snapshot  # builds on this module

    return build_snapshot(session, ref, ref.version)


def matching_offers(
    session: Session, filters: dict[str, Any], ref: ReferenceData, *, currency: str = "USD"
) -> list[OfferRow]:
    """Every offer ``filters`` keep, by id, from the snapshot of ``ref``'s version
    (:meth:`OfferSnapshot.matching`; the same offers :func:`app.services.offers.select_offers`
    reads in SQL).

    Raises:
        FilterError: unknown GPU or currency.
    """
    snap = offer_snapshot(session, ref)
    return snap.rows(snap.matching(filters, ref, currency=currency))


def offers_page(
    session: Session,
    filters: dict[str, Any],
    ref: ReferenceData,
    *,
    currency: str = "USD",
    limit: int,
    offset: int = 0,
) -> tuple[list[OfferRow], int]:
    """One page (by id) of :func:`matching_offers` and how many match in all (what
    :func:`app.services.offers.page_offers` gives in SQL).

    Raises:
        FilterError: unknown GPU or currency.
    """
    require_currency(ref, currency)
    snap = offer_snapshot(session, ref)
    index = snap.matching(filters, ref, currency=currency)
    return snap.rows(index[offset : offset + limit]), len(index)


def stale_providers(
    session: Session, ref: ReferenceData, stale_after_hours: float, now: dt.datetime | None = None
) -> set[int]:
    """Providers whose refreshes stopped succeeding (:func:`app.services.offers.
    stale_provider_ids`), as of ``ref``'s version when it holds its offers."""
    snap: OfferSnapshot | None = ref.offers
    if snap is None:
        return stale_provider_ids(session, stale_after_hours, now)
    return snap.stale_provider_ids(stale_after_hours, now or dt.datetime.now(dt.UTC))


def per_version(ref: ReferenceData, kind: str, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, kept per ``key`` with the offers of ``ref``'s catalog version for at most
    :data:`ANSWER_TTL_S` seconds (:meth:`OfferSnapshot.cached`); made every time when
    ``ref`` holds no offers. For answers that depend on the catalog and the clock only (the
    providers' coverage: ~190 ms over 10,000 offers)."""
    snap: OfferSnapshot | None = ref.offers
    return make() if snap is None else snap.cached(kind, key, make)
