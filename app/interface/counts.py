"""Counts as people write them: the one parser of query strings, JSON bodies and the CLI.

``7B``, ``25.6M``, ``50k``, ``8e9``, ``1,281,167`` in a query string or a JSON string, and an
integral JSON number such as ``7e9`` (JSON writers emit large counts that way) all mean the
same whole number. Which fields are counts is their :class:`~app.model.types.InputSpec`'s
``count`` (``params``, ``samples_per_epoch``, ``tokens_per_epoch`` …).
"""

from __future__ import annotations

import math
import re

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
#: How a count is written as text (the OpenAPI ``pattern`` of every count parameter and of
#: the string form of a count in a body; the check :func:`parse_count` applies, one rule):
#: digits, grouped in threes by ``,``, ``_`` or a space (``1,281,167``), or a decimal
#: (``25.6``, ``.5``); an optional exponent (``8e9``); an optional suffix k (10³), M (10⁶),
#: B or G (10⁹), T (10¹²), any case, after at most one space (``7B``, ``7 B``). The value must
#: come out whole and within the field's bounds (the model's, stated in the document too).
COUNT_PATTERN = r"^(?:[0-9]{1,3}(?:[,_ ][0-9]{3})+|[0-9]*\.?[0-9]+)(?:[eE][0-9]+)? ?[kKmMbBgGtT]?$"
_COUNT_TEXT = re.compile(COUNT_PATTERN)
_COUNT_RE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[0-9]+)?)([kmbgt]?)$", re.IGNORECASE)
COUNT_HELP = "a count: 7B, 25.6M, 8e9, 1,281,167"
#: Why a count that is not whole is refused.
NOT_WHOLE = "must be a whole number (a count), e.g. 7000000000, 7e9 or '7B'"


def parse_count(text: str) -> str | None:
    """A count as people write it (:data:`COUNT_PATTERN`: ``7B``, ``25.6M``, ``1,281,167``)
    as the digits of its value; ``None`` when the text is no count; the text itself when the
    value is not whole (the caller reports it: :data:`NOT_WHOLE`)."""
    if not _COUNT_TEXT.fullmatch(text):
        return None
    match = _COUNT_RE.match(text.replace(",", "").replace("_", "").replace(" ", ""))
    if not match:  # the pattern admits only what this reads; kept for the type checker
        return None
    value = float(match.group(1)) * _SUFFIX.get(match.group(2).lower(), 1)
    if not math.isfinite(value) or value != round(value):
        return text
    return str(round(value))


def count_value(value: object) -> object:
    """A count field's JSON value as an ``int``: an integral number (``7e9`` → 7000000000) or
    a string :func:`parse_count` reads (``"7B"``, ``"50k"``, ``"1.5M"``); anything else is
    returned as it is for the field's own type check (``true`` stays no integer).

    Raises:
        ValueError: a number or text whose value is not whole (:data:`NOT_WHOLE`), or text
            that is no count (:data:`COUNT_HELP`).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(NOT_WHOLE)
        return int(value)
    if isinstance(value, str):
        digits = parse_count(value)
        if digits is None:
            raise ValueError(f"must be {COUNT_HELP}")
        if not digits.isdigit():
            raise ValueError(NOT_WHOLE)
        return int(digits)
    return value
