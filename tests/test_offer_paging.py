"""``GET /v1/offers`` pages in SQL: the same offers, in the same order, as filtering every row
in Python (:func:`app.services.offers.select_offers`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.db.session import create_engine_from_url, create_session_factory
from app.services.offers import FilterError, page_offers, select_offers
from app.services.reference_cache import ReferenceCache
from tests.conftest import SEED_DIR

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def db(seeded_url: str) -> Iterator[tuple[Any, Any]]:
    """(session factory, reference data) on the seeded database."""
    engine = create_engine_from_url(seeded_url)
    factory = create_session_factory(engine)
    yield factory, ReferenceCache(factory, SEED_DIR).get()
    engine.dispose()


@pytest.mark.parametrize(
    ("filters", "currency"),
    [
        ({}, "USD"),
        ({"available_only": False}, "USD"),
        ({"min_vram_gib": 40}, "USD"),
        ({"min_vram_gib": 80, "gpu_count": 8}, "USD"),
        ({"max_price_per_hour": 2.0}, "USD"),
        ({"max_price_per_hour": 15.0}, "CNY"),
        ({"max_price_per_hour": 1.5, "min_vram_gib": 24, "billing": "on_demand"}, "CNY"),
        ({"gpu": "A100", "max_price_per_hour": 3.0}, "USD"),
    ],
)
def test_sql_paging_matches_python_filtering(
    db: tuple[Any, Any], filters: dict[str, Any], currency: str
) -> None:
    factory, ref = db
    with factory() as session:
        every = select_offers(session, filters, ref, currency=currency)
        assert every, "a filter that keeps nothing checks nothing"
        pages = []
        for offset in range(0, len(every) + 7, 7):
            page, total = page_offers(
                session, filters, ref, currency=currency, limit=7, offset=offset
            )
            assert total == len(every)
            pages.extend(page)
    assert [r.id for r in pages] == [r.id for r in every]
    assert pages == every


def test_unknown_currency_with_a_price_filter_names_the_field(db: tuple[Any, Any]) -> None:
    factory, ref = db
    with factory() as session, pytest.raises(FilterError) as err:
        page_offers(session, {"max_price_per_hour": 1.0}, ref, currency="XYZ", limit=5)
    assert err.value.field == "currency"
