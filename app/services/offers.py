"""Offer queries: filtered offers as plain rows, with their price's age and kind."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    or_,
    select,
)
from sqlalchemy.orm import Session, aliased

from app.db.models import GpuModel, InstanceOffer, Provider, RefreshRun, as_utc, utcnow
from app.gpu_names import LabelError, count_in_name, form_hint
from app.model.cost import UnknownCurrencyError, conversion_steps, convert
from app.model.memory import vram_per_gpu_gib
from app.price_age import BOOKABLE_KINDS, TIERS, PriceAge, price_age
from app.services.reference import ReferenceData
from app.services.regions import country_named, matching_regions


class FilterError(ValueError):
    """Bad filter value; ``field`` names it."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _name_key(text: str) -> str:
    """``text`` casefolded with everything but letters and digits dropped: ``Vast.ai`` →
    ``vastai``, ``恒源云`` stays."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _provider_keys(slug: str, name: str) -> set[str]:
    """What a person may write for a provider (compared by :func:`_name_key`): its slug, its
    name, the name without its parenthesis and what the parenthesis says (``恒源云
    (gpushare.com)``: ``恒源云``, ``gpushare.com``; ``Verda (formerly DataCrunch)``:
    ``Verda``, ``DataCrunch``)."""
    keys = {slug, name}
    head, _, rest = name.partition("(")
    if rest:
        keys |= {head, rest.rstrip(")").removeprefix("formerly ")}
    return {k for k in map(_name_key, keys) if k}


def resolve_provider(text: str, providers: Iterable[tuple[str, str]]) -> str:
    """The slug of the provider ``text`` names: its slug or name in any case and punctuation
    (``Vast.ai``, ``VAST`` → ``vast``; ``DataCrunch`` → ``verda``), among ``providers``
    ((slug, name) pairs, those of the database).

    Raises:
        FilterError: ``provider``, naming the known providers' slugs, when ``text`` names none.
    """
    known = sorted(providers)
    wanted = _name_key(text)
    for slug, name in known:
        if text.strip().casefold() == slug.casefold() or wanted in _provider_keys(slug, name):
            return slug
    raise FilterError(
        "provider",
        f"unknown provider {text.strip()!r}; known providers (slug or name, any case): "
        + ", ".join(slug for slug, _ in known),
    )


def resolve_regions(text: str, labels: Iterable[str]) -> list[str]:
    """The region ``labels`` the filter ``text`` keeps (:func:`matching_regions`: a substring
    in any case, or a country).

    Raises:
        FilterError: ``region``, listing the known labels, when ``text`` is neither a country
            nor part of any label (a country with no offers keeps none, without error).
    """
    labels = sorted(set(labels))
    found = matching_regions(text, labels)
    if not found and country_named(text) is None:
        raise FilterError(
            "region",
            f"no offer's region matches {text.strip()!r}; write part of a region label or a "
            "country; known regions: " + "; ".join(labels),
        )
    return found


def require_currency(ref: ReferenceData, currency: str) -> None:
    """Check that prices can be shown in ``currency`` (USD or one with a stored rate).

    Raises:
        FilterError: ``currency``, naming the ones that can be used.
    """
    if currency not in ref.currencies:
        raise FilterError(
            "currency", f"no exchange rate for {currency}; one of {', '.join(ref.currencies)}"
        )


@dataclass(frozen=True, slots=True)
class OfferRow:
    """An offer as the services use it (no ORM object)."""

    id: int
    provider: str
    provider_name: str
    offer_key: str
    instance_type: str
    region: str
    gpu_model_id: int | None
    gpu_name_raw: str
    gpu_count: float
    vram_gib_per_gpu: float | None
    vcpus: float | None
    ram_gib: float | None
    system_disk_gb: float | None
    data_disk_gb: float | None
    max_cuda: str | None
    driver_version: str | None
    interconnect: str | None
    billing: str
    price_per_hour: float | None
    currency: str
    price_is_estimate: bool
    available: bool
    last_seen_at: dt.datetime | None  # aware UTC; None when the source gives no date
    source: str
    provider_id: int
    suspect: bool = False
    suspect_reason: str | None = None
    gpu_note: str | None = None
    offer_url: str | None = None
    #: the provider's home page (the link shown when the offer has no page of its own)
    provider_url: str | None = None
    #: what the price is (:mod:`app.price_age`): scraped, catalog, hand_kept, price_index,
    #: quoted_example
    price_kind: str = "hand_kept"
    #: the network between machines the provider states, Gbit/s per machine (``None``: not
    #: stated; a multi-node estimate then takes the model's default and says so)
    network_gbps: float | None = None

    def price_age(self, now: dt.datetime) -> PriceAge:
        """The price's age, tier and bookability at ``now`` (:func:`app.price_age.price_age`)."""
        return price_age(self.price_kind, self.last_seen_at, now)

    @property
    def disk_gb(self) -> float | None:
        """System + data disk, GB (``None`` when neither is listed)."""
        if self.system_disk_gb is None and self.data_disk_gb is None:
            return None
        return (self.system_disk_gb or 0) + (self.data_disk_gb or 0)


_COLUMNS = (
    InstanceOffer.id,
    Provider.slug,
    Provider.name,
    InstanceOffer.offer_key,
    InstanceOffer.instance_type,
    InstanceOffer.region,
    InstanceOffer.gpu_model_id,
    InstanceOffer.gpu_name_raw,
    InstanceOffer.gpu_count,
    InstanceOffer.vram_gib_per_gpu,
    InstanceOffer.vcpus,
    InstanceOffer.ram_gib,
    InstanceOffer.system_disk_gb,
    InstanceOffer.data_disk_gb,
    InstanceOffer.max_cuda,
    InstanceOffer.driver_version,
    InstanceOffer.interconnect,
    InstanceOffer.billing,
    cast(InstanceOffer.price_per_hour, Float),
    InstanceOffer.currency,
    InstanceOffer.price_is_estimate,
    InstanceOffer.available,
    InstanceOffer.last_seen_at,
    InstanceOffer.source,
    InstanceOffer.provider_id,
    InstanceOffer.suspect,
    InstanceOffer.suspect_reason,
    InstanceOffer.gpu_note,
    InstanceOffer.offer_url,
    Provider.homepage_url,
    InstanceOffer.price_kind,
    InstanceOffer.network_gbps,
)


def ambiguous_offer_ids(session: Session, ref: ReferenceData, names: list[str]) -> list[int]:
    """Offers stored without a GPU because their label is ambiguous
    (:meth:`app.gpu_names.GpuNameNormaliser.identify`: "H100" with nothing telling SXM from
    PCIe) whose every candidate is one of ``names``: a family filter ("H100") stands for all
    of them, so such an offer is surely of that family. The candidates are identified again
    from the stored label and context, by the same rule as at seed and ingest."""
    wanted = set(names)
    rows = session.execute(
        select(
            InstanceOffer.id,
            InstanceOffer.gpu_name_raw,
            InstanceOffer.vram_gib_per_gpu,
            InstanceOffer.interconnect,
            InstanceOffer.instance_type,
            InstanceOffer.offer_key,
            InstanceOffer.gpu_count,
        ).where(InstanceOffer.gpu_model_id.is_(None))
    )
    out = []
    for offer_id, raw, vram, interconnect, instance_type, offer_key, count in rows:
        identity = ref.normaliser.identify(
            raw,
            vram_gib=vram,
            form_hint=form_hint(interconnect),
            context=(instance_type, offer_key),
            gpu_count=count,
        )
        if identity.status == "ambiguous" and set(identity.candidates) <= wanted:
            out.append(offer_id)
    return out


def resolve_gpu_list(ref: ReferenceData, text: str) -> list[str]:
    """The catalog GPUs a ``gpu`` filter names: one name, alias or family, or several
    separated by commas (``A100, H100``), each resolved by
    :meth:`ReferenceData.resolve_gpu_filter`; in the order given, without repeats.

    Raises:
        FilterError: ``gpu``, naming every part that matches no catalog GPU.
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    names: dict[str, None] = {}
    unknown = []
    for part in parts:
        found = ref.resolve_gpu_filter(part)
        if not found:
            unknown.append(part)
        names.update(dict.fromkeys(found))
    if unknown or not parts:
        shown = ", ".join(repr(u) for u in unknown) or repr(text)
        hint = count_in_name(unknown[0]) if len(unknown) == 1 else ""
        raise FilterError("gpu", _label_reason(ref, unknown) or f"unknown GPU {shown}{hint}")
    return list(names)


def _label_reason(ref: ReferenceData, unknown: list[str]) -> str | None:
    """Why the label rule refuses the first of ``unknown`` that names a model but a VRAM none
    of its variants has ("GPU '4060-12GB' states 12 GB, which no variant has: GeForce RTX
    4060 (8 GB) …"); ``None`` when each simply names nothing."""
    for part in unknown:
        try:
            ref.normaliser.resolve_label(part)
        except LabelError as exc:
            if not str(exc).startswith("unknown GPU"):
                return str(exc)
    return None


def shadowed_by_first_hand() -> ColumnElement[bool]:
    """A public-catalog offer (``price_kind = 'catalog'``) for which an available first-hand
    (``scraped``) offer of the same provider, instance type, region and billing exists: such a
    row is never listed, ranked or counted (a catalog price never outranks a first-hand price
    of the same instance, :mod:`scrapers.catalogs`)."""
    first_hand = aliased(InstanceOffer)
    return and_(
        InstanceOffer.price_kind == "catalog",
        exists().where(
            first_hand.provider_id == InstanceOffer.provider_id,
            first_hand.instance_type == InstanceOffer.instance_type,
            first_hand.region == InstanceOffer.region,
            first_hand.billing == InstanceOffer.billing,
            first_hand.price_kind == "scraped",
            first_hand.available.is_(True),
        ),
    )


def _filtered(session: Session, stmt: Select, filters: dict, ref: ReferenceData) -> Select:
    gpu = filters.get("gpu")
    if gpu:
        names = resolve_gpu_list(ref, gpu)
        ids = [ref.gpu_ids_by_name[n] for n in names]
        ambiguous = ambiguous_offer_ids(session, ref, names)
        stmt = stmt.where(
            or_(InstanceOffer.gpu_model_id.in_(ids), InstanceOffer.id.in_(ambiguous))
            if ambiguous
            else InstanceOffer.gpu_model_id.in_(ids)
        )
    if filters.get("gpu_count") is not None:
        stmt = stmt.where(InstanceOffer.gpu_count == filters["gpu_count"])
    if filters.get("min_gpu_count") is not None:
        stmt = stmt.where(InstanceOffer.gpu_count >= filters["min_gpu_count"])
    if filters.get("provider"):
        if "\x00" in filters["provider"]:
            raise FilterError("provider", "contains a NUL character, which no provider has")
        known = session.execute(select(Provider.slug, Provider.name)).tuples().all()
        stmt = stmt.where(Provider.slug == resolve_provider(filters["provider"], known))
    if filters.get("region"):
        # a substring of the region, or a country and its regions' own labels (华北 is in
        # China): matched in Python on the few distinct labels (app.services.regions)
        if "\x00" in filters["region"]:
            raise FilterError("region", "contains a NUL character, which no region label has")
        labels = session.scalars(select(InstanceOffer.region).distinct()).all()
        stmt = stmt.where(InstanceOffer.region.in_(resolve_regions(filters["region"], labels)))
    if filters.get("billing"):
        stmt = stmt.where(InstanceOffer.billing == filters["billing"])
    if filters.get("available_only", True):
        stmt = stmt.where(InstanceOffer.available.is_(True))
    if not filters.get("include_suspect", False):
        stmt = stmt.where(InstanceOffer.suspect.is_(False))
    stmt = stmt.where(~shadowed_by_first_hand())
    if filters.get("bookable_only", False):
        stmt = stmt.where(InstanceOffer.price_kind.in_(sorted(BOOKABLE_KINDS)))
    if filters.get("min_vram_gib") is not None:
        stmt = stmt.where(
            or_(
                InstanceOffer.vram_gib_per_gpu >= filters["min_vram_gib"],
                InstanceOffer.vram_gib_per_gpu.is_(None),
            )
        )
    return stmt


def _row(r: tuple) -> OfferRow:
    row = OfferRow(*r)
    if row.last_seen_at is not None and row.last_seen_at.tzinfo is None:  # SQLite
        row = replace(row, last_seen_at=as_utc(row.last_seen_at))
    return row


@dataclass(frozen=True, slots=True)
class RankColumns:
    """The few offer columns ranking needs, one tuple per column, all of one length (full
    rows are fetched for the offers returned only).

    Prices are per hour in the offer's own ``currency`` (``None`` when unlisted); VRAM in GiB
    per GPU as listed; ``gpu_count`` may be fractional (a slice of a GPU).
    """

    id: tuple[int, ...]
    gpu_model_id: tuple[int | None, ...]
    gpu_count: tuple[float, ...]
    vram_gib_per_gpu: tuple[float | None, ...]
    vcpus: tuple[float | None, ...]
    interconnect: tuple[str | None, ...]
    price_per_hour: tuple[float | None, ...]
    currency: tuple[str, ...]
    billing: tuple[str, ...]
    #: when the source last showed the price (``None``: undated; naive on SQLite)
    last_seen_at: tuple[dt.datetime | None, ...]
    price_kind: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.id)


_RANK_COLUMNS = (
    InstanceOffer.id,
    InstanceOffer.gpu_model_id,
    InstanceOffer.gpu_count,
    InstanceOffer.vram_gib_per_gpu,
    InstanceOffer.vcpus,
    InstanceOffer.interconnect,
    cast(InstanceOffer.price_per_hour, Float),
    InstanceOffer.currency,
    InstanceOffer.billing,
    InstanceOffer.last_seen_at,
    InstanceOffer.price_kind,
)


def _post_filter(rows: list, filters: dict, ref: ReferenceData, currency: str) -> list:
    min_vram = filters.get("min_vram_gib")
    if min_vram is not None:
        rows = [r for r in rows if (vram_gib(r, ref) or 0) >= min_vram]
    max_price = filters.get("max_price_per_hour")
    if max_price is not None:
        try:
            rows = [
                r
                for r in rows
                if r.price_per_hour is not None
                and convert(r.price_per_hour, r.currency, currency, ref.rates) <= max_price
            ]
        except UnknownCurrencyError as exc:
            raise FilterError("currency", str(exc)) from exc
    return rows


def select_rank_columns(
    session: Session,
    filters: dict,
    ref: ReferenceData,
    *,
    currency: str = "USD",
    exclude_spot: bool = False,
) -> RankColumns:
    """The offers :func:`select_offers` gives, as the columns ranking needs (every filter
    applied in SQL; ``exclude_spot`` also drops ``spot`` offers), in no particular order.

    A Core query on the session's connection, transposed into columns: no ORM result
    processing and no object per row (10,000 offers are read in about the time of the SQL).

    Raises:
        FilterError: unknown GPU or currency.
    """
    stmt = _exact_filtered(session, select(*_RANK_COLUMNS).join(Provider), filters, ref, currency)
    if exclude_spot:
        stmt = stmt.where(InstanceOffer.billing != "spot")
    rows = session.connection().execute(stmt).all()
    if not rows:
        return RankColumns((), (), (), (), (), (), (), (), (), (), ())
    return RankColumns(*zip(*rows, strict=True))


def select_offers_by_id(session: Session, ids: list[int]) -> dict[int, OfferRow]:
    """Full offer rows for ``ids``."""
    if not ids:
        return {}
    stmt = select(*_COLUMNS).join(Provider).where(InstanceOffer.id.in_(ids))
    return {r[0]: _row(r) for r in session.execute(stmt)}


def select_offers(
    session: Session, filters: dict, ref: ReferenceData, *, currency: str = "USD"
) -> list[OfferRow]:
    """All offers matching ``filters`` (see :class:`app.interface.schemas.OfferFilters`).

    ``min_vram_gib`` compares the offer's VRAM, or the catalog VRAM when the offer lists none;
    ``max_price_per_hour`` is in ``currency``.

    Raises:
        FilterError: unknown GPU or currency.
    """
    stmt = _filtered(session, select(*_COLUMNS).join(Provider), filters, ref).order_by(
        InstanceOffer.id
    )
    rows = [_row(r) for r in session.execute(stmt)]
    return _post_filter(rows, filters, ref, currency)


def _exact_filtered(
    session: Session,
    stmt: Select[Any],
    filters: dict[str, Any],
    ref: ReferenceData,
    currency: str,
) -> Select[Any]:
    """:func:`_filtered` plus, in SQL, what :func:`_post_filter` does in Python: VRAM as
    :func:`vram_gib` gives it, and the price converted to ``currency`` as
    :func:`app.model.cost.convert` does (the same float multiplies and divides by the same
    rates, :func:`app.model.cost.conversion_steps`, so both paths keep exactly the same
    offers).

    Raises:
        FilterError: unknown GPU, or a matching priced offer's currency has no rate to
            ``currency``.
    """
    stmt = _filtered(session, stmt, filters, ref)
    min_vram = filters.get("min_vram_gib")
    if min_vram is not None:
        catalog_vram = (
            select(GpuModel.vram_gib)
            .where(GpuModel.id == InstanceOffer.gpu_model_id)
            .scalar_subquery()
        )
        listed = func.nullif(InstanceOffer.vram_gib_per_gpu, 0)
        count = InstanceOffer.gpu_count
        # app.model.memory.vram_per_gpu_gib in SQL: a fractional GPU gets its share of the
        # card unless the listing states the slice's memory
        share = case(
            (count >= 1, func.coalesce(listed, catalog_vram)),
            (listed < catalog_vram * 0.95, listed),
            else_=catalog_vram * count,
        )
        vram = case((InstanceOffer.gpu_model_id.is_(None), listed), else_=share)
        stmt = stmt.where(func.coalesce(vram, 0) >= min_vram)
    max_price = filters.get("max_price_per_hour")
    if max_price is not None:
        price = cast(InstanceOffer.price_per_hour, Float)
        listed_in = session.scalars(
            _filtered(session, select(InstanceOffer.currency).join(Provider), filters, ref)
            .where(InstanceOffer.price_per_hour.is_not(None))
            .distinct()
        ).all()
        cases = []
        for source in listed_in:
            try:
                steps = conversion_steps(source, currency, ref.rates)
            except UnknownCurrencyError as exc:
                raise FilterError("currency", str(exc)) from exc
            converted: ColumnElement[Any] = price
            for op, rate in steps:
                converted = converted * rate if op == "*" else converted / rate
            cases.append((InstanceOffer.currency == source, converted))
        if not cases:
            return stmt.where(false())
        stmt = stmt.where(price.is_not(None), case(*cases, else_=None) <= max_price)
    return stmt


def page_offers(
    session: Session,
    filters: dict[str, Any],
    ref: ReferenceData,
    *,
    currency: str = "USD",
    limit: int,
    offset: int = 0,
) -> tuple[list[OfferRow], int]:
    """One page of :func:`select_offers` (ordered by id), paged in SQL, and the number of
    matching offers (a count query): cost grows with the page, not with the catalog.

    Raises:
        FilterError: unknown GPU or currency.
    """
    require_currency(ref, currency)
    stmt = _exact_filtered(session, select(*_COLUMNS).join(Provider), filters, ref, currency)
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    page = stmt.order_by(InstanceOffer.id).limit(limit).offset(offset)
    return [_row(r) for r in session.execute(page)], total


def offer_counts_by_gpu(session: Session) -> dict[int, int]:
    """Available, plausible offers per catalog GPU model id: the order of the page's GPU
    chips, not a count to show (a public-catalog twin of a first-hand offer counts too: the
    anti-join that leaves it out costs 30 ms over 10,000 offers)."""
    stmt = (
        select(InstanceOffer.gpu_model_id, func.count())
        .where(
            InstanceOffer.gpu_model_id.is_not(None),
            InstanceOffer.available.is_(True),
            InstanceOffer.suspect.is_(False),
        )
        .group_by(InstanceOffer.gpu_model_id)
    )
    return {int(gpu_id): int(n) for gpu_id, n in session.execute(stmt) if gpu_id is not None}


def vram_gib(row: OfferRow, ref: ReferenceData) -> float | None:
    """VRAM one (possibly fractional) GPU of an offer gives a job, as the estimates use it
    (:func:`app.model.memory.vram_per_gpu_gib`); the listed figure when the GPU model is
    unknown. The ``min_vram_gib`` filter and the offers' ``vram_gib_per_gpu`` both use this."""
    if row.gpu_model_id is None:
        return row.vram_gib_per_gpu
    catalog = ref.gpus[ref.gpu_names_by_id[row.gpu_model_id]].vram_gib
    return vram_per_gpu_gib(catalog, row.vram_gib_per_gpu, row.gpu_count)


def counted_offers() -> tuple[ColumnElement[bool], ...]:
    """The offers that price-age counts and provider coverage count: available, non-suspect
    and not hidden by a first-hand twin (:func:`shadowed_by_first_hand`), the offers a
    default listing or ranking considers."""
    return (
        InstanceOffer.available.is_(True),
        InstanceOffer.suspect.is_(False),
        ~shadowed_by_first_hand(),
    )


def count_price_tiers(
    session: Session, now: dt.datetime | None = None, *, provider_ids: bool = False
) -> dict[Any, dict[str, int]]:
    """The :func:`counted_offers` per price-age tier (:func:`app.price_age.tier`):
    ``{"all": {"fresh": n, "aging": n, "old": n, "undated": n, "bookable": n, "offers": n}}``,
    and with ``provider_ids`` one such count per provider id too."""
    now = now or utcnow()
    rows = session.execute(
        select(
            InstanceOffer.provider_id, InstanceOffer.price_kind, InstanceOffer.last_seen_at
        ).where(*counted_offers())
    ).all()

    def empty() -> dict[str, int]:
        return {**dict.fromkeys(TIERS, 0), "bookable": 0, "offers": 0}

    out: dict[Any, dict[str, int]] = {"all": empty()}
    for pid, kind, seen in rows:
        age = price_age(kind, as_utc(seen), now)
        for key in ("all", pid) if provider_ids else ("all",):
            counts = out.setdefault(key, empty())
            counts[age.tier] += 1
            counts["bookable"] += age.bookable
            counts["offers"] += 1
    return out


def last_successful_refresh(session: Session) -> dict[int, dt.datetime | None]:
    """When each provider's last ``ok`` refresh run finished (``None`` if it has not), by
    provider id; providers with no ``ok`` run are absent."""
    return dict(
        session.execute(
            select(RefreshRun.provider_id, func.max(RefreshRun.finished_at))
            .where(RefreshRun.status == "ok")
            .group_by(RefreshRun.provider_id)
        )
        .tuples()
        .all()
    )


def stale_provider_ids(
    session: Session, stale_after_hours: float, now: dt.datetime | None = None
) -> set[int]:
    """Providers whose last successful refresh run is older than ``stale_after_hours``.

    Providers that never ran a refresh (seed data only) are not stale: their offers carry
    their own ``seen_on`` dates.
    """
    now = now or utcnow()
    last_ok = last_successful_refresh(session)
    # a run still in progress (or skipped for lack of an API key) says nothing yet
    ran = {
        pid
        for (pid,) in session.execute(
            select(RefreshRun.provider_id)
            .where(RefreshRun.status.in_(("ok", "error", "interrupted")))
            .distinct()
        )
    }
    cutoff = now - dt.timedelta(hours=stale_after_hours)
    stale = set()
    for pid in ran:
        finished = last_ok.get(pid)
        if finished is None:
            stale.add(pid)
            continue
        if as_utc(finished) < cutoff:
            stale.add(pid)
    return stale
