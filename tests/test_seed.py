"""Seeding: provenance of every row, coverage, idempotency."""

from __future__ import annotations

import csv

import pytest
from sqlalchemy import func, select

from app.db.migrate import upgrade
from app.db.models import InstanceOffer, PriceObservation, Provider, ThroughputBenchmark
from app.db.seed import SeedError, seed_all
from app.db.session import create_engine_from_url, create_session_factory
from tests.conftest import SEED_DIR

pytestmark = pytest.mark.db


def test_every_seed_row_has_a_source() -> None:
    for path in SEED_DIR.glob("*.csv"):
        with path.open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert rows, path
        assert all((r.get("source") or "").strip() for r in rows), path


def test_seed_is_idempotent_and_covers_the_brief(fresh_url: str) -> None:
    engine = create_engine_from_url(fresh_url)
    upgrade(engine)
    factory = create_session_factory(engine)
    with factory() as s, s.begin():
        first = seed_all(s, SEED_DIR)
    with factory() as s, s.begin():
        second = seed_all(s, SEED_DIR)
    assert first.changed > 3000
    assert second.changed == 0
    with factory() as s:
        offers = s.scalars(select(InstanceOffer)).all()
        providers = {o.provider_id for o in offers}
        assert len(offers) >= 40 and len(providers) >= 5
        assert any(
            o.currency == "CNY"
            and o.gpu_name_raw == "3090-24G"
            and o.vcpus == 11
            and o.max_cuda == "13.0"
            for o in offers
        )
        multi = [o for o in offers if o.gpu_count > 1]
        assert any(o.interconnect in ("nvlink", "nvswitch") for o in multi)
        assert any(o.interconnect == "pcie" for o in multi)
        assert any(o.billing == "spot" for o in offers)
        assert all(o.source for o in offers)
        assert all(o.price_per_hour is None or o.price_per_hour > 0 for o in offers)
        # RunPod H100 SXM Secure was seen at three prices: three observations, latest current
        hist = (
            s.execute(
                select(PriceObservation.price_per_hour)
                .join(InstanceOffer)
                .join(Provider)
                .where(
                    Provider.slug == "runpod", InstanceOffer.offer_key == "H100 SXM (Secure Cloud)"
                )
                .order_by(PriceObservation.observed_at)
            )
            .scalars()
            .all()
        )
        assert [float(p) for p in hist] == [3.29, 3.49, 3.99]
        assert s.scalar(select(func.count()).select_from(ThroughputBenchmark)) > 2500
        assert (
            s.scalar(
                select(func.count()).where(ThroughputBenchmark.throughput_unit.like("%minutes%"))
            )
            == 0
        )
    engine.dispose()


def test_row_without_source_is_rejected(tmp_path, fresh_url: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "providers.csv").write_text("slug,name,homepage_url,kind,source\nx,X,,cloud,\n")
    engine = create_engine_from_url(fresh_url)
    upgrade(engine)
    with create_session_factory(engine)() as s, pytest.raises(SeedError, match="no source"):
        seed_all(s, tmp_path)
    engine.dispose()
