"""Multi-GPU efficiency of one workload: measured ratios where this count was measured, else
the link model of :mod:`app.model.multigpu`; a slower link or board never faster.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import cast

from app.model.comm import (
    NO_FABRIC,
    CommEstimate,
    Fabric,
    StepComm,
    Topology,
    board_twin,
    comm_efficiency,
    comm_over,
    gpus_per_node,
    link_grows_with_count,
    step_traffic,
    twin_index,
)
from app.model.mfu import mfu_class
from app.model.multigpu import link_cost, multi_gpu_summary
from app.model.pooled import (
    suite_of,
)
from app.model.throughput.checks import PhysicalChecks
from app.model.throughput.common import SingleGpu
from app.model.types import (
    BenchmarkPoint,
    GpuSpec,
    Interconnect,
    MultiGpuBasis,
    MultiGpuSummary,
    Precision,
)

#: :meth:`MultiGpu.scaled` part way: (lowest efficiency so far and whether it was measured,
#: the best total, whether that total is modelled, its basis)
_Best = tuple[tuple[float, bool], float, bool, MultiGpuBasis]
#: :func:`app.model.multigpu.link_cost`'s answer: the topology and (bus bandwidth, latency)
_LinkCost = tuple[Topology, tuple[float, float]]
#: :meth:`MultiGpu._link_parts`: the measured efficiency, else ``None`` and the link's cost
_Link = tuple[float | None, _LinkCost | None]


@dataclass(frozen=True, slots=True)
class Scaled:
    """``n`` GPUs' total samples/s with its efficiency and how it was reached."""

    total: float
    #: total ÷ (per-GPU rate × n); 1 for one GPU or fewer
    eta: float = 1.0
    #: the efficiency comes from the link model, not a measured count
    model: bool = False
    basis: MultiGpuBasis | None = None
    summary: MultiGpuSummary | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Span:
    """GPUs of one model at ``per_gpu`` samples/s each over ``link`` at ``prec``, in machines
    as ``fabric`` states them (GPUs and network per machine): what the efficiency of any count
    of them depends on besides the count."""

    gpu: GpuSpec
    link: Interconnect | None
    prec: Precision
    per_gpu: float
    fabric: Fabric = NO_FABRIC

    @property
    def key(self) -> tuple[object, ...]:
        """The span by value, the GPU by name (a memo hit also needs the very spec object)."""
        f = self.fabric
        return (self.gpu.name, self.link, self.prec, self.per_gpu, f.node_gpus, f.network_gbps)


class MultiGpu(PhysicalChecks):
    """The single-GPU situations plus the efficiency of ``n`` GPUs over a link."""

    def _gpu_rows(self, gpu_name: str) -> list[BenchmarkPoint]:
        """The ranking group's measurements on ``gpu_name`` (:meth:`_group_at` without a
        software level: the group every GPU's single-GPU rate stands on, so a measured
        multi-GPU efficiency is a ratio inside that group; indexed once per group on the data,
        :meth:`app.model.pooled.PooledData.rows_on`: a ranking asks for hundreds of
        GPU-count/link configurations of the same GPUs, each new workload again)."""
        if not self.groups:
            return []
        return self.data.rows_on(self._group_at(None), gpu_name)

    def single_gpu(
        self, gpu: GpuSpec, precision: Precision | None = None, software: str | None = None
    ) -> SingleGpu:
        """Per-GPU samples/s on one ``gpu`` (:meth:`ThroughputModel.single_gpu
        <app.model.throughput.model.ThroughputModel.single_gpu>` defines it)."""
        raise NotImplementedError

    def _twin_index(self) -> dict[str, GpuSpec]:
        """:func:`app.model.comm.twin_index` of the catalog, built on first use (a ranking
        asks for the twins of every offer's GPU)."""
        if self._twins is None:
            self._twins = twin_index(self.catalog)
        return self._twins

    def _board_of(self, gpu: GpuSpec) -> GpuSpec | None:
        """:func:`app.model.comm.board_twin` of ``gpu`` in :meth:`_twin_index`, memoised per
        GPU spec (every count of every configuration asks)."""
        hit = self._boards.get(gpu.name)
        if hit is None or hit[0] is not gpu:
            hit = self._boards[gpu.name] = (gpu, board_twin(gpu, self._twin_index()))
        return hit[1]

    def board_cap(
        self, gpu: GpuSpec, precision: Precision, software: str | None, per_gpu: float
    ) -> tuple[float, str | None]:
        """A PCIe card's per-GPU samples/s, never above the SXM/OAM board of its chip and
        memory (:func:`app.model.comm.board_twin`): the board has the same chip with equal or
        higher clocks, power and memory bandwidth (catalog: A100 SXM4 40GB 400 W against the
        card's 250 W, the same 1,555 GB/s), so the card never outruns it. The measured suites
        disagree here (8 catalog pairs had the card faster on 34 presets at one GPU: rows of
        one chip at different software levels). Capping the card, not raising the board, is
        the direction the held-out figures favour (leave-one-GPU-out median 8.2 % → 8.0 %;
        raising the board: 8.1 %, leave-one-link-class-out 4.6 % → 5.1 %). Returns the rate
        and a note when capped."""
        board = board_twin(gpu, self._twin_index())
        if board is None:
            return per_gpu, None
        cap = self.single_gpu(board, precision, software)[0]
        if cap >= per_gpu:
            return per_gpu, None
        return cap, (
            f"capped from {per_gpu:.4g} at the {board.name}'s {cap:.4g} samples/s per GPU: "
            "a PCIe card is never faster than the board of its chip and memory"
        )

    def _measured_eta(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision
    ) -> float | None:
        """Median measured efficiency of ``n`` × ``gpu`` (multi-GPU per-GPU rate ÷ the same
        suite's 1-GPU rate at the same precision, batch where possible; kept on the data per
        group, GPU, count, link and precision, the only things it reads: shared by every
        workload of the group, so a new micro-batch does not measure them again)."""
        if not self.groups or self.reference is not None:
            return None
        key = ("measured_eta", self._group_at(None), gpu.name, n, link, precision)
        return self.data.kept(key, gpu, lambda: self._measured_eta_now(gpu, n, link, precision))

    def _measured_eta_now(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision
    ) -> float | None:
        """:meth:`_measured_eta`, computed."""
        rows = self._gpu_rows(gpu.name)
        indexed = self._singles_of.get(gpu.name)
        if indexed is None:  # the GPU counts measured, the 1-GPU rows by (suite, precision)
            singles: dict[tuple[str, Precision], list[BenchmarkPoint]] = {}
            for p in rows:
                if p.gpu_count == 1:
                    singles.setdefault((suite_of(p), p.precision), []).append(p)
            indexed = self._singles_of[gpu.name] = ({p.gpu_count for p in rows}, singles)
        counts, singles = indexed
        if n not in counts:
            return None  # no row of this count: no ratio
        ratios = []
        for p in rows:
            if p.gpu_count != n:
                continue
            if link is not None and (p.interconnect or "pcie") != link.value:
                continue
            if mfu_class(p.precision) != mfu_class(precision):
                continue
            cands = singles.get((suite_of(p), p.precision))
            if not cands:
                continue
            same = [c for c in cands if c.batch_size_per_gpu == p.batch_size_per_gpu] or cands
            single = statistics.median(c.throughput_total for c in same)
            ratios.append(p.throughput_total / p.gpu_count / single)
        return min(statistics.median(ratios), 1.0) if ratios else None

    def _comm(self, span: Span, n: float) -> CommEstimate:
        """:func:`app.model.multigpu.multi_gpu_comm` of ``n`` GPUs of ``span`` for the
        workload at its precision (memoised: the efficiency of ``n`` GPUs and the answer's
        summary ask for the same one)."""
        key = (*span.key, n)
        hit = self._comms.get(key)
        if hit is None or hit[0] is not span.gpu:
            comm = comm_over(self._comm_parts(span, n), self.cal)
            hit = self._comms[key] = (span.gpu, comm)
        return hit[1]

    def _comm_parts(self, span: Span, n: float) -> StepComm:
        """:func:`app.model.comm.comm_over`'s parts (what
        :func:`app.model.multigpu.multi_gpu_comm` computes from): the parts that depend on the
        GPU, count and link alone (:func:`app.model.multigpu.link_cost`) or on the workload
        and count alone (bytes per step, memoised per precision and count)."""
        prec, fabric = span.prec, span.fabric
        w = self._w_at(prec)
        topo, cost = link_cost(
            span.gpu, n, span.link, node_gpus=fabric.node_gpus, network_gbps=fabric.network_gbps
        )
        traffic = self._traffic.get((prec, topo.gpus))
        if traffic is None:
            traffic = self._traffic[(prec, topo.gpus)] = step_traffic(w, topo.gpus)
        samples = w.micro_batch_size * max(w.grad_accum_steps, 1)
        return StepComm(topo, traffic, cost, samples, span.per_gpu)

    def _link_parts(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision, fabric: Fabric
    ) -> _Link:
        """What the efficiency of ``n`` × ``gpu`` over ``link`` in machines as ``fabric``
        states them takes that no workload's micro-batch changes: the measured median where
        this count was measured on this link (with a stated fabric only when the count fits
        one machine), else ``None`` with the link model's topology and (bus bandwidth,
        latency) (:func:`app.model.multigpu.link_cost`)."""
        # a measured count stands for a stated fabric only inside one machine
        if (
            fabric is NO_FABRIC
            or fabric == NO_FABRIC
            or n <= (fabric.node_gpus or gpus_per_node(gpu))
        ):
            measured = self._measured_eta(gpu, n, link, precision)
            if measured is not None:
                return measured, None
        return None, link_cost(
            gpu, n, link, node_gpus=fabric.node_gpus, network_gbps=fabric.network_gbps
        )

    def _eta_plan(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision, fabric: Fabric
    ) -> tuple[_Link, ...]:
        """The links :meth:`_eta_at` compares, in its order, each as :meth:`_link_parts`:
        ``link`` itself; NVLink where ``gpu`` has it and ``link`` is another (a slower link
        never faster); the SXM twin's NVLink for a PCIe card
        (:func:`app.model.comm.board_twin`). Kept on the data per measured group (``None``
        where no measured efficiency is read), GPU, count, link, precision and fabric: none
        depends on the workload's micro-batch, so a new micro-batch reads them again."""
        twin = self._board_of(gpu)
        group = self._group_at(None) if self.groups and self.reference is None else None
        key = (
            "eta_plan",
            group,
            gpu.name,
            n,
            link,
            precision,
            fabric.node_gpus,
            fabric.network_gbps,
        )

        def plan() -> tuple[GpuSpec | None, tuple[_Link, ...]]:
            links = [self._link_parts(gpu, n, link, precision, fabric)]
            if link != Interconnect.NVLINK and gpu.nvlink:
                links.append(self._link_parts(gpu, n, Interconnect.NVLINK, precision, fabric))
            if twin is not None:
                links.append(self._link_parts(twin, n, Interconnect.NVLINK, precision, fabric))
            return twin, tuple(links)

        kept = self.data.kept(key, gpu, plan)
        return kept[1] if kept[0] is twin else plan()[1]

    def _eta_at(self, span: Span, n: int) -> tuple[float, bool]:
        """Efficiency of ``n`` GPUs of ``span`` (``n`` × ``gpu`` over ``link``), a slower link
        never faster: PCIe (or an
        unlisted link) is capped at NVLink's efficiency for the same GPU and count where the
        GPU has NVLink (the PCIe model gave 8 × A100 SXM4 0.956 on ResNet-50 against the
        measured NVLink 0.904), and a PCIe card at its SXM twin's
        (:func:`app.model.comm.board_twin`: 8 × A100 PCIe 80GB came out faster than the
        measured 8 × A100 SXM4 80GB); each link's the measured median where measured, else the
        model of :mod:`app.model.multigpu` at ``per_gpu`` samples/s per GPU
        (:meth:`_eta_plan`). Returns the efficiency and whether it was measured (memoised:
        :meth:`scaled` asks for every count up to each configuration's)."""
        key = (*span.key, n)
        hit = self._etas_at.get(key)
        if hit is not None and hit[0] is span.gpu:
            return hit[1]
        e: tuple[float, bool] | None = None
        for measured, parts in self._eta_plan(span.gpu, n, span.link, span.prec, span.fabric):
            if measured is not None:
                here = (measured, True)
            else:
                here = (self._modelled_eta(cast(_LinkCost, parts), span.prec, span.per_gpu), False)
            if e is None or here[0] < e[0]:
                e = here
        assert e is not None
        self._etas_at[key] = (span.gpu, e)
        return e

    def _modelled_eta(self, parts: _LinkCost, precision: Precision, per_gpu: float) -> float:
        """:func:`app.model.comm.comm_efficiency` of the workload at ``precision`` and
        ``per_gpu`` samples/s per GPU over a :func:`app.model.multigpu.link_cost`
        (bytes per step memoised per precision and count)."""
        topo, cost = parts
        w = self._w_at(precision)
        traffic = self._traffic.get((precision, topo.gpus))
        if traffic is None:
            traffic = self._traffic[(precision, topo.gpus)] = step_traffic(w, topo.gpus)
        samples = w.micro_batch_size * max(w.grad_accum_steps, 1)
        return comm_efficiency(StepComm(topo, traffic, cost, samples, per_gpu), self.cal)

    def _counts_upto(self, span: Span, m: int) -> tuple[_Best, bool]:
        """:meth:`scaled`'s state after using 2..``m`` GPUs of ``span`` (``m`` < 2: the
        start) and whether the link grows with the count; the states of every count are kept
        per span (GPU, link, precision, rate, fabric), so each configuration of a GPU adds only
        its own count."""
        hit = self._count_states.get(span.key)
        if hit is None or hit[0] is not span.gpu:
            # no count beats one GPU: the link model said so (measured rows never scale below 1)
            start: _Best = ((1.0, False), span.per_gpu, False, "model")
            grows = link_grows_with_count(span.gpu, span.link)
            hit = self._count_states[span.key] = (span.gpu, [start], grows)
        _, states, grows = hit
        while len(states) < m:
            k = len(states) + 1
            states.append(self._with_count(states[-1], span, k, k, grows))
        return states[max(m, 1) - 1], grows

    def _with_count(self, state: _Best, span: Span, k: int, scale: float, grows: bool) -> _Best:
        """``state`` (the lowest efficiency so far, the best total, whether it is modelled, its
        basis) after also trying ``k`` GPUs counted as ``scale``.

        Per-GPU speed never rises with the count: the lowest efficiency of any count from 2
        to n on the link (8 × A100 NVLink measured 0.904, 16 × 0.941), of the measured counts
        only where the link grows with the count (an Infinity Fabric mesh adds a link per
        peer); the total never falls: the best of using 2..n (a tie goes to the larger)."""
        lowest, best_total, best_model, best_basis = state
        here = self._eta_at(span, k)
        if (here[1] or not grows) and here[0] < lowest[0]:
            lowest = here
        e, measured = (lowest if lowest[0] < here[0] else here) if grows else lowest
        total_k = span.per_gpu * scale * e
        if total_k >= best_total:
            return lowest, total_k, not measured, "measured" if measured else "model"
        return lowest, best_total, best_model, best_basis

    def scaled(
        self,
        gpu: GpuSpec,
        n: float,
        interconnect: Interconnect | None,
        prec: Precision,
        per_gpu: float,
        fabric: Fabric = NO_FABRIC,
        *,
        summary: bool = True,
    ) -> Scaled:
        """``n`` × ``gpu`` at ``per_gpu`` samples/s each over ``interconnect``, in machines as
        ``fabric`` states them (GPUs and network per machine): the best total of using 2..n
        GPUs, each count at the lowest efficiency of the counts up to it (:meth:`_eta_at`);
        fractional counts below one scale linearly. ``summary`` False: without the answer's
        :class:`MultiGpuSummary` (what ranking needs of every configuration: the same steps,
        so the same figures)."""
        if not n > 1:
            return Scaled(per_gpu * n)
        link, notes = self._link_used(gpu, interconnect)
        span = Span(gpu, link, prec, per_gpu, fabric)
        total, eta, best_model, best_basis = self._best_total(span, n)
        if not summary:
            return Scaled(total, eta, best_model, best_basis, None, notes)
        comm = self._comm(span, n)
        told = multi_gpu_summary(
            self._w_at(prec), gpu, n, link, per_gpu, min(eta, 1.0), cal=self.cal, comm=comm
        )
        return Scaled(total, eta, best_model, best_basis, told, notes)

    def _link_used(
        self, gpu: GpuSpec, interconnect: Interconnect | None
    ) -> tuple[Interconnect | None, tuple[str, ...]]:
        """The link ``gpu``'s GPUs are estimated over (NVLink asked of a GPU without it:
        PCIe) and the note that says so."""
        if interconnect == Interconnect.NVLINK and not gpu.nvlink:
            note = f"{gpu.name} has no NVLink: the GPUs are estimated as linked over PCIe"
            return Interconnect.PCIE, (note,)
        return interconnect, ()

    def _best_total(self, span: Span, n: float) -> tuple[float, float, bool, MultiGpuBasis]:
        """(total, efficiency, modelled, basis) of ``n`` > 1 GPUs of ``span``: the best of
        using 2..n-1 GPUs (kept per span), then n."""
        m = int(n)
        best, grows = self._counts_upto(span, m - 1)
        if m >= 2:
            best = self._with_count(best, span, m, n, grows)
        _, total, best_model, best_basis = best
        per_gpu = span.per_gpu
        eta = total / (per_gpu * n) if per_gpu > 0 else 1.0
        return total, eta, best_model, best_basis
