"""The composition: one workload's throughput on a GPU set (:class:`ThroughputModel`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from app.model.calibration import Calibration
from app.model.comm import link_grows_with_count
from app.model.flops import (
    flops_peak_tflops,
    training_flops_per_sample,
)
from app.model.multigpu import multi_gpu_summary
from app.model.pooled import (
    PooledData,
)
from app.model.throughput.common import (
    FlopsTable,
    SingleGpu,
)
from app.model.throughput.derived import derived
from app.model.throughput.multi_gpu import MultiGpu
from app.model.throughput.range import _range
from app.model.throughput.rates import implied_utilisation, utilisation_note
from app.model.types import (
    SITUATION_BASIS,
    BenchmarkPoint,
    GpuSpec,
    Interconnect,
    MultiGpuBasis,
    MultiGpuSummary,
    Precision,
    ThroughputEstimate,
    Workload,
)


class ThroughputModel(MultiGpu):
    """Throughput estimates of one workload on any GPU set, memoised per configuration.

    Build one per request (the rank service asks for thousands of offers). Pure: no I/O.

    Args:
        w: the workload (``w.matches_preset`` says whether measurements apply as is).
        points: measured benchmarks (any workloads), used when ``data`` is not given.
        catalog: GPU specs by name.
        reference: the preset ``w`` was derived from, when ``w`` departs from it.
        flops_table: (label, method) → (family, FLOPs per unit, ...) for the FLOPs model.
        data: a prebuilt :class:`PooledData` of the same points (a cache shared by requests).
        workloads: (label, method) → preset workload, for building ``data`` from ``points``.
        cal: the fitted constants (default: the served ``calibration.json``).
    """

    def can_estimate(self) -> bool:
        """False when there is neither a usable measurement nor a FLOPs estimate."""
        usable = self._usable(self.stand_in_precision(self.w.precision))
        return usable or training_flops_per_sample(self.w) is not None

    def single_gpu(
        self, gpu: GpuSpec, precision: Precision | None = None, software: str | None = None
    ) -> SingleGpu:
        """Per-GPU samples/s on one ``gpu`` with situation, evidence and notes (memoised).

        ``precision``: the precision the GPU runs at (default the workload's);
        ``software``: the suite (``source@version``) to predict at, default the reference.
        """
        prec = precision or self.w.precision
        key = (gpu.name, prec, software)
        hit = self._single.get(key)
        if hit is not None:
            return hit
        w = self.w if prec == self.w.precision else replace(self.w, precision=prec)
        ref = self._base(prec)
        base = self._pooled(gpu, prec, software)
        if base is not None:
            base = self._within_peak(base, ref, gpu, prec)
        if base is None:
            result = self.flops_rate(w, gpu, prec)
        elif self.reference is not None:
            result = derived(base, w, ref, self.reference, gpu, prec, self.cal)
        else:
            result = base
        # the credible bound is the tuned suites' (every row is one); the stack moves below it
        result = self._with_stack(self._credible(w, gpu, prec, result), software, prec)
        self._single[key] = result
        return result

    def estimate(
        self,
        gpu: GpuSpec,
        gpu_count: float = 1,
        interconnect: Interconnect | None = None,
        *,
        precision: Precision | None = None,
        software: str | None = None,
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` (fractional counts below one scale linearly).

        ``interconnect`` ``None`` means PCIe, or NVLink for SXM boards; ``precision`` is the
        precision the GPU runs at (default the workload's; see
        :func:`app.model.compat.effective_precision`);
        ``software`` the suite to predict at (the harness passes a held-out row's). The
        answer's ``precision`` is the one estimated at (:meth:`stand_in_precision`).
        """
        asked = precision or self.w.precision
        prec = self.stand_in_precision(asked, software)
        if interconnect is None and gpu_count > 1 and (gpu.form_factor or "").upper() == "SXM":
            interconnect = Interconnect.NVLINK
        per_gpu, situation, evidence, notes = self.single_gpu(gpu, prec, software)
        if prec != asked:
            notes = (
                *notes,
                f"{asked.value} asked, but this workload was measured at {prec.value} and "
                f"never at {asked.value}: estimated at the measured {prec.value} rate "
                f"({asked.value}'s gain is unmeasured for this workload)",
            )
        n = gpu_count
        eta, multi_model = 1.0, False
        multi_basis: MultiGpuBasis | None = None
        summary: MultiGpuSummary | None = None
        if n > 1:
            link = interconnect
            if link == Interconnect.NVLINK and not gpu.nvlink:
                link = Interconnect.PCIE
                notes = (
                    *notes,
                    f"{gpu.name} has no NVLink: the GPUs are estimated as linked over PCIe",
                )
            best_total, best_model = per_gpu, False
            # no count beats one GPU: the link model said so (measured rows never scale below 1)
            best_basis: MultiGpuBasis = "model"
            # per-GPU speed never rises with the count: the lowest efficiency of any count
            # from 2 to n on the link (8 × A100 NVLink measured 0.904, 16 × 0.941), of the
            # measured counts only where the link grows with the count (an Infinity Fabric
            # mesh adds a link per peer); the total never falls: the best of using 2..n
            grows = link_grows_with_count(gpu, link)
            lowest: tuple[float, bool] = (1.0, False)
            for k in range(2, int(n) + 1):
                here = self._eta_at(gpu, k, link, prec, per_gpu)
                if here[1] or not grows:
                    lowest = min(lowest, here, key=lambda x: x[0])
                e, measured = min(here, lowest, key=lambda x: x[0]) if grows else lowest
                scale = n if k == int(n) else k
                total_k = per_gpu * scale * e
                if total_k >= best_total:
                    best_total, best_model = total_k, not measured
                    best_basis = "measured" if measured else "model"
            total = best_total
            eta = total / (per_gpu * n) if per_gpu > 0 else 1.0
            multi_model, multi_basis = best_model, best_basis
            w_prec = self.w if prec == self.w.precision else replace(self.w, precision=prec)
            summary = multi_gpu_summary(w_prec, gpu, n, link, per_gpu, min(eta, 1.0), cal=self.cal)
        else:
            total = per_gpu * n
        low, high = _range(total, situation, self.cal, multi_gpu_model=multi_model)
        flops = training_flops_per_sample(self.w)
        if flops:
            # the range never reaches past the datasheet peak (unless the estimate itself
            # stands there: a measurement whose FLOPs count is off)
            ceiling = n * flops_peak_tflops(gpu, prec) * 1e12 / flops
            high = max(min(high, ceiling), total)
        used = implied_utilisation(replace(self.w, precision=prec), gpu, prec, total / n)
        mfu, hfu = used if used else (None, None)
        if used:
            notes = (*notes, utilisation_note(used, flops_peak_tflops(gpu, prec), prec))
        return ThroughputEstimate(
            samples_per_s=total,
            samples_per_s_low=low,
            samples_per_s_high=high,
            basis=SITUATION_BASIS[situation],
            multi_gpu_efficiency=min(eta, 1.0),
            evidence=evidence,
            notes=notes,
            situation=situation,
            precision=prec,
            multi_gpu_basis=multi_basis,
            multi_gpu=summary,
            mfu=mfu,
            hfu=hfu,
            stack=self.stack(software, prec).value,
        )


def estimate_throughput(
    w: Workload,
    gpu: GpuSpec,
    *,
    gpu_count: float = 1,
    interconnect: Interconnect | None = None,
    precision: Precision | None = None,
    software: str | None = None,
    points: Sequence[BenchmarkPoint] = (),
    catalog: Mapping[str, GpuSpec] | None = None,
    reference: Workload | None = None,
    flops_table: FlopsTable | None = None,
    data: PooledData | None = None,
    cal: Calibration | None = None,
) -> ThroughputEstimate:
    """Samples/s of ``gpu_count`` × ``gpu`` for ``w`` with ``cal`` (default: the served
    calibration); see :class:`ThroughputModel`."""
    model = ThroughputModel(
        w,
        points=points,
        catalog={**(catalog or {}), gpu.name: gpu},
        reference=reference,
        flops_table=flops_table,
        data=data,
        cal=cal,
    )
    return model.estimate(gpu, gpu_count, interconnect, precision=precision, software=software)
