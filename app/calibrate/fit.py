"""Derive every constant of the ``throughput`` section of ``app/model/calibration.json``
(:class:`app.model.calibration.Calibration`) from the seed data.

Run through ``python tools/fit_constants.py``; re-running reproduces the committed constants
(``pytest -m refit`` compares them within a stated tolerance). Order matters: memory fits and
priors first, then the multi-GPU fit, then the range factors from cross-validation residuals
of the finished model; each step predicts with ``dataclasses.replace(base, **constants so
far)``, nothing is patched.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from app.calibrate.dataset import Dataset
from app.calibrate.mfu_fit import fit_fp8_gain, fit_mfu_range
from app.calibrate.stack_fit import fit_stack_efficiency
from app.calibrate.validate import (
    MultiPair,
    Residual,
    comm_share,
    derived,
    fit_flops_rate_model,
    fit_intensity_slope,
    fit_mfu_prior,
    fit_width_h0,
    loao,
    logo,
    logo_multi,
    lowo,
    lowo_multi,
    measured_elsewhere,
    multi_pairs,
    multigpu_residuals,
    precision_switch,
    qlora_pairs,
    served_data,
)
from app.model.calibration import Calibration, load_calibration
from app.model.memory import CUDA_CONTEXT_GIB, GIB, SLACK
from app.model.throughput.extrapolate import choose_forms
from app.model.types import SITUATION_BASIS, Situation, range_situation
from app.model.vocabulary import precision_class

#: Share of held-out measurements the low–high range should contain.
RANGE_COVERAGE = 0.8


def _linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Ordinary least squares y = a + b·x → (a, b)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def fit_memory(ds: Dataset) -> dict[str, Any]:
    """Per-sample activation bytes (and fixed bytes) from peak memory at several batches.

    For each (benchmark label, 16/32-bit regime), the Lambda v0 single-GPU rows give
    nvidia-smi peak GiB at the batch Lambda chose per card; a least-squares line
    ``peak = a + b·batch`` gives the per-sample slope b and intercept a. Stored as allocated
    bytes: b ÷ SLACK, (a - CUDA context) ÷ SLACK. Needs ≥ 3 distinct batches and b > 0.
    ``cnn_activation_bytes_per_gflop`` = ResNet-50's 16-bit slope ÷ its forward GFLOPs;
    ``cnn_activation_bytes_per_element`` = the same slope ÷ its forward activation elements
    (the preset's ``forward_activations_per_sample``, millions: timm's fvcore count);
    ``default_activation_bytes_per_param`` = median slope ÷ params over fitted non-transformer
    workloads with a parameter count.

    Raises:
        ValueError: without the ResNet-50 16-bit slope or the ``resnet50-imagenet`` preset's
            activation count.
    """
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for p in ds.points:
        if (
            p.source != "lambda_pytorch_v0"
            or p.gpu_count != 1
            or p.peak_memory_gib is None
            or not p.batch_size_per_gpu
        ):
            continue
        regime: str = precision_class(p.precision)
        groups.setdefault((p.workload, regime), []).append(
            (float(p.batch_size_per_gpu), p.peak_memory_gib)
        )
    fits: dict[str, tuple[float, int | None, float]] = {}
    per_param = []
    for (label, regime), pts in sorted(groups.items()):
        if len({b for b, _ in pts}) < 3:
            continue
        a, b = _linear_fit([x for x, _ in pts], [y for _, y in pts])
        if b <= 0:
            continue
        preset = ds.label_presets.get((label, "full"))
        image = preset.fields.get("image_size") if preset else None
        per_sample = b * GIB / SLACK
        fixed = max(a - CUDA_CONTEXT_GIB, 0.0) * GIB / SLACK
        fits[f"{label}|{regime}"] = (round(per_sample), image, round(fixed))
        arch = preset.fields.get("architecture") if preset else None
        params = preset.fields.get("params") if preset else None
        if params and arch not in ("transformer_encoder", "transformer_decoder", "vit"):
            per_param.append(per_sample / params)
    rn50 = fits.get("ResNet-50 v1.5|16")
    rn50_gflops = ds.presets["resnet50-imagenet"].fields.get("forward_gflops_per_sample")
    rn50_macts = ds.presets["resnet50-imagenet"].fields.get("forward_activations_per_sample")
    if not rn50 or not rn50_macts:
        raise ValueError(
            "the ResNet-50 v1.5 16-bit slope and the resnet50-imagenet activation count are "
            "needed for cnn_activation_bytes_per_element"
        )
    return {
        "cnn_activation_bytes_per_element": round(rn50[0] / (rn50_macts * 1e6), 3),
        "activation_bytes_per_sample": fits,
        "cnn_activation_bytes_per_gflop": round(rn50[0] / rn50_gflops)
        if rn50 and rn50_gflops
        else 6.5e6,
        "default_activation_bytes_per_param": round(statistics.median(per_param), 3),
    }


def fit_qlora_slowdown(ds: Dataset) -> float:
    """Geometric mean of LoRA ÷ QLoRA throughput over same-model, same-GPU pairs."""
    ratios = qlora_pairs(ds)
    return round(math.exp(statistics.fmean(math.log(r) for r in ratios)), 4)


def _log_errors(residuals: Sequence[Residual]) -> list[float]:
    return [math.log(r.predicted / r.actual) for r in residuals if r.predicted > 0]


def fit_multigpu(
    ds: Dataset, pairs: Sequence[MultiPair] | None = None, cal: Calibration | None = None
) -> dict[str, Any]:
    """``scaling_loss_per_doubling`` κ and ``comm_overlap`` of :mod:`app.model.comm` (the
    other constants from ``cal``, default the served calibration).

    The bandwidths are published figures (``seed_data/link_bandwidth.csv``); only these two
    are fitted, on the multi-GPU rows with a 1-GPU partner in the same suite (``pairs``,
    default all of :func:`app.calibrate.validate.multi_pairs`), predicted as 1-GPU
    measurement × n × η. κ (losses the bandwidth term does not see) is the value on a grid
    of 0-5 % per doubling with the least median absolute log error over the rows whose
    communication would take under 5 % of the step (:func:`comm_share`); the overlap, on a grid
    of 0-1, the least median absolute log error with every row weighted by its communication
    share, so the communication-heavy rows decide it. A weighted median, not a mean: the
    heavy rows disagree among themselves (Lambda's GeForce Transformer-XL rows scale at
    η ≈ 1 over links that cannot carry their gradients within the step; its TensorFlow
    VGG/AlexNet rows on the same cards at 0.1-0.5), and a mean lets either tail set it.
    """
    base = cal or load_calibration()
    rows = list(multi_pairs(ds) if pairs is None else pairs)
    shares = [comm_share(ds, pair, base) for pair in rows]
    light = [pair for pair, s in zip(rows, shares, strict=True) if s < 0.05]
    params: dict[str, Any] = {"scaling_loss_per_doubling": 0.0, "comm_overlap": 1.0}

    def errors(cand: dict[str, Any], subset: Sequence[MultiPair]) -> list[float]:
        residuals = multigpu_residuals(ds, subset, replace(base, **cand))
        return [abs(e) for e in _log_errors(residuals)]

    if light:
        grid_loss = [round(0.0025 * i, 4) for i in range(21)]
        params["scaling_loss_per_doubling"] = min(
            grid_loss,
            key=lambda k: statistics.median(
                errors({**params, "scaling_loss_per_doubling": k}, light)
            ),
        )
    if rows and sum(shares) > 0:

        def weighted(value: float) -> float:
            errs = errors({**params, "comm_overlap": value}, rows)
            return weighted_median(errs, shares)

        params["comm_overlap"] = min([round(0.05 * i, 2) for i in range(21)], key=weighted)
    return params


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The value at which the cumulative weight (values sorted) first reaches half the total.

    Raises:
        ValueError: no values, or weights that sum to zero.
    """
    total = sum(weights)
    if not values or total <= 0:
        raise ValueError("weighted_median needs values with a positive total weight")
    acc = 0.0
    for value, weight in sorted(zip(values, weights, strict=True)):
        acc += weight
        if acc >= total / 2:
            return value
    return max(values)


def _quantiles(ratios: Sequence[float]) -> tuple[float, float]:
    """Symmetric (1-c)/2 and (1+c)/2 quantiles of actual ÷ predicted."""
    ordered = sorted(ratios)
    lo = (1 - RANGE_COVERAGE) / 2
    hi = 1 - lo

    def q(f: float) -> float:
        pos = f * (len(ordered) - 1)
        i = math.floor(pos)
        j = min(i + 1, len(ordered) - 1)
        return ordered[i] + (ordered[j] - ordered[i]) * (pos - i)

    return round(q(lo), 4), round(q(hi), 4)


def range_residuals(ds: Dataset, cal: Calibration | None = None) -> list[Residual]:
    """Served-path cross-validation residuals the ranges are calibrated on: measured
    elsewhere, leave-one-GPU-out, leave-one-architecture-out, leave-one-workload-out,
    derived workloads, precision switches, and the two protocols of multi-GPU-only (LLM)
    workloads (each residual carries the situation the path named), with ``cal``."""
    return [
        *measured_elsewhere(ds, cal),
        *precision_switch(ds, cal),
        *logo(ds, cal),
        *loao(ds, cal),
        *lowo(ds, cal),
        *derived(ds, cal),
        *logo_multi(ds, cal),
        *lowo_multi(ds, cal),
    ]


def fit_ranges(
    ds: Dataset, residuals: Sequence[Residual] | None = None, cal: Calibration | None = None
) -> dict[str, Any]:
    """Low/high multipliers per situation from served-path cross-validation residuals
    (actual ÷ predicted, :func:`range_residuals`), and per basis for callers that only know
    the basis. Multi-GPU: served-path residuals of the multi-GPU rows with their GPU count held
    out (:func:`app.calibrate.multi_cv.leave_gpu_count_out`), applied on top for GPU counts
    that were not measured. Predictions use ``cal`` (default: the served calibration)."""
    res = list(residuals) if residuals is not None else range_residuals(ds, cal)
    by: dict[str, list[float]] = {}
    for r in res:
        situation = range_situation(Situation(r.basis))
        by.setdefault(situation.value, []).append(r.actual / r.predicted)
        by.setdefault(SITUATION_BASIS[situation].value, []).append(r.actual / r.predicted)
    # imported here: app.calibrate.multi_cv refits the multi-GPU constants with this module
    from app.calibrate.multi_cv import leave_gpu_count_out

    multi = [r.actual / r.predicted for r in leave_gpu_count_out(ds, cal)]
    return {
        "range_factors": {k: _quantiles(v) for k, v in sorted(by.items()) if len(v) >= 10},
        "multi_gpu_range": _quantiles(multi),
    }


def fit_all(ds: Dataset, base: Calibration | None = None) -> dict[str, Any]:
    """Every constant of the throughput section (:class:`Calibration` field names), in
    dependency order: each step predicts with ``base`` (default: the served calibration)
    with the constants fitted so far replaced."""
    base = base or load_calibration()
    constants: dict[str, Any] = {}
    # the stack classes' efficiencies first: every fit below pools rows at their tuned rate
    eff = fit_stack_efficiency(ds, served_data(ds, ds.points, base))
    constants["stack_efficiency"] = eff
    constants.update(fit_memory(ds))
    constants["qlora_slowdown"] = fit_qlora_slowdown(ds)
    constants["mfu_prior"] = fit_mfu_prior(ds, efficiency=eff)
    constants["mfu_range"] = fit_mfu_range(ds, efficiency=eff)
    constants["fp8_gain"] = fit_fp8_gain(ds)
    constants["flops_rate_model"] = fit_flops_rate_model(ds, efficiency=eff)
    constants["intensity_slope"] = fit_intensity_slope(ds, efficiency=eff)
    constants.update(fit_multigpu(ds, cal=replace(base, **constants)))
    # multi-GPU rows enter at 1-GPU rates through the fitted multi-GPU model
    constants["width_h0"] = fit_width_h0(ds, cal=replace(base, **constants))
    # the form of an estimate on an unmeasured architecture, by leave-one-architecture-out
    data = served_data(ds, ds.points, replace(base, **constants))
    constants["extrapolation_form"] = choose_forms(data)
    constants.update(fit_ranges(ds, cal=replace(base, **constants)))
    return constants
