"""Nested (cross-fitted) range quantiles for the accuracy report.

The served ranges (``range_factors`` of ``app/model/calibration.json``) are the 10th-90th
percentiles of actual ÷ predicted over every cross-validation residual of every protocol
(:func:`app.calibrate.fit.fit_ranges`). Scoring a protocol's coverage with them scores each
held-out row against quantiles its own residual helped set. Here every held-out row's range
is rebuilt (:attr:`app.calibrate.validate.Residual.rerange`: the served
:func:`app.model.throughput.range.throughput_range`, peak ceiling and multi-GPU factor
included) with quantiles fitted only on the residuals of rows *outside* its fold: for a
leave-one-GPU-out row, no residual of any protocol on that GPU; for leave-one-architecture-out,
none on that architecture; for the workload protocols, none of that network
(:func:`app.calibrate.validate.lowo_folds`). The pool is the one ``fit_ranges`` uses
(:func:`app.calibrate.fit.range_residuals`), grouped by the situation whose range an answer
carries (:func:`app.model.types.range_situation`), else its basis, each with at least 10
residuals, as in ``fit_ranges``. The multi-GPU factor (``multi_gpu_range``) stays the served
one: it is fitted on other protocols (leave-one-GPU-count-out) than the ones scored here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from app.calibrate.dataset import Dataset
from app.calibrate.validate import Residual, lowo_folds
from app.model.calibration import Calibration, load_calibration
from app.model.pooled import suite_of
from app.model.types import SITUATION_BASIS, BenchmarkPoint, Situation, range_situation
from app.model.vocabulary import precision_class

#: A protocol's fold key of a row: rows with the same key are held out together.
FoldKey = Callable[[BenchmarkPoint], str]


def fold_keys(ds: Dataset) -> dict[str, FoldKey]:
    """Protocol name (as :func:`benchmarks.accuracy.build_report` names them) → fold key."""
    arch = {name: g.architecture for name, g in ds.catalog.items()}
    nets = lowo_folds(ds)

    def network(p: BenchmarkPoint) -> str:
        return min(nets.get(p.workload, frozenset({p.workload})))

    return {
        "logo": lambda p: p.gpu,
        "llm_logo": lambda p: p.gpu,
        "loao": lambda p: str(arch.get(p.gpu)),
        "lowo": network,
        "llm_lowo": network,
        "derived": network,
        "precision_switch": lambda p: f"{p.workload}#{precision_class(p.precision)}",
        "measured_elsewhere": lambda p: f"{p.gpu}#{suite_of(p)}",
    }


def quantile_factors(ratios: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, float]]:
    """``fit_ranges``' rule on ``ratios`` (situation or basis → actual ÷ predicted): the
    10th/90th percentiles of each with at least 10 values."""
    from app.calibrate.fit import _quantiles  # fit imports validate; keep one rule

    return {k: _quantiles(v) for k, v in sorted(ratios.items()) if len(v) >= 10}


def _ratios(pool: Sequence[Residual]) -> dict[str, list[float]]:
    by: dict[str, list[float]] = {}
    for r in pool:
        situation = range_situation(Situation(r.basis))
        ratio = r.actual / r.predicted
        by.setdefault(situation.value, []).append(ratio)
        by.setdefault(SITUATION_BASIS[situation].value, []).append(ratio)
    return by


def cross_fit(
    protocol: Sequence[Residual],
    key: FoldKey,
    pool: Sequence[Residual],
    cal: Calibration | None = None,
) -> list[Residual]:
    """``protocol``'s residuals with their low-high range rebuilt from quantiles of the
    ``pool`` residuals whose rows fall outside their fold (``key``); ``cal``'s other
    constants (default: the served calibration). A residual without ``rerange`` keeps its
    range."""
    cal = cal or load_calibration()
    keyed = [(key(q.row), q) for q in pool]
    factors: dict[str, Calibration] = {}
    out = []
    for r in protocol:
        if r.rerange is None:
            out.append(r)
            continue
        fold = key(r.row)
        if fold not in factors:
            ratios = _ratios([q for k, q in keyed if k != fold])
            fitted = quantile_factors(ratios)
            # a situation with too few residuals outside the fold takes its basis's range
            # (the served basis's only where the fold leaves none of the basis either)
            bases = {b.value for b in SITUATION_BASIS.values()}
            served = {k: v for k, v in cal.range_factors.items() if k in bases}
            factors[fold] = replace(cal, range_factors={**served, **fitted})
        low, high = r.rerange(factors[fold])
        out.append(replace(r, low=low, high=high))
    return out


def nested_ranges(
    ds: Dataset, protocols: Mapping[str, Sequence[Residual]], cal: Calibration | None = None
) -> dict[str, list[Residual]]:
    """Every protocol of ``protocols`` (names of :func:`fold_keys`) cross-fitted
    (:func:`cross_fit`) against the pool of all of them."""
    keys = fold_keys(ds)
    pool = [r for res in protocols.values() for r in res]
    return {name: cross_fit(res, keys[name], pool, cal) for name, res in protocols.items()}
