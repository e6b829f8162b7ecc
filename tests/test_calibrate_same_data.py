"""The calibration data set is the data the service estimates from.

Both read ``seed_data/`` through the one reader, :mod:`app.data.load`: ``app.calibrate``
turns its rows straight into core types (tools/fit_constants.py and benchmarks.accuracy run
without a database), while ``gpucost seed`` stores the same rows and the service reads them
back through ``app.services.reference.load_reference``. Every fitted constant and accuracy
figure is only valid for what the API serves if the round trip through the database changes
nothing: the same GPU specs, measurements, presets and FLOPs table. This test holds them to
that.
"""

from __future__ import annotations

import dataclasses

import pytest

from app.calibrate.dataset import load_dataset
from app.db.session import create_engine_from_url, create_session_factory
from app.services.reference import ReferenceData, load_reference
from tests.conftest import SEED_DIR

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def service_ref(seeded_url: str) -> ReferenceData:
    engine = create_engine_from_url(seeded_url)
    try:
        with create_session_factory(engine)() as session:
            return load_reference(session, SEED_DIR)
    finally:
        engine.dispose()


def _point_key(p: object) -> tuple:
    """A measurement without its row id (ids are CSV order there, database ids here)."""
    d = dataclasses.asdict(p)  # type: ignore[call-overload]
    d.pop("id")
    return tuple(sorted((k, str(v)) for k, v in d.items()))


def test_same_gpu_specs(service_ref: ReferenceData) -> None:
    ds = load_dataset(SEED_DIR)
    assert ds.catalog == service_ref.gpus
    assert len(ds.catalog) >= 80


def test_same_measurements(service_ref: ReferenceData) -> None:
    ds = load_dataset(SEED_DIR)
    ours = sorted(_point_key(p) for p in ds.points)
    theirs = sorted(_point_key(p) for p in service_ref.points)
    assert len(ours) == len(theirs) > 2000
    assert ours == theirs


def test_same_presets_and_flops_table(service_ref: ReferenceData) -> None:
    ds = load_dataset(SEED_DIR)
    assert ds.presets.keys() == service_ref.presets.keys()
    for slug, p in ds.presets.items():
        served = service_ref.presets[slug]
        assert p.fields == served.fields, slug
        assert p.meta["benchmark_workloads"] == served.benchmark_workloads, slug
        assert p.meta["benchmark_method"] == served.benchmark_method, slug
        assert p.meta["units_per_sample"] == served.units_per_sample, slug
    assert ds.flops_table == service_ref.flops_table
