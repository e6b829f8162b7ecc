"""Counts as people write them: the one parser of query strings, JSON bodies and the CLI.

``7B``, ``25.6M``, ``50k``, ``8e9``, ``1,281,167`` in a query string or a JSON string, and an
integral JSON number such as ``7e9`` (JSON writers emit large counts that way) all mean the
same whole number. Which fields are counts is their :class:`~app.model.types.InputSpec`'s
``count`` (``params``, ``samples_per_epoch``, ``tokens_per_epoch`` …).

Lengths in tokens (``seq_len``: its :class:`~app.model.types.InputSpec` says ``tokens``) have
their own :data:`TOKENS` grammar: ``4k`` is 4096 there, not 4000, because a sequence length is
written in binary thousands (``4k``, ``8K``, ``32k`` context windows are 4096, 8192 and 32768
tokens: Llama 2's ``max_position_embeddings`` 4096, Mistral 7B's 32768).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from app.model.types import WORKLOAD_INPUTS

#: How a count is written as text (the OpenAPI ``pattern`` of every count parameter and of
#: the string form of a count in a body; the check :func:`parse_count` applies, one rule):
#: digits, grouped in threes by ``,``, ``_`` or a space (``1,281,167``), or a decimal
#: (``25.6``, ``.5``); an optional exponent (``8e9``); an optional suffix k (10³), M (10⁶),
#: B or G (10⁹), T (10¹²), any case, after at most one space (``7B``, ``7 B``). The value must
#: come out whole and within the field's bounds (the model's, stated in the document too).
COUNT_PATTERN = r"^(?:[0-9]{1,3}(?:[,_ ][0-9]{3})+|[0-9]*\.?[0-9]+)(?:[eE][0-9]+)? ?[kKmMbBgGtT]?$"
COUNT_HELP = "a count: 7B, 25.6M, 8e9, 1,281,167"
#: Why a count that is not whole is refused.
NOT_WHOLE = "must be a whole number (a count), e.g. 7000000000, 7e9 or '7B'"

#: How a length in tokens is written as text: digits, grouped in threes as a count's
#: (``131,072``), or a decimal; an optional suffix k (2¹⁰ = 1024) or M (2²⁰ = 1048576), any
#: case, after at most one space (``4k`` = 4096, ``8K`` = 8192, ``32k`` = 32768, ``1.5k`` =
#: 1536). No exponent and no B/G/T: nobody writes a sequence length so.
TOKENS_PATTERN = r"^(?:[0-9]{1,3}(?:[,_ ][0-9]{3})+|[0-9]*\.?[0-9]+) ?[kKmM]?$"
TOKENS_HELP = "a length in tokens: 2048, 4k (= 4096), 32K (= 32768); k is 1024 here"
#: Why a length in tokens that is not whole is refused.
TOKENS_NOT_WHOLE = "must be a whole number of tokens, e.g. 4096 or '4k' (= 4096)"


@dataclass(frozen=True, slots=True)
class Grammar:
    """How one kind of count is written: ``pattern`` (the regex of the text, also the
    OpenAPI ``pattern``), ``suffixes`` (lower-case suffix → multiplier), ``help`` (what a
    refusal says the value must be, after "must be") and ``not_whole`` (the refusal of a
    value that is not whole)."""

    pattern: str
    suffixes: dict[str, int]
    help: str
    not_whole: str


#: Counts of things (parameters, samples, tokens per epoch): decimal suffixes.
COUNT = Grammar(
    COUNT_PATTERN,
    {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12},
    COUNT_HELP,
    NOT_WHOLE,
)
#: Lengths in tokens (``seq_len``): binary suffixes, k = 1024.
TOKENS = Grammar(TOKENS_PATTERN, {"k": 2**10, "m": 2**20}, TOKENS_HELP, TOKENS_NOT_WHOLE)

#: Workload field → the grammar it is written in, for every field written as a count: its
#: :class:`~app.model.types.InputSpec` says ``tokens`` (:data:`TOKENS`) or ``count``
#: (:data:`COUNT`). The query strings, JSON bodies, the form and the CLI read these.
GRAMMARS: dict[str, Grammar] = {
    name: TOKENS if given.spec.tokens else COUNT
    for name, given in WORKLOAD_INPUTS.items()
    if given.spec.tokens or given.spec.count
}

_NUMBER_SUFFIX = re.compile(r"^([0-9]*\.?[0-9]+(?:e[0-9]+)?)([a-z]?)$", re.IGNORECASE)
_COMPILED: dict[str, re.Pattern[str]] = {}


def parse_count(text: str, grammar: Grammar = COUNT) -> str | None:
    """A count as people write it (:data:`COUNT_PATTERN`: ``7B``, ``25.6M``, ``1,281,167``;
    with ``grammar`` :data:`TOKENS`, :data:`TOKENS_PATTERN`: ``4k`` = 4096) as the digits of
    its value; ``None`` when the text is no such count; the text itself when the value is not
    whole (the caller reports it: the grammar's ``not_whole``)."""
    checker = _COMPILED.get(grammar.pattern)
    if checker is None:
        checker = _COMPILED[grammar.pattern] = re.compile(grammar.pattern)
    if not checker.fullmatch(text):
        return None
    match = _NUMBER_SUFFIX.match(text.replace(",", "").replace("_", "").replace(" ", ""))
    if not match:  # the pattern admits only what this reads; kept for the type checker
        return None
    value = float(match.group(1)) * grammar.suffixes.get(match.group(2).lower(), 1)
    if not math.isfinite(value) or value != round(value):
        return text
    return str(round(value))


def count_value(value: object, grammar: Grammar = COUNT) -> object:
    """A count field's JSON value as an ``int``: an integral number (``7e9`` → 7000000000) or
    a string :func:`parse_count` reads by ``grammar`` (``"7B"``, ``"50k"``, ``"1.5M"``; a
    :data:`TOKENS` field ``"4k"`` → 4096); anything else is returned as it is for the field's
    own type check (``true`` stays no integer).

    Raises:
        ValueError: a number or text whose value is not whole (the grammar's ``not_whole``),
            or text that is no count (the grammar's ``help``).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(grammar.not_whole)
        return int(value)
    if isinstance(value, str):
        digits = parse_count(value, grammar)
        if digits is None:
            raise ValueError(f"must be {grammar.help}")
        if not digits.isdigit():
            raise ValueError(grammar.not_whole)
        return int(digits)
    return value
