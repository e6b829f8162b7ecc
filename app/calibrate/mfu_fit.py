"""The credible-MFU table (the calibration's ``mfu_range``) from the measured rows, and its
provenance.

Every usable row (not suspect, GPU known or placed by
:func:`app.model.pooled.place_unstated_variants`, preset known, run at the preset's
sequence length or converted to it) gets its implied MFU and HFU (:mod:`app.model.mfu`):
per GPU, at the row's tuned rate (its published rate over its stack class's efficiency,
:func:`app.calibrate.stack_fit.tuned_throughput`: the bound is the tuned suites', and the
stack factor moves an answer below it), a multi-GPU row's scaling loss kept in its MFU. Rows
of a GPU that runs the precision at another rate class (no 16-bit tensor cores) are left
out; rows above :data:`app.model.mfu.IMPLAUSIBLE_MFU` are held with their reason.
``tools/mfu_table.py`` writes every row and cell to ``docs/mfu_table.md``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from app.calibrate.dataset import Dataset, row_workload
from app.calibrate.stack_fit import tuned_throughput
from app.model.mfu import (
    ADAPTER_METHODS,
    MIN_ADAPTER_SOURCES,
    implausible_mfu_reason,
    mfu_class,
    range_key,
    row_utilisation,
)
from app.model.pooled import family, place_unstated_variants, rate_class
from app.model.types import BenchmarkPoint, Precision
from app.model.vocabulary import Family


@dataclass(frozen=True, slots=True)
class MfuRow:
    """One measured row's implied utilisation: ``key`` its ``family|size|class`` cell,
    ``held`` the reason it is left out (``None`` when it counts)."""

    key: str
    mfu: float
    hfu: float
    point: BenchmarkPoint
    held: str | None


def mfu_rows(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    efficiency: Mapping[str, float] | None = None,
) -> Iterator[MfuRow]:
    """Every usable row's :class:`MfuRow` (workload labels in ``exclude`` left out), at its
    tuned rate under the stack ``efficiency`` (default: the served calibration's)."""
    points, specs = place_unstated_variants(ds.points, ds.catalog)
    catalog = {**ds.catalog, **specs}
    for p in points:
        if p.suspect or p.gpu not in catalog or p.workload in exclude:
            continue
        w = row_workload(ds, p)
        if w is None:
            continue
        gpu = catalog[p.gpu]
        if rate_class(gpu, p.precision) != mfu_class(p.precision):
            continue
        fam = family(w.architecture)
        tuned = replace(p, throughput_total=tuned_throughput(p, fam, efficiency))
        found = row_utilisation(tuned, w, gpu, ds.checkpointing.get(p.id))
        if found is None:
            continue
        mfu, hfu = found
        key = range_key(fam, w.params, p.precision)
        yield MfuRow(key, mfu, hfu, p, implausible_mfu_reason(fam, mfu))


def adapter_rows(key: str, rows: list[MfuRow]) -> list[MfuRow]:
    """The LoRA/QLoRA rows of a transformer cell ``key`` (its ``adapter`` cell's candidates);
    none for other families."""
    if not key.startswith(Family.TRANSFORMER + "|"):
        return []
    return [r for r in rows if r.point.method in ADAPTER_METHODS]


def fit_mfu_range(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    efficiency: Mapping[str, float] | None = None,
) -> dict[str, tuple[float, float, float, float, int]]:
    """``family|size|class`` → (10th percentile, median, highest MFU, highest HFU, rows)
    over the rows that count (:func:`mfu_rows`, stack ``efficiency``); a transformer cell's
    LoRA/QLoRA rows also form ``family|size|class|adapter`` (:func:`app.model.mfu.credible_bound`)
    where they come from at least :data:`app.model.mfu.MIN_ADAPTER_SOURCES` sources
    (:func:`adapter_rows`)."""
    by: dict[str, list[MfuRow]] = {}
    for r in mfu_rows(ds, exclude, efficiency):
        if r.held is None:
            by.setdefault(r.key, []).append(r)
    for key, rows in list(by.items()):
        adapters = adapter_rows(key, rows)
        if len({r.point.source for r in adapters}) >= MIN_ADAPTER_SOURCES:
            by[key + "|adapter"] = adapters
    out = {}
    for key, rows in sorted(by.items()):
        mfus = sorted(r.mfu for r in rows)
        p10 = mfus[int(0.1 * (len(mfus) - 1))]
        out[key] = (
            round(p10, 4),
            round(statistics.median(mfus), 4),
            round(mfus[-1], 4),
            round(max(r.hfu for r in rows), 4),
            len(rows),
        )
    return out


#: 16-bit precisions an fp8 row is paired with (:func:`fp8_pairs`).
_SIXTEEN = frozenset({Precision.BF16_AMP, Precision.FP16_AMP, Precision.BF16})


@dataclass(frozen=True, slots=True)
class Fp8Pair:
    """An fp8 and a 16-bit measurement of the same job: one source, GPU, GPU count,
    interconnect, workload (the network), method, sequence length and micro-batch;
    ``ratio`` = the best fp8 rate ÷ the best 16-bit rate of that job (the rows of a
    configuration sweep, such as torchtitan's async-TP and rowwise/tensorwise float8
    variants, compared at their best)."""

    ratio: float
    fp8: BenchmarkPoint
    sixteen: BenchmarkPoint


def fp8_pairs(ds: Dataset) -> list[Fp8Pair]:
    """Every measured fp8/16-bit pair of the seed data (suspect rows left out), by ratio."""
    best: dict[tuple[object, ...], dict[bool, BenchmarkPoint]] = {}
    for p in ds.points:
        if p.suspect or not p.gpu or (p.precision != Precision.FP8 and p.precision not in _SIXTEEN):
            continue
        key = (
            p.source,
            p.gpu,
            p.gpu_count,
            p.interconnect,
            p.workload,
            p.method,
            p.seq_len,
            p.batch_size_per_gpu,
        )
        side = best.setdefault(key, {})
        fp8 = p.precision == Precision.FP8
        if fp8 not in side or p.throughput_total > side[fp8].throughput_total:
            side[fp8] = p
    pairs = [
        Fp8Pair(side[True].throughput_total / side[False].throughput_total, side[True], side[False])
        for side in best.values()
        if True in side and False in side
    ]
    return sorted(pairs, key=lambda x: -x.ratio)


def fit_fp8_gain(ds: Dataset) -> tuple[float, float, int]:
    """(median, highest, pairs) of the fp8 ÷ 16-bit rate over :func:`fp8_pairs`: the highest
    bounds every fp8 answer that stands on no fp8 measurement of its GPU
    (:meth:`app.model.throughput.checks.PhysicalChecks._fp8_bounded`). ``(1, 1, 0)`` without a
    pair (fp8 then gains nothing over 16-bit)."""
    ratios = [x.ratio for x in fp8_pairs(ds)]
    if not ratios:
        return (1.0, 1.0, 0)
    return (round(statistics.median(ratios), 4), round(max(ratios), 4), len(ratios))
