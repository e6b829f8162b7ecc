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
from app.model.mfu import implausible_mfu_reason, mfu_class, range_key, row_utilisation
from app.model.pooled import family, place_unstated_variants, rate_class
from app.model.types import BenchmarkPoint


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


def fit_mfu_range(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    efficiency: Mapping[str, float] | None = None,
) -> dict[str, tuple[float, float, float, float, int]]:
    """``family|size|class`` → (10th percentile, median, highest MFU, highest HFU, rows)
    over the rows that count (:func:`mfu_rows`, stack ``efficiency``)."""
    by: dict[str, list[MfuRow]] = {}
    for r in mfu_rows(ds, exclude, efficiency):
        if r.held is None:
            by.setdefault(r.key, []).append(r)
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
