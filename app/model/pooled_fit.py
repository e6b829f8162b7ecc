"""The pooled model's fit (:mod:`app.model.pooled`): the ridge regression of one family's
log per-GPU throughput (:func:`_fit_family`, its design columns :func:`_columns` and
:func:`_slope_keys`, the prediction :func:`_linear`) and the micro-batch law's b0 per family
(:func:`_overhead_batches`). The model is written out in :mod:`app.model.pooled`'s docstring.
Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from app.model.pooled_rows import (
    FamilyFit,
    Group,
    Level,
    Obs,
    batch_work_per_sample,
    rate_class,
    spec_features,
    suite_of,
)
from app.model.types import (
    BenchmarkPoint,
    GpuSpec,
    Precision,
)
from app.model.vocabulary import (
    Family,
)

if TYPE_CHECKING:
    from app.model.pooled import PooledData

#: Ridge strengths (penalty per unit² of log throughput; residual scale ≈ 0.1). Chosen as
#: weak priors: a deviation pinned by ten rows is barely shrunk, one pinned by one row is.
RIDGE = {
    "version": 2.0,
    "pc32_group": 0.5,
    "slope_group": 4.0,
    "arch": 1.0,
    "arch_group": 2.0,
    "free": 1e-6,
}


def _overhead_batches(
    points: Sequence[BenchmarkPoint], data: PooledData, *, work: bool = False
) -> dict[str, float]:
    """Median b0 per family from cells measured at several micro-batches (see module): in
    tokens for transformers (samples for others), or with ``work`` in
    :func:`batch_work_per_sample` units of each cell's preset (matmul rows, tokens × width, for
    transformers; training FLOPs for other families; a cell without a preset workload or a
    FLOPs count is left out): the unit :class:`app.model.throughput.flops_model.FlopsModel`
    divides it by."""
    cells: dict[tuple[str, ...], dict[float, list[float]]] = {}
    groups: dict[tuple[str, ...], Group] = {}
    key: tuple[str, ...]
    for p in points:
        if p.gpu_count == 1 and p.batch_size_per_gpu and p.throughput_total > 0:
            key = (p.workload, p.method, p.gpu, suite_of(p), p.precision.value)
            groups[key] = (p.workload, p.method)
            cells.setdefault(key, {}).setdefault(float(p.batch_size_per_gpu), []).append(
                p.throughput_total
            )
    found: dict[str, list[float]] = {}
    for key, by_batch in cells.items():
        if len(by_batch) < 2:
            continue
        fam = data.family_of(groups[key])
        if fam is None:
            continue
        lo, hi = min(by_batch), max(by_batch)
        r1, r2 = statistics.fmean(by_batch[lo]), statistics.fmean(by_batch[hi])
        den = r1 / lo - r2 / hi
        if den <= 0 or r2 <= r1:
            continue
        per_sample = data.tokens_per_sample(groups[key])
        if work:
            g = groups[key]
            w = data.workloads.get(g) or data.workloads.get((g[0], "full"))
            if w is None:
                continue
            work_per_sample = batch_work_per_sample(w)
            if work_per_sample is None:
                continue
            per_sample = work_per_sample
        found.setdefault(fam, []).append((r2 - r1) / den * per_sample)
    out = {fam: statistics.median(v) for fam, v in found.items()}
    # CNNs and other workloads share what either measured (both in samples, or FLOPs)
    samples = [x for fam in (Family.CNN, Family.OTHER) for x in found.get(fam, [])]
    for fam in (Family.CNN, Family.OTHER):
        if fam not in out and samples:
            out[fam] = statistics.median(samples)
    return out


def _columns(
    o_group: Group, arch: str, source: str, suite: str, pc32: bool, pc8: bool = False
) -> list[tuple[str, ...]]:
    g = "|".join(o_group)
    cols: list[tuple[str, ...]] = [("src", g, source), ("ver", g, suite)]
    if pc8:
        # fp8 rows: their own intercept and architecture terms, so what fp8 kernels reach on
        # an architecture (Blackwell's rows are fp8 only) never moves a 16-bit answer there
        return [*cols, ("pc8",), ("pc8g", g), ("arch8", arch), ("garch8", g, arch)]
    cols += [("arch", arch), ("garch", g, arch)]
    if pc32:
        cols += [("pc32",), ("pc32g", g)]
    return cols


def _slope_keys(g: str, j: int, pc8: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The family's and the group's slope columns of spec feature ``j`` (fp8 rows: their
    own, as :func:`_columns`)."""
    if pc8:
        return ("s8", str(j)), ("sg8", g, str(j))
    return ("s", str(j)), ("sg", g, str(j))


def _linear(
    fit: FamilyFit, group: Group, gpu: GpuSpec, precision: Precision, level: Level
) -> float:
    g = "|".join(group)
    cls = rate_class(gpu, precision)
    pc32 = cls == "32"
    y = 0.0
    for key in _columns(group, gpu.architecture, level.source, level.suite, pc32, cls == "8"):
        y += fit.term(*key)
    x = np.asarray(spec_features(gpu, precision)) - fit.centre * _mask(pc32)
    for j in range(4):
        family_key, group_key = _slope_keys(g, j, cls == "8")
        y += x[j] * (fit.term(*family_key) + fit.term(*group_key))
    return y


def _mask(pc32: bool) -> np.ndarray:
    return np.array([0.0, 1.0, 1.0, 1.0]) if pc32 else np.array([1.0, 0.0, 0.0, 1.0])


def _fit_family(obs: list[Obs], catalog: Mapping[str, GpuSpec], data: PooledData) -> FamilyFit:
    feats = np.array([spec_features(catalog[o.gpu], o.precision) for o in obs])
    centre = np.zeros(4)
    for j in range(4):
        vals = feats[feats[:, j] != 0.0, j]
        centre[j] = float(vals.mean()) if len(vals) else 0.0
    index: dict[tuple[str, ...], int] = {}
    penalty: list[float] = []

    def col(key: tuple[str, ...], lam: float) -> int:
        if key not in index:
            index[key] = len(index)
            penalty.append(lam)
        return index[key]

    lam_of = {
        "src": RIDGE["free"],
        "ver": RIDGE["version"],
        "arch": RIDGE["arch"],
        "garch": RIDGE["arch_group"],
        "pc32": RIDGE["free"],
        "pc32g": RIDGE["pc32_group"],
        "pc8": RIDGE["free"],
        "pc8g": RIDGE["pc32_group"],
        "arch8": RIDGE["arch"],
        "garch8": RIDGE["arch_group"],
    }
    entries: list[list[tuple[int, float]]] = []
    for o, f in zip(obs, feats, strict=True):
        cls = rate_class(catalog[o.gpu], o.precision)
        pc32 = cls == "32"
        cols = _columns(o.group, o.arch, o.source, o.suite, pc32, cls == "8")
        row = [(col(k, lam_of[k[0]]), 1.0) for k in cols]
        x = f - centre * _mask(pc32)
        g = "|".join(o.group)
        for j in range(4):
            if x[j] != 0.0:
                family_key, group_key = _slope_keys(g, j, cls == "8")
                row.append((col(family_key, RIDGE["free"]), x[j]))
                row.append((col(group_key, RIDGE["slope_group"]), x[j]))
        entries.append(row)
    n, k = len(obs), len(index)
    a = np.zeros((n, k))
    b = np.zeros(n)
    for i, (o, row) in enumerate(zip(obs, entries, strict=True)):
        for j, v in row:
            a[i, j] += v
        b[i] = o.y - data.batch_term(o.group, o.batch)
    # ridge normal equations: (AᵀA + diag(λ)) θ = Aᵀb
    coef = np.linalg.solve(a.T @ a + np.diag(np.asarray(penalty)), a.T @ b)
    fitted_y = a @ coef
    residual: dict[tuple[Group, str], list[tuple[str, str, float]]] = {}
    for o, yhat, target in zip(obs, fitted_y, b, strict=True):
        residual.setdefault((o.group, o.gpu), []).append(
            (rate_class(catalog[o.gpu], o.precision), o.suite, float(target - yhat))
        )
    return FamilyFit(index, coef, centre, obs, residual)
