"""Training throughput of a workload on a GPU set: the one estimation path.

:func:`estimate_throughput` (and :meth:`ThroughputModel.estimate`, its memoised form for a
ranking) is what ``/v1/estimate``, ``/v1/rank``, the web page and the accuracy harness call.
It selects the evidence and produces the estimate, in one of seven situations:

* ``measured``: the workload was measured on this GPU model at the served software level,
  precision and micro-batch: the per-GPU rate is the mean of those measurements.
* ``measured_rescaled``: measured on this GPU model, but at another software level,
  micro-batch or precision; the pooled model of :mod:`app.model.pooled`, corrected by the
  GPU's own rows' residuals, moves it to the asked one (the note gives both figures).
* ``sibling``: not measured on this GPU, but on a GPU of the same architecture; the pooled
  model predicts from specs with the architecture terms learnt from the siblings.
* ``extrapolated``: no GPU of this architecture measured the workload; specs only.
* ``flops_model``: the workload was never measured: FLOPs per sample (§4.1) against the FLOP
  rate other workloads of the same family reach on this GPU, those of similar size weighing
  most (parameters for transformers, FLOPs per sample for CNNs; transformers never borrow
  from CNNs, and borrow from their own architecture and attention kernel where they can),
  their rates in time-weighted FLOPs (:func:`width_weighted_flops`); a CNN with an
  activation count borrows from CNNs of similar arithmetic intensity (forward FLOPs per
  activation element), their rates moved along the fitted rate-vs-intensity slope.
* ``derived``: a custom workload that departs from its preset: the preset's estimate at the
  requested precision and at the micro-batch of the same matmul work
  (:func:`app.model.pooled.matmul_rows_per_sample`), times the ratio of training FLOPs
  per sample weighted by the time they take (:func:`width_weighted_flops`: a wider
  transformer's matmuls reach a higher share of the peak; a FLOP-rate trend with size taken
  across workloads was tried and mixed architecture with size: docs/accuracy.md).
* ``precision_switch``: the workload was measured, but never at the precision class asked
  (fp32/tf32 vs 16-bit); the pooled model converts with the family's
  shared fp32-vs-16-bit terms (its own deviation from them is unknown).

Every GPU of one ranking is predicted at one software level (the suite that measured the
most GPUs), so offers are ordered by hardware, not by which lab measured them. Multi-GPU data
parallelism multiplies by the measured efficiency of that GPU count where one exists, else
by the model of :mod:`app.model.multigpu`; more GPUs are never slower.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from app.model.calibration import Calibration, load_calibration
from app.model.comm import board_twin, link_grows_with_count
from app.model.flops import (
    flops_peak_tflops,
    matmul_width,
    training_flops_per_sample,
    transformer_flops,
)
from app.model.mfu import credible_max, mfu_class, model_workload, range_key
from app.model.multigpu import multi_gpu_efficiency, multi_gpu_summary
from app.model.pooled import (
    DEFAULT_B0_WORK,
    Level,
    PooledData,
    family,
    matmul_rows_per_sample,
    pclass,
    rate_class,
    suite_of,
)
from app.model.stacks import (
    DEFAULT_STACK,
    SOURCE_STACK,
    STACK_CLASS,
    Stack,
    stack_factor,
)
from app.model.types import (
    SITUATION_BASIS,
    SITUATION_TEXT,
    TRANSFORMER_ARCHITECTURES,
    BenchmarkPoint,
    Evidence,
    GpuSpec,
    Interconnect,
    Method,
    MultiGpuBasis,
    MultiGpuSummary,
    Precision,
    Situation,
    ThroughputEstimate,
    Workload,
    range_situation,
)

#: (benchmark label, method) → (family, training FLOPs per published throughput unit, FLOPs
#: per sample, params or None), built from the presets; lets the FLOPs model learn achieved
#: FLOP rates from other workloads.
FlopsTable = Mapping[tuple[str, str], tuple[str, float, float, int | None]]

SingleGpu = tuple[float, Situation, tuple[Evidence, ...], tuple[str, ...]]

#: Sharpness k of the smooth credible bound (:meth:`ThroughputModel._credible`): 16 keeps a
#: rate at 0.7 of the bound within 0.03 %, one at the bound at 0.96 of it.
CREDIBLE_SHARPNESS = 16.0

#: situations standing on the GPU's own measurements (never capped at the datasheet peak)
_OWN = (Situation.MEASURED, Situation.MEASURED_RESCALED)


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
    w: Workload, gpu: GpuSpec, precision: Precision, samples_per_s_per_gpu: float
) -> tuple[float, float] | None:
    """(MFU, HFU) of ``samples_per_s_per_gpu`` of ``w`` on ``gpu`` at ``precision``
    (:mod:`app.model.mfu`): model FLOPs per sample (no recompute) and hardware FLOPs per
    sample (with it) × the rate ÷ :func:`flops_peak_tflops`; ``None`` without a FLOPs
    estimate. Llama 2 7B at 1,000 tokens/s on an A100 (312 TFLOPS bf16): 6 × 6.74e9 × 1e3 +
    attention ≈ 4.2e13 FLOP/s, MFU 0.13."""
    hardware = training_flops_per_sample(w)
    model = training_flops_per_sample(model_workload(w))
    if not hardware or not model:
        return None
    peak = flops_peak_tflops(gpu, precision) * 1e12
    return samples_per_s_per_gpu * model / peak, samples_per_s_per_gpu * hardware / peak


def utilisation_note(used: tuple[float, float], peak_tflops: float, precision: Precision) -> str:
    """The sentence giving an answer's implied MFU (and HFU where recompute adds FLOPs)."""
    mfu, hfu = used
    text = f"implied MFU {mfu:.2f}"
    if hfu > mfu * 1.001:
        text += f", HFU {hfu:.2f} with the recomputed forward"
    return f"{text} (per GPU, of the {peak_tflops:.0f} TFLOP/s dense {precision.value} peak)"


def credible_rate(
    w: Workload, gpu: GpuSpec, precision: Precision, cal: Calibration
) -> tuple[float, str] | None:
    """Highest per-GPU samples/s of ``w`` on ``gpu`` the credible-MFU table of ``cal`` allows
    (the lower of its cell's highest measured MFU and HFU, :func:`app.model.mfu.credible_max`),
    with the sentence that says so; ``None`` without a FLOPs estimate."""
    per_sample = implied_utilisation(w, gpu, precision, 1.0)
    if per_sample is None:
        return None
    fam = family(w.architecture)
    # the class the GPU runs it at (mixed precision on a GPU without 16-bit units is fp32)
    runs = Precision.FP32 if rate_class(gpu, precision) == "32" else precision
    mfu_max, hfu_max = credible_max(fam, w.params, runs, cal)
    cell = range_key(fam, w.params, runs)
    rate = min(mfu_max / per_sample[0], hfu_max / per_sample[1])
    text = (
        f"held to the highest utilisation measured runs of its kind reach ({cell}: MFU "
        f"{mfu_max:.2f}, HFU {hfu_max:.2f}; docs/mfu_table.md)"
    )
    return rate, text


def precision_class(p: Precision) -> str:
    """``32`` for fp32/tf32 regimes, ``16`` for 16-bit and fp8."""
    return "32" if p in (Precision.FP32, Precision.TF32) else "16"


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
    if w.architecture in TRANSFORMER_ARCHITECTURES and w.params:
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
    if not h0 or not h or w.architecture not in TRANSFORMER_ARCHITECTURES:
        return 1.0
    return h / (h + h0)


def donor_weight(
    fam: str,
    entry: tuple[str, float, float, int | None],
    w: Workload,
    flops: float,
    donor: Workload | None = None,
) -> float:
    """Weight of a measured donor workload in the FLOPs model's mean FLOP rate for ``w``.

    ``1 / (0.25 + |ln(x_donor / x)|)``: a donor of the same ``x`` weighs 4, one ten times
    bigger or smaller 0.36. For a non-transformer whose donor and own forward intensity are
    both known (:func:`forward_intensity`), ``x`` is that intensity: by the roofline model
    the FLOP rate a net reaches depends on its FLOPs per byte moved, not on its size (VGG-16
    at 2,282 FLOPs per activation element runs 2.7× ResNet-50's rate at 736, EfficientNet-B0
    at 114 a fifth of it). Otherwise ``x`` is size: the parameter count for transformers
    (the matmul shapes grow with it) and the training FLOPs per sample for the other
    families, whose parameter count says little about their work (a convolution reuses each
    weight at every pixel: VGG-16 has 5.4 × ResNet-50's parameters but 3.8 × its FLOPs,
    AlexNet 2.4 × its parameters and 0.17 × its FLOPs). ``entry`` is the donor's
    :data:`FlopsTable` value, ``donor`` its preset workload, ``flops`` the training FLOPs
    per sample of ``w``; 1 when a size is unknown.
    """
    donor_x: float | None
    own_x: float | None
    if fam == "transformer":
        donor_x, own_x = entry[3], w.params
    else:
        donor_x = forward_intensity(donor) if donor is not None else None
        own_x = forward_intensity(w)
        if not donor_x or not own_x:
            donor_x, own_x = entry[2], flops
    if not donor_x or not own_x:
        return 1.0
    return 1.0 / (0.25 + abs(math.log(donor_x / own_x)))


def precision_compatible(workload: Precision, measured: Precision) -> int | None:
    """Rank of how well a measurement's precision stands for the workload's (0 best, None no).

    fp16 and bf16 mixed precision run at the same tensor rate on GPUs that have both;
    published "fp32" on Ampere+ is often TF32 in practice (benchmarks.md §1).
    """
    if workload == measured:
        return 0
    half = {Precision.FP16_AMP, Precision.BF16_AMP, Precision.BF16}
    if workload in half and measured in half:
        return 1
    if {workload, measured} == {Precision.FP32, Precision.TF32}:
        return 1
    return None


def point_samples_per_s(p: BenchmarkPoint, units_per_sample: float | None) -> float:
    """Per-GPU samples/s of a measurement (published units ÷ units per sample ÷ GPUs)."""
    return p.throughput_total / (units_per_sample or 1.0) / p.gpu_count


def _evidence(p: BenchmarkPoint, units: float | None) -> Evidence:
    return Evidence(
        benchmark_id=p.id,
        gpu=p.gpu,
        gpu_count=p.gpu_count,
        workload=p.workload,
        precision=p.precision.value,
        batch_size_per_gpu=p.batch_size_per_gpu,
        samples_per_s=point_samples_per_s(p, units) * p.gpu_count,
        source=p.source,
        source_ref=p.source_ref,
    )


def _method_of(w: Workload) -> str:
    return w.benchmark_method or ("full" if w.method == Method.FULL else w.method.value)


def range_factors(situation: Situation, cal: Calibration | None = None) -> tuple[float, float]:
    """(low, high) multipliers of an estimate in ``situation``: ``cal.range_factors`` (default:
    the served calibration) of the situation whose range it carries
    (:func:`app.model.types.range_situation`), else of its basis."""
    factors = (cal or load_calibration()).range_factors
    situation = range_situation(situation)
    return factors.get(situation.value) or factors[SITUATION_BASIS[situation].value]


def _range(
    value: float, situation: Situation, cal: Calibration, multi_gpu_model: bool = False
) -> tuple[float, float]:
    """Low–high range: the situation's cross-validated 10th-90th percentile of actual ÷
    predicted (:func:`range_factors`), times the multi-GPU model's when the GPU count was not
    itself measured."""
    low, high = range_factors(situation, cal)
    if multi_gpu_model:
        m_low, m_high = cal.multi_gpu_range
        low, high = low * m_low, high * m_high
    return value * low, value * high


def label_workloads(
    presets: Sequence[Workload],
) -> dict[tuple[str, str], Workload]:
    """(benchmark label, method) → the first preset workload standing for it."""
    out: dict[tuple[str, str], Workload] = {}
    for w in presets:
        for label in w.benchmark_workloads:
            out.setdefault((label, _method_of(w)), w)
    return out


class ThroughputModel:
    """Throughput estimates of one workload on any GPU set, memoised per configuration.

    Build one per request (the rank service asks for thousands of offers). Pure: no I/O.

    Args:
        w: the workload (``w.matches_preset`` says whether measurements apply as is).
        points: measured benchmarks (any workloads), used when ``data`` is not given.
        catalog: GPU specs by name.
        reference: the preset ``w`` was derived from, when ``w`` departs from it.
        flops_table: (label, method) → (family, FLOPs per unit, ...) for the FLOPs model.
        data: a prebuilt :class:`PooledData` of the same points (a cache shared by requests).
        workloads: (label, method) → preset workload, for building ``data`` from ``points``.
        cal: the fitted constants (default: the served ``calibration.json``).
    """

    def __init__(
        self,
        w: Workload,
        *,
        points: Sequence[BenchmarkPoint] = (),
        catalog: Mapping[str, GpuSpec] | None = None,
        reference: Workload | None = None,
        flops_table: FlopsTable | None = None,
        data: PooledData | None = None,
        workloads: Mapping[tuple[str, str], Workload] | None = None,
        cal: Calibration | None = None,
    ):
        self.w = w
        self.cal = cal or load_calibration()
        self.catalog = catalog or {}
        self.flops_table = flops_table or {}
        self.reference = (
            reference
            if (not w.matches_preset and reference is not None and reference.benchmark_workloads)
            else None
        )
        base = self.reference or w
        if data is None:
            known = dict(workloads or {})
            for label in base.benchmark_workloads:
                known.setdefault((label, _method_of(base)), base)
            families = _families(self.flops_table)
            data = PooledData(points, self.catalog, known, families, cal=self.cal)
        self.data = data
        self.groups = data.groups(base.benchmark_workloads, _method_of(base))
        self._single: dict[tuple[str, Precision, str | None], SingleGpu] = {}
        self._by_gpu: dict[str, list[BenchmarkPoint]] | None = None
        self._eta: dict[tuple[str, int, Interconnect | None, Precision], tuple[float, bool]] = {}

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

    def can_estimate(self) -> bool:
        """False when there is neither a usable measurement nor a FLOPs estimate."""
        usable = self._usable(self.stand_in_precision(self.w.precision))
        return usable or training_flops_per_sample(self.w) is not None

    def _usable(self, precision: Precision, software: str | None = None) -> bool:
        """The measured group stands for ``precision``: fp32/tf32 and 16-bit rates follow
        from each other through the pooled model; fp8 needs fp8 measurements (FP8 matmuls
        need Transformer Engine/torchao support a 16-bit run says nothing about), and the
        others need rows other than fp8 (an fp8 run's rate never raises a 16-bit answer)."""
        if not self.groups:
            return False
        return _measured_at(self.data.rows(self._group_at(software)), precision)

    def stand_in_precision(self, precision: Precision, software: str | None = None) -> Precision:
        """The precision the estimate is made at: ``precision``, except fp8 for a workload
        whose measured group has 16-bit rows and no fp8 row: then the 16-bit precision it was
        measured at most (ties: the first in :class:`Precision` order).

        FP8's gain depends on the model and its shapes (Transformer Engine and torchao
        replace the linear layers only), so a workload never measured at fp8 has no known
        gain; the FLOPs model at the fp8 peak predicted H100 bert-large-pretrain-seq512 at
        145 samples/s against 398 at bf16_amp. The measured 16-bit rate is the estimate.
        """
        if precision != Precision.FP8 or not self.groups:
            return precision
        rows = self.data.rows(self._group_at(software))
        if any(p.precision == Precision.FP8 for p in rows):
            return precision
        half = [p.precision for p in rows if pclass(p.precision) == "16"]
        if not half:
            return precision
        order = list(Precision)
        return max(set(half), key=lambda q: (half.count(q), -order.index(q)))

    # -- pooled model ----------------------------------------------------------------------
    def _group_at(self, software: str | None) -> tuple[str, str]:
        """The measured group the estimate stands on, the same for every GPU of a ranking.

        With a software level asked (the harness passes a held-out row's suite): the first of
        the preset's groups measured at that suite, else at another version of its source
        (Llama 3.1 8B stands for torchtitan's "Llama 3.1 8B" and Megatron's "Llama 3 8B"),
        else as without one.

        Without: the group of the preset's own ``benchmark_method`` when it has rows, else the
        one with most rows. One group per model, never per GPU: a choice per GPU ranked
        RTX 4090 D (torchtitan's H100 pre-training scaled by specs, 3,284 tok/s) above the
        RTX 4090 it is a cut-down of (torchtune's single-device full fine-tune measured there,
        1,650 tok/s) for the ``llama31-8b-full-single-device`` preset (issue 8: "the same
        software level is used for every GPU in one ranking")."""
        if software:
            source = software.split("@")[0]
            for same in (lambda p: suite_of(p) == software, lambda p: p.source == source):
                for g in self.groups:
                    if any(same(p) for p in self.data.rows(g)):
                        return g
        method = _method_of(self._base(self.w.precision))
        for g in self.groups:
            if g[1] == method:
                return g
        return self.groups[0]

    def _base(self, precision: Precision) -> Workload:
        """The workload whose measurements are used, at the precision asked (and the
        workload's own micro-batch; :meth:`_batch` is where it is read on the curve)."""
        if self.reference is None:
            return replace(self.w, precision=precision)
        return replace(
            self.reference, precision=precision, micro_batch_size=self.w.micro_batch_size
        )

    def _batch(self) -> float:
        """The micro-batch at which the measured group's batch curve is read: the workload's
        own, or for a derived workload the reference's micro-batch of the same matmul work
        (:func:`app.model.pooled.matmul_rows_per_sample`; a fraction where the reference
        is wider, so micro-batch 2 stays faster than 1)."""
        mb = float(self.w.micro_batch_size)
        if self.reference is None or not (
            self.w.architecture in TRANSFORMER_ARCHITECTURES
            and self.reference.architecture in TRANSFORMER_ARCHITECTURES
        ):
            # matmul rows carry a batch between transformers only (a preset recast as
            # another family keeps its own micro-batch)
            return mb
        return mb * matmul_rows_per_sample(self.w) / matmul_rows_per_sample(self.reference)

    def _pooled(self, gpu: GpuSpec, precision: Precision, software: str | None) -> SingleGpu | None:
        if not self._usable(precision, software):
            return None
        base = self._base(precision)
        group = self._group_at(software)
        level = self.data.level_of(group, software, precision == Precision.FP8)
        if level is None:
            return None
        mb = self._batch()
        y, n_own = self.data.predict(group, gpu, precision, mb, level)
        rate = math.exp(y) / (base.units_per_sample or 1.0)
        units = base.units_per_sample
        rows = self.data.rows(group)
        if pclass(precision) not in self.data.measured_classes(group):
            situation = Situation.PRECISION_SWITCH
            used = [p for p in rows if p.gpu == gpu.name] or [
                p for p in rows if p.source == level.source
            ]
        elif n_own:
            used = [p for p in rows if p.gpu == gpu.name]
            rate, situation, moved = self._own_measurement(group, gpu, precision, level, rate)
        elif self.data.has_sibling(group, gpu):
            situation = Situation.SIBLING
            used = [
                p
                for p in rows
                if self.data.catalog.get(p.gpu, gpu).architecture == gpu.architecture
            ]
        else:
            situation = Situation.EXTRAPOLATED
            used = [p for p in rows if p.source == level.source]
        used = sorted(used, key=lambda p: (p.gpu_count, p.id))[:20]
        notes = [
            f"{SITUATION_TEXT[situation]}; pooled model of {group[0]} over "
            f"{len({p.source for p in rows})} suite(s) and {len({p.gpu for p in rows})} GPU "
            f"model(s), at the software level of {level.suite.rstrip('@')}"
        ]
        if situation == Situation.MEASURED_RESCALED:
            notes.append(moved)
        if pclass(precision) == "16" and rate_class(gpu, precision) == "32":
            notes.append(
                f"{gpu.name} has no fast 16-bit math (no tensor cores): {precision.value} "
                "saves memory there but its matmuls run at the fp32 rate"
            )
        rng = self.data.batch_range(group)
        said = f"micro-batch {self.w.micro_batch_size}"
        if self.reference is not None:
            said += f" (the work of {mb:.3g} of the preset's samples)"
        if rng and mb < rng[0]:
            notes.append(
                f"{said} is below the smallest measured ({rng[0]:.0f}): the batch "
                "effect is extrapolated"
            )
        elif rng and mb > rng[1]:
            notes.append(
                f"{said} is above the largest measured ({rng[1]:.0f}): no gain assumed beyond it"
            )
        return rate, situation, tuple(_evidence(p, units) for p in used), tuple(notes)

    def _own_measurement(
        self, group: tuple[str, str], gpu: GpuSpec, precision: Precision, level: Level, rate: float
    ) -> tuple[float, Situation, str]:
        """Per-GPU samples/s of a GPU measured for ``group``, with its situation and, when
        moved, a note giving both figures.

        ``measured``: the GPU has 1-GPU rows at the served software level, precision and
        micro-batch: the rate is their mean, the measurement itself. Otherwise
        ``measured_rescaled``: the pooled model's ``rate`` (its own rows' mean residual moved
        to the asked level, micro-batch or precision), and the note says what was measured.
        """
        units = self._base(precision).units_per_sample or 1.0
        here = self.data.own_rows_at(group, gpu.name, level.suite, precision, self._batch())
        if here:
            mean = statistics.fmean(p.throughput_total for p in here)
            return mean / units, Situation.MEASURED, ""
        own = [
            p
            for p in self.data.rows(group)
            if p.gpu == gpu.name and pclass(p.precision) == pclass(precision)
        ] or [p for p in self.data.rows(group) if p.gpu == gpu.name]
        singles = [p for p in own if p.gpu_count == 1]
        shown = singles or own
        # the rows at the served level where there are any (the residual the model uses)
        shown = [p for p in shown if suite_of(p) == level.suite] or shown
        measured = statistics.fmean(point_samples_per_s(p, units) for p in shown)
        suites = ", ".join(sorted({suite_of(p).rstrip("@") for p in shown}))
        batches = ", ".join(str(b) for b in sorted({p.batch_size_per_gpu or 0 for p in shown}))
        counts = "" if singles else " (multi-GPU runs only, per GPU)"
        note = (
            f"measured on this GPU: {measured:.4g} samples/s per GPU{counts}, mean of "
            f"{len(shown)} run(s) at {suites}, micro-batch {batches}, "
            f"{'/'.join(sorted({p.precision.value for p in shown}))}; served: {rate:.4g} "
            f"samples/s per GPU, moved by the pooled model to {level.suite.rstrip('@')}, "
            f"micro-batch {self._batch():g}, {precision.value}"
        )
        return rate, Situation.MEASURED_RESCALED, note

    # -- FLOPs model -----------------------------------------------------------------------
    def flops_rate(self, w: Workload, gpu: GpuSpec, precision: Precision) -> SingleGpu:
        """Per-GPU samples/s from FLOPs per sample (``flops_model`` situation).

        The FLOP rate is the weighted geometric mean over the measured workloads of the same
        family (their pooled estimates on ``gpu`` × their FLOPs per unit), weighted by
        similarity (:func:`donor_weight`); transformers borrow from transformers with the
        same attention kernel (eager or SDPA) and of the same architecture (decoder, encoder,
        ViT) where there are any, each donor's rate counted in time-weighted FLOPs
        (:func:`width_weighted_flops`, so a wider donor's matmuls stand at its higher share
        of the peak, and the workload's own weighting turns the mean back into samples/s),
        its batch effect taken out and the workload's put in by one law in matmul rows
        (:meth:`_work_batch_term`, :meth:`_batch_factor`). A non-transformer with a forward
        intensity (:func:`forward_intensity`) borrows only from donors with one
        (where there are any), each donor's log FLOP rate moved by
        ``cal.intensity_slope[family] × ln(intensity / donor intensity)``: on the
        roofline a memory-bound kernel's FLOP rate is intensity × bandwidth (slope 1), a
        compute-bound one's the peak (slope 0), and a net mixes both
        (:func:`app.calibrate.validate.fit_intensity_slope`).
        """
        flops = training_flops_per_sample(w)
        fam = family(w.architecture)
        if not flops:
            return 0.0, Situation.FLOPS_MODEL, (), ("no FLOPs per sample for this workload",)
        logs, weights, labels = [], [], []
        own = set(w.benchmark_workloads)
        candidates = [
            (key, entry)
            for key, entry in sorted(self.flops_table.items())
            if entry[0] == fam and key[0] not in own
        ]
        if fam == "transformer":
            # an attention kernel like the workload's first (eager attention materialises
            # the score matrix and runs at a lower FLOP rate than SDPA/Flash kernels)
            same = [
                c
                for c in candidates
                if (d := self.data.workloads.get(c[0])) is not None and d.attention == w.attention
            ]
            # and of the same architecture (decoder, encoder, ViT) where there are any
            arch = [
                c
                for c in same
                if (d := self.data.workloads.get(c[0])) is not None
                and d.architecture == w.architecture
            ]
            candidates = arch or same or candidates
        own_i = forward_intensity(w) if fam != "transformer" else None
        own_weighted = (
            width_weighted_flops(w, self.cal) if fam == "transformer" else None
        ) or flops
        by_intensity = False
        slope = self.cal.intensity_slope.get(fam, 0.0)
        if own_i is not None:
            # only measured donors that can be placed on the intensity axis, where there
            # are any
            with_i = [
                c
                for c in candidates
                if (d := self.data.workloads.get(c[0])) is not None
                and forward_intensity(d) is not None
                and self.data.groups((c[0][0],), c[0][1])
            ]
            candidates = with_i or candidates
        for (label, method), entry in candidates:
            found = self.data.groups((label,), method)
            if not found:
                continue
            if not _measured_at(self.data.rows(found[0]), precision):
                # an fp8-only donor says nothing of a 16-bit rate (nor the reverse)
                continue
            level = self.data.reference_level(found[0], precision == Precision.FP8)
            if level is None:
                continue
            y, _ = self.data.predict(found[0], gpu, precision, None, level)
            donor = self.data.workloads.get((label, method))
            if donor is not None:
                # the donor's own rate held to what runs of its kind reach on this GPU (a
                # suite measured on H100s only extrapolates to an A100 at up to 1.6× its peak)
                y = math.log(_held(math.exp(y), donor, gpu, precision, self.cal))
            # the donor's saturated rate, by the same law _batch_factor re-applies
            y -= self._work_batch_term(found[0], donor)
            weight = donor_weight(fam, entry, w, flops, donor)
            donor_i = forward_intensity(donor) if donor is not None else None
            if own_i is not None and donor_i is not None:
                # roofline: the donor's rate moved along the fitted rate-vs-intensity slope
                y += slope * math.log(own_i / donor_i)
                by_intensity = True
            # the donor's rate (per published unit, FLOPs entry[1] each) in time-weighted
            # FLOP/s (width_weighted_flops: a wider network reaches a higher share of the
            # peak in its matmuls); a donor of unknown shape is taken at this workload's
            # weighting (no width shift)
            weighting = own_weighted / flops
            if fam == "transformer" and donor is not None:
                donor_flops = training_flops_per_sample(donor)
                donor_weighted = width_weighted_flops(donor, self.cal)
                if donor_flops and donor_weighted:
                    weighting = donor_weighted / donor_flops
            logs.append(y + math.log(entry[1] * weighting))
            weights.append(weight)
            labels.append(label)
        if not logs and precision == Precision.FP8:
            # no donor measured at fp8: its gain is unmeasured for this family, so the fp8
            # job stands at the 16-bit donors' rate (as a measured workload does:
            # stand_in_precision)
            rate, situation, evidence, notes = self.flops_rate(w, gpu, Precision.BF16_AMP)
            note = "no workload of its kind was measured at fp8: estimated at bf16_amp's rate"
            return rate, situation, evidence, (*notes, note)
        if logs:
            # time-weighted FLOP/s over the donors, back to this workload's FLOP/s
            rate_flops = (
                math.exp(sum(a * b for a, b in zip(logs, weights, strict=True)) / sum(weights))
                * flops
                / own_weighted
            )
            note = (
                f"{SITUATION_TEXT[Situation.FLOPS_MODEL]}: {rate_flops / 1e12:.1f} TFLOP/s "
                f"from {len(labels)} measured {fam} workload(s): {', '.join(labels)}"
            )
            if by_intensity and own_i is not None:
                note += (
                    f", weighted by similarity of arithmetic intensity ({own_i:.0f} forward "
                    "FLOPs per activation element here) and moved along the fitted slope of "
                    f"FLOP rate on intensity ({slope:.2f})"
                )
        else:
            rate_flops = achieved_flops_prior(gpu, fam, precision, self.cal)
            peak = flops_peak_tflops(gpu, precision) * 1e12
            note = (
                f"FLOPs model: no measured {fam} workload; fitted {fam} FLOP rate "
                f"{rate_flops / 1e12:.1f} TFLOP/s (MFU {rate_flops / peak:.2f})"
            )
        rate = rate_flops / flops * self._batch_factor(w)
        if w.method == Method.QLORA:
            rate /= self.cal.qlora_slowdown
        return rate, Situation.FLOPS_MODEL, (), (note,)

    def _work_batch_term(self, group: tuple[str, str], donor: Workload | None) -> float:
        """log(b / (b + b0)) of ``group``'s typical measured batch (the geometric mean of its
        range, as :meth:`app.model.pooled.PooledData.batch_term`) under the FLOPs model's
        law (:meth:`_batch_factor`: b0 in matmul rows); the group's own law without a preset
        workload."""
        rng = self.data.batch_range(group)
        if donor is None or not rng:
            return self.data.batch_term(group, None)
        fam = family(donor.architecture)
        b0 = self.data.b0_work.get(fam, DEFAULT_B0_WORK[fam]) / matmul_rows_per_sample(donor)
        typical = math.sqrt(rng[0] * rng[1])
        return math.log(typical / (typical + b0))

    def _batch_factor(self, w: Workload) -> float:
        """b / (b + b0) of the micro-batch law (:mod:`app.model.pooled`) for ``w``."""
        fam = family(w.architecture)
        b0 = self.data.b0_work.get(fam, DEFAULT_B0_WORK[fam]) / matmul_rows_per_sample(w)
        b = max(w.micro_batch_size, 1)
        return b / (b + b0)

    # -- composition ------------------------------------------------------------------------
    def single_gpu(
        self, gpu: GpuSpec, precision: Precision | None = None, software: str | None = None
    ) -> SingleGpu:
        """Per-GPU samples/s on one ``gpu`` with situation, evidence and notes (memoised).

        ``precision``: the precision the GPU runs at (default the workload's);
        ``software``: the suite (``source@version``) to predict at, default the reference.
        """
        prec = precision or self.w.precision
        key = (gpu.name, prec, software)
        hit = self._single.get(key)
        if hit is not None:
            return hit
        w = self.w if prec == self.w.precision else replace(self.w, precision=prec)
        ref = self._base(prec)
        base = self._pooled(gpu, prec, software)
        if base is not None:
            base = self._within_peak(base, ref, gpu, prec)
        if base is None:
            result = self.flops_rate(w, gpu, prec)
        elif self.reference is not None:
            rate, situation, evidence, notes = base
            # FLOPs weighted by the time they take: a wider network reaches a higher share
            # of the peak in its matmuls (width_weighted_flops)
            ref_flops = width_weighted_flops(ref, self.cal)
            own_flops = width_weighted_flops(w, self.cal)
            if ref_flops and own_flops:
                ratio = ref_flops / own_flops
                if w.method == Method.QLORA and self.reference.method != Method.QLORA:
                    ratio /= self.cal.qlora_slowdown
                text = (
                    f"{SITUATION_TEXT[Situation.DERIVED]} (×{ratio:.3g}); the preset's "
                    f"estimate is {situation.value}"
                )
            else:
                ratio = 1.0
                text = (
                    "your changes to the preset could not be scaled (no FLOPs estimate for "
                    f"this architecture): the preset's {situation.value} rate is used as is"
                )
            derived_rate = rate * ratio
            flops = training_flops_per_sample(w)
            base_flops = training_flops_per_sample(ref)
            # scaling ratios compound (a preset carried to another precision and GPU, then
            # to a bigger model): never more FLOP/s than the datasheet's, nor than the
            # preset's own estimate where that stands above it (a measurement), so the
            # answer moves smoothly away from the preset's
            bound = max(flops_peak_tflops(gpu, prec) * 1e12, rate * (base_flops or 0.0))
            if flops and derived_rate * flops > bound:
                text += (
                    f"; capped at {bound / 1e12:.0f} TFLOP/s (the {prec.value} peak counted "
                    "here, or the preset's own rate where it is higher)"
                )
                derived_rate = bound / flops
            result = (derived_rate, Situation.DERIVED, evidence, (text, *notes))
        else:
            result = base
        # the credible bound is the tuned suites' (every row is one); the stack moves below it
        result = self._with_stack(self._credible(w, gpu, prec, result), software, prec)
        self._single[key] = result
        return result

    def measured_stack(
        self, software: str | None, precision: Precision | None = None
    ) -> Stack | None:
        """The stack of the rows the pooled estimate stands on (the level's source,
        :data:`app.model.stacks.SOURCE_STACK`); ``None`` without a measured group that
        stands for ``precision``."""
        if not self.groups or (precision is not None and not self._usable(precision, software)):
            return None
        group = self._group_at(software)
        level = self.data.level_of(group, software, precision == Precision.FP8)
        return SOURCE_STACK.get(level.source) if level is not None else None

    def stack(self, software: str | None = None, precision: Precision | None = None) -> Stack:
        """The stack the answer assumes: the workload's, else the stack of the preset's own
        measured rows, else its recipe's, else :data:`app.model.stacks.DEFAULT_STACK`."""
        return (
            self.w.stack
            or self.measured_stack(software, precision)
            or self.w.recipe_stack
            or (self.reference.recipe_stack if self.reference is not None else None)
            or DEFAULT_STACK
        )

    def _with_stack(self, est: SingleGpu, software: str | None, precision: Precision) -> SingleGpu:
        """``est`` moved from the stack of its rows to the asked one
        (:func:`app.model.stacks.stack_factor`; a FLOPs-model estimate stands on tuned
        suites' rows), with the sentence that says which stack is assumed."""
        rate, situation, evidence, notes = est
        asked = self.stack(software, precision)
        if situation == Situation.FLOPS_MODEL:
            factor = stack_factor(asked, None)
        else:
            measured = self.measured_stack(software, precision)
            # rows of a source no stack is known for stand for the stack asked
            factor = stack_factor(asked, measured or asked)
        given = "asked" if self.w.stack else "default"
        text = f"stack: {asked.value} ({given}; {STACK_CLASS[asked]} class"
        if factor != 1.0:
            text += (
                f", ×{factor:.2f} of the tuned suites' rates measured: eager PyTorch vs "
                "compiled in torchtune's own table, docs/model.md#throughput)"
            )
        else:
            text += ", at the measured rows' rate)"
        return rate * factor, situation, evidence, (*notes, text)

    def _credible(
        self, w: Workload, gpu: GpuSpec, precision: Precision, est: SingleGpu
    ) -> SingleGpu:
        """``est`` held below :func:`credible_rate` ``B`` unless it is this GPU's own
        measurement of this very configuration (``measured``): no answer implies more MFU
        (or HFU) than the measured runs of its family, size and precision reach. The bound is
        smooth, ``r / (1 + (r/B)^k)^(1/k)`` with k = :data:`CREDIBLE_SHARPNESS`: below B
        always, rising with ``r`` (a bigger micro-batch stays faster, recompute slower), and
        within 0.03 % of ``r`` up to 0.7·B."""
        rate, situation, evidence, notes = est
        bound = credible_rate(w, gpu, precision, self.cal)
        if situation == Situation.MEASURED or bound is None or rate <= 0:
            return est
        k = CREDIBLE_SHARPNESS
        held = rate / (1.0 + (rate / bound[0]) ** k) ** (1.0 / k)
        if held > 0.99 * rate:
            return held, situation, evidence, notes
        note = f"{bound[1]}: ×{held / rate:.2f}"
        return held, situation, evidence, (*notes, note)

    def _within_peak(
        self, est: SingleGpu, base: Workload, gpu: GpuSpec, precision: Precision
    ) -> SingleGpu:
        """``est`` (a pooled estimate of ``base``) capped at the datasheet peak
        (:func:`flops_peak_tflops`) where it stands on no measurement on this GPU (sibling,
        extrapolated, precision switch): specs and suite factors can carry a rate past what
        the GPU can do (Llama 2 7B, measured at fp8 on H100s, came out at 1.3× an A100's
        bf16 peak). A measured rate stands as measured."""
        rate, situation, evidence, notes = est
        flops = training_flops_per_sample(base)
        peak = flops_peak_tflops(gpu, precision) * 1e12
        if situation in _OWN or not flops or rate * flops <= peak:
            return est
        note = (
            f"capped at the {peak / 1e12:.0f} TFLOP/s {precision.value} peak counted here "
            f"(the {situation.value} rate would imply MFU {rate * flops / peak:.2f})"
        )
        return peak / flops, situation, evidence, (*notes, note)

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

    def estimate(
        self,
        gpu: GpuSpec,
        gpu_count: float = 1,
        interconnect: Interconnect | None = None,
        *,
        precision: Precision | None = None,
        software: str | None = None,
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` (fractional counts below one scale linearly).

        ``interconnect`` ``None`` means PCIe, or NVLink for SXM boards; ``precision`` is the
        precision the GPU runs at (default the workload's; see
        :func:`app.model.compat.effective_precision`);
        ``software`` the suite to predict at (the harness passes a held-out row's). The
        answer's ``precision`` is the one estimated at (:meth:`stand_in_precision`).
        """
        asked = precision or self.w.precision
        prec = self.stand_in_precision(asked, software)
        if interconnect is None and gpu_count > 1 and (gpu.form_factor or "").upper() == "SXM":
            interconnect = Interconnect.NVLINK
        per_gpu, situation, evidence, notes = self.single_gpu(gpu, prec, software)
        if prec != asked:
            notes = (
                *notes,
                f"{asked.value} asked, but this workload was measured at {prec.value} and "
                f"never at {asked.value}: estimated at the measured {prec.value} rate "
                f"({asked.value}'s gain is unmeasured for this workload)",
            )
        n = gpu_count
        eta, multi_model = 1.0, False
        multi_basis: MultiGpuBasis | None = None
        summary: MultiGpuSummary | None = None
        if n > 1:
            link = interconnect
            if link == Interconnect.NVLINK and not gpu.nvlink:
                link = Interconnect.PCIE
                notes = (
                    *notes,
                    f"{gpu.name} has no NVLink: the GPUs are estimated as linked over PCIe",
                )
            best_total, best_model = per_gpu, False
            # no count beats one GPU: the link model said so (measured rows never scale below 1)
            best_basis: MultiGpuBasis = "model"
            # per-GPU speed never rises with the count: the lowest efficiency of any count
            # from 2 to n on the link (8 × A100 NVLink measured 0.904, 16 × 0.941), of the
            # measured counts only where the link grows with the count (an Infinity Fabric
            # mesh adds a link per peer); the total never falls: the best of using 2..n
            grows = link_grows_with_count(gpu, link)
            lowest: tuple[float, bool] = (1.0, False)
            for k in range(2, int(n) + 1):
                here = self._eta_at(gpu, k, link, prec, per_gpu)
                if here[1] or not grows:
                    lowest = min(lowest, here, key=lambda x: x[0])
                e, measured = min(here, lowest, key=lambda x: x[0]) if grows else lowest
                scale = n if k == int(n) else k
                total_k = per_gpu * scale * e
                if total_k >= best_total:
                    best_total, best_model = total_k, not measured
                    best_basis = "measured" if measured else "model"
            total = best_total
            eta = total / (per_gpu * n) if per_gpu > 0 else 1.0
            multi_model, multi_basis = best_model, best_basis
            w_prec = self.w if prec == self.w.precision else replace(self.w, precision=prec)
            summary = multi_gpu_summary(w_prec, gpu, n, link, per_gpu, min(eta, 1.0), cal=self.cal)
        else:
            total = per_gpu * n
        low, high = _range(total, situation, self.cal, multi_gpu_model=multi_model)
        flops = training_flops_per_sample(self.w)
        if flops:
            # the range never reaches past the datasheet peak (unless the estimate itself
            # stands there: a measurement whose FLOPs count is off)
            ceiling = n * flops_peak_tflops(gpu, prec) * 1e12 / flops
            high = max(min(high, ceiling), total)
        used = implied_utilisation(replace(self.w, precision=prec), gpu, prec, total / n)
        mfu, hfu = used if used else (None, None)
        if used:
            notes = (*notes, utilisation_note(used, flops_peak_tflops(gpu, prec), prec))
        return ThroughputEstimate(
            samples_per_s=total,
            samples_per_s_low=low,
            samples_per_s_high=high,
            basis=SITUATION_BASIS[situation],
            multi_gpu_efficiency=min(eta, 1.0),
            evidence=evidence,
            notes=notes,
            situation=situation,
            precision=prec,
            multi_gpu_basis=multi_basis,
            multi_gpu=summary,
            mfu=mfu,
            hfu=hfu,
            stack=self.stack(software, prec).value,
        )


def _held(
    units_per_s: float, donor: Workload, gpu: GpuSpec, precision: Precision, cal: Calibration
) -> float:
    """A donor's predicted rate (its published units/s) under the smooth credible bound of
    :meth:`ThroughputModel._credible`, at the donor's own shape."""
    units = donor.units_per_sample or 1.0
    bound = credible_rate(replace(donor, precision=precision), gpu, precision, cal)
    if bound is None or units_per_s <= 0:
        return units_per_s
    rate, k = units_per_s / units, CREDIBLE_SHARPNESS
    return float(rate / (1.0 + (rate / bound[0]) ** k) ** (1.0 / k) * units)


def _measured_at(rows: Sequence[BenchmarkPoint], precision: Precision) -> bool:
    """Whether ``rows`` hold a measurement that can stand for ``precision``: an fp8 row for
    fp8, a row at any other precision otherwise (:meth:`ThroughputModel._usable`)."""
    fp8 = precision == Precision.FP8
    return any((p.precision == Precision.FP8) == fp8 for p in rows)


def _families(table: FlopsTable) -> dict[tuple[str, str], str]:
    return {k: v[0] for k, v in table.items()}


def estimate_throughput(
    w: Workload,
    gpu: GpuSpec,
    *,
    gpu_count: float = 1,
    interconnect: Interconnect | None = None,
    precision: Precision | None = None,
    software: str | None = None,
    points: Sequence[BenchmarkPoint] = (),
    catalog: Mapping[str, GpuSpec] | None = None,
    reference: Workload | None = None,
    flops_table: FlopsTable | None = None,
    data: PooledData | None = None,
    cal: Calibration | None = None,
) -> ThroughputEstimate:
    """Samples/s of ``gpu_count`` × ``gpu`` for ``w`` with ``cal`` (default: the served
    calibration); see :class:`ThroughputModel`."""
    model = ThroughputModel(
        w,
        points=points,
        catalog={**(catalog or {}), gpu.name: gpu},
        reference=reference,
        flops_table=flops_table,
        data=data,
        cal=cal,
    )
    return model.estimate(gpu, gpu_count, interconnect, precision=precision, software=software)
