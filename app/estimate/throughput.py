"""Training throughput of a workload on a GPU set: measured, scaled, or from a FLOPs model.

Order of preference (estimation.md §5.2):

1. ``measured``: a published measurement of the same workload (benchmark label and method),
   compatible precision, on the same GPU model. The row whose per-GPU batch is nearest the
   workload's micro-batch is used (median over replicates); a different GPU count goes through
   the multi-GPU model below.
2. ``scaled``: measurements of the same workload on other GPUs, each scaled to the target by
   the blended roofline of §4.5, ``t_B/t_A = f_c·Peak_A/Peak_B + (1-f_c)·BW_A/BW_B``, combined
   by a weighted geometric mean (nearer GPUs weigh more). A workload that departs from its
   preset (other size, sequence length, method) is scaled from the preset's own estimate by the
   ratio of training FLOPs per sample.
3. ``flops_model``: ``samples/s = Peak · MFU / FLOPs_per_sample`` (§4.1-4.2) with an MFU prior
   per architecture family.

Multi-GPU data parallelism multiplies by an efficiency from a ring all-reduce model (§4.6).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from app.estimate import fitted
from app.estimate.memory import lora_trainable_params, transformer_tokens
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
    Sharding,
    ThroughputEstimate,
    Workload,
)

#: Fraction of step time that is compute-bound, by family (estimation.md §4.5: transformers
#: fit f_c ≈ 0.3, CNNs ≈ 0.2).
F_COMPUTE = {"transformer": 0.3, "cnn": 0.2, "other": 0.25}

#: NCCL all-reduce bus bandwidth reaches ~80 % of the link's per-direction spec (§4.6:
#: nccl-tests 235 of 300 GB/s on A100 NVLink, H200 396/450).
LINK_EFFICIENCY = 0.8

#: PCIe x16 per-direction bandwidth in GB/s by generation (§4.6, Stas network chapter).
PCIE_GBS = {3: 15.75, 4: 31.5, 5: 63.0}

#: DDP overlaps the gradient all-reduce with the backward pass (bucketed); we assume the
#: backward (~2/3 of a step, since backward ≈ 2 × forward FLOPs) can hide communication.
COMM_OVERLAP = 2.0 / 3.0


def family(arch: Architecture) -> str:
    """Throughput family used for the compute/bandwidth blend."""
    if arch in TRANSFORMER_ARCHITECTURES:
        return "transformer"
    if arch in (Architecture.CNN, Architecture.DIFFUSION_UNET):
        return "cnn"
    return "other"


def peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Dense peak TFLOPS the training math runs at for ``precision``.

    Mixed precision uses the FP32-accumulate tensor rate (half rate on GeForce);
    ``tf32`` the TF32 tensor rate (fp32 where the GPU has none); ``fp8`` the FP8
    FP32-accumulate rate (bf16 where the GPU has no FP8). Falls back to FP32 vector TFLOPS
    on GPUs without tensor cores.
    """
    fp32 = gpu.fp32_tflops or 1.0
    if precision == Precision.FP32:
        return fp32
    if precision == Precision.TF32:
        return gpu.tf32_tflops or fp32
    half = gpu.fp16_fp32acc_tflops or gpu.bf16_tflops or gpu.fp16_tflops
    if precision == Precision.FP16_AMP:
        return half or fp32
    bf16 = gpu.bf16_tflops or (half if gpu.architecture not in ("Volta", "Turing") else None)
    if precision in (Precision.BF16_AMP, Precision.BF16):
        return bf16 or half or fp32
    return gpu.fp8_fp32acc_tflops or gpu.fp8_tflops or bf16 or half or fp32


def training_flops_per_sample(w: Workload) -> float:
    """Training FLOPs per sample (forward + backward).

    Transformers: per token ``k·N + 12·L·h·s`` (PaLM appendix B: 6N plus attention), with
    k = 6 for full training, 4 for LoRA/QLoRA (no weight gradients of the frozen base, §4.1),
    plus one extra forward (2N + 4·L·h·s) with activation checkpointing. Other families:
    ``3 × forward GFLOPs`` (+1 forward with checkpointing); without a published forward cost,
    ``6 × params`` per sample.
    """
    if w.architecture in TRANSFORMER_ARCHITECTURES:
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
    return 6.0 * w.params


def blend_speedup(a: GpuSpec, b: GpuSpec, precision: Precision, f_c: float) -> float:
    """Speed of GPU ``b`` relative to ``a`` (>1: b is faster), estimation.md §4.5."""
    peak_ratio = peak_tflops(a, precision) / peak_tflops(b, precision)
    bw_a, bw_b = a.memory_bandwidth_gbs, b.memory_bandwidth_gbs
    bw_ratio = (bw_a / bw_b) if bw_a and bw_b else peak_ratio
    return 1.0 / (f_c * peak_ratio + (1.0 - f_c) * bw_ratio)


def pcie_generation(gpu: GpuSpec) -> int:
    """PCIe generation by GPU architecture (Hopper/Blackwell 5, Ampere/Ada/CDNA 4, older 3)."""
    arch = gpu.architecture.lower()
    if arch in ("hopper", "blackwell"):
        return 5
    if arch in ("ampere", "ada lovelace", "cdna 2", "cdna 3", "rdna 3"):
        return 4
    return 3


def link_bytes_per_s(gpu: GpuSpec, interconnect: Interconnect | None) -> float:
    """Achievable all-reduce bus bandwidth per GPU and direction, bytes/s.

    NVLink: half the catalog's bidirectional per-GPU figure; PCIe: x16 of the GPU's
    generation, halved for GeForce cards, which lack peer-to-peer and route through the host
    (§4.6, tinygrad/open-gpu-kernel-modules#17). Both × LINK_EFFICIENCY.
    """
    if interconnect == Interconnect.NVLINK and gpu.nvlink and gpu.nvlink_bandwidth_gbs:
        return gpu.nvlink_bandwidth_gbs / 2 * 1e9 * LINK_EFFICIENCY
    gbs = PCIE_GBS[pcie_generation(gpu)]
    if gpu.market == "consumer":
        gbs /= 2
    return gbs * 1e9 * LINK_EFFICIENCY


def gradient_bytes(w: Workload) -> float:
    """Bytes all-reduced per optimizer step: trainable params × gradient bytes.

    ZeRO-3/FSDP move 1.5× the DDP volume (reduce-scatter + all-gathers, ZeRO paper §7).
    """
    trainable = (
        lora_trainable_params(w) if w.method in (Method.LORA, Method.QLORA) else w.params
    )
    per_param = 2.0 if w.precision == Precision.BF16 or w.sharding != Sharding.NONE else 4.0
    volume = trainable * per_param
    if w.sharding in (Sharding.ZERO3, Sharding.FSDP):
        volume *= 1.5
    return volume


def multi_gpu_efficiency(
    w: Workload,
    gpu: GpuSpec,
    gpu_count: float,
    interconnect: Interconnect | None,
    per_gpu_samples_per_s: float,
) -> float:
    """Data-parallel scaling efficiency η in (0, 1] (1 for one GPU).

    Ring all-reduce moves ``2(n-1)/n × gradient bytes`` per GPU per optimizer step (§4.6);
    up to COMM_OVERLAP of the step's compute time hides it; the rest is exposed:
    ``η = t_step / (t_step + max(0, t_comm - overlap·t_step))``.
    """
    n = int(gpu_count)
    if n <= 1 or per_gpu_samples_per_s <= 0:
        return 1.0
    t_comm = 2 * (n - 1) / n * gradient_bytes(w) / link_bytes_per_s(gpu, interconnect)
    t_step = w.micro_batch_size * w.grad_accum_steps / per_gpu_samples_per_s
    exposed = max(0.0, t_comm - COMM_OVERLAP * t_step)
    return t_step / (t_step + exposed)


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


def _version_key(p: BenchmarkPoint) -> float:
    try:
        major, minor = (p.framework_version or "0.0").split(".")[:2]
        return float(major) + float(minor) / 100
    except ValueError:
        return 0.0


def _evidence(p: BenchmarkPoint, units: float | None) -> Evidence:
    return Evidence(
        benchmark_id=p.id, gpu=p.gpu, gpu_count=p.gpu_count, workload=p.workload,
        precision=p.precision.value, batch_size_per_gpu=p.batch_size_per_gpu,
        samples_per_s=point_samples_per_s(p, units) * p.gpu_count,
        source=p.source, source_ref=p.source_ref,
    )


def relevant_points(w: Workload, points: Sequence[BenchmarkPoint]) -> list[BenchmarkPoint]:
    """Measurements that stand for ``w``: its benchmark labels and method, usable precision."""
    if not w.benchmark_workloads:
        return []
    labels = set(w.benchmark_workloads)
    method = w.benchmark_method or ("full" if w.method == Method.FULL else w.method.value)
    out = []
    for p in points:
        if p.workload not in labels or p.suspect or not p.gpu:
            continue
        if p.method != method and not (method == "full" and p.method == "pretrain"):
            continue
        if precision_compatible(w.precision, p.precision) is None:
            continue
        out.append(p)
    return out


def _batch_distance(p: BenchmarkPoint, micro_batch: int) -> float:
    if not p.batch_size_per_gpu:
        return 10.0
    return abs(math.log(p.batch_size_per_gpu / micro_batch))


def _best_rows(w: Workload, rows: list[BenchmarkPoint]) -> list[BenchmarkPoint]:
    """Rows of the best precision match, then nearest batch, then newest software."""
    best_prec = min(precision_compatible(w.precision, p.precision) or 0 for p in rows)
    rows = [p for p in rows if (precision_compatible(w.precision, p.precision) or 0) == best_prec]
    best_dist = min(_batch_distance(p, w.micro_batch_size) for p in rows)
    rows = [p for p in rows if _batch_distance(p, w.micro_batch_size) <= best_dist + 1e-9]
    newest = max(_version_key(p) for p in rows)
    return [p for p in rows if _version_key(p) >= newest - 1e-9]


def _range(value: float, basis: Basis, widen: float = 1.0) -> tuple[float, float]:
    low, high = fitted.RANGE_FACTORS[basis.value]
    if widen != 1.0:
        low, high = low ** widen, high ** widen
    return value * low, value * high


def estimate_single_gpu(
    w: Workload,
    gpu: GpuSpec,
    points: Sequence[BenchmarkPoint],
    catalog: dict[str, GpuSpec],
) -> tuple[float, Basis, tuple[Evidence, ...], tuple[str, ...]]:
    """Per-GPU samples/s of ``w`` on one ``gpu`` (no multi-GPU effects), with its basis.

    ``points`` may be all measurements; only those relevant to ``w`` are used.
    """
    return _single_gpu(w, gpu, relevant_points(w, points), catalog)


def _single_gpu(
    w: Workload,
    gpu: GpuSpec,
    rel: Sequence[BenchmarkPoint],
    catalog: dict[str, GpuSpec],
) -> tuple[float, Basis, tuple[Evidence, ...], tuple[str, ...]]:
    units = w.units_per_sample
    one_gpu = [p for p in rel if p.gpu_count == 1]
    same = [p for p in one_gpu if p.gpu == gpu.name]
    if same:
        rows = _best_rows(w, same)
        rate = statistics.median(point_samples_per_s(p, units) for p in rows)
        notes = []
        bs = rows[0].batch_size_per_gpu
        if bs and bs != w.micro_batch_size:
            notes.append(f"measured at micro-batch {bs} per GPU; yours is {w.micro_batch_size}")
        return rate, Basis.MEASURED, tuple(_evidence(p, units) for p in rows), tuple(notes)

    others: dict[str, list[BenchmarkPoint]] = {}
    for p in one_gpu:
        if p.gpu in catalog:
            others.setdefault(p.gpu, []).append(p)
    if others:
        f_c = F_COMPUTE[family(w.architecture)]
        logs, weights, used = [], [], []
        for name, rows in others.items():
            ref = catalog[name]
            best = _best_rows(w, rows)
            rate_a = statistics.median(point_samples_per_s(p, units) for p in best)
            prec = best[0].precision
            speed = blend_speedup(ref, gpu, prec, f_c)
            distance = abs(math.log(peak_tflops(ref, prec) / peak_tflops(gpu, prec)))
            if ref.memory_bandwidth_gbs and gpu.memory_bandwidth_gbs:
                distance += abs(math.log(ref.memory_bandwidth_gbs / gpu.memory_bandwidth_gbs))
            weight = 1.0 / (0.1 + distance) * (2.0 if ref.architecture == gpu.architecture else 1.0)
            logs.append(math.log(rate_a * speed))
            weights.append(weight)
            used.extend(best)
        rate = math.exp(sum(lg * wt for lg, wt in zip(logs, weights, strict=True)) / sum(weights))
        note = f"scaled from measurements on {len(others)} other GPU model(s) by spec ratios"
        return rate, Basis.SCALED, tuple(_evidence(p, units) for p in used), (note,)

    return flops_model_rate(w, gpu), Basis.FLOPS_MODEL, (), (
        f"no measurement of this workload; FLOPs model with MFU prior "
        f"{fitted.MFU_PRIOR.get(family(w.architecture), 0.3):.2f}",
    )


def flops_model_rate(w: Workload, gpu: GpuSpec) -> float:
    """Per-GPU samples/s from FLOPs per sample and the family's MFU prior (§4.2, §4.4)."""
    mfu = fitted.MFU_PRIOR.get(family(w.architecture), 0.3)
    rate = peak_tflops(gpu, w.precision) * 1e12 * mfu / training_flops_per_sample(w)
    if w.method == Method.QLORA:
        rate /= fitted.QLORA_SLOWDOWN
    return rate


class ThroughputModel:
    """Throughput estimates of one workload on any GPU set, memoised per GPU model.

    Build one per request (the rank service asks for thousands of offers); the measurements
    relevant to the workload are selected once. Pure: no I/O, results depend only on inputs.

    Args:
        w: the workload (``w.matches_preset`` says whether measurements apply as is).
        points: measured benchmarks (any workloads; filtered here).
        catalog: GPU specs by name, for scaling measurements from other GPUs.
        reference: the preset ``w`` was derived from, when ``w`` departs from it.
    """

    def __init__(
        self,
        w: Workload,
        *,
        points: Sequence[BenchmarkPoint] = (),
        catalog: dict[str, GpuSpec] | None = None,
        reference: Workload | None = None,
    ):
        self.w = w
        self.catalog = catalog or {}
        self.reference = reference if (not w.matches_preset and reference is not None
                                       and reference.benchmark_workloads) else None
        self.relevant = relevant_points(w, points)
        self.reference_relevant = (
            relevant_points(self.reference, points) if self.reference is not None else []
        )
        self._single: dict[str, tuple[float, Basis, tuple[Evidence, ...], tuple[str, ...]]] = {}

    def single_gpu(self, gpu: GpuSpec) -> tuple[float, Basis, tuple[Evidence, ...],
                                                  tuple[str, ...]]:
        """Per-GPU samples/s on one ``gpu`` with basis, evidence and notes (memoised)."""
        hit = self._single.get(gpu.name)
        if hit is not None:
            return hit
        w = self.w
        if self.reference is not None:
            ref_rate, ref_basis, evidence, ref_notes = _single_gpu(
                self.reference, gpu, self.reference_relevant, self.catalog
            )
            ratio = training_flops_per_sample(self.reference) / training_flops_per_sample(w)
            if w.method == Method.QLORA and self.reference.method != Method.QLORA:
                ratio /= fitted.QLORA_SLOWDOWN
            notes = (
                f"scaled from the preset's {ref_basis.value} rate by training FLOPs per sample "
                f"(×{ratio:.3g})",
                *ref_notes,
            )
            result = (ref_rate * ratio, Basis.SCALED, evidence, notes)
        else:
            result = _single_gpu(w, gpu, self.relevant, self.catalog)
        self._single[gpu.name] = result
        return result

    def estimate(
        self, gpu: GpuSpec, gpu_count: float = 1, interconnect: Interconnect | None = None
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` (fractional counts scale linearly).

        ``interconnect`` ``None`` means PCIe, or NVLink for SXM boards.
        """
        w = self.w
        if interconnect is None and gpu_count > 1 and (gpu.form_factor or "").upper() == "SXM":
            interconnect = Interconnect.NVLINK
        per_gpu, basis, evidence, notes = self.single_gpu(gpu)
        n = gpu_count
        if n > 1 and basis == Basis.MEASURED and self.reference is None:
            multi = [
                p for p in self.relevant
                if p.gpu == gpu.name and p.gpu_count == int(n)
                and (interconnect is None or (p.interconnect or "pcie") == interconnect.value)
            ]
            if multi:
                rows = _best_rows(w, multi)
                total = statistics.median(
                    point_samples_per_s(p, w.units_per_sample) * p.gpu_count for p in rows
                )
                eta = total / (per_gpu * n) if per_gpu > 0 else 1.0
                low, high = _range(total, basis)
                return ThroughputEstimate(
                    samples_per_s=total, samples_per_s_low=low, samples_per_s_high=high,
                    basis=basis, multi_gpu_efficiency=min(eta, 1.0),
                    evidence=tuple(_evidence(p, w.units_per_sample) for p in rows), notes=notes,
                )
        eta = multi_gpu_efficiency(w, gpu, n, interconnect, per_gpu) if n > 1 else 1.0
        total = per_gpu * n * eta
        low, high = _range(total, basis, 1.5 if n > 1 else 1.0)
        return ThroughputEstimate(
            samples_per_s=total, samples_per_s_low=low, samples_per_s_high=high, basis=basis,
            multi_gpu_efficiency=eta, evidence=evidence, notes=notes,
        )


def estimate_throughput(
    w: Workload,
    gpu: GpuSpec,
    *,
    gpu_count: float = 1,
    interconnect: Interconnect | None = None,
    points: Sequence[BenchmarkPoint] = (),
    catalog: dict[str, GpuSpec] | None = None,
    reference: Workload | None = None,
) -> ThroughputEstimate:
    """Samples/s of ``gpu_count`` × ``gpu`` for ``w``; see :class:`ThroughputModel`."""
    model = ThroughputModel(w, points=points, catalog=catalog, reference=reference)
    return model.estimate(gpu, gpu_count, interconnect)
