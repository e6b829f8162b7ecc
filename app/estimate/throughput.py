"""Training throughput of a workload on a GPU set: measured, scaled, or from a FLOPs model.

Order of preference (estimation.md §5.2):

1. ``measured``: a published measurement of the same workload (benchmark label and method),
   compatible precision, on the same GPU model. The row whose per-GPU batch is nearest the
   workload's micro-batch is used (median over replicates, newest software first); another
   GPU count goes through the multi-GPU model.
2. ``scaled``: the workload's measurements on other GPUs of one benchmark suite, through the
   calibrated time model of :mod:`app.estimate.scaling` (or the §4.5 blend when fewer than
   four GPUs were measured). A workload that departs from its preset (other size, sequence
   length, method) is scaled from the preset's own rate by the ratio of training FLOPs.
3. ``flops_model``: FLOPs per sample (§4.1) against the median FLOP rate the *other*
   measured workloads reach on this GPU (measured there, or scaled to it by their own time
   models: :mod:`app.estimate.floprate`), else a FLOP-rate regression on peak and bandwidth.

Multi-GPU data parallelism multiplies by the efficiency of :mod:`app.estimate.multigpu`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from app.estimate import fitted
from app.estimate.floprate import FlopRateModel
from app.estimate.memory import transformer_tokens
from app.estimate.multigpu import effective_interconnect, multi_gpu_efficiency
from app.estimate.scaling import (
    F_COMPUTE,
    MIN_GPUS_FOR_FIT,
    TimeModel,
    blend_predict,
    group_key,
    peak_tflops,
)
from app.estimate.types import (
    TRANSFORMER_ARCHITECTURES,
    Architecture,
    Basis,
    BenchmarkPoint,
    Evidence,
    GpuSpec,
    Interconnect,
    Method,
    Precision,
    ThroughputEstimate,
    Workload,
    precision_class,
    version_key,
)

#: (benchmark label, method) → (family, training FLOPs per published throughput unit, FLOPs
#: per sample, params or None), built from the presets; lets the FLOPs model learn achieved
#: FLOP rates from other workloads.
FlopsTable = Mapping[tuple[str, str], tuple[str, float, float, int | None]]

SingleGpu = tuple[float, Basis, tuple[Evidence, ...], tuple[str, ...]]


def family(arch: Architecture) -> str:
    """Throughput family: ``transformer``, ``cnn`` (incl. diffusion UNets) or ``other``."""
    if arch in TRANSFORMER_ARCHITECTURES:
        return "transformer"
    if arch in (Architecture.CNN, Architecture.DIFFUSION_UNET):
        return "cnn"
    return "other"


def flops_peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Peak the FLOPs model measures utilisation against.

    As :func:`peak_tflops`, except fp32 counts at the TF32 rate where the GPU has one:
    cuDNN runs fp32 convolutions as TF32 by default on Ampere and newer, and published
    "fp32" training often is TF32 (benchmarks.md §1).
    """
    if precision == Precision.FP32:
        return peak_tflops(gpu, Precision.TF32)
    return peak_tflops(gpu, precision)


def achieved_flops_prior(gpu: GpuSpec, fam: str, precision: Precision) -> float:
    """FLOP/s a typical ``fam`` workload reaches on ``gpu`` (fitted, no measurement needed).

    ``log(FLOP/s) = a + b·log(peak TFLOPS) + c·log(bandwidth GB/s)`` per family and precision
    class, least squares over every single-GPU measurement with a FLOPs estimate
    (``fitted.FLOPS_RATE_MODEL``): MFU falls as peak grows faster than bandwidth, which a
    flat MFU prior misses (H100 runs ResNet-50 at ~7 % MFU, a V100 at ~20 %). Falls back to
    peak × ``fitted.MFU_PRIOR`` for families without a fit.
    """
    key = f"{fam}|{precision_class(precision)}"
    peak = flops_peak_tflops(gpu, precision)
    coef = fitted.FLOPS_RATE_MODEL.get(key)
    if coef is None:
        return peak * 1e12 * fitted.MFU_PRIOR.get(key, 0.3)
    a, b, c = coef
    bw = gpu.memory_bandwidth_gbs or 1.0
    return math.exp(a + b * math.log(peak) + c * math.log(bw))


def training_flops_per_sample(w: Workload) -> float | None:
    """Training FLOPs per sample (forward + backward), ``None`` when unknown.

    Transformers: per token ``k·N + 12·L·h·s`` (PaLM appendix B: 6N plus attention), with
    k = 6 for full training, 4 for LoRA/QLoRA (no weight gradients of the frozen base, §4.1),
    plus one extra forward (2N + 4·L·h·s) with activation checkpointing. Other families:
    ``3 × forward GFLOPs`` (+1 forward with checkpointing). Without a published forward cost
    a non-transformer has no FLOPs estimate (``6 × params`` would undercount convolutions,
    which reuse each weight at every pixel, by two orders of magnitude).
    """
    if w.architecture in TRANSFORMER_ARCHITECTURES and w.params:
        s = transformer_tokens(w)
        attention = (w.layers or 0) * (w.hidden_size or 0) * s
        k = 4.0 if w.method in (Method.LORA, Method.QLORA) else 6.0
        per_token = k * w.params + 12 * attention
        if w.gradient_checkpointing:
            per_token += 2 * w.params + 4 * attention
        return per_token * s
    if w.forward_gflops_per_sample:
        passes = 4.0 if w.gradient_checkpointing else 3.0
        return passes * w.forward_gflops_per_sample * 1e9
    return None


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


def _method_matches(w: Workload, p: BenchmarkPoint) -> bool:
    method = w.benchmark_method or ("full" if w.method == Method.FULL else w.method.value)
    return p.method == method or (method == "full" and p.method == "pretrain")


def relevant_points(w: Workload, points: Sequence[BenchmarkPoint]) -> list[BenchmarkPoint]:
    """Measurements that stand for ``w``: its benchmark labels and method, usable precision."""
    if not w.benchmark_workloads:
        return []
    labels = set(w.benchmark_workloads)
    return [
        p
        for p in points
        if p.workload in labels
        and not p.suspect
        and p.gpu
        and _method_matches(w, p)
        and precision_compatible(w.precision, p.precision) is not None
    ]


def _batch_distance(p: BenchmarkPoint, micro_batch: int) -> float:
    if not p.batch_size_per_gpu:
        return 10.0
    return abs(math.log(p.batch_size_per_gpu / micro_batch))


def best_rows(w: Workload, rows: Sequence[BenchmarkPoint]) -> list[BenchmarkPoint]:
    """Rows of the best precision match, then nearest batch, then newest software."""
    prec = min(precision_compatible(w.precision, p.precision) or 0 for p in rows)
    out = [p for p in rows if (precision_compatible(w.precision, p.precision) or 0) == prec]
    dist = min(_batch_distance(p, w.micro_batch_size) for p in out)
    out = [p for p in out if _batch_distance(p, w.micro_batch_size) <= dist + 1e-9]
    newest = max(version_key(p) for p in out)
    return [p for p in out if version_key(p) >= newest - 1e-9]


def _range(value: float, basis: Basis, multi_gpu_model: bool = False) -> tuple[float, float]:
    """Low–high range: the basis's cross-validated 10th-90th percentile of actual ÷ predicted,
    times the multi-GPU model's when the GPU count was not itself measured."""
    low, high = fitted.RANGE_FACTORS[basis.value]
    if multi_gpu_model:
        m_low, m_high = fitted.MULTI_GPU_RANGE
        low, high = low * m_low, high * m_high
    return value * low, value * high


class ThroughputModel:
    """Throughput estimates of one workload on any GPU set, memoised per GPU model.

    Build one per request (the rank service asks for thousands of offers); the measurements
    relevant to the workload are selected and the time models fitted once. Pure: no I/O.

    Args:
        w: the workload (``w.matches_preset`` says whether measurements apply as is).
        points: measured benchmarks (any workloads; filtered here).
        catalog: GPU specs by name, for scaling measurements from other GPUs.
        reference: the preset ``w`` was derived from, when ``w`` departs from it.
        flops_table: benchmark label → (family, FLOPs per unit) for the FLOPs model.
        flop_rates: a prebuilt :class:`FlopRateModel` of the same points (a cache).
    """

    def __init__(
        self,
        w: Workload,
        *,
        points: Sequence[BenchmarkPoint] = (),
        catalog: Mapping[str, GpuSpec] | None = None,
        reference: Workload | None = None,
        flops_table: FlopsTable | None = None,
        flop_rates: FlopRateModel | None = None,
    ):
        self.w = w
        self._flop_rates = flop_rates
        self.catalog = catalog or {}
        self.flops_table = flops_table or {}
        self.points = points
        self.reference = (
            reference
            if (not w.matches_preset and reference is not None and reference.benchmark_workloads)
            else None
        )
        self.base = self.reference or w
        self.relevant = self._with_single_gpu_rates(relevant_points(self.base, points))
        self._single: dict[str, SingleGpu] = {}
        self._time_models: list[tuple[TimeModel, list[BenchmarkPoint]]] | None = None

    def _with_single_gpu_rates(self, rows: list[BenchmarkPoint]) -> list[BenchmarkPoint]:
        """Add a single-GPU rate for GPUs measured only in multi-GPU runs.

        The per-GPU throughput of the run divided by the multi-GPU model's efficiency at its
        GPU count (e.g. torchtitan's Llama pre-training, measured on 8-512 GPUs). The
        synthetic row keeps the id and source of the measurement it comes from.
        """
        single = {p.gpu for p in rows if p.gpu_count == 1}
        extra = []
        by_gpu: dict[str, list[BenchmarkPoint]] = {}
        for p in rows:
            if p.gpu_count > 1 and p.gpu not in single and p.gpu in self.catalog:
                by_gpu.setdefault(p.gpu, []).append(p)
        w = self.base
        for name, multi in by_gpu.items():
            fewest = min(p.gpu_count for p in multi)
            for p in (x for x in multi if x.gpu_count == fewest):
                gpu = self.catalog[name]
                link = Interconnect.NVLINK if p.interconnect == "nvlink" else Interconnect.PCIE
                per_gpu = point_samples_per_s(p, w.units_per_sample)
                eta = multi_gpu_efficiency(
                    w, gpu, p.gpu_count, link, per_gpu, micro_batch=p.batch_size_per_gpu
                )
                extra.append(
                    replace(p, gpu_count=1, throughput_total=p.throughput_total / p.gpu_count / eta)
                )
        return rows + extra

    def can_estimate(self) -> bool:
        """False when there is neither a usable measurement nor a FLOPs estimate."""
        return bool(self.relevant) or training_flops_per_sample(self.w) is not None

    # -- measured and scaled -------------------------------------------------------------
    def _groups(self) -> list[tuple[TimeModel, list[BenchmarkPoint]]]:
        """Time models of the usable suites, best first (precision match, newest software)."""
        if self._time_models is not None:
            return self._time_models
        w = self.base
        groups: dict[tuple[str, str, str, str], list[BenchmarkPoint]] = {}
        for p in self.relevant:
            if p.gpu_count == 1 and p.gpu in self.catalog:
                groups.setdefault(group_key(p), []).append(p)
        fitted_groups = []
        for rows in groups.values():
            if len({p.gpu for p in rows}) < MIN_GPUS_FOR_FIT:
                continue
            data = [
                (
                    self.catalog[p.gpu],
                    float(p.batch_size_per_gpu or 0) or None,
                    point_samples_per_s(p, w.units_per_sample),
                )
                for p in rows
            ]
            fitted_groups.append((TimeModel(data, rows[0].precision), rows))

        def rank(item: tuple[TimeModel, list[BenchmarkPoint]]) -> tuple[int, float, int]:
            model, rows = item
            prec = precision_compatible(w.precision, rows[0].precision) or 0
            newest = statistics.median(version_key(p) for p in rows)
            return (prec, -newest, -model.n_gpus)

        self._time_models = sorted(fitted_groups, key=rank)
        return self._time_models

    def _measured_or_scaled(self, gpu: GpuSpec) -> SingleGpu | None:
        w = self.base
        units = w.units_per_sample
        one_gpu = [p for p in self.relevant if p.gpu_count == 1]
        same = [p for p in one_gpu if p.gpu == gpu.name]
        if same:
            rows = best_rows(w, same)
            rate = statistics.median(point_samples_per_s(p, units) for p in rows)
            notes = []
            bs = rows[0].batch_size_per_gpu
            if bs and bs != w.micro_batch_size:
                notes.append(f"measured at micro-batch {bs} per GPU; yours is {w.micro_batch_size}")
            return rate, Basis.MEASURED, tuple(_evidence(p, units) for p in rows), tuple(notes)
        for model, rows in self._groups():
            scaled = model.samples_per_s(gpu, w.micro_batch_size)
            if scaled:
                note = (
                    f"scaled from {model.n_gpus} GPUs measured in {rows[0].source} by the "
                    "calibrated time model (peak, bandwidth, batch)"
                )
                return scaled, Basis.SCALED, tuple(_evidence(p, units) for p in rows), (note,)
        refs: dict[str, list[BenchmarkPoint]] = {}
        for p in one_gpu:
            if p.gpu in self.catalog:
                refs.setdefault(p.gpu, []).append(p)
        if refs:
            pairs, used = [], []
            prec = None
            for name, rows in refs.items():
                best = best_rows(w, rows)
                prec = best[0].precision
                pairs.append(
                    (
                        self.catalog[name],
                        statistics.median(point_samples_per_s(p, units) for p in best),
                    )
                )
                used.extend(best)
            rate = blend_predict(pairs, gpu, prec or w.precision, F_COMPUTE[family(w.architecture)])
            note = f"scaled from {len(refs)} GPU model(s) by the compute/bandwidth blend"
            return rate, Basis.SCALED, tuple(_evidence(p, units) for p in used), (note,)
        return None

    # -- FLOPs model -----------------------------------------------------------------------
    def flop_rates(self) -> FlopRateModel:
        """The achieved-FLOP-rate model (built on first use unless one was passed in)."""
        if self._flop_rates is None:
            self._flop_rates = FlopRateModel(self.points, self.catalog, self.flops_table)
        return self._flop_rates

    def flops_rate(self, w: Workload, gpu: GpuSpec) -> SingleGpu:
        """Per-GPU samples/s from FLOPs per sample (``flops_model`` basis)."""
        flops = training_flops_per_sample(w)
        fam = family(w.architecture)
        if not flops:
            return 0.0, Basis.FLOPS_MODEL, (), ("no FLOPs per sample for this workload",)
        achieved = self.flop_rates().achieved(gpu, w.precision, frozenset(w.benchmark_workloads))
        if achieved is not None:
            rate_flops, used, labels = achieved
            note = (
                f"FLOPs model: {rate_flops / 1e12:.1f} TFLOP/s, the median FLOP rate of "
                f"{len(labels)} measured workloads on this GPU (measured or scaled): "
                f"{', '.join(labels)}"
            )
            evidence = tuple(_evidence(p, None) for p in used)
        else:
            rate_flops = achieved_flops_prior(gpu, fam, w.precision)
            peak = flops_peak_tflops(gpu, w.precision) * 1e12
            note = (
                f"FLOPs model: no measurement on this GPU; fitted {fam} FLOP rate "
                f"{rate_flops / 1e12:.1f} TFLOP/s (MFU {rate_flops / peak:.2f})"
            )
            evidence = ()
        rate = rate_flops / flops
        if w.method == Method.QLORA:
            rate /= fitted.QLORA_SLOWDOWN
        return rate, Basis.FLOPS_MODEL, evidence, (note,)

    # -- composition ------------------------------------------------------------------------
    def single_gpu(self, gpu: GpuSpec) -> SingleGpu:
        """Per-GPU samples/s on one ``gpu`` with basis, evidence and notes (memoised)."""
        hit = self._single.get(gpu.name)
        if hit is not None:
            return hit
        w = self.w
        base = self._measured_or_scaled(gpu)
        if base is None:
            result = self.flops_rate(w, gpu)
        elif self.reference is not None:
            rate, basis, evidence, notes = base
            ref_flops = training_flops_per_sample(self.reference)
            own_flops = training_flops_per_sample(w)
            if ref_flops and own_flops:
                ratio = ref_flops / own_flops
                if w.method == Method.QLORA and self.reference.method != Method.QLORA:
                    ratio /= fitted.QLORA_SLOWDOWN
                result = (
                    rate * ratio,
                    Basis.SCALED,
                    evidence,
                    (
                        f"scaled from the preset's {basis.value} rate by training FLOPs per "
                        f"sample (×{ratio:.3g})",
                        *notes,
                    ),
                )
            else:
                result = (
                    rate,
                    Basis.SCALED,
                    evidence,
                    (
                        "your changes to the preset could not be scaled (no FLOPs estimate for "
                        f"this architecture): the preset's {basis.value} rate is used as is",
                        *notes,
                    ),
                )
        else:
            result = base
        self._single[gpu.name] = result
        return result

    def estimate(
        self, gpu: GpuSpec, gpu_count: float = 1, interconnect: Interconnect | None = None
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` (fractional counts scale linearly).

        ``interconnect`` ``None`` means PCIe, or NVLink for SXM boards
        (:func:`app.estimate.multigpu.effective_interconnect`).
        """
        w = self.w
        interconnect = effective_interconnect(gpu, interconnect)
        per_gpu, basis, evidence, notes = self.single_gpu(gpu)
        n = gpu_count
        if n > 1 and basis == Basis.MEASURED and self.reference is None:
            multi = [
                p
                for p in self.relevant
                if p.gpu == gpu.name
                and p.gpu_count == int(n)
                and (interconnect is None or (p.interconnect or "pcie") == interconnect.value)
            ]
            if multi:
                rows = best_rows(w, multi)
                total = statistics.median(
                    point_samples_per_s(p, w.units_per_sample) * p.gpu_count for p in rows
                )
                eta = total / (per_gpu * n) if per_gpu > 0 else 1.0
                low, high = _range(total, basis)
                return ThroughputEstimate(
                    samples_per_s=total,
                    samples_per_s_low=low,
                    samples_per_s_high=high,
                    basis=basis,
                    multi_gpu_efficiency=min(eta, 1.0),
                    evidence=tuple(_evidence(p, w.units_per_sample) for p in rows),
                    notes=notes,
                )
        eta = multi_gpu_efficiency(w, gpu, n, interconnect, per_gpu) if n > 1 else 1.0
        total = per_gpu * n * eta
        low, high = _range(total, basis, multi_gpu_model=n > 1)
        return ThroughputEstimate(
            samples_per_s=total,
            samples_per_s_low=low,
            samples_per_s_high=high,
            basis=basis,
            multi_gpu_efficiency=eta,
            evidence=evidence,
            notes=notes,
        )


def estimate_throughput(
    w: Workload,
    gpu: GpuSpec,
    *,
    gpu_count: float = 1,
    interconnect: Interconnect | None = None,
    points: Sequence[BenchmarkPoint] = (),
    catalog: Mapping[str, GpuSpec] | None = None,
    reference: Workload | None = None,
    flops_table: FlopsTable | None = None,
) -> ThroughputEstimate:
    """Samples/s of ``gpu_count`` × ``gpu`` for ``w``; see :class:`ThroughputModel`."""
    model = ThroughputModel(
        w, points=points, catalog=catalog, reference=reference, flops_table=flops_table
    )
    return model.estimate(gpu, gpu_count, interconnect)
