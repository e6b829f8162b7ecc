"""How a seed cell is read: the cell types of :mod:`app.data.rows` and the workload cells of
a preset row (the rules ``gpucost seed`` has always applied).

- an optional cell (``OptText``, ``OptFloat``, ``OptInt``, ``OptDecimal``, ``OptDate``) is
  stripped, and empty means ``None``; an optional integer accepts ``"8.0"``;
- a required text cell is kept as written; a required number must parse;
- flags: ``yes``/``no`` columns (``YesFlag``) and ``true``/``false`` columns (``TrueFlag``);
- lists are ``a|b|c`` (``PipeList``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator

from app.model.types import WORKLOAD_INPUTS


def _blank(value: object) -> object:
    """Stripped text; ``None`` for an empty cell."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _optional(parse: Callable[[str], Any]) -> Callable[[object], Any]:
    def read(value: object) -> Any:
        text = _blank(value)
        return None if text is None else parse(str(text))

    return read


def decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation as exc:
        raise ValueError(f"not a decimal number: {text!r}") from exc


def _int_of_number(text: str) -> int:
    """``"8"`` and ``"8.0"`` alike (how ``gpucost seed`` reads an optional integer)."""
    return int(float(text))


def split_list(value: object) -> list[str]:
    """``a|b|c`` as ``["a", "b", "c"]`` (blank parts dropped)."""
    return [p.strip() for p in str(value or "").split("|") if p.strip()]


OptText = Annotated[str | None, BeforeValidator(_blank)]
OptFloat = Annotated[float | None, BeforeValidator(_optional(float))]
OptInt = Annotated[int | None, BeforeValidator(_optional(_int_of_number))]
OptDecimal = Annotated[Decimal | None, BeforeValidator(_optional(decimal))]
OptDate = Annotated[dt.date | None, BeforeValidator(_optional(dt.date.fromisoformat))]
Float = Annotated[float, BeforeValidator(lambda v: float(str(v)))]
Int = Annotated[int, BeforeValidator(lambda v: int(str(v)))]
Date = Annotated[dt.date, BeforeValidator(lambda v: dt.date.fromisoformat(str(v).strip()))]
YesFlag = Annotated[bool, BeforeValidator(lambda v: str(v or "").strip() == "yes")]
TrueFlag = Annotated[bool, BeforeValidator(lambda v: v == "true")]
PipeList = Annotated[tuple[str, ...], BeforeValidator(lambda v: tuple(split_list(v)))]


def _cell_kind(kind: type) -> type:
    """The type a workload field's seed cell is read as: numbers and booleans as themselves,
    enums and lists as text (``cuda_only_libraries`` as ``bitsandbytes|flash-attn``, split by
    :func:`app.model.job.build_workload`)."""
    return kind if kind in (int, float, bool) else str


#: Workload fields a preset row carries (the flat workload of the API), with their cell types:
#: every outside-given field of the core workload (:data:`app.model.types.WORKLOAD_INPUTS`)
#: but ``preset``, which is the row's own slug.
PRESET_FIELDS: dict[str, type] = {
    name: _cell_kind(given.kind) for name, given in WORKLOAD_INPUTS.items() if name != "preset"
}


def cell_value(value: str | None, kind: type = str) -> Any:
    """One optional cell read as ``kind``: ``None`` when blank; booleans are true for
    ``true``/``yes``/``1`` (any case), integers accept ``"8.0"``.

    Raises:
        ValueError: a number cell that is not a number.
    """
    text = (value or "").strip()
    if text == "":
        return None
    if kind is bool:
        return text.lower() in ("true", "yes", "1")
    if kind is int:
        return int(float(text))
    if kind is float:
        return float(text)
    if kind is Decimal:
        return decimal(text)
    return text


def workload_cells(row: Mapping[str, str | None]) -> dict[str, Any]:
    """The workload fields of a seed row (:data:`PRESET_FIELDS`) that have a non-empty cell,
    read as their types (:func:`cell_value`).

    Raises:
        ValueError: a number cell that is not a number (the message names the field).
    """
    out: dict[str, Any] = {}
    for name, kind in PRESET_FIELDS.items():
        try:
            value = cell_value(row.get(name), kind)
        except ValueError as exc:
            raise ValueError(f"column {name}: {exc}") from exc
        if value is not None:
            out[name] = value
    return out
