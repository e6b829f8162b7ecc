"""Multi-GPU efficiency of one workload: measured ratios where this count was measured, else
the link model of :mod:`app.model.multigpu`; a slower link or board never faster.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from app.model.comm import board_twin
from app.model.mfu import mfu_class
from app.model.multigpu import multi_gpu_efficiency
from app.model.pooled import (
    suite_of,
)
from app.model.throughput.checks import PhysicalChecks
from app.model.types import (
    BenchmarkPoint,
    GpuSpec,
    Interconnect,
    Precision,
)


class MultiGpu(PhysicalChecks):
    """The single-GPU situations plus the efficiency of ``n`` GPUs over a link."""

    def _gpu_rows(self, gpu_name: str) -> list[BenchmarkPoint]:
        """The ranking group's measurements on ``gpu_name`` (:meth:`_group_at` without a
        software level: the group every GPU's single-GPU rate stands on, so a measured
        multi-GPU efficiency is a ratio inside that group; indexed on first use: a ranking asks
        for hundreds of GPU-count/link configurations of the same GPUs)."""
        if self._by_gpu is None:
            index: dict[str, list[BenchmarkPoint]] = {}
            for p in self.data.rows(self._group_at(None)) if self.groups else ():
                index.setdefault(p.gpu, []).append(p)
            self._by_gpu = index
        return self._by_gpu.get(gpu_name, [])

    def _measured_eta(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision
    ) -> float | None:
        """Median measured efficiency of ``n`` × ``gpu`` (multi-GPU per-GPU rate ÷ the same
        suite's 1-GPU rate at the same precision, batch where possible)."""
        if not self.groups or self.reference is not None:
            return None
        rows = self._gpu_rows(gpu.name)
        singles: dict[tuple[str, Precision], list[BenchmarkPoint]] = {}
        for p in rows:
            if p.gpu_count == 1:
                singles.setdefault((suite_of(p), p.precision), []).append(p)
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

    def _link_eta(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision, per_gpu: float
    ) -> tuple[float, bool]:
        """Efficiency of ``n`` × ``gpu`` over ``link`` (memoised): the measured median where
        this count was measured on this link, else the model of :mod:`app.model.multigpu`;
        and whether it was measured."""
        key = (gpu.name, n, link, precision)
        hit = self._eta.get(key)
        if hit is None:
            measured = self._measured_eta(gpu, n, link, precision)
            if measured is not None:
                hit = (measured, True)
            else:
                w = self.w
                if precision != w.precision:
                    w = replace(w, precision=precision)
                hit = (multi_gpu_efficiency(w, gpu, n, link, per_gpu, cal=self.cal), False)
            self._eta[key] = hit
        return hit

    def _eta_at(
        self, gpu: GpuSpec, n: int, link: Interconnect | None, precision: Precision, per_gpu: float
    ) -> tuple[float, bool]:
        """Efficiency of ``n`` × ``gpu`` over ``link``, a slower link never faster: PCIe (or an
        unlisted link) is capped at NVLink's efficiency for the same GPU and count where the
        GPU has NVLink (the PCIe model gave 8 × A100 SXM4 0.956 on ResNet-50 against the
        measured NVLink 0.904), and a PCIe card at its SXM twin's
        (:func:`app.model.comm.board_twin`: 8 × A100 PCIe 80GB came out faster than the
        measured 8 × A100 SXM4 80GB). Returns the efficiency and whether it was measured."""
        e = self._link_eta(gpu, n, link, precision, per_gpu)
        if link != Interconnect.NVLINK and gpu.nvlink:
            fast = self._link_eta(gpu, n, Interconnect.NVLINK, precision, per_gpu)
            if fast[0] < e[0]:
                e = fast
        twin = board_twin(gpu, self.catalog)
        if twin is not None:
            # a PCIe card never scales better than its SXM twin (same chip, faster link)
            board = self._link_eta(twin, n, Interconnect.NVLINK, precision, per_gpu)
            if board[0] < e[0]:
                e = board
        return e
