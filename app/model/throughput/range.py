"""The low-high range of an estimate: the situation's cross-validated spread."""

from __future__ import annotations

from app.model import fitted
from app.model.types import (
    SITUATION_BASIS,
    Situation,
    range_situation,
)


def range_factors(situation: Situation) -> tuple[float, float]:
    """(low, high) multipliers of an estimate in ``situation``: ``fitted.RANGE_FACTORS`` of
    the situation whose range it carries (:func:`app.model.types.range_situation`), else
    of its basis."""
    factors = fitted.RANGE_FACTORS
    situation = range_situation(situation)
    return factors.get(situation.value) or factors[SITUATION_BASIS[situation].value]


def _range(
    value: float, situation: Situation, multi_gpu_model: bool = False
) -> tuple[float, float]:
    """Low–high range: the situation's cross-validated 10th-90th percentile of actual ÷
    predicted (:func:`range_factors`), times the multi-GPU model's when the GPU count was not
    itself measured."""
    low, high = range_factors(situation)
    if multi_gpu_model:
        m_low, m_high = fitted.MULTI_GPU_RANGE
        low, high = low * m_low, high * m_high
    return value * low, value * high
