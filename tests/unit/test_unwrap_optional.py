"""One unwrapping of optional types (``unwrap_optional``), used by the workload inputs' kinds,
the query parameters' scalar kinds and the request models' list fields."""

from __future__ import annotations

from typing import Literal, Optional

import pytest

from app.interface.query import scalar_kind
from app.interface.schemas import _is_array
from app.model.types import WORKLOAD_INPUTS, Precision, unwrap_optional


@pytest.mark.parametrize(
    ("annotation", "inner"),
    [
        (int | None, int),
        (Optional[float], float),  # noqa: UP045 - the typing spelling is unwrapped too
        (list[str] | None, list[str]),
        (Precision | None, Precision),
        (int, int),
        (int | str, int | str),  # not an optional of one type: as is
        (int | str | None, int | str | None),
    ],
)
def test_an_optional_of_one_type_gives_that_type(annotation: object, inner: object) -> None:
    assert unwrap_optional(annotation) == inner


def test_its_users_read_the_same_types() -> None:
    assert [scalar_kind(a) for a in (bool | None, int, float | None, str | None, int | str)] == [
        bool,
        int,
        float,
        None,
        None,
    ]
    assert _is_array(list[Literal["a"]] | None) and _is_array(tuple[str, ...])
    assert not _is_array(str | None) and not _is_array(int | str)
    assert WORKLOAD_INPUTS["params"].kind is int
    assert WORKLOAD_INPUTS["precision"].kind is Precision
    assert WORKLOAD_INPUTS["cuda_only_libraries"].kind is tuple
