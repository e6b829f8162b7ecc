"""The rows of the pooled model (:mod:`app.model.pooled`): a measurement as the regression
sees it (:class:`Obs`), a software level (:class:`Level`), one family's fitted coefficients
(:class:`FamilyFit`), the GPU spec features and rate class a row is fitted with, the suite of a
row, the matmul work per sample, and the GPU a source that does not state the board variant
measured. Pure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.model.flops import matmul_width, peak_tflops, training_flops_per_sample
from app.model.memory import transformer_tokens
from app.model.types import (
    BenchmarkPoint,
    GpuSpec,
    Precision,
    Workload,
)
from app.model.vocabulary import (
    PrecisionClass,
)


def matmul_rows_per_sample(w: Workload) -> float:
    """Matmul work per sample that fills a GPU, for carrying a micro-batch from one network
    to another: tokens × matmul width (:func:`app.model.flops.matmul_width`) for a
    transformer, 1 (samples) otherwise.

    A transformer's matmuls are (tokens × h) by (h × k); a GPU fills its output tiles by the
    product of the first two, so twice the width saturates it at half the tokens. A derived
    workload's micro-batch ``b`` is read as the reference's ``b × this / reference's this``
    on the reference's measured batch curve: Transformer-XL large (384 tokens, width 1,115)
    at micro-batch 4 as base (192 tokens, width 582) at 15.3."""
    if not w.architecture.is_transformer:
        return 1.0
    tokens = float(max(transformer_tokens(w), 1))
    width = matmul_width(w)
    return tokens * width if width else tokens


def batch_work_per_sample(w: Workload) -> float | None:
    """Work one sample puts on the GPU in a batch law carried from one network to another
    (the FLOPs model's b0, :func:`app.model.pooled_fit._overhead_batches` with ``work``):
    :func:`matmul_rows_per_sample` for a transformer; training FLOPs per sample for other
    families (a UNet sample of 2.4 TFLOPs fills a GPU at a micro-batch where ResNet-50's
    25 GFLOPs do not: the law runs in FLOPs per step); ``None`` for a non-transformer without
    a FLOPs count. The fit and the use of b0 both divide by this very count, so b0 has one
    unit (matmul rows, or FLOPs) from the fit to the answer."""
    if w.architecture.is_transformer:
        return matmul_rows_per_sample(w)
    return training_flops_per_sample(w) or None


Group = tuple[str, str]


def unstated_variant(
    label: str, catalog: Mapping[str, GpuSpec], peak_gib: float | None
) -> GpuSpec | None:
    """The GPU a source that does not state the board variant measured, when every variant
    it can be computes alike.

    ``label`` ``"A100 (variant not stated)"``: the catalog models named ``A100 …`` with at
    least the row's peak memory (60 GiB: the two 80GB boards). When they share the
    architecture and every tensor and vector peak (A100 SXM4 and PCIe 80GB: 312 bf16, 156
    TF32, 19.5 FP32 TFLOPS) the row measured that compute whatever the board; the spec is
    theirs with the geometric-mean memory bandwidth (1935 and 2039 GB/s) and the label as its
    name, so a measured row is never credited to one board it may not have run on. ``None``
    when the label names no such set (``V100 32GB``: no model is named ``V100 32GB …``) or
    the variants differ in compute.
    """
    if "variant not stated" not in label:
        return None
    stem = label.split("(")[0].strip()
    if not stem:
        return None
    found = [
        g
        for name, g in sorted(catalog.items())
        if name.startswith(stem + " ") and (peak_gib is None or g.vram_gib >= peak_gib)
    ]
    if not found:
        return None
    first = found[0]
    same = ("architecture", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
            "fp8_tflops", "fp16_fp32acc_tflops", "fp8_fp32acc_tflops")  # fmt: skip
    if any(getattr(g, f) != getattr(first, f) for g in found for f in same):
        return None
    bws = [g.memory_bandwidth_gbs for g in found if g.memory_bandwidth_gbs]
    bw = math.exp(statistics.fmean(math.log(b) for b in bws)) if bws else None
    return replace(
        first,
        name=label,
        memory_bandwidth_gbs=bw,
        vram_gib=min(g.vram_gib for g in found),
    )


def place_unstated_variants(
    points: Sequence[BenchmarkPoint], catalog: Mapping[str, GpuSpec]
) -> tuple[list[BenchmarkPoint], dict[str, GpuSpec]]:
    """``points`` with rows of an unstated board variant (blank ``gpu``) placed on the
    :func:`unstated_variant` spec where there is one, and those specs by name.

    One table of one source ran on one board: the largest peak memory of the label's rows
    in that table (same ``source_ref``) bounds the board's memory for all of them (torchtune's
    Llama 3.2 3B table peaks at 60.0 GiB in one row, so every row ran on an 80GB A100)."""
    peak: dict[tuple[str, str, str], float] = {}
    for p in points:
        if not p.gpu and p.gpu_label and p.peak_memory_gib:
            key = (p.gpu_label, p.source, p.source_ref)
            peak[key] = max(peak.get(key, 0.0), p.peak_memory_gib)
    out: list[BenchmarkPoint] = []
    specs: dict[str, GpuSpec] = {}
    for p in points:
        if not p.gpu and p.gpu_label:
            spec = unstated_variant(
                p.gpu_label, catalog, peak.get((p.gpu_label, p.source, p.source_ref))
            )
            if spec is not None:
                name = f"{spec.name} ≥ {spec.vram_gib:g} GB"
                specs[name] = replace(spec, name=name)
                p = replace(p, gpu=name)
        out.append(p)
    return out, specs


def rate_class(gpu: GpuSpec, p: Precision) -> PrecisionClass:
    """The precision class ``gpu`` really runs ``p`` at: ``16`` only where its 16-bit math is
    faster than its FP32 vector rate. A GPU without 16-bit tensor cores or fast fp16 units
    (GeForce Pascal runs fp16 arithmetic at 1/64 of the fp32 rate, TechPowerUp; the catalog
    lists no 16-bit figure for it) runs mixed precision's matmuls in fp32, so its 16-bit
    rows enter the model as 32-bit rows. fp8 on a GPU with FP8 tensor cores is class ``8``
    (its own free term in the fit, and its residuals never move a 16-bit answer)."""
    if p.is_fp32 or peak_tflops(gpu, p) <= (gpu.fp32_tflops or 1.0) * 1.01:
        return PrecisionClass.FP32
    if p == Precision.FP8 and peak_tflops(gpu, p) > peak_tflops(gpu, Precision.BF16_AMP) * 1.01:
        # FP8 tensor cores: its own class, so fp8 rows never correct a 16-bit answer
        return PrecisionClass.FP8
    return PrecisionClass.HALF


def suite_of(p: BenchmarkPoint) -> str:
    """Software level of a measurement: ``source@framework version``."""
    return f"{p.source}@{p.framework_version or ''}"


def spec_features(gpu: GpuSpec, precision: Precision) -> tuple[float, float, float, float]:
    """(log 16-bit peak, log FP32, log TF32, log bandwidth) as they enter for ``precision``."""
    fp32 = gpu.fp32_tflops or 1.0
    lbw = math.log(gpu.memory_bandwidth_gbs or 100.0)
    if rate_class(gpu, precision) == "32":
        return 0.0, math.log(fp32), math.log(gpu.tf32_tflops or fp32), lbw
    return math.log(peak_tflops(gpu, precision)), 0.0, 0.0, lbw


@dataclass(frozen=True, slots=True)
class Obs:
    """One single-GPU measurement as the regression sees it (``y``: log units/s per GPU)."""

    group: Group
    gpu: str
    arch: str
    source: str
    suite: str
    precision: Precision
    batch: float | None
    y: float
    point: BenchmarkPoint


@dataclass(frozen=True, slots=True)
class Level:
    """A software level to predict at: suite (``source@version``) and its source."""

    source: str
    suite: str


@dataclass
class FamilyFit:
    """Fitted coefficients of one family (see module docstring)."""

    index: dict[tuple[str, ...], int]
    coef: np.ndarray
    centre: np.ndarray
    obs: list[Obs]
    #: (group, GPU) → [(precision class, suite, log residual)] of the GPU's own rows
    residual: dict[tuple[Group, str], list[tuple[str, str, float]]]

    def term(self, *key: str) -> float:
        i = self.index.get(key)
        return float(self.coef[i]) if i is not None else 0.0
