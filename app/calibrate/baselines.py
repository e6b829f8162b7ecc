"""Baselines the cross-validation compares the served throughput path with
(``python -m benchmarks.accuracy``): the compute/bandwidth blend of
``../shared/docs/estimation.md`` §4.5 and the FP32-TFLOPS ratio, both from the same
workload's measurements on other GPUs of one benchmark suite (:func:`group_key`).

Not served: the estimator is :mod:`app.model`; these only score it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from app.model.flops import peak_tflops
from app.model.types import BenchmarkPoint, GpuSpec, Precision

#: Fraction of step time that is compute-bound in the §4.5 blend (transformers ≈ 0.3,
#: CNNs ≈ 0.2 per estimation.md §4.5).
F_COMPUTE = {"transformer": 0.3, "cnn": 0.2, "other": 0.25}


def blend_speedup(a: GpuSpec, b: GpuSpec, precision: Precision, f_c: float) -> float:
    """Speed of GPU ``b`` relative to ``a`` (>1: b is faster), estimation.md §4.5."""
    peak_ratio = peak_tflops(a, precision) / peak_tflops(b, precision)
    bw_a, bw_b = a.memory_bandwidth_gbs, b.memory_bandwidth_gbs
    bw_ratio = (bw_a / bw_b) if bw_a and bw_b else peak_ratio
    return 1.0 / (f_c * peak_ratio + (1.0 - f_c) * bw_ratio)


def blend_predict(
    refs: Sequence[tuple[GpuSpec, float]], target: GpuSpec, precision: Precision, f_c: float
) -> float:
    """§4.5 baseline: blend-scale each reference GPU's throughput, weighted geometric mean.

    References nearer the target in (peak, bandwidth) and of the same architecture weigh
    more: weight = (2 if same architecture else 1) / (0.1 + |log peak ratio| + |log BW ratio|).
    """
    logs, weights = [], []
    for ref, rate in refs:
        speed = blend_speedup(ref, target, precision, f_c)
        distance = abs(math.log(peak_tflops(ref, precision) / peak_tflops(target, precision)))
        if ref.memory_bandwidth_gbs and target.memory_bandwidth_gbs:
            distance += abs(math.log(ref.memory_bandwidth_gbs / target.memory_bandwidth_gbs))
        weight = (2.0 if ref.architecture == target.architecture else 1.0) / (0.1 + distance)
        logs.append(math.log(rate * speed))
        weights.append(weight)
    return math.exp(sum(lg * wt for lg, wt in zip(logs, weights, strict=True)) / sum(weights))


def fp32_ratio_predict(refs: Sequence[tuple[GpuSpec, float]], target: GpuSpec) -> float:
    """Naive baseline: median of reference throughput × FP32-TFLOPS ratio."""
    return statistics.median(
        rate * (target.fp32_tflops or 1.0) / (ref.fp32_tflops or 1.0) for ref, rate in refs
    )


def group_key(p: BenchmarkPoint) -> tuple[str, str, str, str]:
    """Rows that share a workload, method, precision and benchmark suite."""
    return (p.workload, p.method, p.precision.value, p.source)
