"""The low-high range of an estimate: the situation's cross-validated spread."""

from __future__ import annotations

from app.model.calibration import Calibration, load_calibration
from app.model.types import (
    SITUATION_BASIS,
    Situation,
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
