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
import math
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import numpy as np
from cachetools import TTLCache
from sqlalchemy import Connection, Select, func, select
from sqlalchemy.orm import Session

from app.db.models import CatalogVersion, Provider, RefreshRun, as_utc
from app.gpu_names import form_hint
from app.model.cost import UnknownCurrencyError, conversion_steps
from app.model.memory import vram_per_gpu_gib
from app.price_age import AGE_TIERS_DAYS, BOOKABLE_KINDS
from app.services.offers import (
    _COLUMNS,
    FilterError,
    OfferRow,
    require_currency,
    resolve_gpu_list,
    stale_provider_ids,
)
from app.services.reference import ReferenceData
from app.services.regions import matching_regions

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
    }
)
_INTS = frozenset({"id", "provider_id"})
_BOOLS = frozenset({"price_is_estimate", "available", "suspect"})
_FIELDS = tuple(f.name for f in fields(OfferRow))

#: seconds a cached answer (a rank, the providers banner) is served: prices age with the
#: clock (``age_days``, the age tiers), so an answer of one version is re-made after this
ANSWER_TTL_S = 60.0
#: answers kept per snapshot and kind: (most entries, or most bytes for answers kept encoded
#: as JSON). A rank answer of 50 results is ~250 kB of JSON and some MB as objects, so
#: objects are kept for a few requests (the pages'), encoded answers up to 32 MiB (the API's).
CACHE_LIMITS: dict[str, tuple[int, Callable[[Any], float] | None]] = {
    "rank": (16, None),
    "rank_json": (32 * 2**20, len),
    # per workload, its estimates of each hardware configuration (~1,000 small tuples)
    "configs": (64, None),
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


def _interned(
    values: tuple[Any, ...], pool: dict[Any, Any], convert: Callable[[Any], Any] | None = None
) -> np.ndarray:
    """An object column with equal values stored once (regions, currencies, sources …), each
    value ``convert``-ed once; ``pool`` maps each distinct value read to the one stored."""
    distinct = set(values)
    new = distinct - pool.keys()  # values met in an earlier chunk keep their stored object
    if convert is None:
        pool.update(zip(new, new, strict=True))
    else:
        pool.update(zip(new, map(convert, new), strict=True))
    out = np.empty(len(values), dtype=object)
    out[:] = (
        values
        if convert is None and len(distinct) == len(values)
        else [*map(pool.__getitem__, values)]
    )
    return out


def _column(name: str, values: tuple[Any, ...], pool: dict[Any, Any]) -> np.ndarray:
    if name in _FLOATS:
        return np.array(values, dtype=np.float64).reshape(-1)
    if name in _INTS:
        return np.array(values, dtype=np.int64).reshape(-1)
    if name in _BOOLS:
        return np.array(values, dtype=bool).reshape(-1)
    if name == "gpu_model_id":  # -1 for None
        ids = np.array(values, dtype=np.float64).reshape(-1)
        return np.where(np.isnan(ids), -1, ids).astype(np.int64)
    return _interned(values, pool, as_utc if name == "last_seen_at" else None)


@dataclass(eq=False)
class OfferSnapshot:
    """Every offer of one catalog ``version`` as columns, row ``i`` the ``i``-th by id.

    ``columns`` maps each :class:`OfferRow` field to an array (floats with NaN for ``None``,
    ``gpu_model_id`` -1 for ``None``, text and timestamps as object arrays). Derived, per row:
    ``shadowed`` (a catalog price hidden by an available first-hand twin:
    :func:`app.services.offers.shadowed_by_first_hand`), ``vram_gib`` (the VRAM a job gets:
    :func:`app.services.offers.vram_gib`, NaN when unknown), ``config`` (index into
    ``configs``: distinct (gpu_model_id, gpu_count, interconnect, listed VRAM), what an
    estimate depends on), ``group`` (distinct (gpu_model_id, gpu_count)), ``seen_s`` (the
    price's date, POSIX seconds, NaN undated), ``fresh_days``/``aging_days`` (the age bounds
    of its kind, :data:`app.price_age.AGE_TIERS_DAYS`), ``bookable``. ``ambiguous``: row →
    the catalog models an offer stored without a GPU could be. ``last_ok``/``ran``: the
    providers' refresh history (:func:`app.services.offers.stale_provider_ids`).
    """

    version: int
    columns: dict[str, np.ndarray]
    shadowed: np.ndarray
    vram_gib: np.ndarray
    config: np.ndarray
    configs: tuple[tuple[int | None, float, str | None, float | None], ...]
    group: np.ndarray
    seen_s: np.ndarray
    fresh_days: np.ndarray
    aging_days: np.ndarray
    bookable: np.ndarray
    ambiguous: dict[int, frozenset[str]]
    region_labels: tuple[str, ...]
    last_ok: dict[int, dt.datetime]
    ran: frozenset[int]
    build_ms: float = 0.0
    nbytes: int = 0
    _caches: dict[str, TTLCache[Hashable, Any]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
            FilterError: unknown GPU, a region with a NUL character, or a matching priced
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
            keep &= self._text_mask("provider", lambda s: s.lower() == filters["provider"].lower())
        if filters.get("region"):
            wanted = set(matching_regions(filters["region"], self.region_labels))
            keep &= self._text_mask("region", wanted.__contains__)
        if filters.get("billing"):
            keep &= c["billing"] == filters["billing"]
        if exclude_spot:
            keep &= c["billing"] != "spot"
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
        recently used first out). Two threads missing at once may both make it."""
        with self._lock:
            cache = self._caches.get(kind)
            if cache is None:
                size, sizeof = CACHE_LIMITS.get(kind, DEFAULT_LIMIT)
                cache = self._caches[kind] = TTLCache(size, ANSWER_TTL_S, getsizeof=sizeof)
            if key in cache:
                return cache[key]  # type: ignore[no-any-return]
        value = make()
        with self._lock:
            cache[key] = value
        return value

    def cached_answers(self) -> dict[str, int]:
        """Answers held in the snapshot's caches now, per kind (``rank_json``: bytes)."""
        with self._lock:
            return {
                kind: int(c.currsize) if CACHE_LIMITS.get(kind, DEFAULT_LIMIT)[1] else len(c)
                for kind, c in self._caches.items()
            }


def _shadowed(c: dict[str, np.ndarray]) -> np.ndarray:
    """Catalog prices with an available first-hand twin (same provider, instance type, region
    and billing): :func:`app.services.offers.shadowed_by_first_hand`."""
    twin_cols = ("provider_id", "instance_type", "region", "billing")
    first_hand = c["available"] & (c["price_kind"] == "scraped")
    twins = set(zip(*(c[k][first_hand].tolist() for k in twin_cols), strict=True))
    out = np.zeros(len(c["id"]), dtype=bool)
    for i in np.flatnonzero(c["price_kind"] == "catalog").tolist():
        out[i] = tuple(c[k][i] for k in twin_cols) in twins
    return out


def _ambiguous(c: dict[str, np.ndarray], ref: ReferenceData) -> dict[int, frozenset[str]]:
    """Rows stored without a GPU whose label leaves several catalog models open, with those
    models (:func:`app.services.offers.ambiguous_offer_ids`'s rule)."""
    out = {}
    for i in np.flatnonzero(c["gpu_model_id"] < 0).tolist():
        vram = c["vram_gib_per_gpu"][i]
        identity = ref.normaliser.identify(
            c["gpu_name_raw"][i],
            vram_gib=None if math.isnan(vram) else float(vram),
            form_hint=form_hint(c["interconnect"][i]),
            context=(c["instance_type"][i], c["offer_key"][i]),
            gpu_count=float(c["gpu_count"][i]),
        )
        if identity.status == "ambiguous":
            out[i] = frozenset(identity.candidates)
    return out


def _job_vram(key: tuple[int | None, float, str | None, float | None], ref: ReferenceData) -> float:
    gpu_id, count, _, listed = key
    if gpu_id is None:
        return math.nan if listed is None else listed
    catalog = ref.gpus[ref.gpu_names_by_id[gpu_id]].vram_gib
    return vram_per_gpu_gib(catalog, listed, count)


def _refresh_history(session: Session) -> tuple[dict[int, dt.datetime], frozenset[int]]:
    last_ok = {
        int(pid): as_utc(finished)
        for pid, finished in session.execute(
            select(RefreshRun.provider_id, func.max(RefreshRun.finished_at))
            .where(RefreshRun.status == "ok")
            .group_by(RefreshRun.provider_id)
        )
        if finished is not None
    }
    ran = frozenset(
        int(pid)
        for (pid,) in session.execute(
            select(RefreshRun.provider_id)
            .where(RefreshRun.status.in_(("ok", "error", "interrupted")))
            .distinct()
        )
    )
    return last_ok, ran


#: rows converted to columns at a time: the Python objects of one chunk (a few MB) are
#: alive at once, not those of every offer (~2 kB per offer: ~200 MB for 100,000 offers)
CHUNK_ROWS = 10_000
#: the parts of a row an estimate depends on: GPU model, count, interconnect, listed VRAM
CONFIG_FIELDS = ("gpu_model_id", "gpu_count", "interconnect", "vram_gib_per_gpu")


def _fetch_chunks(session: Session, stmt: Select[Any]) -> Iterator[Sequence[Sequence[Any]]]:
    """The rows of ``stmt`` as plain tuples, :data:`CHUNK_ROWS` at a time. On PostgreSQL
    straight from the driver's cursor (psycopg already gives floats and aware timestamps;
    SQLAlchemy's result rows would double the read of 10,000 offers); elsewhere (SQLite,
    whose timestamps are text until SQLAlchemy converts them) through SQLAlchemy Core."""
    conn = session.connection()
    if conn.dialect.name != "postgresql":
        yield from conn.execute(stmt).partitions(CHUNK_ROWS)
        return
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql)
        while chunk := cursor.fetchmany(CHUNK_ROWS):
            yield chunk
    finally:
        cursor.close()


def _read_columns(
    session: Session,
) -> tuple[dict[str, np.ndarray], dict[str, dict[Any, Any]], list[tuple[Any, ...]]]:
    """Every offer by id as columns (one array per :class:`OfferRow` field), the distinct
    values of each object column, and each row's configuration (:data:`CONFIG_FIELDS`)."""
    stmt = select(*_COLUMNS).join(Provider).order_by(_COLUMNS[0])
    pools: dict[str, dict[Any, Any]] = {name: {} for name in _FIELDS}
    parts: dict[str, list[np.ndarray]] = {name: [] for name in _FIELDS}
    keys: list[tuple[Any, ...]] = []
    at = [_FIELDS.index(k) for k in CONFIG_FIELDS]
    for chunk in _fetch_chunks(session, stmt):
        raw = list(zip(*chunk, strict=True))
        for name, values in zip(_FIELDS, raw, strict=True):
            parts[name].append(_column(name, values, pools[name]))
        keys.extend(zip(*(raw[i] for i in at), strict=True))
    columns = {
        name: np.concatenate(chunks) if chunks else _column(name, (), pools[name])
        for name, chunks in parts.items()
    }
    return columns, pools, keys


def build_snapshot(session: Session, ref: ReferenceData, version: int) -> OfferSnapshot:
    """Read every offer (one Core query, no ORM objects) and the refresh history into an
    :class:`OfferSnapshot` labelled ``version`` (the caller checks that the catalog did not
    move while it read: :meth:`app.services.reference.ReferenceCache.get`)."""
    t0 = time.perf_counter()
    columns, pools, keys = _read_columns(session)
    configs = dict.fromkeys(keys)
    config_index = {k: i for i, k in enumerate(configs)}
    config = np.fromiter(map(config_index.__getitem__, keys), dtype=np.intp, count=len(keys))
    groups: dict[tuple[Any, Any], int] = {}
    group_of = np.array([groups.setdefault(k[:2], len(groups)) for k in configs], dtype=np.int64)
    vram_of = np.array([_job_vram(k, ref) for k in configs], dtype=np.float64).reshape(-1)
    kinds = columns["price_kind"]
    bounds = {k: AGE_TIERS_DAYS.get(k, AGE_TIERS_DAYS["hand_kept"]) for k in pools["price_kind"]}
    kind_index = {k: i for i, k in enumerate(pools["price_kind"])}
    kind_of = np.fromiter(map(kind_index.__getitem__, kinds), dtype=np.intp, count=len(kinds))
    seen_of = {
        v: (math.nan if v is None else v.timestamp()) for v in pools["last_seen_at"].values()
    }
    last_ok, ran = _refresh_history(session)
    snap = OfferSnapshot(
        version=version,
        columns=columns,
        shadowed=_shadowed(columns),
        vram_gib=vram_of[config] if len(config) else np.zeros(0),
        config=config,
        configs=tuple(configs),
        group=group_of[config] if len(config) else np.zeros(0, np.int64),
        seen_s=np.array(list(map(seen_of.__getitem__, columns["last_seen_at"])), np.float64),
        fresh_days=np.array([bounds[k][0] for k in pools["price_kind"]], np.float64)[kind_of],
        aging_days=np.array([bounds[k][1] for k in pools["price_kind"]], np.float64)[kind_of],
        bookable=np.isin(kinds, np.array(sorted(BOOKABLE_KINDS), dtype=object)),
        ambiguous=_ambiguous(columns, ref),
        region_labels=tuple(sorted(set(columns["region"].tolist()))),
        last_ok=last_ok,
        ran=ran,
    )
    arrays = [v for v in vars(snap).values() if isinstance(v, np.ndarray)]
    snap.nbytes = sum(a.nbytes for a in (*columns.values(), *arrays)) + sum(
        sum(map(sys.getsizeof, pool.values())) for pool in pools.values()
    )
    snap.build_ms = (time.perf_counter() - t0) * 1000
    return snap


def offer_snapshot(session: Session, ref: ReferenceData) -> OfferSnapshot:
    """The offers of ``ref``'s catalog version (:attr:`ReferenceData.offers`); reference data
    loaded without them (a script's :func:`load_reference`) gets them read now from
    ``session``."""
    held: OfferSnapshot | None = ref.offers
    return held if held is not None else build_snapshot(session, ref, ref.version)


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
