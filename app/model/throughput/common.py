"""Shared vocabulary of the throughput estimate: the single-GPU answer tuple, evidence rows,
precision compatibility and the (label, method) keys of measured groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.model.types import (
    BenchmarkPoint,
    Evidence,
    Method,
    Precision,
    Situation,
    Workload,
)

#: (benchmark label, method) → (family, training FLOPs per published throughput unit, FLOPs
#: per sample, params or None), built from the presets; lets the FLOPs model learn achieved
#: FLOP rates from other workloads.
FlopsTable = Mapping[tuple[str, str], tuple[str, float, float, int | None]]

SingleGpu = tuple[float, Situation, tuple[Evidence, ...], tuple[str, ...]]

#: Sharpness k of the smooth credible bound (:meth:`ThroughputModel._credible`): 16 keeps a
#: rate at 0.7 of the bound within 0.03 %, one at the bound at 0.96 of it.
CREDIBLE_SHARPNESS = 16.0

#: situations standing on the GPU's own measurements (never capped at the datasheet peak)
_OWN = (Situation.MEASURED, Situation.MEASURED_RESCALED)


def precision_class(p: Precision) -> str:
    """``32`` for fp32/tf32 regimes, ``16`` for 16-bit and fp8."""
    return "32" if p in (Precision.FP32, Precision.TF32) else "16"


def precision_compatible(workload: Precision, measured: Precision) -> int | None:
    """Rank of how well a measurement's precision stands for the workload's (0 best, None no).

    fp16 and bf16 mixed precision run at the same tensor rate on GPUs that have both;
    published "fp32" on Ampere+ is often TF32 in practice (benchmarks.md §1).
    """
    if workload == measured:
        return 0
    half = {Precision.FP16_AMP, Precision.BF16_AMP, Precision.BF16}
    if workload in half and measured in half:
        return 1
    if {workload, measured} == {Precision.FP32, Precision.TF32}:
        return 1
    return None


def point_samples_per_s(p: BenchmarkPoint, units_per_sample: float | None) -> float:
    """Per-GPU samples/s of a measurement (published units ÷ units per sample ÷ GPUs)."""
    return p.throughput_total / (units_per_sample or 1.0) / p.gpu_count


def _evidence(p: BenchmarkPoint, units: float | None) -> Evidence:
    return Evidence(
        benchmark_id=p.id,
        gpu=p.gpu,
        gpu_count=p.gpu_count,
        workload=p.workload,
        precision=p.precision.value,
        batch_size_per_gpu=p.batch_size_per_gpu,
        samples_per_s=point_samples_per_s(p, units) * p.gpu_count,
        source=p.source,
        source_ref=p.source_ref,
    )


def _method_of(w: Workload) -> str:
    return w.benchmark_method or ("full" if w.method == Method.FULL else w.method.value)


def label_workloads(
    presets: Sequence[Workload],
) -> dict[tuple[str, str], Workload]:
    """(benchmark label, method) → the first preset workload standing for it."""
    out: dict[tuple[str, str], Workload] = {}
    for w in presets:
        for label in w.benchmark_workloads:
            out.setdefault((label, _method_of(w)), w)
    return out


def _measured_at(rows: Sequence[BenchmarkPoint], precision: Precision) -> bool:
    """Whether ``rows`` hold a measurement that can stand for ``precision``: an fp8 row for
    fp8, a row at any other precision otherwise (:meth:`ThroughputModel._usable`)."""
    fp8 = precision == Precision.FP8
    return any((p.precision == Precision.FP8) == fp8 for p in rows)


def _families(table: FlopsTable) -> dict[tuple[str, str], str]:
    return {k: v[0] for k, v in table.items()}
