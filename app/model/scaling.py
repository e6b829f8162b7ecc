"""Scaling measured throughput of one workload to GPUs it was not measured on.

The calibrated model (``scaled`` basis) is a per-workload *time* model, fitted on the fly to
the workload's own measurements on other GPUs of the same benchmark suite and precision:

    seconds/sample = c1/Peak_p + c2/BW + c3/Peak_tf32 + c4/FP32 + c5 + c6/(BW · batch),
    every c_k ≥ 0 (non-negative least squares, relative-error weighted)

Peak_p is the dense tensor peak the precision runs at (FP32-accumulate rate on GeForce),
Peak_tf32 the TF32 rate (cuDNN convolutions use TF32 by default on Ampere+ even when a
benchmark says "fp32", benchmarks.md §1), FP32 the vector rate (non-GEMM kernels), BW the
memory bandwidth; c5 is per-sample fixed overhead (launches, host work) and c6/(BW·batch) the
per-step cost (optimizer update, small-batch kernels) amortised over the micro-batch, which is
how batch size enters. It generalises the compute/bandwidth blend of estimation.md §4.5 (the
first two terms alone) and is validated leave-one-GPU-out by ``python -m benchmarks.accuracy``.

Two baselines are kept for that comparison: the plain blend of §4.5 and the FP32-TFLOPS ratio.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from app.model.linalg import nnls
from app.model.types import BenchmarkPoint, GpuSpec, Precision
from app.model.vocabulary import Family

#: Fewest distinct GPUs a suite must have measured a workload on before the time model is
#: fitted to it (six coefficients; fewer GPUs fall back to the blend).
MIN_GPUS_FOR_FIT = 4

#: Fraction of step time that is compute-bound in the §4.5 blend (transformers ≈ 0.3,
#: CNNs ≈ 0.2 per estimation.md §4.5).
F_COMPUTE = {Family.TRANSFORMER: 0.3, Family.CNN: 0.2, Family.OTHER: 0.25}


def peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Dense peak TFLOPS the training math runs at for ``precision``.

    Mixed precision uses the FP32-accumulate tensor rate (half rate on GeForce);
    ``tf32`` the TF32 tensor rate (fp32 where the GPU has none); ``fp8`` the FP8
    FP32-accumulate rate (bf16 where the GPU has no FP8). Falls back to FP32 vector TFLOPS
    on GPUs without tensor cores.
    """
    fp32 = gpu.fp32_tflops or 1.0
    if precision == Precision.FP32:
        return fp32
    if precision == Precision.TF32:
        return gpu.tf32_tflops or fp32
    half = gpu.fp16_fp32acc_tflops or gpu.bf16_tflops or gpu.fp16_tflops
    if precision == Precision.FP16_AMP:
        return half or fp32
    bf16 = gpu.bf16_tflops or (half if gpu.architecture not in ("Volta", "Turing") else None)
    if precision in (Precision.BF16_AMP, Precision.BF16):
        return bf16 or half or fp32
    return gpu.fp8_fp32acc_tflops or gpu.fp8_tflops or bf16 or half or fp32


def time_features(
    gpu: GpuSpec, precision: Precision, batch: float | None, with_batch: bool
) -> list[float]:
    """Regressors of the time model for ``gpu`` at ``precision`` and per-GPU ``batch``."""
    bw = gpu.memory_bandwidth_gbs or 1.0
    fp32 = gpu.fp32_tflops or 1.0
    feats = [
        1.0 / peak_tflops(gpu, precision),
        1.0 / bw,
        1.0 / (gpu.tf32_tflops or fp32),
        1.0 / fp32,
        1.0,
    ]
    if with_batch:
        feats.append(1.0 / (bw * batch) if batch else 0.0)
    return feats


class TimeModel:
    """The fitted time model of one (workload, method, precision, suite) group.

    Args:
        rows: ``(gpu spec, batch per GPU or None, per-GPU throughput)`` measurements.
        precision: the precision the rows ran at.
    """

    def __init__(self, rows: Sequence[tuple[GpuSpec, float | None, float]], precision: Precision):
        self.precision = precision
        self.with_batch = all(b for _, b, _ in rows)
        x = [time_features(g, precision, b, self.with_batch) for g, b, _ in rows]
        # relative-error weighting: divide each equation by its own seconds/sample
        y_inv = [thr for _, _, thr in rows]
        xw = [[v * t for v in row] for row, t in zip(x, y_inv, strict=True)]
        scale = [max(abs(row[j]) for row in xw) or 1.0 for j in range(len(x[0]))]
        xs = [[v / s for v, s in zip(row, scale, strict=True)] for row in xw]
        coef = nnls(xs, [1.0] * len(rows))
        self.coef = [c / s for c, s in zip(coef, scale, strict=True)]
        self.n_gpus = len({g.name for g, _, _ in rows})

    def samples_per_s(self, gpu: GpuSpec, batch: float | None) -> float | None:
        """Predicted per-GPU throughput (same units as the fitted rows)."""
        feats = time_features(gpu, self.precision, batch, self.with_batch)
        seconds = sum(c * f for c, f in zip(self.coef, feats, strict=True))
        return 1.0 / seconds if seconds > 0 else None


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
