"""The estimation core: pure functions from workload + hardware data to estimates.

No database, HTTP or framework imports here (checked by ``tests/test_core_purity.py``).
"""

from app.model.cost import combine, convert
from app.model.epoch_cost import epoch_hours
from app.model.memory import estimate_memory
from app.model.rank import Candidate, pareto_front, rank_candidates
from app.model.throughput import estimate_throughput, training_flops_per_sample

__all__ = [
    "Candidate",
    "combine",
    "convert",
    "epoch_hours",
    "estimate_memory",
    "estimate_throughput",
    "pareto_front",
    "rank_candidates",
    "training_flops_per_sample",
]
