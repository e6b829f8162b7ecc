"""The estimator as one value: ``Model(evidence, calibration)``.

Everything an answer depends on is in the two arguments: the :class:`Measurements` (the
measured benchmark rows, the GPU catalog, the FLOPs table of the presets and the pooled fit
built from them) and the :class:`~app.model.calibration.Calibration` (every fitted constant,
``calibration.json``). The API, the page, the CLI and the calibration ask a :class:`Model`
instead of wiring the throughput, memory and cost functions themselves:

* :meth:`Model.throughput` / :meth:`Model.memory`: one machine's samples/s and peak memory;
* :meth:`Model.estimate`: the full answer for a job on a machine (:func:`app.model.cost.combine`);
* :meth:`Model.rank`: machines with their prices, ordered (:func:`app.model.rank.rank_candidates`).

A thin facade over today's functions (:class:`app.model.throughput.ThroughputModel`,
:func:`app.model.memory.estimate_memory`, :mod:`app.model.cost`, :mod:`app.model.rank`): the
figures are theirs. Pure: no I/O once built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.model.calibration import Calibration, load_calibration
from app.model.comm import fabric_of
from app.model.cost import combine
from app.model.memory import estimate_memory, memory_risk, vram_per_gpu_gib
from app.model.pooled import PooledData
from app.model.rank import Candidate, Ranked, rank_candidates
from app.model.run_warnings import cannot_run
from app.model.throughput import FlopsTable, ThroughputModel
from app.model.types import (
    BenchmarkPoint,
    Estimate,
    GpuSpec,
    Hardware,
    MemoryBreakdown,
    MemoryEstimate,
    OomRisk,
    Precision,
    ThroughputEstimate,
    Workload,
)


@dataclass(frozen=True)
class Measurements:
    """The evidence a :class:`Model` answers from.

    ``points``: measured benchmark rows (any workloads); ``catalog``: GPU specs by name;
    ``flops_table``: (benchmark label, method) → (family, FLOPs per published unit, ...) of the
    presets (:func:`app.services.presets.flops_table`); ``data``: the pooled fit of the same
    points (:class:`app.model.pooled.PooledData`, built once and shared by requests; ``None``:
    each throughput model builds its own from ``points``).
    """

    points: Sequence[BenchmarkPoint] = ()
    catalog: Mapping[str, GpuSpec] = field(default_factory=dict)
    flops_table: FlopsTable = field(default_factory=dict)
    data: PooledData | None = None


class Model:
    """The estimator: answers for jobs (:class:`~app.model.types.Workload`) on machines
    (:class:`~app.model.types.Hardware`) from ``evidence`` with ``calibration`` (default: the
    served ``calibration.json``)."""

    def __init__(self, evidence: Measurements, calibration: Calibration | None = None):
        self.evidence = evidence
        self.calibration = calibration or load_calibration()

    def throughput_model(
        self, job: Workload, *, reference: Workload | None = None
    ) -> ThroughputModel:
        """The per-job throughput model (memoises per configuration; build one per request).
        ``reference``: the preset ``job`` was derived from, when it departs from it."""
        ev = self.evidence
        return ThroughputModel(
            job,
            points=ev.points,
            catalog=ev.catalog,
            reference=reference,
            flops_table=ev.flops_table,
            data=ev.data,
            cal=self.calibration,
        )

    def throughput(
        self,
        job: Workload,
        machine: Hardware,
        *,
        reference: Workload | None = None,
        precision: Precision | None = None,
        software: str | None = None,
    ) -> ThroughputEstimate:
        """Samples/s of ``machine`` (GPU × count over its interconnect) for ``job``, at
        ``precision`` and the ``software`` level (benchmark suite) when given."""
        model = self.throughput_model(job, reference=reference)
        return model.estimate(
            machine.gpu,
            machine.gpu_count,
            machine.interconnect,
            precision=precision,
            software=software,
            fabric=fabric_of(machine),
        )

    def memory(
        self, job: Workload, machine: Hardware, *, with_fixes: bool = True
    ) -> MemoryEstimate:
        """Peak memory per GPU of ``job`` on ``machine`` (its listed VRAM per GPU where it
        states one) and the OOM risk; ``with_fixes``: the changes that would fit when the
        risk is high."""
        vram = vram_per_gpu_gib(machine.gpu.vram_gib, machine.vram_gib_per_gpu, machine.gpu_count)
        return self.memory_at(
            job, vram, machine.gpu_count, with_fixes=with_fixes, gpu=machine.gpu.name
        )

    def memory_at(
        self,
        job: Workload,
        vram_gib: float,
        gpu_count: float,
        *,
        with_fixes: bool = True,
        gpu: str | None = None,
        peaks: dict[tuple[int, int], MemoryBreakdown] | None = None,
    ) -> MemoryEstimate:
        """:meth:`memory` on ``gpu_count`` GPUs of ``vram_gib`` GiB each (card ``gpu``, whose
        driver-reported share :mod:`app.model.vram` knows); ``peaks``: the breakdowns of
        ``job`` shared by calls (:func:`app.model.memory.estimate_memory`)."""
        return estimate_memory(
            job,
            vram_gib=vram_gib,
            gpu_count=gpu_count,
            cal=self.calibration,
            with_fixes=with_fixes,
            gpu=gpu,
            peaks=peaks,
        )

    def memory_risk_at(
        self,
        job: Workload,
        vram_gib: float,
        gpu_count: float,
        *,
        gpu: str | None = None,
        peaks: dict[tuple[int, int], MemoryBreakdown] | None = None,
    ) -> OomRisk:
        """The OOM risk band of :meth:`memory_at` with the same arguments, without its
        micro-batch search (:func:`app.model.memory.memory_risk`)."""
        return memory_risk(
            job, vram_gib=vram_gib, gpu_count=gpu_count, cal=self.calibration, gpu=gpu, peaks=peaks
        )

    def estimate(
        self,
        job: Workload,
        machine: Hardware,
        *,
        reference: Workload | None = None,
        price_per_hour: float | None = None,
        currency: str = "USD",
    ) -> Estimate:
        """The full answer for ``job`` on ``machine``: throughput, memory, epoch time and,
        with ``price_per_hour`` (whole machine, in ``currency``), cost."""
        model = self.throughput_model(job, reference=reference)
        return self._answer(job, machine, model, price_per_hour, currency)

    def _answer(
        self,
        job: Workload,
        machine: Hardware,
        model: ThroughputModel,
        price_per_hour: float | None,
        currency: str,
    ) -> Estimate:
        tp = model.estimate(
            machine.gpu, machine.gpu_count, machine.interconnect, fabric=fabric_of(machine)
        )
        return combine(
            job,
            machine,
            tp,
            self.memory(job, machine),
            price_per_hour=price_per_hour,
            currency=currency,
        )

    def rank(
        self,
        job: Workload,
        offers: Sequence[tuple[int, Hardware, float | None]],
        *,
        reference: Workload | None = None,
        currency: str = "USD",
        sort: str = "cost_per_epoch",
        drop_oom: bool = False,
        limit: int | None = None,
    ) -> list[Ranked]:
        """``offers`` as (offer id, machine, price per hour in ``currency`` or ``None``),
        estimated and ordered by ``sort`` (:func:`app.model.rank.rank_candidates`: offers
        predicted to run out of memory last, or dropped with ``drop_oom``; before them those
        with a warning saying the job cannot run there, :func:`~app.model.run_warnings.cannot_run`).

        Raises:
            ValueError: unknown ``sort`` key.
        """
        model = self.throughput_model(job, reference=reference)
        candidates = []
        for offer_id, machine, price in offers:
            e = self._answer(job, machine, model, price, currency)
            candidates.append(
                Candidate(
                    offer_id=offer_id,
                    cost_per_epoch=e.cost_per_epoch,
                    epoch_hours=e.epoch_hours,
                    total_cost=e.total_cost,
                    price_per_hour=price,
                    samples_per_s=e.samples_per_s,
                    oom_high=e.memory.oom_risk == OomRisk.HIGH,
                    cannot_run=cannot_run(w.code for w in e.warnings),
                )
            )
        return rank_candidates(candidates, sort=sort, drop_oom=drop_oom, limit=limit)
