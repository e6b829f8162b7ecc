"""The composition: one workload's throughput on a GPU set (:class:`ThroughputModel`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.model.calibration import Calibration
from app.model.comm import NO_FABRIC, Fabric
from app.model.flops import training_flops_per_sample
from app.model.pooled import (
    PooledData,
)
from app.model.throughput.common import (
    FlopsTable,
    SingleGpu,
)
from app.model.throughput.derived import derived
from app.model.throughput.multi_gpu import MultiGpu
from app.model.throughput.range import throughput_range
from app.model.throughput.rates import implied_utilisation, utilisation_note
from app.model.types import (
    BenchmarkPoint,
    GpuSpec,
    Interconnect,
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

    def situation(
        self, w: Workload, gpu: GpuSpec, prec: Precision, software: str | None
    ) -> SingleGpu:
        """The ONE situation ``w`` (the workload at ``prec``) stands in on ``gpu``: a pooled
        one where its measured group stands for ``prec`` (capped at the datasheet peak where
        it stands on no measurement of this GPU), carried to a custom workload by its FLOPs
        (``derived``), else the FLOPs model."""
        ref = self._base(prec)
        base = self._pooled(gpu, prec, software)
        if base is not None:
            base = self._within_peak(base, ref, gpu, prec)
        if base is None:
            return self.flops_rate(w, gpu, prec)
        if self.reference is not None:
            return derived(base, w, ref, self.reference, gpu, prec, self.cal)
        return base

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
        w = self._w_at(prec)
        result = self.situation(w, gpu, prec, software)
        # the credible bound is the tuned suites' (every row is one); the stack moves below it
        result = self._with_stack(self._credible(w, gpu, prec, result), software, prec)

        def at(other: Precision) -> float:
            return self.single_gpu(gpu, other, software)[0]

        # fp8 no faster than the measured fp8 gains allow over the same job at 16 bits
        result = self._fp8_bounded(gpu, prec, software, result, at)
        # fp32 at the rate its matmuls run (TF32 or not), never above 16-bit on tensor cores
        result = self._fp32_bounded(w, gpu, prec, software, result, at)
        self._single[key] = result
        return result

    def _per_gpu(
        self,
        gpu: GpuSpec,
        gpu_count: float,
        interconnect: Interconnect | None,
        asked: Precision,
        software: str | None,
    ) -> tuple[Precision, Interconnect | None, SingleGpu, tuple[float, str | None]]:
        """:meth:`estimate`'s first steps: the precision estimated at, the link (NVLink for
        several SXM modules listed without one), the single-GPU answer and its per-GPU rate
        capped at the board's (:meth:`board_cap`); all but the link memoised per GPU spec."""
        if interconnect is None and gpu_count > 1 and (gpu.form_factor or "").upper() == "SXM":
            interconnect = Interconnect.NVLINK
        key = (gpu.name, asked, software)
        hit = self._per_gpus.get(key)
        if hit is None or hit[0] is not gpu:  # per GPU spec: every count and link asks again
            prec = self.stand_in_precision(asked, software)
            single = self.single_gpu(gpu, prec, software)
            hit = (gpu, prec, single, self.board_cap(gpu, prec, software, single[0]))
            self._per_gpus[key] = hit
        _, prec, single, capped = hit
        return prec, interconnect, single, capped

    def rates(
        self,
        gpu: GpuSpec,
        gpu_count: float = 1,
        interconnect: Interconnect | None = None,
        *,
        precision: Precision | None = None,
        software: str | None = None,
        fabric: Fabric = NO_FABRIC,
    ) -> tuple[float, float, float, Precision]:
        """(samples/s, low, high, precision estimated at) of :meth:`estimate` with the same
        arguments, by the same steps, without what only an answer shows (notes, evidence, the
        multi-GPU summary, utilisation): what ranking needs of every configuration."""
        prec, interconnect, single, (per_gpu, _) = self._per_gpu(
            gpu, gpu_count, interconnect, precision or self.w.precision, software
        )
        total, model = self.scaled_total(gpu, gpu_count, interconnect, prec, per_gpu, fabric)
        low, high = throughput_range(
            self.w, gpu, gpu_count, prec, total, single[1], model, self.cal
        )
        return total, low, high, prec

    def estimate(
        self,
        gpu: GpuSpec,
        gpu_count: float = 1,
        interconnect: Interconnect | None = None,
        *,
        precision: Precision | None = None,
        software: str | None = None,
        fabric: Fabric = NO_FABRIC,
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` (fractional counts below one scale linearly).

        ``interconnect`` ``None`` means PCIe, or NVLink for SXM boards; ``fabric`` the GPUs
        and network per machine where stated (:class:`app.model.comm.Fabric`); ``precision`` is the
        precision the GPU runs at (default the workload's; see
        :func:`app.model.compat.effective_precision`);
        ``software`` the suite to predict at (the harness passes a held-out row's). The
        answer's ``precision`` is the one estimated at (:meth:`stand_in_precision`).
        """
        asked = precision or self.w.precision
        # 1. the precision stand-in; 2. one situation, its own bound, the physical check and
        # the stack (single_gpu), the board cap
        prec, interconnect, single, (per_gpu, capped) = self._per_gpu(
            gpu, gpu_count, interconnect, asked, software
        )
        _, situation, evidence, notes = single
        # the fp8 rule's own gain (checks._fp8_bounded), not computed a second time
        fp8 = self._fp8.get((gpu.name, software)) if prec == Precision.FP8 else None
        if capped:
            notes = (*notes, capped)
        if prec != asked:
            notes = (*notes, stand_in_note(asked, prec))
        # 3. multi-GPU
        n = gpu_count
        scaled = self.scaled(gpu, n, interconnect, prec, per_gpu, fabric)
        total, eta = scaled.total, scaled.eta
        notes = (*notes, *scaled.notes)
        # 4. the range
        low, high = throughput_range(self.w, gpu, n, prec, total, situation, scaled.model, self.cal)
        peak = self.run_peak(gpu, prec, software)
        used = implied_utilisation(self._w_at(prec), gpu, prec, total / n, peak)
        mfu, hfu = used if used else (None, None)
        if used:
            notes = (*notes, utilisation_note(used, peak, prec))
        return ThroughputEstimate(
            samples_per_s=total,
            samples_per_s_low=low,
            samples_per_s_high=high,
            basis=situation.basis,
            multi_gpu_efficiency=min(eta, 1.0),
            evidence=evidence,
            notes=notes,
            situation=situation,
            precision=prec,
            multi_gpu_basis=scaled.basis,
            multi_gpu=scaled.summary,
            mfu=mfu,
            hfu=hfu,
            stack=self.stack(software, prec).value,
            fp8_gain=fp8[0] if fp8 else None,
            fp8_gain_held=fp8[1] if fp8 else False,
        )


def stand_in_note(asked: Precision, prec: Precision) -> str:
    """The sentence saying ``asked`` is estimated at the measured stand-in ``prec``."""
    return (
        f"{asked.value} asked, but this workload was measured at {prec.value} and "
        f"never at {asked.value}: estimated at the measured {prec.value} rate "
        f"({asked.value}'s gain is unmeasured for this workload)"
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
