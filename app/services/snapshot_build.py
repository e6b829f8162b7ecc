"""Making an :class:`app.services.snapshot.OfferSnapshot`: every offer read, or only the
offers written since the version a worker holds.

A full read is one Core query straight from the driver's cursor into numpy columns
(:func:`build_snapshot`). When only offers moved (same reference data, same providers),
:func:`update_snapshot` reads the rows whose ``row_version`` (migration
``0011_offer_row_version``: stamped by a trigger with the version that wrote them) is above
the held version, and merges them into a copy of the held columns: a refresh that rewrites
one price reads one row, not 10,000. Deleted offers are found by the row count (then the
snapshot is read in full), so the result is always what a full read of the new version gives
(``tests/test_snapshot_delta.py`` compares them column by column).
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.db.models import InstanceOffer, Provider, RefreshRun, as_utc
from app.gpu_names import form_hint
from app.model.memory import vram_per_gpu_gib
from app.price_age import AGE_TIERS_DAYS, BOOKABLE_KINDS
from app.services.offers import _COLUMNS
from app.services.reference import ReferenceData
from app.services.snapshot import _BOOLS, _FIELDS, _FLOATS, _INTS, OfferSnapshot

#: rows converted to columns at a time: the Python objects of one chunk are alive at once, not
#: those of every offer (~2 kB per offer: ~200 MB for 100,000), and the driver holds the GIL
#: for one chunk at a time (a worker's event loop, ``/healthz``, waits at most that long)
CHUNK_ROWS = 2_000
#: the parts of a row an estimate depends on: GPU model, count, interconnect, listed VRAM, the
#: network between machines (GPUs spanning several machines)
CONFIG_FIELDS = ("gpu_model_id", "gpu_count", "interconnect", "vram_gib_per_gpu", "network_gbps")
#: versions made by merging before the next is read in full (the distinct-value pools of
#: merged rows are not shared with the held ones, so memory drifts up until a full read)
MAX_INCREMENTS = 200
#: share of the held offers written since, above which every offer is read instead of merged
#: (100,168 offers, load ~14: one price seen in 0.27 s merged; every offer rewritten 17.1 s
#: merged against 11-13 s read in full)
MAX_CHANGED_SHARE = 0.5
#: per-row arrays besides the columns, merged like them
_PER_ROW = ("config", "seen_s", "fresh_days", "aging_days", "bookable")

ConfigKey = tuple[int | None, float, str | None, float | None, float | None]


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
    """Offers (by id) stored without a GPU whose label leaves several catalog models open,
    with those models (:func:`app.services.offers.ambiguous_offer_ids`'s rule)."""
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
            out[int(c["id"][i])] = frozenset(identity.candidates)
    return out


def _job_vram(key: ConfigKey, ref: ReferenceData) -> float:
    gpu_id, count, _, listed, _ = key
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


def _providers(session: Session) -> dict[int, tuple[Any, ...]]:
    """What the offer rows take from their provider (slug, name, homepage), per provider id."""
    rows = session.execute(select(Provider.id, Provider.slug, Provider.name, Provider.homepage_url))
    return {int(r[0]): tuple(r[1:]) for r in rows}


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


@dataclass
class _Rows:
    """Offers read at once (by id) as columns, with what is derived per row."""

    columns: dict[str, np.ndarray]
    keys: list[ConfigKey]
    per_row: dict[str, np.ndarray]
    pool_bytes: int

    def __len__(self) -> int:
        return len(self.columns["id"])


def _read_rows(session: Session, since: int | None, config_index: dict[ConfigKey, int]) -> _Rows:
    """Every offer (``since`` ``None``) or those written after version ``since``, by id, as
    one array per :class:`app.services.offers.OfferRow` field, with each row's configuration
    (:data:`CONFIG_FIELDS`: index into ``config_index``, which gains the new ones), the
    price's date (POSIX s, NaN undated), the age bounds of its kind and whether it can be
    booked."""
    stmt = select(*_COLUMNS).join(Provider).order_by(_COLUMNS[0])
    if since is not None:
        stmt = stmt.where(InstanceOffer.row_version > since)
    pools: dict[str, dict[Any, Any]] = {name: {} for name in _FIELDS}
    parts: dict[str, list[np.ndarray]] = {name: [] for name in _FIELDS}
    keys: list[ConfigKey] = []
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
    for k in keys:
        config_index.setdefault(k, len(config_index))
    kinds = columns["price_kind"]
    bounds = {k: AGE_TIERS_DAYS.get(k, AGE_TIERS_DAYS["hand_kept"]) for k in pools["price_kind"]}
    seen_of = {v: math.nan if v is None else v.timestamp() for v in pools["last_seen_at"].values()}
    per_row = {
        "config": np.fromiter(map(config_index.__getitem__, keys), np.intp, count=len(keys)),
        "seen_s": np.fromiter(map(seen_of.__getitem__, columns["last_seen_at"]), np.float64),
        "fresh_days": np.array([bounds[k][0] for k in kinds.tolist()], np.float64).reshape(-1),
        "aging_days": np.array([bounds[k][1] for k in kinds.tolist()], np.float64).reshape(-1),
        "bookable": np.isin(kinds, np.array(sorted(BOOKABLE_KINDS), dtype=object)),
    }
    pool_bytes = sum(sum(map(sys.getsizeof, pool.values())) for pool in pools.values())
    return _Rows(columns, keys, per_row, pool_bytes)


def _assemble(
    session: Session,
    ref: ReferenceData,
    version: int,
    rows: _Rows,
    configs: tuple[ConfigKey, ...],
    ambiguous: dict[int, frozenset[str]],
    **extra: Any,
) -> OfferSnapshot:
    """An :class:`OfferSnapshot` of ``rows`` (every offer of ``version``): the derived
    columns that depend on several rows or on the catalog, and the refresh history."""
    group_ids: dict[tuple[Any, Any], int] = {}
    group_of = np.array([group_ids.setdefault(k[:2], len(group_ids)) for k in configs], np.int64)
    vram_of = np.array([_job_vram(k, ref) for k in configs], dtype=np.float64).reshape(-1)
    config = rows.per_row["config"]
    ids = rows.columns["id"]
    at = np.searchsorted(ids, np.fromiter(ambiguous, np.int64, count=len(ambiguous)))
    last_ok, ran = _refresh_history(session)
    snap = OfferSnapshot(
        version=version,
        columns=rows.columns,
        shadowed=_shadowed(rows.columns),
        vram_gib=vram_of[config] if len(config) else np.zeros(0),
        config=config,
        configs=configs,
        group=group_of[config] if len(config) else np.zeros(0, np.int64),
        seen_s=rows.per_row["seen_s"],
        fresh_days=rows.per_row["fresh_days"],
        aging_days=rows.per_row["aging_days"],
        bookable=rows.per_row["bookable"],
        ambiguous=dict(zip(at.tolist(), ambiguous.values(), strict=True)),
        region_labels=tuple(sorted(set(rows.columns["region"].tolist()))),
        last_ok=last_ok,
        ran=ran,
        pool_bytes=rows.pool_bytes,
        **extra,
    )
    arrays = [v for v in vars(snap).values() if isinstance(v, np.ndarray)]
    snap.nbytes = sum(a.nbytes for a in (*rows.columns.values(), *arrays)) + rows.pool_bytes
    return snap


def build_snapshot(session: Session, ref: ReferenceData, version: int) -> OfferSnapshot:
    """Read every offer (one Core query, no ORM objects) and the refresh history into an
    :class:`OfferSnapshot` labelled ``version`` (the caller checks that the catalog did not
    move while it read: :meth:`app.services.reference_cache.ReferenceCache.get`)."""
    t0 = time.perf_counter()
    providers = _providers(session)
    config_index: dict[ConfigKey, int] = {}
    rows = _read_rows(session, None, config_index)
    snap = _assemble(
        session,
        ref,
        version,
        rows,
        tuple(config_index),
        _ambiguous(rows.columns, ref),
        providers=providers,
    )
    snap.build_ms = (time.perf_counter() - t0) * 1000
    return snap


def _merge(held: OfferSnapshot, new: _Rows) -> _Rows:
    """``held``'s rows with ``new``'s (by id: an id in both takes ``new``'s row), by id."""
    ids, new_ids = held.columns["id"], new.columns["id"]
    at = np.searchsorted(ids, new_ids)
    found = at < len(ids)
    found[found] = ids[at[found]] == new_ids[found]
    held_rows = {**held.columns, **{k: getattr(held, k) for k in _PER_ROW}}
    new_rows = {**new.columns, **new.per_row}
    if found.all():  # only updates: the same ids in the same places
        merged = {k: v.copy() for k, v in held_rows.items()}
        for k, v in merged.items():
            v[at] = new_rows[k]
    else:
        keep = np.ones(len(ids), dtype=bool)
        keep[at[found]] = False
        order = np.argsort(np.concatenate((ids[keep], new_ids)), kind="stable")
        merged = {k: np.concatenate((v[keep], new_rows[k]))[order] for k, v in held_rows.items()}
    columns = {k: merged[k] for k in held.columns}
    per_row = {k: merged[k] for k in _PER_ROW}
    return _Rows(columns, new.keys, per_row, held.pool_bytes + new.pool_bytes)


def update_snapshot(
    session: Session, ref: ReferenceData, held: OfferSnapshot, version: int
) -> OfferSnapshot:
    """The offers of ``version``: ``held`` (of ``ref``'s reference data, an earlier version)
    with the rows written since merged in; a full read (:func:`build_snapshot`) when a
    provider changed, more than :data:`MAX_CHANGED_SHARE` of the offers were written, an
    offer was deleted (the row count tells) or after :data:`MAX_INCREMENTS` merges. The
    workloads' estimates per configuration (``configs``) carry over: the configurations are
    ``held``'s and the new ones after them, and an estimate depends on the configuration and
    the reference data only."""
    t0 = time.perf_counter()
    providers = _providers(session)
    if providers != held.providers or held.increments >= MAX_INCREMENTS:
        return build_snapshot(session, ref, version)
    changed = session.execute(
        select(func.count()).where(InstanceOffer.row_version > held.version)
    ).scalar_one()
    if changed > len(held) * MAX_CHANGED_SHARE:  # a full refresh: merging costs more
        return build_snapshot(session, ref, version)
    config_index = {k: i for i, k in enumerate(held.configs)}
    new = _read_rows(session, held.version, config_index)
    rows = _merge(held, new)
    count = session.execute(select(func.count()).select_from(InstanceOffer)).scalar_one()
    if count != len(rows):  # an offer was deleted
        return build_snapshot(session, ref, version)
    held_ids = held.columns["id"]
    ambiguous = {int(held_ids[i]): s for i, s in held.ambiguous.items()}
    for i in new.columns["id"].tolist():
        ambiguous.pop(i, None)
    ambiguous.update(_ambiguous(new.columns, ref))
    snap = _assemble(
        session,
        ref,
        version,
        rows,
        tuple(config_index),
        dict(sorted(ambiguous.items())),
        providers=providers,
        built="delta",
        increments=held.increments + 1,
    )
    snap.carry_estimates(held)
    snap.build_ms = (time.perf_counter() - t0) * 1000
    return snap
