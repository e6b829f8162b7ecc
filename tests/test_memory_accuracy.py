"""Pin the leave-one-source-out accuracy of the memory model (issue 9 targets).

Targets: median peak APE ≤ 12 %, OOM recall ≥ 90 %, fit specificity ≥ 90 %, and torchtune's
single-device Llama 3.1 8B full fine-tune (T-11) within 15 % and not ``high``. Where a target
is not met yet (docs/accuracy.md says so) the test pins the current figure plus a small margin
so that a change that makes verdicts worse fails CI.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.calibrate.dataset import load_dataset
from app.calibrate.memory_fit import leave_one_source_out, load_cases, summarize
from app.settings import PROJECT_ROOT


@pytest.fixture(scope="module")
def cases():  # type: ignore[no-untyped-def]
    return load_cases(load_dataset(PROJECT_ROOT / "seed_data"))


@pytest.fixture(scope="module")
def held_out(cases):  # type: ignore[no-untyped-def]
    return leave_one_source_out(cases)


def test_at_least_100_cases_from_10_sources(cases) -> None:  # type: ignore[no-untyped-def]
    assert len(cases) >= 100
    assert len({c.group for c in cases}) >= 10
    assert sum(c.in_scope for c in cases) >= 80


def test_leave_one_source_out_verdicts(held_out) -> None:  # type: ignore[no-untyped-def]
    s = summarize(r for r in held_out if r.case.in_scope)
    assert s.n_oom >= 10 and s.n_fit >= 60
    assert s.oom_recall >= 0.90  # target met
    assert s.fit_specificity >= 0.84  # target 0.90: not met yet (docs/accuracy.md)
    assert s.median_ape <= 0.17  # target 0.12: not met yet (docs/accuracy.md)


def test_torchtune_8b_full_single_device_on_4090(held_out) -> None:  # type: ignore[no-untyped-def]
    r = next(r for r in held_out if r.case.case_id == "T-11")
    assert r.case.observed_gib == 18.9 and r.case.gpu == "GeForce RTX 4090"
    assert r.ape is not None and r.ape <= 0.15
    assert r.risk != "high"


def test_memory_constants_are_reproduced_by_the_fit_script() -> None:
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "fit_memory.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
