"""The estimation core: pure functions from workload + hardware data to estimates.

The value to ask is :class:`Model` (``Model(evidence, calibration)``): the measurements it
answers from and the fitted constants of ``calibration.json`` (:class:`Calibration`).
No database, HTTP or framework imports here (import contracts in pyproject.toml).
"""

from app.model.calibration import Calibration, load_calibration
from app.model.cost import combine, convert, epoch_hours
from app.model.memory import estimate_memory
from app.model.model import Measurements, Model
from app.model.rank import Candidate, pareto_front, rank_candidates
from app.model.throughput import estimate_throughput, training_flops_per_sample

__all__ = [
    "Calibration",
    "Candidate",
    "Measurements",
    "Model",
    "combine",
    "convert",
    "epoch_hours",
    "estimate_memory",
    "estimate_throughput",
    "load_calibration",
    "pareto_front",
    "rank_candidates",
    "training_flops_per_sample",
]
