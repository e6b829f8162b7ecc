"""The low-high range of an estimate: the situation's cross-validated spread."""

from __future__ import annotations

from app.model.calibration import Calibration, load_calibration
from app.model.flops import flops_peak_tflops, training_flops_per_sample
from app.model.types import (
    SITUATION_BASIS,
    GpuSpec,
    Precision,
    Situation,
    Workload,
    range_situation,
)


def range_factors(situation: Situation, cal: Calibration | None = None) -> tuple[float, float]:
    """(low, high) multipliers of an estimate in ``situation``: ``cal.range_factors`` (default:
    the served calibration) of the situation whose range it carries
    (:func:`app.model.types.range_situation`), else of its basis."""
    factors = (cal or load_calibration()).range_factors
    situation = range_situation(situation)
    return factors.get(situation.value) or factors[SITUATION_BASIS[situation].value]


def _range(
    value: float, situation: Situation, cal: Calibration, multi_gpu_model: bool = False
) -> tuple[float, float]:
    """Low–high range: the situation's cross-validated 10th-90th percentile of actual ÷
    predicted (:func:`range_factors`), times the multi-GPU model's when the GPU count was not
    itself measured."""
    low, high = range_factors(situation, cal)
    if multi_gpu_model:
        m_low, m_high = cal.multi_gpu_range
        low, high = low * m_low, high * m_high
    return value * low, value * high


def throughput_range(
    w: Workload,
    gpu: GpuSpec,
    n: float,
    prec: Precision,
    total: float,
    situation: Situation,
    multi_gpu_model: bool,
    cal: Calibration,
) -> tuple[float, float]:
    """Low–high samples/s of ``total`` (:func:`_range`), the high end never past the datasheet
    peak of ``n`` × ``gpu`` at ``prec`` for ``w``'s training FLOPs per sample."""
    low, high = _range(total, situation, cal, multi_gpu_model=multi_gpu_model)
    flops = training_flops_per_sample(w)
    if flops:
        # the range never reaches past the datasheet peak (unless the estimate itself
        # stands there: a measurement whose FLOPs count is off)
        ceiling = n * flops_peak_tflops(gpu, prec) * 1e12 / flops
        high = max(min(high, ceiling), total)
    return low, high
