"""The exchange rates behind a converted price, with their date and source.

Every answer that converts a price (``/v1/rank``, ``/v1/offers/{id}`` and their pages) lists
the stored rates it used (:func:`rates_used`): the pair, the rate, the day it was published,
where it was read and how old it is; past :data:`RATE_OLD_AFTER_DAYS` the entry carries a
warning.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from app.model.cost import UnknownCurrencyError, conversion_path
from app.services.reference import ReferenceData

#: A rate older than this many days is flagged. The two sources of the seed's rates publish a
#: new fixing every business day (CFETS's central parity of the yuan; the ECB's euro reference
#: rates), so a week-old rate has been replaced by at least five newer ones.
RATE_OLD_AFTER_DAYS = 7.0


@dataclass(frozen=True, slots=True)
class RateUsed:
    """One stored rate an answer converted with: 1 ``base`` = ``rate`` ``quote`` on
    ``seen_on`` (from ``source``), ``age_days`` old at the answer's time, ``warning`` when it
    is older than :data:`RATE_OLD_AFTER_DAYS`."""

    base: str
    quote: str
    rate: float
    seen_on: dt.date | None
    source: str | None
    age_days: float | None
    warning: str | None


def rates_used(
    ref: ReferenceData, currencies: Iterable[str], target: str, now: dt.datetime | None = None
) -> list[RateUsed]:
    """The stored rates that convert each of ``currencies`` to ``target``
    (:func:`app.model.cost.conversion_path`), each once, in the order first used;
    currencies without a rate to ``target`` are skipped (the answer says they are unpriced)."""
    today = (now or dt.datetime.now(dt.UTC)).date()
    out: dict[tuple[str, str], RateUsed] = {}
    for currency in currencies:
        try:
            path = conversion_path(currency, target, ref.rates)
        except UnknownCurrencyError:
            continue
        for base, quote, _ in path:
            if (base, quote) in out:
                continue
            seen_on, source = ref.rate_sources.get((base, quote), (None, None))
            age = float((today - seen_on).days) if seen_on else None
            warning = None
            if age is None or age > RATE_OLD_AFTER_DAYS:
                when = f"{age:.0f} days old" if age is not None else "undated"
                warning = (
                    f"the {base}/{quote} rate is {when} (older than {RATE_OLD_AFTER_DAYS:g} "
                    f"days): prices converted with it may be off by what {base}/{quote} moved "
                    "since"
                )
            out[(base, quote)] = RateUsed(
                base=base,
                quote=quote,
                rate=ref.rates[(base, quote)],
                seen_on=seen_on,
                source=source,
                age_days=age,
                warning=warning,
            )
    return list(out.values())
