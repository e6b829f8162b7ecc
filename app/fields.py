"""One record built from others by field name: the answers and the stored rows that carry a
result's, a row's or a seed row's fields under the same names (an offer row into
``OfferOut``, an estimate into ``EstimateOut``, a stored preset into ``SeedPreset``) instead
of writing each ``name=source.name`` out.

Pure: the standard library only; the targets are dataclasses or pydantic models (read by
their ``model_fields``), the sources any objects (dataclasses, ORM rows, seed rows).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def field_names(target: type[Any]) -> list[str]:
    """The fields of a pydantic model (``model_fields``) or a dataclass, in their order.

    Raises:
        TypeError: ``target`` is neither.
    """
    model_fields = getattr(target, "model_fields", None)
    if isinstance(model_fields, dict):
        return list(model_fields)
    return [f.name for f in dataclasses.fields(target)]


def same_named(target: type[T], *sources: object, **given: Any) -> T:
    """A ``target`` whose fields are ``given`` or, for every other field, the attribute of
    the same name of the first of ``sources`` that has one, as it is (what pydantic's
    ``from_attributes`` reads); a field no source has keeps its default (a required one
    missing is the target's own error).

    Raises:
        TypeError: ``target`` is neither a pydantic model nor a dataclass (or a required
            dataclass field is missing).
        pydantic.ValidationError: a pydantic target refuses a value.
    """
    values: dict[str, Any] = {}
    names = _NAMES.get(target)
    if names is None:
        names = _NAMES[target] = tuple(field_names(target))
    for name in names:
        if name in given:
            values[name] = given[name]
            continue
        for source in sources:
            if hasattr(source, name):
                values[name] = getattr(source, name)
                break
    return target(**values)


#: :func:`field_names` by target type (a ranking answer builds hundreds of records)
_NAMES: dict[type[Any], tuple[str, ...]] = {}
