"""The calibration file as data: read into a frozen value, written a section at a time, and
the Model facade that carries it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from app.calibrate.store import differences, jsonable, with_section
from app.model import Calibration, Measurements, Model, load_calibration
from app.model.calibration import CALIBRATION_PATH, from_document, render, version_of
from app.model.throughput import estimate_throughput
from app.model.types import (
    Hardware,
    Situation,
)
from tests.unit.helpers import A100_80_SXM, BERT, MI300X, RTX_4090, bench_point


def test_the_served_file_reads_into_a_frozen_value_with_tuples() -> None:
    doc = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    cal = load_calibration()
    assert load_calibration() is cal  # read once per process
    assert cal.version == doc["version"] == version_of(doc)
    assert cal.memory_cases == doc["memory"]["cases"]
    # JSON lists come back as the tuples the model unpacks
    assert isinstance(cal.multi_gpu_range, tuple) and len(cal.multi_gpu_range) == 2
    assert all(isinstance(v, tuple) and len(v) == 5 for v in cal.mfu_range.values())
    assert cal.range_factors["measured"] == tuple(
        doc["throughput"]["constants"]["range_factors"]["measured"]
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.comm_overlap = 0.5  # type: ignore[misc]
    # the committed file is in the writer's own formatting (a refit that changes nothing
    # writes the same bytes)
    assert render(doc) == CALIBRATION_PATH.read_text(encoding="utf-8")


def test_a_document_without_a_constant_is_refused() -> None:
    doc = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    del doc["throughput"]["constants"]["width_h0"]
    with pytest.raises(ValueError, match="width_h0"):
        from_document(doc)
    with pytest.raises(ValueError, match="format"):
        from_document({**doc, "format": 2})


def test_a_memory_section_with_a_missing_or_unknown_parameter_is_refused() -> None:
    doc = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    del doc["memory"]["params"]["qlora_overhead_torchao"]  # has a default: still refused
    with pytest.raises(ValueError, match=r"missing \['qlora_overhead_torchao'\]"):
        from_document(doc)
    doc = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    doc["memory"]["params"]["oom_centre"] = 1.0  # a renamed key is not silently dropped
    with pytest.raises(ValueError, match=r"unknown \['oom_centre'\]"):
        from_document(doc)


def test_a_section_keeps_its_date_unless_its_constants_change() -> None:
    doc = {
        "format": 1,
        "version": "",
        "throughput": {"fitted_on": "2026-01-01", "constants": {"qlora_slowdown": 1.1}},
        "memory": {"fitted_on": "2026-01-02", "params": {"oom_scale": 0.05}},
    }
    today = dt.date(2026, 12, 3)
    same = with_section(
        doc, "throughput", {"constants": {"qlora_slowdown": 1.1}}, "constants", today
    )
    assert same["throughput"]["fitted_on"] == "2026-01-01"
    assert same["memory"] == doc["memory"]  # the other section as it was
    moved = with_section(
        doc, "throughput", {"constants": {"qlora_slowdown": 1.2}}, "constants", today
    )
    assert moved["throughput"]["fitted_on"] == "2026-12-03"
    assert moved["version"] != same["version"] == version_of(same)
    # tuples are written as lists, keys as strings
    assert jsonable({1: (0.5, (1, 2))}) == {"1": [0.5, [1, 2]]}


def test_refit_differences_respect_the_tolerance() -> None:
    committed = {"a": [1.0, 2.0], "b": {"x": 0.0}, "c": "same"}
    assert (
        differences(committed, {"a": [1.0, 2.0000001], "b": {"x": 1e-12}, "c": "same"}, 1e-6, 1e-9)
        == []
    )
    assert differences(committed, {"a": [1.0, 2.1], "b": {"x": 0.0}, "c": "same"}, 1e-6, 1e-9) == [
        "/a[1]: committed 2.0, refit 2.1"
    ]
    assert differences(committed, {"a": [1.0], "b": {}, "c": "same"}, 1e-6, 1e-9) == [
        "/a: committed [1.0, 2.0], refit [1.0]",
        "/b/x: only in one",
    ]


def test_the_model_answers_with_the_calibration_it_holds() -> None:
    rows = [
        bench_point("A100 SXM4 80GB", 443.0, pid=1),
        bench_point("GeForce RTX 4090", 300.0, pid=2),
    ]
    catalog = {g.name: g for g in (A100_80_SXM, RTX_4090)}
    model = Model(Measurements(points=rows, catalog=catalog))
    assert isinstance(model.calibration, Calibration)
    machine = Hardware(gpu=A100_80_SXM)
    tp = model.throughput(BERT, machine)
    # the facade gives exactly what the throughput function gives
    same = estimate_throughput(BERT, A100_80_SXM, points=rows, catalog=catalog)
    assert tp == same and tp.situation == Situation.MEASURED
    # the range is the calibration's: a model built with wider factors answers wider
    wide = {**model.calibration.range_factors, "measured": (0.5, 2.0)}
    other = Model(model.evidence, dataclasses.replace(model.calibration, range_factors=wide))
    low = other.throughput(BERT, machine)
    assert low.samples_per_s == tp.samples_per_s
    assert low.samples_per_s_low == pytest.approx(tp.samples_per_s * 0.5)
    # ranking: $1/h on the A100 against $10/h on the 4090, cheapest epoch first
    ranked = model.rank(BERT, [(7, Hardware(gpu=RTX_4090), 10.0), (3, machine, 1.0)])
    assert [r.candidate.offer_id for r in ranked] == [3, 7]
    e = model.estimate(BERT, machine, price_per_hour=1.0)
    assert e.cost_per_epoch == pytest.approx(e.epoch_hours * 1.0)
    assert ranked[0].candidate.cost_per_epoch == pytest.approx(e.cost_per_epoch)
    # a job that needs bitsandbytes cannot run on an MI300X (ROCm): however cheap its epoch,
    # it ranks after the runnable A100 and off the frontier, before the 4090 (predicted out
    # of memory, last)
    needs_bnb = dataclasses.replace(BERT, cuda_only_libraries=("bitsandbytes",))
    amd = Model(Measurements(points=rows, catalog={**catalog, MI300X.name: MI300X}))
    offers = [(7, Hardware(gpu=RTX_4090), 10.0), (3, machine, 1.0), (9, Hardware(gpu=MI300X), 0.01)]
    ranked = amd.rank(needs_bnb, offers)
    assert [r.candidate.offer_id for r in ranked] == [3, 9, 7]
    assert [(r.candidate.cannot_run, r.candidate.oom_high) for r in ranked] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert [r.pareto_optimal for r in ranked] == [True, False, False]
    assert amd.rank(BERT, offers)[0].candidate.offer_id == 9
