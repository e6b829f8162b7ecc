"""The composition: one workload's throughput on a GPU set (:class:`ThroughputModel`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from app.model.calibration import Calibration
from app.model.comm import NO_FABRIC, Fabric
from app.model.flops import training_flops_per_sample
from app.model.int8_base import int8_base_time
from app.model.multigpu import effective_interconnect
from app.model.pooled import (
    Group,
    Level,
    PooledData,
    suite_of,
)
from app.model.stacks import SOURCE_STACK, stack_factor
from app.model.throughput.common import (
    FlopsTable,
    SingleGpu,
    point_samples_per_s,
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
    Situation,
    ThroughputEstimate,
    Workload,
)
from app.model.vocabulary import family


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
        result = self._with_stack(self._credible(w, gpu, prec, result), software, prec, gpu)

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
        scaled = self.scaled(gpu, gpu_count, interconnect, prec, per_gpu, fabric, summary=False)
        total, model = scaled.total, scaled.model
        situation = single[1]
        found = self.measured_total(gpu, gpu_count, interconnect, prec, software, fabric)
        if found is not None:
            total, model, situation = found[0], False, Situation.MEASURED
        low, high = throughput_range(
            self.w, gpu, gpu_count, prec, total, situation, model, self.cal
        )
        return total, low, high, prec

    def measured_total(
        self,
        gpu: GpuSpec,
        gpu_count: float,
        interconnect: Interconnect | None,
        prec: Precision,
        software: str | None,
        fabric: Fabric = NO_FABRIC,
    ) -> tuple[float, str] | None:
        """Total samples/s of ``gpu_count`` × ``gpu`` where the workload's measured group has
        rows of exactly this configuration: this GPU, this count (inside one machine), this
        link (:func:`app.model.multigpu.effective_interconnect`: SXM boards are NVLink), at
        the served software level, precision and micro-batch, with no stack or 8-bit-base
        factor to move them, where the suite ran no 1-GPU row to measure the count's
        efficiency by (:meth:`_measured_eta`). Such rows are the answer itself (their mean),
        with the sentence that says so (the answer's situation is then ``measured``); ``None``
        otherwise.

        Why: a source of multi-GPU runs only (NeMo: Llama 2 7B on 8 × H100 SXM, 16,934
        tokens/s per GPU) enters the pooled model as a 1-GPU rate (÷ the link model's
        efficiency, :meth:`app.model.pooled.PooledData._observations`); scaled back after
        the credible-MFU bound it served 11,553. As in :meth:`_credible`, a GPU's own
        measurement of a configuration is never held. Only the preset itself.
        """
        n = int(gpu_count)
        if n < 2 or n != gpu_count or (fabric.node_gpus is not None and fabric.node_gpus < n):
            return None
        found = self._served_as_measured(prec, software)
        if found is None:
            return None
        group, level = found

        def link_of(listed: Interconnect | None) -> Interconnect:
            return effective_interconnect(gpu, listed) or Interconnect.PCIE

        link = link_of(interconnect)
        batch = self._batch()
        rows = [
            p
            for p in self.data.rows_on(group, gpu.name, n)
            if suite_of(p) == level.suite
            and p.precision == prec
            and p.batch_size_per_gpu is not None
            and float(p.batch_size_per_gpu) == batch
            and link_of(Interconnect(p.interconnect) if p.interconnect else None) == link
        ]
        if not rows or self._measured_eta(gpu, n, link, prec) is not None:
            # where the suite also ran one GPU the count's efficiency is measured (its n-GPU
            # ÷ 1-GPU rows) and the 1-GPU answer × it stands, as for every other count
            return None
        units = self._base(prec).units_per_sample or 1.0
        per_gpu = statistics.fmean(point_samples_per_s(p, units) for p in rows)
        text = (
            f"measured configuration: {n} × {gpu.name} over {link.value} at "
            f"{level.suite.rstrip('@')}, micro-batch {batch:g}, {prec.value}: "
            f"{per_gpu:.4g} samples/s per GPU (mean of {len(rows)} run(s)), served as measured"
        )
        return per_gpu * n, text

    def _served_as_measured(
        self, prec: Precision, software: str | None
    ) -> tuple[Group, Level] | None:
        """:meth:`measured_total`'s conditions on the job: the preset itself (``reference``
        ``None``) with a measured group usable at ``prec``, no 8-bit base, and no stack factor
        between the rows and the stack asked; (its group, the served software level) or
        ``None``."""
        key = (prec, software)
        if key not in self._as_measured:
            self._as_measured[key] = self._as_measured_now(prec, software)
        return self._as_measured[key]

    def _as_measured_now(self, prec: Precision, software: str | None) -> tuple[Group, Level] | None:
        """:meth:`_served_as_measured`, computed (it is kept per precision and software)."""
        if not self.groups or self.reference is not None:
            return None
        if not self._usable(prec, software) or int8_base_time(self.w) is not None:
            return None
        group = self._group_at(software)
        level = self.data.level_of(group, software, prec == Precision.FP8)
        if level is None:
            return None
        source = self.measured_source(software, prec)
        if source is not None and source in SOURCE_STACK:
            fam = family(self.w.architecture)
            asked = self.stack(software, prec)
            if stack_factor(asked, source, fam, self.cal.stack_efficiency) != 1.0:
                return None
        return group, level

    def _utilisation(
        self,
        gpu: GpuSpec,
        prec: Precision,
        software: str | None,
        per_gpu: float,
        notes: tuple[str, ...],
    ) -> tuple[float | None, float | None, tuple[str, ...]]:
        """(MFU, HFU, ``notes`` with the sentence that states them) of ``per_gpu`` samples/s
        on ``gpu`` at ``prec``, against the peak the run uses (:meth:`run_peak`); ``None``
        without a FLOPs count."""
        peak = self.run_peak(gpu, prec, software)
        used = implied_utilisation(self._w_at(prec), gpu, prec, per_gpu, peak)
        if not used:
            return None, None, notes
        return used[0], used[1], (*notes, utilisation_note(used, peak, prec))

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
        ``interconnect`` ``None``: PCIe, or NVLink for SXM boards; ``fabric``: the GPUs and
        network per machine where stated; ``precision``: what the GPU runs at (default the
        workload's, :func:`app.model.compat.effective_precision`); ``software``: the suite to
        predict at. The answer's ``precision`` is the one estimated at."""
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
        # 3. multi-GPU (or the measured configuration itself)
        n = gpu_count
        scaled = self.scaled(gpu, n, interconnect, prec, per_gpu, fabric)
        total, eta, model = scaled.total, scaled.eta, scaled.model
        notes = (*notes, *scaled.notes)
        found = self.measured_total(gpu, n, interconnect, prec, software, fabric)
        if found is not None:
            # the efficiency stays the scaled one (measured where the suite also ran one
            # GPU, else the link model's); the total is the measurement
            total, model, situation = found[0], False, Situation.MEASURED
            notes = (*notes, found[1])
        # 4. the range
        low, high = throughput_range(self.w, gpu, n, prec, total, situation, model, self.cal)
        mfu, hfu, notes = self._utilisation(gpu, prec, software, total / n, notes)
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
