"""The stack classes' efficiencies from the rows (app/calibrate/stack_fit.py) on the seed with
the pending timm rows added: which levels pair, and the level the API serves on a tie."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from app.calibrate.dataset import Dataset, load_dataset
from app.calibrate.stack_fit import fit_stack_efficiency, level_pairs
from app.calibrate.validate import served_data
from app.data.load import benchmark_point
from app.data.rows import BenchmarkRow, read_rows
from app.model.pooled import PooledData
from app.settings import PROJECT_ROOT


@pytest.fixture(scope="module")
def with_timm() -> tuple[Dataset, PooledData]:
    ds = load_dataset(PROJECT_ROOT / "seed_data")
    pending = read_rows(PROJECT_ROOT / "seed_data" / "stack_rows_pending.csv", BenchmarkRow)
    timm = [
        benchmark_point(row, 100_000 + i, row.gpu)
        for i, row in enumerate(pending)
        if row.source == "timm_benchmark"
    ]
    assert len(timm) == 18  # 9 networks x 2 memory formats, one RTX 3090
    ds = replace(ds, points=[*ds.points, *timm])
    return ds, served_data(ds, ds.points)


def test_each_timm_suite_pairs_with_the_tuned_level_of_its_network(
    with_timm: tuple[Dataset, PooledData],
) -> None:
    _, data = with_timm
    pairs = level_pairs(data)
    # 8 networks a tuned suite also measured (not ViT-B/16) x 2 memory formats (two suites)
    assert len(pairs) == 16 and {p.family for p in pairs} == {"cnn"}
    assert sum("NHWC" in p.what for p in pairs) == 8
    # the pooled fit's level difference, the timm level on top
    fit = data.fit("cnn")
    assert fit is not None
    nhwc = next(p for p in pairs if p.what.startswith("ResNet-50 v1.5|full: timm_benchmark"))
    g = "ResNet-50 v1.5|full"
    suite = nhwc.what.split(": ")[1].split(" vs ")[0]
    ref = nhwc.what.split(" vs ")[1]
    expected = fit.term("src", g, "timm_benchmark") + fit.term("ver", g, suite)
    expected -= fit.term("src", g, ref.split("@")[0]) + fit.term("ver", g, ref)
    assert nhwc.log_ratio == pytest.approx(expected)
    assert nhwc.weight == 1.0  # one row per suite


def test_cnn_efficiency_is_the_geometric_mean_of_the_timm_pairs(
    with_timm: tuple[Dataset, PooledData],
) -> None:
    ds, data = with_timm
    pairs = level_pairs(data)
    eff = fit_stack_efficiency(ds, data)
    mean = math.exp(sum(p.log_ratio for p in pairs) / len(pairs))
    assert eff["cnn|eager"] == pytest.approx(mean, abs=1e-4)
    assert eff["transformer|eager"] == pytest.approx(7075 / 8998, abs=1e-4)


def test_a_tie_in_gpus_measured_serves_the_tuned_suite(
    with_timm: tuple[Dataset, PooledData],
) -> None:
    ds, _ = with_timm
    # without Volta, EfficientNet-B0 is measured by NVIDIA DLE on the A100 alone and by timm
    # on the RTX 3090 alone: the API serves the tuned suite (timm's version string is newer)
    points = [p for p in ds.points if ds.catalog.get(p.gpu) is None or
              ds.catalog[p.gpu].architecture != "Volta"]  # fmt: skip
    level = served_data(ds, points).reference_level(("EfficientNet-B0", "full"), False)
    assert level is not None and level.source == "nvidia_dle"
