"""Build core workloads from flat field dictionaries (presets, API input).

The definitions moved into the estimator's package (issue 31): :func:`build_workload` to
:mod:`app.model.job`, ``flops_table`` and ``throughput_data`` to :mod:`app.model.evidence`.
``build_workload`` is re-exported here for :mod:`app.services.workloads` until it moves too.
"""

from __future__ import annotations

from app.model.job import build_workload

__all__ = ["build_workload"]
