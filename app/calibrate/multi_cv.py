"""Cross-validation of the multi-GPU scaling.

Every multi-GPU row with a 1-GPU partner in its suite (:func:`app.calibrate.validate.
multi_pairs`) is predicted through the served path (:func:`app.calibrate.validate.
served_residual`: the throughput model at the row's GPU, count, link, precision and suite:
the suite is given, unlike in the single-GPU protocols, so the error is the scaling's and not
the 1-GPU level's; these residuals set ``multi_gpu_range``, the factor an answer's range takes
on top of its 1-GPU range, which already carries the suite the API picks)
with a whole group of rows removed from the data and from the multi-GPU fit
(:func:`app.calibrate.fit.fit_multigpu` refitted on the rest):

* leave-one-GPU-count-out: every row measured at that GPU count (any GPU, any workload);
* leave-one-link-class-out: every multi-GPU row over that link class
  (:class:`app.model.comm.LinkClass`), so the class's answers come from the published
  bandwidths and the constants fitted on the other classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from app.calibrate.dataset import Dataset
from app.calibrate.fit import fit_multigpu
from app.calibrate.validate import (
    MultiPair,
    Residual,
    multi_pairs,
    row_link,
    served_data,
    served_residual,
)
from app.model.calibration import Calibration, load_calibration
from app.model.comm import topology
from app.model.pooled import suite_of
from app.model.types import BenchmarkPoint


def pair_link_class(ds: Dataset, r: BenchmarkPoint) -> str:
    """The link class a benchmark row ran over (:func:`app.model.comm.topology`);
    ``unknown`` for a GPU outside the catalog."""
    if r.gpu not in ds.catalog:
        return "unknown"
    return topology(ds.catalog[r.gpu], r.gpu_count, row_link(ds, r)).link.value


def _folds(
    ds: Dataset, key: Callable[[BenchmarkPoint], str], cal: Calibration | None
) -> list[Residual]:
    cal = cal or load_calibration()
    pairs = multi_pairs(ds)
    out: list[Residual] = []
    for fold in sorted({key(r) for r, _, _ in pairs}):
        held: list[MultiPair] = [p for p in pairs if key(p[0]) == fold]
        kept = [p for p in pairs if key(p[0]) != fold]
        train = [p for p in ds.points if p.gpu_count < 2 or key(p) != fold]
        data = served_data(ds, train, cal)
        refit = replace(cal, **fit_multigpu(ds, kept, cal))
        for r, _, w in held:
            res = served_residual(ds, r, w, data, cal=refit, software=suite_of(r))
            if res is not None:
                out.append(res)
    return out


def leave_gpu_count_out(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Residuals of the multi-GPU rows, each GPU count held out in turn (see module doc), the
    constants not refitted taken from ``cal`` (default: the served calibration)."""
    return _folds(ds, lambda r: f"{r.gpu_count:04d}", cal)


def leave_link_class_out(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Residuals of the multi-GPU rows, each link class held out in turn (see module doc), the
    constants not refitted taken from ``cal`` (default: the served calibration)."""
    return _folds(ds, lambda r: pair_link_class(ds, r), cal)
