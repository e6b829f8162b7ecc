"""Unknown request fields named with the field meant: one rule for bodies and query strings.

A request model forbids unknown fields (``extra="forbid"``), so a typo is a 400; the answer
says the field is unknown and, when one is close, which known field was meant: ``ram_gb``
→ ``ram_gib`` (:func:`difflib.get_close_matches`, cutoff 0.6 on its ratio 2·M / (len(a) +
len(b)), M the matching characters: ``ram_gb`` and ``ram_gib`` 2·6 / 13 = 0.92).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from app.model.types import unwrap_optional

#: :func:`difflib.get_close_matches`' default: below it a name is no likely typo of another
CLOSE_ENOUGH = 0.6


def reason(error: Mapping[str, Any]) -> str:
    """One pydantic error (an item of ``errors()``) as a 400 gives its reason: a validator's
    ``ValueError`` as it was raised, whole (``'8x': must be a number of GPUs …``, not
    ``Value error, '8x': …``; a value the user wrote with `` - `` in it stays whole), and
    pydantic's own messages without what follows ``" - "`` (its context after the reason)."""
    raised = error.get("ctx", {}).get("error") if error.get("type") == "value_error" else None
    if raised is not None:
        return str(raised)
    return str(error["msg"]).removeprefix("Value error, ").split(" - ", maxsplit=1)[0]


def unknown_field(name: str, known: Iterable[str], what: str = "field") -> str:
    """Why ``name`` is refused: ``unknown field; did you mean ram_gib?`` (the nearest of
    ``known``), or ``unknown field`` when none is close."""
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=CLOSE_ENOUGH)
    return f"unknown {what}" + (f"; did you mean {near[0]}?" if near else "")


def model_at(model: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    """The request model holding the field at ``loc`` (a validation error's location, the
    field's own name last): ``EstimateRequest`` and ``("hardware", "ram_gb")`` →
    ``HardwareIn``; ``None`` when the path leaves the models (a list, a plain value)."""
    current: type[BaseModel] = model
    for part in loc[:-1]:
        info = current.model_fields.get(str(part))
        inner = unwrap_optional(info.annotation) if info is not None else None
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return None
        current = inner
    return current


def name_unknown_fields(model: type[BaseModel], errors: list[Any]) -> list[Any]:
    """Pydantic's ``errors()`` of ``model`` with each unknown field's message
    (``extra_forbidden``: "Extra inputs are not permitted") replaced by
    :func:`unknown_field` against the fields of the model it was sent to."""
    out = []
    for e in errors:
        holder = model_at(model, e.get("loc", ())) if e.get("type") == "extra_forbidden" else None
        if holder is not None and e["loc"]:
            name = str(e["loc"][-1])
            where = field_home(model, name, tuple(map(str, e["loc"][:-1])))
            msg = unknown_field(name, holder.model_fields) if where is None else where
            e = {**e, "msg": msg}
        out.append(e)
    return out


def field_home(model: type[BaseModel], name: str, sent_in: tuple[str, ...]) -> str | None:
    """Where ``name``, unknown in the part of ``model`` at ``sent_in``, is a field: the top
    level of the request or one of its parts (``workload``, ``hardware``, ``filters``):
    ``unknown field in hardware; price_per_hour goes at the top level of the request``.
    ``None`` when it is a field of none of them (or of the part it was sent in)."""
    here = ".".join(sent_in) or "the request"
    if sent_in and name in model.model_fields:
        return f"unknown field in {here}; {name} goes at the top level of the request"
    for part, info in model.model_fields.items():
        inner = unwrap_optional(info.annotation)
        nested = isinstance(inner, type) and issubclass(inner, BaseModel)
        if nested and (part,) != sent_in and name in inner.model_fields:
            return f"unknown field in {here}; {name} goes in {part} ({part}.{name})"
    return None


def detail_keys(extra: Sequence[Any]) -> str:
    """The keys of a 400's ``extra`` entries for its ``detail``, an unknown field with its
    message: ``workload.seq_len, hardware.ram_gb: unknown field; did you mean ram_gib?``."""
    return ", ".join(
        f"{e['key']}: {e['message']}"
        if str(e.get("message", "")).startswith("unknown field")
        else str(e["key"])
        for e in extra
        if isinstance(e, dict) and e.get("key")
    )
