"""Cross-validation of the throughput, multi-GPU and memory models (through the core).

* Leave-one-GPU-out (LOGO): each single-GPU measurement is predicted with every row of its GPU
  model removed, from the same benchmark suite (software stack) — the ``scaled`` basis — next
  to two baselines on the same rows: the FP32-TFLOPS ratio and the §4.5 blend.
* Leave-one-workload-out (LOWO): each single-GPU measurement is predicted with every row of
  its workload removed — the ``flops_model`` basis.
* Leave-one-replicate-out: a measurement predicted from the other measurements of the same
  workload on the same GPU (other software versions, batches, suites) — the ``measured`` basis.
* Multi-GPU: each 2-512-GPU measurement predicted from the 1-GPU measurement of the same suite
  times the fitted data-parallel efficiency.
* Memory: the measured cases of estimation.md §7 (``seed_data/memory_cases.csv``) and the
  benchmark rows with a peak-memory figure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from app.calibrate.baselines import F_COMPUTE, blend_predict, fp32_ratio_predict, group_key
from app.calibrate.dataset import Dataset, Preset, rate_rows, row_workload, units
from app.calibrate.mfu_fit import fit_mfu_range
from app.calibrate.stack_fit import fit_stack_efficiency, tuned_throughput
from app.data.rows import workload_cells
from app.model.calibration import Calibration, load_calibration
from app.model.comm import CommEstimate
from app.model.evidence import throughput_data
from app.model.flops import matmul_width
from app.model.memory import (
    CUDA_CONTEXT_GIB,
    NCCL_GIB,
    SLACK,
    estimate_memory,
    peak_memory_bytes,
)
from app.model.multigpu import (
    effective_interconnect,
    multi_gpu_comm,
)
from app.model.pooled import PooledData, family, suite_of
from app.model.throughput import (
    FlopsTable,
    ThroughputModel,
    flops_peak_tflops,
    forward_intensity,
    precision_class,
    rate_model_features,
    training_flops_per_sample,
    transformer_flops,
)
from app.model.throughput.extrapolate import choose_forms
from app.model.throughput.range import range_factors, throughput_range
from app.model.types import (
    TRANSFORMER_ARCHITECTURES,
    Architecture,
    BenchmarkPoint,
    Interconnect,
    OomRisk,
    Precision,
    Situation,
    Workload,
    range_situation,
)


@dataclass(frozen=True)
class Residual:
    """A held-out measurement and predictions of it (same units)."""

    row: BenchmarkPoint
    actual: float
    predicted: float
    basis: str
    baselines: dict[str, float]
    low: float = math.nan
    high: float = math.nan
    #: the low-high range (same units) under another calibration's range factors
    rerange: Callable[[Calibration], tuple[float, float]] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def inside(self) -> bool:
        """The measurement falls inside the served low–high range."""
        return self.low <= self.actual <= self.high

    @property
    def ape(self) -> float:
        """Absolute percentage error of the model's prediction, as a fraction."""
        return abs(self.predicted / self.actual - 1.0)


def ape_stats(values: Sequence[float]) -> tuple[float, float, int]:
    """(median, 90th percentile, count) of absolute percentage errors (fractions)."""
    if not values:
        return (math.nan, math.nan, 0)
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
    return statistics.median(ordered), p90, len(ordered)


def lstsq(x: Sequence[Sequence[float]], y: Sequence[float], ridge: float = 1e-12) -> list[float]:
    """Least squares ``min |X b − y|²`` through the normal equations with a relative ridge of
    ``ridge`` on the diagonal (``X``: rows × k features, ``y``: rows; returns k coefficients).

    Raises:
        numpy.linalg.LinAlgError: the ridged normal matrix is singular.
    """
    a = np.asarray(x, dtype=float)
    ata = a.T @ a
    diag = np.diag(ata).copy()
    ata[np.diag_indices_from(ata)] += ridge * np.where(diag == 0, 1.0, diag)
    return [float(v) for v in np.linalg.solve(ata, a.T @ np.asarray(y, dtype=float))]


def _group_refs(
    ds: Dataset, points: Sequence[BenchmarkPoint], row: BenchmarkPoint
) -> list[tuple[Any, float]]:
    """Per other GPU of the row's group: (spec, median throughput) for the baselines."""
    key = group_key(row)
    by_gpu: dict[str, list[float]] = {}
    for p in points:
        if (
            p.gpu_count == 1
            and not p.suspect
            and p.gpu in ds.catalog
            and p.gpu != row.gpu
            and p.workload == row.workload
            and group_key(p) == key
        ):
            by_gpu.setdefault(p.gpu, []).append(p.throughput_total)
    return [(ds.catalog[g], statistics.median(v)) for g, v in by_gpu.items()]


def served_data(
    ds: Dataset, points: Sequence[BenchmarkPoint], cal: Calibration | None = None
) -> PooledData:
    """What the served path sees when the data set is ``points`` (as ReferenceData builds it),
    multi-GPU rows placed with ``cal`` (default: the served calibration)."""
    presets = [(p.fields, p.meta) for p in ds.presets.values()]
    return throughput_data(points, ds.catalog, presets, cal=cal, recompute=ds.checkpointing)


def served_residual(
    ds: Dataset,
    r: BenchmarkPoint,
    w: Workload,
    data: PooledData,
    *,
    cal: Calibration | None = None,
    reference: Workload | None = None,
    table: Any = None,
    baselines: dict[str, float] | None = None,
    software: str | None = None,
) -> Residual | None:
    """Predict held-out row ``r`` through the served path (:meth:`ThroughputModel.estimate`)
    at the API's level, from ``data`` (which lacks the row), with the constants of ``cal`` (a
    fold's refit; default: the served calibration): the row's GPU, count, link, precision,
    micro-batch, checkpointing and stack (request fields a user states), but no software
    level (``software=None``: the suite the API picks for the preset, never the row's own;
    only the multi-GPU scaling protocols of :mod:`app.calibrate.multi_cv` pass the row's,
    to score the scaling apart from the 1-GPU level) and the preset's own measured labels
    (:func:`api_workload`). The residual carries
    ``rerange``, its low-high range under another calibration's range factors (the nested
    ranges of :mod:`app.calibrate.nested`)."""
    w = api_workload(ds, r, w)
    if reference is None:
        w, reference = api_reference(ds, w)
    model = ThroughputModel(
        w,
        catalog=ds.catalog,
        reference=reference,
        flops_table=ds.flops_table if table is None else table,
        data=data,
        cal=cal or load_calibration(),
    )
    if not model.can_estimate():
        return None
    link = None
    if r.gpu_count > 1:
        link = Interconnect.NVLINK if r.interconnect == "nvlink" else Interconnect.PCIE
        if r.interconnect is None and (ds.catalog[r.gpu].form_factor or "").upper() == "SXM":
            link = Interconnect.NVLINK
    gpu = ds.catalog[r.gpu]
    est = model.estimate(gpu, r.gpu_count, link, precision=r.precision, software=software)
    if est.samples_per_s <= 0:
        return None
    u = units(w) / r.gpu_count  # compare per GPU (published totals ÷ GPUs)
    situation = est.situation or Situation.EXTRAPOLATED
    total, prec, served = est.samples_per_s, est.precision or r.precision, model.cal
    # was the multi-GPU model's range applied on top (the GPU count not itself measured)?
    low_s = range_factors(situation, served)[0]
    multi = r.gpu_count > 1 and abs(
        est.samples_per_s_low / total - low_s * served.multi_gpu_range[0]
    ) < abs(est.samples_per_s_low / total - low_s)

    def rerange(c: Calibration) -> tuple[float, float]:
        lo, hi = throughput_range(model.w, gpu, r.gpu_count, prec, total, situation, multi, c)
        return lo * u, hi * u

    return Residual(
        r,
        r.throughput_total / r.gpu_count,
        total * u,
        situation.value,
        baselines or {},
        est.samples_per_s_low * u,
        est.samples_per_s_high * u,
        rerange,
    )


def api_workload(ds: Dataset, r: BenchmarkPoint, w: Workload) -> Workload:
    """``w`` (a held-out row's workload) as the API receives it: a preset row's measured
    labels are the preset's own (``Llama 3 8B`` asks ``llama31-8b-pretrain``, which stands
    on whichever of its labels has most rows), not the row's label alone."""
    preset = ds.presets.get(w.preset) if w.preset else None
    labels = preset.meta.get("benchmark_workloads") if preset is not None else None
    if not labels or r.workload not in labels:
        return w
    return replace(w, benchmark_workloads=tuple(labels))


def api_reference(ds: Dataset, w: Workload) -> tuple[Workload, Workload | None]:
    """``w`` and its reference as the API resolves them (:func:`app.model.job.resolve`): a
    row that ran with another activation checkpointing than its preset's
    (:attr:`Dataset.checkpointing`: llm-foundry's MPT-3B without it, the preset with it) is
    a job departing from the preset, carried from the preset's estimate by its FLOPs
    (``derived``), as a user stating that checkpointing is served."""
    preset = ds.presets.get(w.preset) if w.preset else None
    if preset is None:
        return w, None
    base = preset.workload()
    if base.gradient_checkpointing == w.gradient_checkpointing and (
        not w.gradient_checkpointing or base.checkpoint_granularity == w.checkpoint_granularity
    ):
        return w, None
    return replace(w, matches_preset=False), base


def _held_out(
    ds: Dataset,
    folds: dict[str, list[BenchmarkPoint]],
    keep: Callable[[str, BenchmarkPoint], bool],
    cal: Calibration | None = None,
    nested_form: bool = True,
) -> list[Residual]:
    """Every fold's held-out rows predicted from the rows ``keep`` keeps, the width constant
    and (``nested_form``) the extrapolation form chosen on those rows alone
    (:func:`_with_nested_form`; otherwise ``pooled``)."""
    cal = cal or load_calibration()
    out = []
    for key, rows in sorted(folds.items()):
        train = [p for p in ds.points if keep(key, p)]
        data = served_data(ds, train, cal)
        # the width constant refitted on the fold's rows (the FLOPs-model rows use it)
        width = fit_width_h0(ds, points=train, cal=cal)
        # and the stack classes' efficiencies (a held-out eager row never sets its own)
        eff = fit_stack_efficiency(ds, data, train)
        fold = replace(cal, width_h0=width, extrapolation_form={}, stack_efficiency=eff)
        res = _held_out_rows(ds, rows, train, data, fold)
        out.extend(_with_nested_form(ds, res, train, data, fold) if nested_form else res)
    return out


def _with_nested_form(
    ds: Dataset,
    res: list[Residual],
    train: Sequence[BenchmarkPoint],
    data: PooledData,
    fold: Calibration,
) -> list[Residual]:
    """``res`` (a fold's residuals, predicted with the ``pooled`` form) with its
    ``extrapolated`` rows predicted again by the forms :func:`choose_forms` picks on the
    fold's training ``data`` alone (leave-one-architecture-out inside the fold), for the
    families of those rows: the form is never chosen on the rows it is scored on. The
    situation does not depend on the form, so the other rows stand, except ``derived`` ones,
    whose preset's estimate may be extrapolated (a row that ran without the preset's
    checkpointing: :func:`api_reference`): they are predicted again too."""
    again = (Situation.EXTRAPOLATED.value, Situation.DERIVED.value)
    ext = [r for r in res if r.basis in again]
    fams = {family(w.architecture) for r in ext if (w := row_workload(ds, r.row)) is not None}
    forms = choose_forms(data, fams) if fams else {}
    if all(form == "pooled" for form in forms.values()):
        return res
    nested = replace(fold, extrapolation_form=forms)
    redo = {r.row.id: r for r in _held_out_rows(ds, [r.row for r in ext], train, data, nested)}
    return [redo.get(r.row.id, r) if r.basis in again else r for r in res]


def _held_out_rows(
    ds: Dataset,
    rows: Sequence[BenchmarkPoint],
    train: Sequence[BenchmarkPoint],
    data: PooledData,
    cal: Calibration,
) -> list[Residual]:
    """:func:`_held_out`'s residuals of one fold's ``rows`` (with the fold's ``cal``)."""
    out = []
    for r in rows:
        w = row_workload(ds, r)
        if w is None:
            continue
        refs = _group_refs(ds, train, r)
        baselines = {}
        if refs:
            gpu = ds.catalog[r.gpu]
            baselines["fp32_ratio"] = fp32_ratio_predict(refs, gpu)
            baselines["blend"] = blend_predict(
                refs, gpu, r.precision, F_COMPUTE[family(w.architecture)]
            )
        res = served_residual(ds, r, w, data, cal=cal, baselines=baselines)
        if res is not None:
            out.append(res)
    return out


def logo(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Leave-one-GPU-out: each single-GPU row predicted with its GPU model removed from every
    suite, through the served path at the row's software level."""
    folds: dict[str, list[BenchmarkPoint]] = {}
    for r in rate_rows(ds):
        folds.setdefault(r.gpu, []).append(r)
    return _held_out(ds, folds, lambda g, p: p.gpu != g, cal)


def multi_only_rows(ds: Dataset) -> list[BenchmarkPoint]:
    """Rows of workloads measured only in multi-GPU runs (LLM pre-training tables), at the
    preset's sequence length."""
    singles = {(p.workload, p.method) for p in rate_rows(ds)}
    out = []
    for p in ds.points:
        if p.gpu_count < 2 or p.suspect or p.gpu not in ds.catalog:
            continue
        if (p.workload, p.method) in singles:
            continue
        w = row_workload(ds, p)
        if w is None or (w.seq_len and p.seq_len and p.seq_len != w.seq_len):
            continue
        out.append(p)
    return out


def logo_multi(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Leave-one-GPU-out for workloads measured only on several GPUs (LLMs): each row
    predicted at its GPU count and link with its GPU model removed from every suite
    (compared per GPU)."""
    folds: dict[str, list[BenchmarkPoint]] = {}
    for r in multi_only_rows(ds):
        folds.setdefault(r.gpu, []).append(r)
    return _held_out(ds, folds, lambda g, p: p.gpu != g, cal)


def lowo_multi(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Leave-one-workload-out for the multi-GPU-only workloads (FLOPs model from the other
    transformers, never CNNs), at the row's GPU count: the workload's whole network
    (:func:`lowo_folds`: Llama 3 8B goes with Llama 3.1 8B, GPT-2 124M with MPT-125M's shape
    only if equal) removed from the data and from the per-fold refits, as in :func:`lowo`."""
    by_label: dict[str, list[BenchmarkPoint]] = {}
    for r in multi_only_rows(ds):
        by_label.setdefault(r.workload, []).append(r)
    cal = cal or load_calibration()
    folds = lowo_folds(ds)
    out = []
    for label, rows in sorted(by_label.items()):
        held = folds.get(label, frozenset({label}))
        train = [p for p in ds.points if p.workload not in held]
        table = {k: v for k, v in ds.flops_table.items() if k[0] not in held}
        data = served_data(ds, train, cal)
        fold = fold_constants(ds, held, cal)
        for r in rows:
            w = row_workload(ds, r)
            if w is None:
                continue
            res = served_residual(ds, r, w, data, cal=fold, table=table)
            if res is not None:
                out.append(res)
    return out


def loao(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Leave-one-architecture-out: every GPU of the row's architecture removed."""
    arch = {name: g.architecture for name, g in ds.catalog.items()}
    folds: dict[str, list[BenchmarkPoint]] = {}
    for r in rate_rows(ds):
        folds.setdefault(arch[r.gpu], []).append(r)
    return _held_out(ds, folds, lambda a, p: arch.get(p.gpu) != a, cal)


def measured_elsewhere(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """``measured`` situation: a GPU's rows of one suite removed (every workload), predicted
    from the same GPU's rows in other suites or precisions; only rows the path calls
    measured (``measured_rescaled``: its own rows moved to the held-out suite) count."""
    folds: dict[str, list[BenchmarkPoint]] = {}
    for r in rate_rows(ds):
        folds.setdefault(f"{r.gpu}#{suite_of(r)}", []).append(r)
    # only measured rows are scored: no extrapolation form to choose
    res = _held_out(ds, folds, lambda k, p: f"{p.gpu}#{suite_of(p)}" != k, cal, False)
    return [r for r in res if range_situation(Situation(r.basis)) == Situation.MEASURED]


def precision_switch(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Each workload's rows of one precision class (fp32/tf32 or 16-bit) removed, predicted
    from its rows at the other precision (and everything else)."""
    folds: dict[str, list[BenchmarkPoint]] = {}
    both: dict[str, set[str]] = {}
    for r in rate_rows(ds):
        folds.setdefault(f"{r.workload}#{precision_class(r.precision)}", []).append(r)
        both.setdefault(r.workload, set()).add(precision_class(r.precision))
    folds = {k: v for k, v in folds.items() if len(both[k.split("#")[0]]) == 2}
    return _held_out(
        ds, folds, lambda k, p: f"{p.workload}#{precision_class(p.precision)}" != k, cal
    )


#: Derived-workload pairs: (measured target label, the preset it is derived from).
DERIVED_PAIRS = (
    ("ResNet-152", "resnet50-imagenet-tf"),
    ("Transformer-XL large", "transformer-xl-base-wt103"),
    ("Transformer-XL base", "transformer-xl-large-wt103"),
    ("Transformer-XL large, full softmax, 256 tokens (Lambda)", "transformer-xl-base-wt103-lambda"),
    ("Transformer-XL base, full softmax (Lambda)", "transformer-xl-large-wt103-lambda"),
    ("Inception v4", "inception-v3-imagenet-tf"),
    ("Llama 3.1 8B", "llama32-3b-full"),
    ("MPT-1B", "mpt-350m-pretrain"),
    ("MPT-7B", "mpt-1b-pretrain"),
    ("MPT-30B", "mpt-7b-pretrain"),
    ("MPT-70B", "mpt-30b-pretrain"),
    ("Llama 3 70B", "llama31-8b-pretrain"),
    ("Llama 2 13B", "llama2-7b-pretrain"),
    ("Llama 2 70B", "llama2-13b-pretrain"),
    ("BERT-large uncased", "bert-base-squad"),
)


def derived(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """A measured workload predicted as a custom variant of another preset (its own rows
    removed): ResNet-152 from ResNet-50, Transformer-XL large from base, BERT-large from
    BERT-base, a bigger Llama from a smaller (MPT rows at their GPU count), through the
    served path's ``derived`` situation."""
    cal = cal or load_calibration()
    out = []
    folds = lowo_folds(ds)
    for label, base_slug in DERIVED_PAIRS:
        base = ds.presets.get(base_slug)
        rows = [r for r in (*rate_rows(ds), *multi_only_rows(ds)) if r.workload == label]
        if base is None or not rows:
            continue
        # the target's whole network leaves the data and the fitted constants
        held = folds.get(label, frozenset({label}))
        train = [p for p in ds.points if p.workload not in held]
        table = {k: v for k, v in ds.flops_table.items() if k[0] not in held}
        data = served_data(ds, train, cal)
        fold = fold_constants(ds, held, cal)
        # the base's form for a new architecture, chosen on the fold's rows alone
        forms = choose_forms(data, {family(base.workload().architecture)})
        fold = replace(fold, extrapolation_form=forms)
        out.extend(_derived_rows(ds, rows, base, data, table, fold))
    return out


def _derived_rows(
    ds: Dataset,
    rows: Sequence[BenchmarkPoint],
    base: Preset,
    data: PooledData,
    table: FlopsTable,
    cal: Calibration,
) -> list[Residual]:
    """:func:`derived`'s residuals of ``rows`` predicted as custom variants of ``base``, with
    the fold's ``cal``."""
    out = []
    for r in rows:
        target = row_workload(ds, r)
        if target is None:
            continue
        # the measured workload as a custom variant of the base preset: its own fields,
        # the base's measurements
        w = replace(
            target,
            preset=None,
            benchmark_workloads=base.meta["benchmark_workloads"],
            benchmark_method=base.meta["benchmark_method"],
            matches_preset=False,
        )
        res = served_residual(ds, r, w, data, cal=cal, reference=base.workload(), table=table)
        if res is not None:
            out.append(res)
    return out


def flops_rows(
    ds: Dataset, exclude: frozenset[str] = frozenset()
) -> Iterator[tuple[BenchmarkPoint, str, float]]:
    """The single-GPU rate rows (:func:`rate_rows`) whose workload has a FLOPs estimate in
    ``ds.flops_table`` and is not in ``exclude``: each row with its family (``"cnn"``, …) and
    training FLOPs per throughput unit (the table's first two entries)."""
    for p in rate_rows(ds):
        entry = ds.flops_table.get((p.workload, p.method))
        if entry is not None and p.workload not in exclude:
            yield p, entry[0], entry[1]


def fit_mfu_prior(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    efficiency: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Median achieved MFU per ``family|precision class`` over single-GPU measurements.

    MFU = tuned throughput (:func:`app.calibrate.stack_fit.tuned_throughput` with the
    stack ``efficiency``, default the served calibration's) × training FLOPs per unit ÷
    (peak TFLOPS of the precision × 1e12).
    """
    by_key: dict[str, list[float]] = {}
    for p, fam, per_unit in flops_rows(ds, exclude):
        peak = flops_peak_tflops(ds.catalog[p.gpu], p.precision)
        mfu = tuned_throughput(p, fam, efficiency) * per_unit / (peak * 1e12)
        by_key.setdefault(f"{fam}|{precision_class(p.precision)}", []).append(mfu)
    return {k: round(statistics.median(v), 4) for k, v in sorted(by_key.items())}


def fit_flops_rate_model(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    efficiency: Mapping[str, float] | None = None,
) -> dict[str, tuple[float, float, float]]:
    """Least-squares ``log FLOP/s = a + b log peak + c log BW`` per ``family|precision class``.

    Over single-GPU measurements with a FLOPs estimate, at their tuned rates
    (:func:`app.calibrate.stack_fit.tuned_throughput`, stack ``efficiency`` default the
    served calibration's); needs ≥ 6 rows on ≥ 4 GPUs.
    """
    groups: dict[str, list[tuple[list[float], float]]] = {}
    gpus: dict[str, set[str]] = {}
    for p, fam, per_unit in flops_rows(ds, exclude):
        gpu = ds.catalog[p.gpu]
        key = f"{fam}|{precision_class(p.precision)}"
        x = list(rate_model_features(gpu, p.precision))
        rate = tuned_throughput(p, fam, efficiency)
        groups.setdefault(key, []).append((x, math.log(rate * per_unit)))
        gpus.setdefault(key, set()).add(p.gpu)
    out = {}
    for key, rows in sorted(groups.items()):
        if len(rows) < 6 or len(gpus[key]) < 4:
            continue
        coef = lstsq([x for x, _ in rows], [y for _, y in rows])
        out[key] = (round(coef[0], 4), round(coef[1], 4), round(coef[2], 4))
    return out


def network_key(w: Workload) -> tuple[object, ...]:
    """What makes two benchmark labels the same network: a transformer's architecture and
    shape (layers, hidden, FFN width, heads), another family's architecture and parameter
    count. BERT-large fine-tuned on SQuAD and pre-trained (335.1M vs 336.2M parameters: the
    pre-training heads) are one network; so are ResNet-50 in TensorFlow and ResNet-50 v1.5 in
    PyTorch (25,557,032 parameters both)."""
    if w.architecture in TRANSFORMER_ARCHITECTURES and w.layers and w.hidden_size:
        return (w.architecture, w.layers, w.hidden_size, w.ffn_hidden_size, w.heads)
    return (w.architecture, w.params)


def lowo_folds(ds: Dataset) -> dict[str, frozenset[str]]:
    """Benchmark label → every label of the same network (:func:`network_key`): a
    leave-one-workload-out fold removes them all, so no held-out workload borrows from its own
    network measured on another task or in another framework."""
    key_of: dict[str, tuple[object, ...]] = {}
    for r in (*rate_rows(ds), *multi_only_rows(ds)):
        if r.workload not in key_of and (w := row_workload(ds, r)) is not None:
            key_of[r.workload] = network_key(w)
    return {
        label: frozenset(other for other, k in key_of.items() if k == key)
        for label, key in key_of.items()
    }


def intensity_points(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    efficiency: Mapping[str, float] | None = None,
) -> dict[str, list[tuple[float, float]]]:
    """Per family: (log forward intensity, mean log-residual) of each measured workload with
    an activation count, the residual of its single-GPU tuned FLOP rates (stack
    ``efficiency``) against the fold's :func:`fit_flops_rate_model` (workloads in
    ``exclude`` left out of both)."""
    model = fit_flops_rate_model(ds, exclude, efficiency)
    per: dict[tuple[str, str], list[float]] = {}
    fam_of: dict[tuple[str, str], str] = {}
    for p, fam, per_unit in flops_rows(ds, exclude):
        preset = ds.label_presets.get((p.workload, p.method))
        if preset is None:
            continue
        coef = model.get(f"{fam}|{precision_class(p.precision)}")
        if coef is None or forward_intensity(preset.workload()) is None:
            continue
        features = rate_model_features(ds.catalog[p.gpu], p.precision)
        fitted_log = sum(k * x for k, x in zip(coef, features, strict=True))
        per.setdefault((p.workload, p.method), []).append(
            math.log(tuned_throughput(p, fam, efficiency) * per_unit) - fitted_log
        )
        fam_of[(p.workload, p.method)] = fam
    out: dict[str, list[tuple[float, float]]] = {}
    for key, residuals in sorted(per.items()):
        i = forward_intensity(ds.label_presets[key].workload())
        assert i is not None
        out.setdefault(fam_of[key], []).append((math.log(i), statistics.fmean(residuals)))
    return out


def shrunk_slope(points: Sequence[tuple[float, float]], prior_sd: float) -> float:
    """Least-squares slope of ``y`` on ``x`` shrunk towards 0, clipped to [0, 1].

    ``Σ(x−x̄)(y−ȳ) / (Σ(x−x̄)² + s² / prior_sd²)``: the posterior mean of the slope under a
    normal prior of mean 0 and standard deviation ``prior_sd``, ``s²`` the residual variance
    of the unshrunk fit (``n − 2`` degrees of freedom). ``points``: ≥ 3 ``(x, y)`` with
    ``x`` (0 when all are equal). (0, 0), (1, 1), (2, 1) at 0.5: 1 / (2 + (1/6) / 0.25) = 0.375.
    """
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    if sxx == 0:
        return 0.0
    ols = sxy / sxx
    s2 = sum((y - my - ols * (x - mx)) ** 2 for x, y in points) / (len(points) - 2)
    return min(max(sxy / (sxx + s2 / prior_sd**2), 0.0), 1.0)


def fit_intensity_slope(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    prior_sd: float = 0.5,
    efficiency: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Slope of log achieved FLOP rate on log forward intensity, per non-transformer family.

    The roofline model bounds it: a memory-bound kernel's FLOP rate is intensity ×
    bandwidth (slope 1), a compute-bound one's the peak (slope 0). :func:`shrunk_slope` over
    one point per workload (:func:`intensity_points`; rows of one workload share its
    errors, and ResNet-50 v1.5 alone has 86 rows), shrunk towards 0 (the rule without
    intensity) by a prior of standard deviation ``prior_sd`` = 0.5, half the roofline's
    range. Needs ≥ 3 workloads with an activation count; a family with fewer gets no entry
    (slope 0). ``exclude``: workloads left out, as the leave-one-workload-out folds need.
    """
    return {
        fam: round(shrunk_slope(pts, prior_sd), 4)
        for fam, pts in intensity_points(ds, exclude, efficiency).items()
        if fam != "transformer" and len(pts) >= 3
    }


#: a transformer network's shape as the width fit reads it: (matmul FLOPs, attention FLOPs)
#: per sample (:func:`app.model.throughput.training_flops_per_sample`'s two parts) and
#: matmul width (:func:`app.model.flops.matmul_width`)
WidthShape = tuple[float, float, float]
#: ((matmul, attention, width) of network a, of network b, mean log rate_a / rate_b)
WidthPair = tuple[WidthShape, WidthShape, float]
_WidthRows = dict[int, tuple[tuple[object, ...], tuple[object, ...], WidthShape, float]]


def _width_rows(ds: Dataset, cal: Calibration) -> _WidthRows:
    """Per usable transformer row of ``ds`` (by benchmark id): its pairing condition, network
    key, shape (:data:`WidthShape`) and log 1-GPU samples/s (:func:`width_pairs`), memoised
    on ``ds`` per multi-GPU constants of ``cal`` (the folds only filter them)."""
    memo_key = (
        "width_rows",
        repr(cal.comm_overlap),
        repr(cal.scaling_loss_per_doubling),
    )
    hit = ds.memo.get(memo_key)
    if hit is not None:
        return cast(_WidthRows, hit)
    out: _WidthRows = {}
    for p in ds.points:
        if p.suspect or p.gpu not in ds.catalog:
            continue
        w = row_workload(ds, p)
        if w is None or w.architecture not in TRANSFORMER_ARCHITECTURES or not w.hidden_size:
            continue
        if w.seq_len and p.seq_len and p.seq_len != w.seq_len:
            continue
        width = matmul_width(w)
        if not training_flops_per_sample(w) or not width:
            continue
        gpu = ds.catalog[p.gpu]
        per_gpu = p.throughput_total / p.gpu_count / units(w)
        if p.gpu_count > 1:
            # the 1-GPU rate, as the pooled model places a multi-GPU row: the modelled
            # data-parallel efficiency (which grows with the gradient volume) divided out
            link = effective_interconnect(
                gpu, Interconnect(p.interconnect) if p.interconnect else None
            )
            per_gpu /= multi_gpu_comm(
                w, gpu, p.gpu_count, link, per_gpu, micro_batch=p.batch_size_per_gpu, cal=cal
            ).efficiency
        matmul, attention = transformer_flops(w)
        cond = (w.architecture, p.gpu, suite_of(p), p.precision, p.gpu_count)
        net = (matmul, attention, width)
        # one network at one sequence length: samples/s of one shape
        out[p.id] = (cond, (network_key(w), net), net, math.log(per_gpu))
    ds.memo[memo_key] = out
    return out


def width_pairs(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    points: Sequence[BenchmarkPoint] | None = None,
    cal: Calibration | None = None,
) -> list[WidthPair]:
    """``(shape_a, shape_b, mean log rate_a/rate_b)`` (:data:`WidthShape`; rates in 1-GPU
    samples/s) for every pair of transformer networks of the same architecture (decoder,
    encoder, ViT) measured under the same conditions (GPU model, suite, precision, GPU
    count; rows at their preset's sequence length), one point per pair of shapes
    (:data:`WidthShape`: a network at one sequence length, checkpointing or not) of two
    different networks (:func:`network_key`; a sample is a sequence), workloads in
    ``exclude`` left out. A multi-GPU row's per-GPU rate
    is divided by the modelled data-parallel efficiency
    (:func:`app.model.multigpu.multi_gpu_comm`, as the pooled model places it), so
    the communication cost of a bigger model is not read as a width effect (with ``cal``'s
    multi-GPU constants, default the served calibration). ``points``: the rows to pair
    (default every row; a fold passes its training rows)."""
    cells: dict[tuple[object, ...], dict[tuple[object, ...], list[float]]] = {}
    shape: dict[tuple[object, ...], WidthShape] = {}
    rows = _width_rows(ds, cal or load_calibration())
    for p in ds.points if points is None else points:
        row = rows.get(p.id)
        if row is None or p.workload in exclude:
            continue
        cond, key, net, log_rate = row
        shape[key] = net
        cells.setdefault(cond, {}).setdefault(key, []).append(log_rate)
    pairs: dict[tuple[tuple[object, ...], tuple[object, ...]], list[float]] = {}
    for by_net in cells.values():
        nets = sorted(by_net, key=repr)
        for i, a in enumerate(nets):
            for b in nets[i + 1 :]:
                y = statistics.fmean(by_net[a]) - statistics.fmean(by_net[b])
                pairs.setdefault((a, b), []).append(y)
    return [
        (shape[a], shape[b], statistics.fmean(ys))
        for (a, b), ys in sorted(pairs.items(), key=repr)
        if a[0] != b[0]  # two networks (not one at two sequence lengths)
    ]


def best_width_h0(pairs: Sequence[WidthPair]) -> float:
    """The ``h₀`` on a log grid (0, and 10 … 31,623 in steps of 10^0.01, about 2.3 %) with
    the least squared error of ``y = log(T_b / T_a)`` over the pairs (:func:`width_pairs`),
    ``T = M·(1 + h₀/h) + A`` the time-weighted FLOPs of
    :func:`app.model.throughput.width_weighted_flops` (M matmul, A attention FLOPs per
    sample, h matmul width). Pairs made at h₀ = 1,000 give the grid point nearest it, 1,000.
    """

    def time(net: WidthShape, h0: float) -> float:
        matmul, attention, h = net
        return matmul * (1 + h0 / h) + attention

    def sse(h0: float) -> float:
        return sum((y - math.log(time(b, h0) / time(a, h0))) ** 2 for a, b, y in pairs)

    grid = [0.0, *(float(round(10 ** (k / 100))) for k in range(100, 451))]
    return min(grid, key=sse)


def fit_width_h0(
    ds: Dataset,
    exclude: frozenset[str] = frozenset(),
    points: Sequence[BenchmarkPoint] | None = None,
    cal: Calibration | None = None,
) -> dict[str, float]:
    """``width_h0``: :func:`best_width_h0` over :func:`width_pairs` (``exclude`` and rows
    outside ``points`` left out; multi-GPU rows placed with ``cal``), for transformers. Needs
    ≥ 3 pairs; otherwise no entry (no width effect)."""
    pts = width_pairs(ds, exclude, points, cal)
    return {"transformer": best_width_h0(pts)} if len(pts) >= 3 else {}


def fold_constants(ds: Dataset, held: frozenset[str], cal: Calibration) -> Calibration:
    """``cal`` with the FLOPs model's fitted constants (``mfu_prior``, ``flops_rate_model``,
    ``mfu_range``, ``intensity_slope``, ``width_h0``) refitted without the workloads in
    ``held``: the calibration of a leave-one-workload-out fold."""
    return replace(
        cal,
        mfu_prior={**cal.mfu_prior, **fit_mfu_prior(ds, held, cal.stack_efficiency)},
        flops_rate_model=fit_flops_rate_model(ds, held, cal.stack_efficiency),
        mfu_range=fit_mfu_range(ds, held, cal.stack_efficiency),
        intensity_slope=fit_intensity_slope(ds, held, efficiency=cal.stack_efficiency),
        width_h0=fit_width_h0(ds, held, cal=cal),
        # a held-out workload stands on no measured group (the FLOPs model): no form applies
        extrapolation_form={},
    )


def lowo(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Leave-one-workload-out (``flops_model`` situation) of workloads with a FLOPs estimate:
    every row of the workload's network (:func:`lowo_folds`) removed, from the data and from
    the fitted FLOPs-model constants (``MFU_PRIOR``, ``FLOPS_RATE_MODEL``, ``MFU_RANGE``,
    ``INTENSITY_SLOPE`` refitted per fold); the baseline is FLOPs ÷ (peak × a flat MFU of
    0.3)."""
    cal = cal or load_calibration()
    out = []
    rows = rate_rows(ds)
    folds = lowo_folds(ds)
    for label in sorted({r.workload for r in rows}):
        held = folds.get(label, frozenset({label}))
        train = [p for p in ds.points if p.workload not in held]
        table = {k: v for k, v in ds.flops_table.items() if k[0] not in held}
        data = served_data(ds, train, cal)
        eff = fit_stack_efficiency(ds, data, train)
        fold = fold_constants(ds, held, replace(cal, stack_efficiency=eff))
        for r in (x for x in rows if x.workload == label):
            w = row_workload(ds, r)
            if w is None or not training_flops_per_sample(w):
                continue
            naive = (
                flops_peak_tflops(ds.catalog[r.gpu], r.precision)
                * 1e12
                * 0.3
                / (training_flops_per_sample(w) or 1.0)
            )
            baselines = {"flat_mfu_0.3": naive * units(w)}
            res = served_residual(ds, r, w, data, cal=fold, table=table, baselines=baselines)
            if res is not None:
                out.append(res)
    return out


#: (multi-GPU row, its 1-GPU row in the same suite, workload with the preset's units)
MultiPair = tuple[BenchmarkPoint, BenchmarkPoint, Workload]


def multi_pairs(ds: Dataset) -> list[MultiPair]:
    """Every multi-GPU row with a 1-GPU partner (:data:`MultiPair`; same batch where one)."""
    hit = ds.memo.get("multi_pairs")
    if hit is not None:
        return cast(list[MultiPair], hit)
    singles: dict[tuple[Any, ...], list[BenchmarkPoint]] = {}
    for p in ds.points:
        if p.gpu_count == 1 and not p.suspect and p.gpu in ds.catalog:
            singles.setdefault((group_key(p), p.gpu), []).append(p)
    pairs = []
    for r in ds.points:
        if r.gpu_count < 2 or r.suspect or r.gpu not in ds.catalog:
            continue
        cands = singles.get((group_key(r), r.gpu))
        w = row_workload(ds, r)
        if not cands or w is None:
            continue
        same_batch = [c for c in cands if c.batch_size_per_gpu == r.batch_size_per_gpu]
        base = (same_batch or cands)[0]
        pairs.append((r, base, w))
    ds.memo["multi_pairs"] = pairs
    return pairs


def row_link(ds: Dataset, r: BenchmarkPoint) -> Interconnect | None:
    """A benchmark row's listed link as the served path reads it (SXM boards: NVLink)."""
    listed = Interconnect(r.interconnect) if r.interconnect else None
    return effective_interconnect(ds.catalog[r.gpu], listed)


def _pair_comm(ds: Dataset, pair: MultiPair, cal: Calibration) -> CommEstimate:
    r, base, w = pair
    per_gpu_samples = base.throughput_total / (w.units_per_sample or 1.0)
    return multi_gpu_comm(
        w,
        ds.catalog[r.gpu],
        r.gpu_count,
        row_link(ds, r),
        per_gpu_samples,
        micro_batch=r.batch_size_per_gpu or w.micro_batch_size,
        cal=cal,
    )


def comm_share(ds: Dataset, pair: MultiPair, cal: Calibration | None = None) -> float:
    """Communication time ÷ (compute + communication time) of a pair's multi-GPU row with
    nothing hidden (``cal``'s overlap set to 0): how much the row can say about the link
    model."""
    hidden_none = replace(cal or load_calibration(), comm_overlap=0.0)
    return _pair_comm(ds, pair, hidden_none).comm_time_share


def multigpu_residuals(
    ds: Dataset, pairs: Sequence[MultiPair] | None = None, cal: Calibration | None = None
) -> list[Residual]:
    """Multi-GPU rows predicted as 1-GPU throughput × n × η (η with ``cal``'s constants;
    baseline: linear scaling), the residual's basis the row's link class
    (:class:`app.model.comm.LinkClass`)."""
    cal = cal or load_calibration()
    out = []
    for pair in multi_pairs(ds) if pairs is None else pairs:
        r, base, _ = pair
        comm = _pair_comm(ds, pair, cal)
        linear = base.throughput_total * r.gpu_count
        out.append(
            Residual(
                r,
                r.throughput_total,
                linear * comm.efficiency,
                comm.topology.link.value,
                {"linear": linear},
            )
        )
    return out


# -- memory -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryCheck:
    """A measured memory case and the model's prediction of it."""

    case: str
    description: str
    gpu: str
    metric: str
    observed_gib: float | None
    outcome: str
    predicted_gib: float
    predicted_risk: str
    in_sample: bool
    notes: str = ""

    @property
    def right_side(self) -> bool:
        """Fits/OOM agrees: measured OOM ↔ predicted ``high``."""
        return (self.outcome == "oom") == (self.predicted_risk == OomRisk.HIGH.value)

    @property
    def ape(self) -> float | None:
        """Absolute percentage error where a number was measured."""
        if self.observed_gib is None:
            return None
        return abs(self.predicted_gib / self.observed_gib - 1.0)


def _metric_gib(w: Workload, gpu_count: int, metric: str, cal: Calibration) -> float:
    b = peak_memory_bytes(w, gpu_count, w.micro_batch_size, cal)
    if metric in ("alloc", "active"):
        return b.allocated_gib
    if metric == "reserved":
        return b.allocated_gib * SLACK
    extra = NCCL_GIB if gpu_count > 1 else 0.0
    return b.allocated_gib * SLACK + CUDA_CONTEXT_GIB + extra


def _int(value: str) -> int | None:
    value = (value or "").strip()
    return int(float(value)) if value else None


def case_workload(ds: Dataset, row: dict[str, str]) -> Workload | None:
    """A §7 memory case as a core workload (``None`` when it cannot be expressed)."""
    arch = row["architecture"]
    if arch == "encoder_decoder":
        arch = "transformer_encoder"
    if arch not in {a.value for a in Architecture}:
        return None
    image = row["image_size"].strip()
    if "x" in image:
        if arch != "cnn":
            return None  # non-square transformer inputs (hierarchical-ViT detectors): outside
        # a conv net's activations scale with pixels: the square with the same pixel count
        width, height = (float(v) for v in image.split("x"))
        image = str(round(math.sqrt(width * height)))
    # every workload field the case's row has a cell for, read as a seed row is
    values: dict[str, Any] = workload_cells({**row, "architecture": arch, "image_size": image})
    values["micro_batch_size"] = values.get("micro_batch_size") or 1
    values["samples_per_epoch"] = 1
    gflops = values.get("forward_gflops_per_sample")
    meta: dict[str, Any] = {}
    if not gflops and arch == "diffusion_unet" and "sd15-unet-finetune" in ds.presets:
        # same UNet as the preset: its published forward cost sizes the activations
        values["forward_gflops_per_sample"] = ds.presets["sd15-unet-finetune"].fields.get(
            "forward_gflops_per_sample"
        )
    if (
        not gflops
        and arch == "cnn"
        and "resnet50-imagenet" in ds.presets
        and values.get("params") == 25557032
    ):
        meta = dict(ds.presets["resnet50-imagenet"].meta)
        values["forward_gflops_per_sample"] = ds.presets["resnet50-imagenet"].fields.get(
            "forward_gflops_per_sample"
        )
    from app.model.job import build_workload

    return build_workload(values, meta)


#: Benchmark rows with a peak-memory figure that the model can express: (source, GPU label,
#: workload, task substring, precision) → (preset, overrides, metric). Lambda v0 rows (nvidia-smi
#: of the filled GPU) are added automatically.
PEAK_ROW_CONFIGS: list[tuple[Callable[[BenchmarkPoint], bool], str, dict[str, Any], str]] = [
    # torchtitan Table 1/3: Llama 3.1 8B FSDP, local batch 2, seq 8192, selective (op) AC,
    # bf16 mixed precision
    (
        lambda p: (
            p.source == "torchtitan"
            and p.workload == "Llama 3.1 8B"
            and p.seq_len == 8192
            and p.gpu_count in (8, 128)
            and p.precision == Precision.BF16_AMP
            and p.batch_size_per_gpu == 2
        ),
        "llama31-8b-pretrain",
        {"gradient_checkpointing": True, "checkpoint_granularity": "selective", "sharding": "fsdp"},
        "reserved",
    ),
]


def memory_checks(ds: Dataset, cal: Calibration | None = None) -> list[MemoryCheck]:
    """Predicted vs observed for the §7 cases and the benchmark peak-memory rows, with ``cal``
    (default: the served calibration)."""
    cal = cal or load_calibration()
    out = []
    for row in ds.memory_cases:
        gpu = ds.catalog.get(row["gpu"])
        w = case_workload(ds, row)
        if gpu is None or w is None:
            continue
        count = _int(row["gpu_count"]) or 1
        est = estimate_memory(w, vram_gib=gpu.vram_gib, gpu_count=count, gpu=gpu.name, cal=cal)
        metric = row["metric"] if row["metric"] != "outcome" else "smi"
        observed = float(row["observed_gib"]) if row["observed_gib"].strip() else None
        out.append(
            MemoryCheck(
                case=row["case_id"],
                description=row["description"],
                gpu=gpu.name,
                metric=row["metric"],
                observed_gib=observed,
                outcome=row["outcome"],
                predicted_gib=_metric_gib(w, count, metric, cal),
                predicted_risk=est.oom_risk.value,
                in_sample=False,
            )
        )
    for p in ds.points:
        if p.peak_memory_gib is None or p.gpu not in ds.catalog:
            continue
        gpu = ds.catalog[p.gpu]
        config = None
        if p.source == "lambda_pytorch_v0" and p.gpu_count == 1:
            w = row_workload(ds, p)
            if w is not None:
                transformer = w.architecture in (
                    Architecture.TRANSFORMER_ENCODER,
                    Architecture.TRANSFORMER_DECODER,
                )
                config = (w, "smi", not transformer)
        else:
            for match, preset, overrides, metric in PEAK_ROW_CONFIGS:
                if match(p) and preset in ds.presets:
                    fields = {"micro_batch_size": p.batch_size_per_gpu or 1, **overrides}
                    config = (ds.presets[preset].workload(**fields), metric, False)
                    break
        if config is None:
            continue
        w, metric, in_sample = config
        est = estimate_memory(
            w, vram_gib=gpu.vram_gib, gpu_count=p.gpu_count, gpu=gpu.name, cal=cal
        )
        out.append(
            MemoryCheck(
                case=f"bench-{p.id}",
                description=f"{p.workload} {p.precision.value} bs "
                f"{p.batch_size_per_gpu} ({p.source})",
                gpu=gpu.name,
                metric=metric,
                observed_gib=p.peak_memory_gib,
                outcome="fits",
                predicted_gib=_metric_gib(w, p.gpu_count, metric, cal),
                predicted_risk=est.oom_risk.value,
                in_sample=in_sample,
                notes="per-sample slope fitted on these rows" if in_sample else "",
            )
        )
    return out


def qlora_pairs(ds: Dataset) -> list[float]:
    """LoRA ÷ QLoRA tokens/s of the same model on the same GPU label (torchtune README)."""
    by_key: dict[tuple[str, str, str], float] = {}
    for p in ds.points:
        if p.method in ("lora", "qlora") and p.gpu_count == 1:
            by_key[(p.source, p.workload, p.method)] = p.throughput_total
    ratios = []
    for (source, label, method), thr in by_key.items():
        if method == "lora" and (source, label, "qlora") in by_key:
            ratios.append(thr / by_key[(source, label, "qlora")])
    return ratios
