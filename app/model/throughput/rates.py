"""FLOP rates and utilisation: what a workload's FLOPs cost on a GPU and what runs reach.

The FLOPs weighting by width (:func:`width_weighted_flops`), the arithmetic intensity of a
forward pass, the fitted FLOP-rate prior, the implied MFU/HFU of an answer and the
credible-MFU bound (:func:`credible_rate`) the physical check holds answers to.
"""

from __future__ import annotations

import math

from app.model.calibration import Calibration, load_calibration
from app.model.flops import (
    flops_peak_tflops,
    matmul_width,
    training_flops_per_sample,
    transformer_flops,
)
from app.model.mfu import credible_bound, model_workload
from app.model.pooled import rate_class
from app.model.types import GpuSpec, Precision, Workload
from app.model.vocabulary import PrecisionClass, family, precision_class


def rate_model_features(gpu: GpuSpec, precision: Precision) -> tuple[float, float, float]:
    """(1, log peak TFLOPS, log bandwidth GB/s): the regressors of ``flops_rate_model``
    (peak as :func:`flops_peak_tflops`), shared by its fit and its evaluations."""
    return (
        1.0,
        math.log(flops_peak_tflops(gpu, precision)),
        math.log(gpu.memory_bandwidth_gbs or 1.0),
    )


def achieved_flops_prior(gpu: GpuSpec, fam: str, precision: Precision, cal: Calibration) -> float:
    """FLOP/s a typical ``fam`` workload reaches on ``gpu`` (``cal``'s fit, no measurement
    needed).

    ``log(FLOP/s) = a + b·log(peak TFLOPS) + c·log(bandwidth GB/s)`` per family and precision
    class, least squares over every single-GPU measurement with a FLOPs estimate
    (:attr:`Calibration.flops_rate_model`): MFU falls as peak grows faster than bandwidth, which a
    flat MFU prior misses (H100 runs ResNet-50 at ~7 % MFU, a V100 at ~20 %). Falls back to
    peak × :attr:`Calibration.mfu_prior` for families without a fit.
    """
    key = f"{fam}|{precision_class(precision)}"
    peak = flops_peak_tflops(gpu, precision)
    coef = cal.flops_rate_model.get(key)
    if coef is None:
        return peak * 1e12 * cal.mfu_prior.get(key, 0.3)
    return math.exp(
        sum(k * x for k, x in zip(coef, rate_model_features(gpu, precision), strict=True))
    )


def implied_utilisation(
    w: Workload,
    gpu: GpuSpec,
    precision: Precision,
    samples_per_s_per_gpu: float,
    peak: float | None = None,
) -> tuple[float, float] | None:
    """(MFU, HFU) of ``samples_per_s_per_gpu`` of ``w`` on ``gpu`` at ``precision``
    (:mod:`app.model.mfu`): model FLOPs per sample (no recompute) and hardware FLOPs per
    sample (with it) × the rate ÷ :func:`flops_peak_tflops` (or ``peak`` TFLOPS, the peak
    the job really runs at where it differs: fp32 matmuls without TF32); ``None`` without a
    FLOPs estimate. Llama 2 7B at 1,000 tokens/s on an A100 (312 TFLOPS bf16): 6 × 6.74e9 × 1e3 +
    attention ≈ 4.2e13 FLOP/s, MFU 0.13."""
    hardware = training_flops_per_sample(w)
    model = training_flops_per_sample(model_workload(w))
    if not hardware or not model:
        return None
    flops = (peak or flops_peak_tflops(gpu, precision)) * 1e12
    return samples_per_s_per_gpu * model / flops, samples_per_s_per_gpu * hardware / flops


def utilisation_note(used: tuple[float, float], peak_tflops: float, precision: Precision) -> str:
    """The sentence giving an answer's implied MFU (and HFU where recompute adds FLOPs)."""
    mfu, hfu = used
    text = f"implied MFU {mfu:.2f}"
    if hfu > mfu * 1.001:
        text += f", HFU {hfu:.2f} with the recomputed forward"
    return f"{text} (per GPU, of the {peak_tflops:.0f} TFLOP/s dense {precision.value} peak)"


def credible_rate(
    w: Workload,
    gpu: GpuSpec,
    precision: Precision,
    cal: Calibration,
    peak: float | None = None,
    *,
    hardware: bool = False,
) -> tuple[float, str] | None:
    """Highest per-GPU samples/s of ``w`` on ``gpu`` the credible-MFU table of ``cal`` allows
    (the lower of its cell's highest measured MFU and HFU,
    :func:`app.model.mfu.credible_bound`), with the sentence that says so, naming the cell
    whose rows set it; ``None`` without a FLOPs estimate. ``peak``: the TFLOPS the cell's
    rows were measured against where it is not :func:`flops_peak_tflops`. ``hardware``: the
    HFU bound alone, for a rate that stands for the FLOPs the GPU executes (a FLOPs-model
    donor's, which the model divides by the job's own FLOPs with its recompute): the cell's
    highest MFU is lower where its best run recomputed (llm-foundry's MPT-30B on 8 A100s,
    MFU 0.564 at HFU 0.752), which says what checkpointed runs keep, not what the GPU does."""
    per_sample = implied_utilisation(w, gpu, precision, 1.0, peak)
    if per_sample is None:
        return None
    fam = family(w.architecture)
    # the class the GPU runs it at (mixed precision on a GPU without 16-bit units is fp32)
    runs = Precision.FP32 if rate_class(gpu, precision) == PrecisionClass.FP32 else precision
    mfu_max, hfu_max, cell = credible_bound(fam, w.params, runs, cal, w.method.value)
    rate = hfu_max / per_sample[1]
    if not hardware:
        rate = min(mfu_max / per_sample[0], rate)
    text = (
        f"held to the highest utilisation measured runs of its kind reach ({cell}: MFU "
        f"{mfu_max:.2f}, HFU {hfu_max:.2f}; docs/mfu_table.md)"
    )
    return rate, text


def width_weighted_flops(w: Workload, cal: Calibration) -> float | None:
    """Training FLOPs per sample weighted by the time they take (FLOPs at the matmul peak
    rate): a transformer's matmul FLOPs ÷ :func:`width_efficiency` plus its attention
    FLOPs, the others' FLOPs as they are (:func:`training_flops_per_sample`). The memory-bound
    work around the matmuls (norms, activations, residual adds) grows with the tokens and the
    width, not with the sequence, so it is charged to the ``6N`` part only: at a long
    sequence, where attention dominates, more parameters at the same depth cost their FLOPs
    and never raise the rate. Samples/s of two transformers on one GPU go as the inverse
    ratio of these counts. Transformer-XL base at h₀ = 1,000: 65,108,442 × 6 × 192 ×
    (1 + 1,000 / 582.33) + 12 × 16 × 512 × 192² = 2.0743e11. The overhead, ``6N·h₀/h =
    6·h₀·√(12·L·N)``, vanishes with ``N``: a model that multiplies almost nothing costs its
    attention. ``h₀`` is ``cal``'s.
    """
    if w.architecture.is_transformer and w.params:
        matmul, attention = transformer_flops(w)
        return matmul / width_efficiency(w, cal) + attention
    return training_flops_per_sample(w)


def forward_intensity(w: Workload) -> float | None:
    """Arithmetic intensity of ``w``'s forward pass: FLOPs per activation element
    (``forward_gflops_per_sample × 1e9 / (forward_activations_per_sample × 1e6)``), ``None``
    when either count is unknown. ResNet-50: 8.178e9 / 11.11e6 = 736 FLOPs per element."""
    gflops, acts = w.forward_gflops_per_sample, w.forward_activations_per_sample
    if not gflops or not acts:
        return None
    return gflops * 1e3 / acts


def width_efficiency(w: Workload, cal: Calibration | None = None) -> float:
    """Share of a transformer's matmul FLOP rate reached at its width: ``h / (h + h₀)``.

    Per token and layer the matmuls cost ``24·h²`` FLOPs and the memory-bound work around
    them (norms, activations, residual adds) moves bytes ``∝ h``, so their time per token
    goes as ``a·h² + c·h`` and the matmul part's share of the peak as ``1 / (1 + h₀/h)``
    with ``h₀ = c/a`` (attention FLOPs are charged apart, :func:`width_weighted_flops`). ``h`` =
    :func:`app.model.flops.matmul_width` (the width the multiplied parameters make per layer,
    so a ``hidden_size`` changed without its parameters moves no efficiency); ``h₀`` =
    ``cal.width_h0["transformer"]`` (default: the served calibration), fitted on pairs of
    transformer networks measured under the same conditions
    (:func:`app.calibrate.validate.fit_width_h0`); 1 for other families or without a width.
    At h₀ = 1,000: Transformer-XL base (width 582) 0.37, large (1,115) 0.53.
    """
    h0 = (cal or load_calibration()).width_h0.get(family(w.architecture), 0.0)
    h = matmul_width(w)
    if not h0 or not h or not w.architecture.is_transformer:
        return 1.0
    return h / (h + h0)
