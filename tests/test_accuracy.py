"""Pin the cross-validated accuracy so that a change that makes estimates worse fails CI.

The thresholds are the issue's targets where they are met (docs/accuracy.md) and the
current figure plus a small margin where they are not (leave-one-workload-out).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.calibrate.dataset import load_dataset
from app.calibrate.validate import ape_stats, logo, lowo, multigpu_residuals
from app.settings import PROJECT_ROOT
from benchmarks.accuracy import build_report, headline_logo


@pytest.fixture(scope="module")
def ds():  # type: ignore[no-untyped-def]
    return load_dataset(PROJECT_ROOT / "seed_data")


def test_leave_one_gpu_out_meets_targets_and_beats_baselines(ds) -> None:  # type: ignore[no-untyped-def]
    head = headline_logo(logo(ds))
    assert len(head) > 700
    median, p90, _ = ape_stats([r.ape for r in head])
    assert median <= 0.08
    assert p90 <= 0.25
    blend = ape_stats([abs(r.baselines["blend"] / r.actual - 1) for r in head])
    fp32 = ape_stats([abs(r.baselines["fp32_ratio"] / r.actual - 1) for r in head])
    assert median < blend[0] < fp32[0]
    assert p90 < blend[1] < fp32[1]


def test_leave_one_workload_out_does_not_regress(ds) -> None:  # type: ignore[no-untyped-def]
    res = lowo(ds)
    median, _, n = ape_stats([r.ape for r in res])
    flat = ape_stats([abs(r.baselines["flat_mfu_0.3"] / r.actual - 1) for r in res])[0]
    assert n > 300
    assert median <= 0.40  # target is 0.30: not met yet (docs/accuracy.md); must not worsen
    assert median < flat


def test_multi_gpu_model_beats_linear_scaling(ds) -> None:  # type: ignore[no-untyped-def]
    res = multigpu_residuals(ds)
    model = ape_stats([r.ape for r in res])
    linear = ape_stats([abs(r.baselines["linear"] / r.actual - 1) for r in res])
    assert model[2] > 1000
    assert model[0] < linear[0] and model[0] <= 0.05


def test_report_builds(ds) -> None:  # type: ignore[no-untyped-def]
    text, numbers, _, _ = build_report(ds)
    assert "## Memory" in text and numbers["logo_median"] <= 0.08


def test_fitted_constants_are_reproduced_by_the_fit_script() -> None:
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "fit_constants.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
