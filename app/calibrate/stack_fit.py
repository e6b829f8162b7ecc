"""The efficiency of the training stacks' classes (``stack_efficiency`` of the calibration,
:mod:`app.model.stacks`) from the measured rows, and the ``tuned`` rate of a row.

A row's class is its source's published class (:func:`app.model.stacks.published_class`).
Two kinds of evidence compare an ``eager`` run with a ``tuned`` one of the same job:

* **Across sources** (:func:`level_pairs`): a workload group measured by an eager source and
  by tuned ones. The pooled fit (:mod:`app.model.pooled`) gives every (group, source) its own
  level, tied to the others through the GPUs they share and the fitted spec slopes, with the
  micro-batch law taken out; the eager level minus the tuned level the API would serve at
  (the tuned suite that measured most GPUs) is the log rate of the eager run relative to the
  tuned one on the same GPU, precision and micro-batch. Weight: the eager source's rows.
  timm's RTX 3090 sheets against Lambda's, NVIDIA DLE's and tf_cnn_benchmarks' rows of the
  same networks would be such pairs (16: cnn 0.986); they wait in
  ``seed_data/stack_rows_pending.csv`` (the reason in its README), so the loaded seed has none.
* **Within one table** (:func:`compile_pairs`): two rows of one source table that describe
  the same run (GPU, workload, method, precision, micro-batch, sequence length, GPU count,
  activation checkpointing) and whose notes state ``torch.compile False`` and
  ``torch.compile True`` (torchtune's optimisation table, Llama 3.2 3B full fine-tune on one
  A100: "+ Packed Dataset" 7,075 tokens/s eager, "+ Compile" 8,998 compiled). Weight 1.

Per family (``cnn``, ``transformer``, ``other``), the efficiency of ``eager`` is the
weighted geometric mean of its family's pairs, or of all pairs for a family without any.
``tuned`` is 1 by definition and not stored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.calibrate.dataset import Dataset
from app.model.calibration import Calibration, load_calibration
from app.model.pooled import PooledData
from app.model.pooled_rows import Group, Obs
from app.model.stacks import class_efficiency, published_class
from app.model.types import BenchmarkPoint
from app.model.vocabulary import Family, minor_version_number

#: The families an efficiency is stored for.
FAMILIES = (Family.CNN, Family.TRANSFORMER, Family.OTHER)


@dataclass(frozen=True, slots=True)
class StackPair:
    """One eager-vs-tuned comparison: ``log_ratio`` = ln(eager rate ÷ tuned rate)."""

    family: str
    log_ratio: float
    weight: float
    what: str


def level_pairs(data: PooledData) -> list[StackPair]:
    """The across-source comparisons of the module docstring, from ``data``'s pooled fits."""
    out: list[StackPair] = []
    for fam in sorted(data.obs_by_family):
        fit = data.fit(fam)
        if fit is None:
            continue
        by_group: dict[Group, dict[str, list[Obs]]] = {}
        for o in fit.obs:
            by_group.setdefault(o.group, {}).setdefault(o.suite, []).append(o)
        for group, suites in sorted(by_group.items()):
            g = "|".join(group)
            tuned = {s: rows for s, rows in suites.items() if _class_of(rows) == "tuned"}
            eager = {s: rows for s, rows in suites.items() if _class_of(rows) == "eager"}
            if not tuned or not eager:
                continue
            ref = max(tuned, key=lambda s: (len({o.gpu for o in tuned[s]}), _newest(tuned[s]), s))
            base = fit.term("src", g, tuned[ref][0].source) + fit.term("ver", g, ref)
            for suite, rows in sorted(eager.items()):
                level = fit.term("src", g, rows[0].source) + fit.term("ver", g, suite)
                what = f"{g}: {suite} vs {ref}"
                out.append(StackPair(fam, level - base, float(len(rows)), what))
    return out


def _class_of(rows: list[Obs]) -> str:
    return published_class(rows[0].source)


def _newest(rows: list[Obs]) -> float:
    return max(minor_version_number(o.point.framework_version) for o in rows)


def compile_pairs(ds: Dataset, points: Sequence[BenchmarkPoint] | None = None) -> list[StackPair]:
    """The within-table comparisons of the module docstring: rows of ``points`` (default:
    ``ds.points``) whose notes state the compile setting (``ds.compiled``), paired on
    everything else the row states."""
    cells: dict[str, dict[bool, list[BenchmarkPoint]]] = {}
    for p in ds.points if points is None else points:
        if p.id not in ds.compiled or p.suspect:
            continue
        same = (p.source, p.source_ref, p.gpu, p.gpu_label, p.workload, p.method,
                p.precision.value, p.batch_size_per_gpu, p.seq_len, p.gpu_count,
                ds.checkpointing.get(p.id))  # fmt: skip
        cells.setdefault(repr(same), {}).setdefault(ds.compiled[p.id], []).append(p)
    out = []
    for _key, by in sorted(cells.items()):
        if True not in by or False not in by:
            continue
        first = by[False][0]
        entry = ds.flops_table.get((first.workload, first.method))
        fam = entry[0] if entry is not None else Family.OTHER
        eager = math.fsum(math.log(p.throughput_total) for p in by[False]) / len(by[False])
        tuned = math.fsum(math.log(p.throughput_total) for p in by[True]) / len(by[True])
        what = f"{first.source} {first.workload} ({first.method}): compile off vs on"
        out.append(StackPair(fam, eager - tuned, 1.0, what))
    return out


def efficiency_from_pairs(pairs: list[StackPair]) -> dict[str, float]:
    """``family|eager`` → weighted geometric mean of the family's pairs (all pairs for a
    family without any), 4 decimals; empty without pairs.

    >>> efficiency_from_pairs([StackPair("cnn", math.log(0.9), 2.0, ""),
    ...                        StackPair("transformer", math.log(0.8), 1.0, "")])
    {'cnn|eager': 0.9, 'transformer|eager': 0.8, 'other|eager': 0.8653}
    """
    if not pairs:
        return {}

    def mean(ps: list[StackPair]) -> float:
        total = math.fsum(p.weight for p in ps)
        return round(math.exp(math.fsum(p.log_ratio * p.weight for p in ps) / total), 4)

    every = mean(pairs)
    return {
        f"{fam}|eager": mean([p for p in pairs if p.family == fam])
        if any(p.family == fam for p in pairs)
        else every
        for fam in FAMILIES
    }


def fit_stack_efficiency(
    ds: Dataset, data: PooledData, points: Sequence[BenchmarkPoint] | None = None
) -> dict[str, float]:
    """``stack_efficiency`` (module docstring) from ``data`` (the served path's pooled data
    of ``points``, default ``ds.points``) and the compile-stated rows among ``points``: a
    cross-validation fold refits it on its training rows."""
    return efficiency_from_pairs([*level_pairs(data), *compile_pairs(ds, points)])


def tuned_throughput(
    p: BenchmarkPoint, fam: str, efficiency: Mapping[str, float] | None = None
) -> float:
    """``p``'s published throughput divided by its class's efficiency for family ``fam``
    (default: the served calibration's): the rate a ``tuned`` stack would reach."""
    eff = load_calibration().stack_efficiency if efficiency is None else efficiency
    return p.throughput_total / class_efficiency(fam, published_class(p.source), eff)


def efficiency_of(cal: Calibration | None) -> Mapping[str, float]:
    """The ``stack_efficiency`` of ``cal`` (default: the served calibration)."""
    return (cal or load_calibration()).stack_efficiency
