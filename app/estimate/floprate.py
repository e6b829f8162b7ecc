"""Achieved training FLOP rates of the measured workloads, on any GPU.

The FLOPs model (``flops_model`` basis) needs the FLOP/s a workload *would* reach on a GPU
where it was never measured. It borrows the rates other workloads reach: each measured
workload (a "donor": benchmark label × method × precision × suite, with a FLOPs estimate and
measurements on at least four GPUs) gets the calibrated time model of
:mod:`app.estimate.scaling`, so it has a rate on *every* GPU — measured where it was measured,
predicted elsewhere. The estimate for a GPU is the median over donors of
``throughput × FLOPs per unit``. Every GPU is judged by the same donors, so the ordering of
GPUs follows measured scaling (an RTX 4090 cannot overtake an H100 just because a different
mix of workloads happened to be measured on it).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.estimate.scaling import MIN_GPUS_FOR_FIT, TimeModel, group_key
from app.estimate.types import BenchmarkPoint, GpuSpec, Precision, precision_class, version_key


@dataclass(frozen=True)
class Donor:
    """One measured workload group and its fitted time model (throughput in its own units)."""

    label: str
    method: str
    precision: Precision
    flops_per_unit: float
    model: TimeModel
    batch: float | None
    measured: dict[str, list[BenchmarkPoint]]

    def rate(self, gpu: GpuSpec) -> tuple[float | None, list[BenchmarkPoint]]:
        """Achieved FLOP/s on ``gpu``: measured (newest software) if available, else fitted."""
        rows = self.measured.get(gpu.name)
        if rows:
            newest = max(version_key(p) for p in rows)
            rows = [p for p in rows if version_key(p) == newest]
            return statistics.median(p.throughput_total for p in rows) * self.flops_per_unit, rows
        thr = self.model.samples_per_s(gpu, self.batch)
        return (thr * self.flops_per_unit if thr else None), []


class FlopRateModel:
    """Achieved FLOP/s on any GPU from the measured workloads (see module docstring).

    Args:
        points: measurements (all workloads).
        catalog: GPU specs by name.
        flops_table: (label, method) → (family, FLOPs per published unit, FLOPs per sample,
            params), as built from the presets.
    """

    def __init__(
        self,
        points: Sequence[BenchmarkPoint],
        catalog: Mapping[str, GpuSpec],
        flops_table: Mapping[tuple[str, str], tuple[str, float, float, int | None]],
    ):
        groups: dict[tuple[str, str, str, str], list[BenchmarkPoint]] = {}
        for p in points:
            if (
                p.gpu_count == 1
                and not p.suspect
                and p.gpu in catalog
                and (p.workload, p.method) in flops_table
            ):
                groups.setdefault(group_key(p), []).append(p)
        self.donors: list[Donor] = []
        for (label, method, _, _), rows in sorted(groups.items()):
            if len({p.gpu for p in rows}) < MIN_GPUS_FOR_FIT:
                continue
            data = [
                (catalog[p.gpu], float(p.batch_size_per_gpu or 0) or None, p.throughput_total)
                for p in rows
            ]
            batches = [p.batch_size_per_gpu for p in rows if p.batch_size_per_gpu]
            measured: dict[str, list[BenchmarkPoint]] = {}
            for p in rows:
                measured.setdefault(p.gpu, []).append(p)
            self.donors.append(
                Donor(
                    label=label,
                    method=method,
                    precision=rows[0].precision,
                    flops_per_unit=flops_table[(label, method)][1],
                    model=TimeModel(data, rows[0].precision),
                    batch=float(statistics.median(batches)) if batches else None,
                    measured=measured,
                )
            )

    def achieved(
        self, gpu: GpuSpec, precision: Precision, exclude: frozenset[str] = frozenset()
    ) -> tuple[float, list[BenchmarkPoint], list[str]] | None:
        """Median achieved FLOP/s on ``gpu`` over donors of the same precision class.

        Returns ``(FLOP/s, measured rows used on this GPU, donor labels)`` or ``None`` when no
        donor qualifies. One value per donor label (the median over its suites).
        """
        by_label: dict[str, list[float]] = {}
        used: list[BenchmarkPoint] = []
        for d in self.donors:
            if d.label in exclude or precision_class(d.precision) != precision_class(precision):
                continue
            rate, rows = d.rate(gpu)
            if rate:
                by_label.setdefault(d.label, []).append(rate)
                used.extend(rows)
        if not by_label:
            return None
        rates = [statistics.median(v) for v in by_label.values()]
        return statistics.median(rates), used, sorted(by_label)
