"""The pooled situations: ``measured``, ``measured_rescaled``, ``sibling``, ``extrapolated``
and ``precision_switch`` (the ridge fit of :mod:`app.model.pooled`, read for one workload).

:class:`PooledSituations` holds the workload, its reference preset and the measured groups;
the FLOPs model, the checks and the multi-GPU rules build on it (:mod:`app.model.throughput.model`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.model.calibration import Calibration, load_calibration
from app.model.comm import CommEstimate, StepTraffic
from app.model.flops import training_flops_per_sample
from app.model.pooled import (
    Level,
    PooledData,
    matmul_rows_per_sample,
    rate_class,
    suite_of,
)
from app.model.throughput.common import (
    FlopsTable,
    SingleGpu,
    _evidence,
    _families,
    _measured_at,
    _method_of,
    point_samples_per_s,
)
from app.model.throughput.extrapolate import extrapolated_rate
from app.model.types import (
    SITUATION_TEXT,
    BenchmarkPoint,
    Evidence,
    GpuSpec,
    Precision,
    Situation,
    Workload,
)
from app.model.vocabulary import PrecisionClass, precision_class


class PooledSituations:
    """The workload, its measured groups and the pooled model's estimate of it."""

    def __init__(
        self,
        w: Workload,
        *,
        points: Sequence[BenchmarkPoint] = (),
        catalog: Mapping[str, GpuSpec] | None = None,
        reference: Workload | None = None,
        flops_table: FlopsTable | None = None,
        data: PooledData | None = None,
        workloads: Mapping[tuple[str, str], Workload] | None = None,
        cal: Calibration | None = None,
    ):
        self.w = w
        self.cal = cal or load_calibration()
        self.catalog = catalog or {}
        self.flops_table = flops_table or {}
        self.reference = (
            reference
            if (not w.matches_preset and reference is not None and reference.benchmark_workloads)
            else None
        )
        base = self.reference or w
        if data is None:
            known = dict(workloads or {})
            for label in base.benchmark_workloads:
                known.setdefault((label, _method_of(base)), base)
            families = _families(self.flops_table)
            data = PooledData(points, self.catalog, known, families, cal=self.cal)
        self.data = data
        self.groups = data.groups(base.benchmark_workloads, _method_of(base))
        self._single: dict[tuple[str, Precision, str | None], SingleGpu] = {}
        #: by (GPU, suite): the extrapolated fp8 gain over bf16_amp the fp8 rule left and
        #: whether it held the answer (:meth:`PhysicalChecks._fp8_bounded`)
        self._fp8: dict[tuple[str, str | None], tuple[float, bool]] = {}
        #: ThroughputModel._served_as_measured by (precision, software)
        self._as_measured: dict[
            tuple[Precision, str | None], tuple[tuple[str, str], Level] | None
        ] = {}
        #: memoised per instance (``w``, ``reference`` and the data never change on it)
        self._bases: dict[Precision, Workload] = {}
        self._groups_at: dict[str | None, tuple[str, str]] = {}
        self._ws: dict[Precision, Workload] = {}
        self._twins: dict[str, GpuSpec] | None = None
        #: each GPU spec's board twin (MultiGpu._board_of), by name
        self._boards: dict[str, tuple[GpuSpec, GpuSpec | None]] = {}
        self._stacks: dict[tuple[str | None, Precision | None], str | None] = {}
        self._comms: dict[tuple[Any, ...], tuple[GpuSpec, CommEstimate]] = {}
        #: bytes per step of the workload at a precision over a GPU count (app.model.comm)
        self._traffic: dict[tuple[Precision, int], StepTraffic] = {}
        #: multi-GPU efficiencies as :meth:`MultiGpu._eta_at` returns them, with the GPU spec
        self._etas_at: dict[tuple[Any, ...], tuple[GpuSpec, tuple[float, bool]]] = {}
        #: ThroughputModel._per_gpu's (GPU spec, precision, single-GPU answer, board cap)
        self._per_gpus: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        #: :meth:`MultiGpu.scaled`'s state after each count, per (GPU, link, precision, rate)
        self._count_states: dict[tuple[Any, ...], tuple[GpuSpec, list[Any], bool]] = {}
        #: each GPU's measured counts and 1-GPU rows of the ranking group by (suite, precision)
        self._singles_of: dict[
            str, tuple[set[float], dict[tuple[str, Precision], list[BenchmarkPoint]]]
        ] = {}

    def _usable(self, precision: Precision, software: str | None = None) -> bool:
        """The measured group stands for ``precision``: fp32/tf32 and 16-bit rates follow
        from each other through the pooled model; fp8 needs fp8 measurements (FP8 matmuls
        need Transformer Engine/torchao support a 16-bit run says nothing about), and the
        others need rows other than fp8 (an fp8 run's rate never raises a 16-bit answer)."""
        if not self.groups:
            return False
        return _measured_at(self.data.rows(self._group_at(software)), precision)

    def stand_in_precision(self, precision: Precision, software: str | None = None) -> Precision:
        """The precision the estimate is made at: ``precision``, except fp8 for a workload
        whose measured group has 16-bit rows and no fp8 row: then the 16-bit precision it was
        measured at most (ties: the first in :class:`Precision` order).

        FP8's gain depends on the model and its shapes (Transformer Engine and torchao
        replace the linear layers only), so a workload never measured at fp8 has no known
        gain; the FLOPs model at the fp8 peak predicted H100 bert-large-pretrain-seq512 at
        145 samples/s against 398 at bf16_amp. The measured 16-bit rate is the estimate.
        """
        if precision != Precision.FP8 or not self.groups:
            return precision
        rows = self.data.rows(self._group_at(software))
        if any(p.precision == Precision.FP8 for p in rows):
            return precision
        half = [p.precision for p in rows if precision_class(p.precision) == PrecisionClass.HALF]
        if not half:
            return precision
        order = list(Precision)
        return max(set(half), key=lambda q: (half.count(q), -order.index(q)))

    def _group_at(self, software: str | None) -> tuple[str, str]:
        """The measured group the estimate stands on, the same for every GPU of a ranking.

        With a software level asked (the harness passes a held-out row's suite): the first of
        the preset's groups measured at that suite, else at another version of its source
        (Llama 3.1 8B stands for torchtitan's "Llama 3.1 8B" and Megatron's "Llama 3 8B"),
        else as without one.

        Without: the group of the preset's own ``benchmark_method`` when it has rows, else the
        one with most rows. One group per model, never per GPU: a choice per GPU ranked
        RTX 4090 D (torchtitan's H100 pre-training scaled by specs, 3,284 tok/s) above the
        RTX 4090 it is a cut-down of (torchtune's single-device full fine-tune measured there,
        1,650 tok/s) for the ``llama31-8b-full-single-device`` preset (issue 8: "the same
        software level is used for every GPU in one ranking")."""
        hit = self._groups_at.get(software)
        if hit is None:
            hit = self._groups_at[software] = self._find_group(software)
        return hit

    def _find_group(self, software: str | None) -> tuple[str, str]:
        """:meth:`_group_at`, not memoised."""
        if software:
            source = software.split("@")[0]
            for same in (lambda p: suite_of(p) == software, lambda p: p.source == source):
                for g in self.groups:
                    if any(same(p) for p in self.data.rows(g)):
                        return g
        method = _method_of(self._base(self.w.precision))
        for g in self.groups:
            if g[1] == method:
                return g
        return self.groups[0]

    def _w_at(self, precision: Precision) -> Workload:
        """``w`` at ``precision`` (``w`` itself at its own; memoised)."""
        if precision == self.w.precision:
            return self.w
        hit = self._ws.get(precision)
        if hit is None:
            hit = self._ws[precision] = replace(self.w, precision=precision)
        return hit

    def _base(self, precision: Precision) -> Workload:
        """The workload whose measurements are used, at the precision asked (and the
        workload's own micro-batch; :meth:`_batch` is where it is read on the curve; memoised
        per precision: a ranking asks for it thousands of times)."""
        hit = self._bases.get(precision)
        if hit is None:
            hit = self._bases[precision] = (
                replace(self.w, precision=precision)
                if self.reference is None
                else replace(
                    self.reference, precision=precision, micro_batch_size=self.w.micro_batch_size
                )
            )
        return hit

    def _batch(self) -> float:
        """The micro-batch at which the measured group's batch curve is read: the workload's
        own, or for a derived workload the reference's micro-batch of the same matmul work
        (:func:`app.model.pooled.matmul_rows_per_sample`; a fraction where the reference
        is wider, so micro-batch 2 stays faster than 1); between two networks of other
        families, of the same training FLOPs per step (issue 23: batch laws in FLOPs per
        step, not samples; ResNet-152 from the ResNet-50 preset at micro-batch 64 is read at
        ResNet-50's 64 × 3.0; derived median 14.6 → 14.4 %)."""
        mb = float(self.w.micro_batch_size)
        if self.reference is None:
            return mb
        if (
            not self.w.architecture.is_transformer
            and not self.reference.architecture.is_transformer
        ):
            # other families: the same training FLOPs per step
            own, ref = training_flops_per_sample(self.w), training_flops_per_sample(self.reference)
            return mb * own / ref if own and ref else mb
        if not (self.w.architecture.is_transformer and self.reference.architecture.is_transformer):
            # matmul rows carry a batch between transformers only (a preset recast as
            # another family keeps its own micro-batch)
            return mb
        return mb * matmul_rows_per_sample(self.w) / matmul_rows_per_sample(self.reference)

    def _pooled(self, gpu: GpuSpec, precision: Precision, software: str | None) -> SingleGpu | None:
        if not self._usable(precision, software):
            return None
        base = self._base(precision)
        group = self._group_at(software)
        level = self.data.level_of(group, software, precision == Precision.FP8)
        if level is None:
            return None
        mb = self._batch()
        moved: str | None = None
        y, n_own = self.data.predict(group, gpu, precision, mb, level)
        rate = math.exp(y) / (base.units_per_sample or 1.0)
        units = base.units_per_sample
        if precision_class(precision) not in self.data.measured_classes(group):
            situation = Situation.PRECISION_SWITCH
        elif n_own:
            rate, situation, moved = self._own_measurement(group, gpu, precision, level, rate)
        elif self.data.has_sibling(group, gpu):
            situation = Situation.SIBLING
        else:
            situation = Situation.EXTRAPOLATED
            # issue 23 item 4: the form a new architecture is estimated by (extrapolate.py)
            forms = self.cal.extrapolation_form
            rate, moved = extrapolated_rate(
                self.data, group, gpu, precision, mb, level, forms, rate, units
            )
        evidence = self.data.kept(  # the rows shown depend on the situation, not the batch
            ("evidence", group, gpu.name, situation, level.source, units),
            gpu,
            lambda: _shown_evidence(self.data, group, gpu, situation, level, units),
        )
        notes = self._pooled_notes(group, gpu, precision, level, situation, moved, mb)
        return rate, situation, evidence, tuple(notes)

    def _pooled_notes(
        self,
        group: tuple[str, str],
        gpu: GpuSpec,
        precision: Precision,
        level: Level,
        situation: Situation,
        moved: str | None,
        mb: float,
    ) -> list[str]:
        """What a pooled answer says: its situation and the model's reach, how its rate was
        moved (own measurements, a new architecture), a GPU without fast 16-bit math, and a
        micro-batch outside the measured range."""
        suites, gpus = self.data.reach(group)
        notes = [
            f"{SITUATION_TEXT[situation]}; pooled model of {group[0]} over "
            f"{suites} suite(s) and {gpus} GPU "
            f"model(s), at the software level of {level.suite.rstrip('@')}"
        ]
        if situation in (Situation.MEASURED_RESCALED, Situation.EXTRAPOLATED) and moved:
            notes.append(moved)
        if (
            precision_class(precision) == PrecisionClass.HALF
            and rate_class(gpu, precision) == PrecisionClass.FP32
        ):
            notes.append(
                f"{gpu.name} has no fast 16-bit math (no tensor cores): {precision.value} "
                "saves memory there but its matmuls run at the fp32 rate"
            )
        rng = self.data.batch_range(group)
        said = f"micro-batch {self.w.micro_batch_size}"
        if self.reference is not None:
            said += f" (the work of {mb:.3g} of the preset's samples)"
        if rng and mb < rng[0]:
            notes.append(
                f"{said} is below the smallest measured ({rng[0]:.0f}): the batch "
                "effect is extrapolated"
            )
        elif rng and mb > rng[1]:
            notes.append(
                f"{said} is above the largest measured ({rng[1]:.0f}): no gain assumed beyond it"
            )
        return notes

    def _own_measurement(
        self, group: tuple[str, str], gpu: GpuSpec, precision: Precision, level: Level, rate: float
    ) -> tuple[float, Situation, str]:
        """Per-GPU samples/s of a GPU measured for ``group``, with its situation and, when
        moved, a note giving both figures.

        ``measured``: the GPU has 1-GPU rows at the served software level, precision and
        micro-batch: the rate is their mean, the measurement itself. Otherwise
        ``measured_rescaled``: the pooled model's ``rate`` (its own rows' mean residual moved
        to the asked level, micro-batch or precision), and the note says what was measured.
        """
        units = self._base(precision).units_per_sample or 1.0
        here = self.data.own_rows_at(group, gpu.name, level.suite, precision, self._batch())
        if here:
            mean = statistics.fmean(p.throughput_total for p in here)
            return mean / units, Situation.MEASURED, ""
        on_gpu = self.data.rows_on(group, gpu.name)  # the group's rows of this GPU, in order
        own = [
            p for p in on_gpu if precision_class(p.precision) == precision_class(precision)
        ] or list(on_gpu)
        singles = [p for p in own if p.gpu_count == 1]
        shown = singles or own
        # the rows at the served level where there are any (the residual the model uses)
        shown = [p for p in shown if suite_of(p) == level.suite] or shown
        measured = statistics.fmean(point_samples_per_s(p, units) for p in shown)
        suites = ", ".join(sorted({suite_of(p).rstrip("@") for p in shown}))
        batches = ", ".join(str(b) for b in sorted({p.batch_size_per_gpu or 0 for p in shown}))
        counts = "" if singles else " (multi-GPU runs only, per GPU)"
        note = (
            f"measured on this GPU: {measured:.4g} samples/s per GPU{counts}, mean of "
            f"{len(shown)} run(s) at {suites}, micro-batch {batches}, "
            f"{'/'.join(sorted({p.precision.value for p in shown}))}; served: {rate:.4g} "
            f"samples/s per GPU, moved by the pooled model to {level.suite.rstrip('@')}, "
            f"micro-batch {self._batch():g}, {precision.value}"
        )
        return rate, Situation.MEASURED_RESCALED, note


def _shown_evidence(
    data: PooledData,
    group: tuple[str, str],
    gpu: GpuSpec,
    situation: Situation,
    level: Level,
    units: float | None,
) -> tuple[Evidence, ...]:
    """The evidence a pooled answer on ``gpu`` shows (at most 20 rows of its group, fewest
    GPUs first): its own rows (a precision switch without them: the served suite's), the
    rows of its architecture for a sibling, the served suite's for an extrapolation."""
    rows = data.rows(group)
    if situation == Situation.PRECISION_SWITCH:
        used = [p for p in rows if p.gpu == gpu.name] or [
            p for p in rows if p.source == level.source
        ]
    elif situation == Situation.SIBLING:
        used = [p for p in rows if data.catalog.get(p.gpu, gpu).architecture == gpu.architecture]
    elif situation == Situation.EXTRAPOLATED:
        used = [p for p in rows if p.source == level.source]
    else:
        used = [p for p in rows if p.gpu == gpu.name]
    used = sorted(used, key=lambda p: (p.gpu_count, p.id))[:20]
    return tuple(_evidence(p, units) for p in used)
