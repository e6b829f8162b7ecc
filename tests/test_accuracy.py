"""Pin the served path's cross-validated accuracy against the issue's targets.

Every figure comes from ``benchmarks.accuracy.build_report`` (the served path with held-out
rows removed). Targets that are met are asserted; targets not met yet are strict ``xfail``
against the target itself (they turn into failures the day they pass, so the test is
tightened then), plus a guard that the figure does not get worse than the honest figure
written in docs/accuracy.md.

The whole report (eight cross-validation protocols, each refitting the served path once per
held-out fold: about two CPU minutes) is marked ``crossval`` and runs as its own CI step
(``pytest -m crossval``, like the refits), outside the README's test command; that command keeps
one protocol, leave-one-architecture-out (its target and its range coverage, a few CPU seconds),
so the served path's held-out accuracy is still checked on every run.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.calibrate.dataset import load_dataset
from app.calibrate.validate import Residual, ape_stats, loao, multigpu_residuals
from app.settings import PROJECT_ROOT
from benchmarks.accuracy import COVERAGE_TARGET, TARGETS, build_report


@pytest.fixture(scope="module")
def ds():  # type: ignore[no-untyped-def]
    return load_dataset(PROJECT_ROOT / "seed_data")


@pytest.fixture(scope="module")
def numbers(ds):  # type: ignore[no-untyped-def]
    text, numbers, _, _ = build_report(ds)
    assert "## Headline (served path, single GPU)" in text and "## Memory" in text
    return numbers


@pytest.fixture(scope="module")
def loao_residuals(ds) -> list[Residual]:  # type: ignore[no-untyped-def]
    """Leave-one-architecture-out alone (what ``build_report`` computes as ``la``)."""
    return loao(ds)


def test_leave_one_architecture_out_does_not_get_worse_and_covers(
    loao_residuals: list[Residual],
) -> None:
    # the README command's representative of the crossval protocols below: the same figure
    # as build_report's loao_median (at the API's level: no suite handed to the held-out
    # row), with the served ranges (build_report's coverage is nested: app/calibrate/nested.py)
    assert len(loao_residuals) >= 800  # 808 held-out rows on the seed data
    assert ape_stats([r.ape for r in loao_residuals])[0] <= 0.16  # 15.6 % (target 12 %)
    lo, hi = COVERAGE_TARGET
    assert lo <= sum(r.inside for r in loao_residuals) / len(loao_residuals) <= hi


@pytest.mark.crossval
def test_leave_one_gpu_out_median_meets_target(numbers) -> None:  # type: ignore[no-untyped-def]
    assert numbers["logo_median"] <= TARGETS["logo_median"] == 0.10
    # and beats both baselines (which, unlike the served path, are handed the row's suite)
    assert numbers["logo_median"] < numbers["blend_median"] < numbers["fp32_median"]


@pytest.mark.crossval
@pytest.mark.xfail(strict=True, reason="p90 33.0 % at the API's level, target 30 %")
def test_leave_one_gpu_out_p90_meets_target(numbers) -> None:  # type: ignore[no-untyped-def]
    assert numbers["logo_p90"] <= TARGETS["logo_p90"] == 0.30


@pytest.mark.crossval
@pytest.mark.xfail(strict=True, reason="14.5 % at the API's level, target 12 %")
def test_leave_one_architecture_out_meets_target(numbers) -> None:  # type: ignore[no-untyped-def]
    assert numbers["loao_median"] <= TARGETS["loao_median"] == 0.12


@pytest.mark.crossval
def test_derived_workloads_meet_target(numbers) -> None:  # type: ignore[no-untyped-def]
    # 9.9 % since Lambda's Transformer-XL rows are read as the full-softmax network they ran
    # (14.4 % when they stood for DLE's adaptive-softmax presets)
    assert numbers["derived_median"] <= TARGETS["derived_median"] == 0.10


@pytest.mark.crossval
def test_leave_one_workload_out_meets_target(numbers) -> None:  # type: ignore[no-untyped-def]
    # the workload's whole network held out (validate.lowo_folds): 17.5 %
    assert numbers["lowo_median"] <= TARGETS["lowo_median"] == 0.20


@pytest.mark.crossval
def test_llm_leave_one_gpu_out_meets_target(numbers) -> None:  # type: ignore[no-untyped-def]
    # 14.5 % with the extrapolation form chosen inside each fold (20.0 % with the pooled
    # model's zero architecture terms alone; app/model/throughput/extrapolate.py)
    assert numbers["llm_logo_median"] <= TARGETS["llm_logo_median"] == 0.15


@pytest.mark.crossval
def test_unmet_targets_do_not_get_worse(numbers) -> None:  # type: ignore[no-untyped-def]
    # the honest figures of docs/accuracy.md (API level, issue 23), rounded up: a change
    # that worsens them fails
    assert numbers["logo_p90"] <= 0.331  # 33.0 %
    assert numbers["loao_median"] <= 0.146  # 14.5 %
    # the tail and the per-workload view, which the row median hides (20.9 %, 39.6 %, 23.4 %).
    # lowo_p90 was 36.7 % before the torchtitan rows were carried to their preset's
    # checkpointing (titan23): the corrected LLM rows move the pooled fit's shared GPU terms
    # (the H100's ~3.5 % lower), and BERT-base held out, whose donors are BERT-large rows,
    # follows them; the data fix stays, and this guard holds the new figure
    assert numbers["lowo_mean"] <= 0.22
    assert numbers["lowo_p90"] <= 0.40
    assert numbers["lowo_workload_median"] <= 0.24


@pytest.mark.crossval
@pytest.mark.parametrize(
    "protocol",
    [
        "logo",
        "loao",
        "lowo",
        "derived",
        "precision_switch",
        "measured_elsewhere",
        "llm_logo",
        "llm_lowo",
    ],
)
def test_ranges_cover_75_to_85_percent(numbers, protocol: str) -> None:  # type: ignore[no-untyped-def]
    lo, hi = COVERAGE_TARGET
    assert lo <= numbers[f"{protocol}_coverage"] <= hi


def test_multi_gpu_model_beats_linear_scaling(ds) -> None:  # type: ignore[no-untyped-def]
    res = multigpu_residuals(ds)
    model = ape_stats([r.ape for r in res])
    linear = ape_stats([abs(r.baselines["linear"] / r.actual - 1) for r in res])
    assert model[2] > 1000
    # in-sample median 5.2 % with the published bandwidths, one overlap and one per-doubling
    # loss (4.4 % with the nine per-class constants they replaced, most on their grid bounds);
    # the held-out multi-GPU figures are benchmarks/multi_accuracy.py's
    assert model[0] < linear[0] and model[0] <= 0.055


@pytest.mark.refit
def test_fitted_constants_are_reproduced_by_the_fit_script() -> None:
    # the refit against app/model/calibration.json, within the tool's stated tolerance
    # (REL_TOL 1e-6, ABS_TOL 1e-9): every difference is printed
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "fit_constants.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_held_out_rows_keep_the_checkpointing_their_source_states(ds) -> None:  # type: ignore[no-untyped-def]
    # llm-foundry ran MPT-7B at scale without activation checkpointing; its training YAML
    # (the preset) turns it on. The held-out row is the run that was measured.
    from app.calibrate.dataset import row_workload

    assert ds.presets["mpt-7b-pretrain"].fields["gradient_checkpointing"] is True
    rows = [p for p in ds.points if p.workload == "MPT-7B" and p.gpu_count == 512]
    assert rows and all(ds.checkpointing[p.id].on is False for p in rows)
    assert all(row_workload(ds, p).gradient_checkpointing is False for p in rows)  # type: ignore[union-attr]
