"""Provider answers checked against their raw models: the whole payload (a schema change
fails the provider), each row (a malformed row is skipped and reported), each offer (a value
out of range skips it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from scrapers.base import ScrapeResult
from scrapers.http import ScraperError
from scrapers.records import ScrapedOffer

M = TypeVar("M", bound=BaseModel)


def validate_payload(model: type[M], payload: Any, what: str) -> M:
    """Validate a whole response against its raw model.

    Raises:
        ScraperError: the payload does not have the expected shape (a schema change).
    """
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ScraperError(
            f"{what}: unexpected payload shape: {where}: {first['msg']} "
            f"({exc.error_count()} error(s))"
        ) from exc


def validate_rows(model: type[M], rows: Iterable[Any], what: str, result: ScrapeResult) -> list[M]:
    """Validate rows one by one; a malformed row is skipped and reported in ``result``."""
    out: list[M] = []
    for i, row in enumerate(rows):
        try:
            out.append(model.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(row)"
            result.warn(f"{what}[{i}] skipped: {where}: {first['msg']}")
    return out


def build_offer(result: ScrapeResult, what: str, **values: Any) -> None:
    """Validate one :class:`ScrapedOffer` and add it; a value out of range skips the row."""
    try:
        result.offers.append(ScrapedOffer(**values))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        result.warn(f"{what} skipped: {where}: {first['msg']}")


def build_listed_offer(
    result: ScrapeResult, provider: str, name: str, region: str, billing: str, **values: Any
) -> None:
    """:func:`build_offer` of a provider's instance type ``name`` (also its offer key) sold in
    ``region`` at ``billing``; a skipped row is reported as ``"<provider> <name> <region>
    <billing>"``."""
    build_offer(
        result,
        f"{provider} {name} {region} {billing}",
        provider=provider,
        offer_key=name,
        instance_type=name,
        region=region,
        billing=billing,
        **values,
    )
