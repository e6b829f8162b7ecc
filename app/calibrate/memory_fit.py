"""Fit and leave-one-source-out validation of the memory model on ``memory_cases.csv``.

Each published case (``seed_data/memory_cases.csv``) is predicted through the same core the
API serves (:func:`app.model.memory.peak_memory_bytes` / :func:`estimate_memory`), in the
metric its source reports:

* ``alloc`` / ``active``: bytes allocated (``torch.cuda.max_memory_allocated``);
* ``reserved``: allocated × allocator slack;
* ``smi``: reserved + CUDA context (+ NCCL);
* ``outcome``: only fits / OOM is known.

:func:`fit_params` fits the constants of :class:`MemoryParams` that the sources do not pin
down: loss-side bytes per logit element with a chunked loss (the unfused figure stays at
its source's 6 B), LoRA's activation factor and the QLoRA overhead, by coordinate descent on
the median |log(predicted / observed)| of the cases with a number that each constant moves
by more than 5 %; then the logistic OOM probability in log(peak / usable VRAM) by maximum
class-balanced likelihood (robust to a 2 % share of wrong labels, weak prior of the boundary
at the usable VRAM) on every case with a known GPU size (a case with a number fitted on that
GPU, so it fits). :func:`leave_one_source_out` refits without each ``source_group``
and predicts the held-out group. Out-of-scope rows (``scope`` = ``out: …``) and rows held for
review (``review: …``) are neither fitted nor in the headline; they are reported separately.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace

from app.calibrate.dataset import Dataset
from app.calibrate.validate import case_workload
from app.model.calibration import Calibration, load_calibration
from app.model.memory import (
    GIB,
    SLACK,
    MemoryBreakdown,
    MemoryParams,
    estimate_memory,
    peak_memory_bytes,
    usable_vram_gib,
)
from app.model.types import Architecture, Method, OomRisk, Sharding, VisionTask, Workload

#: The served calibration: its throughput section gives the vision priors, its memory
#: section is what ``tools/fit_memory.py`` compares a refit with.
SERVED = load_calibration()

#: Priors (sources in MemoryParams' docstring); the fit starts here.
PRIOR = MemoryParams(
    unfused_logit_bytes=8.0,
    chunked_logit_bytes=4.0,
    lora_activation_factor=23.0 / 28.0,
    qlora_overhead=0.06,
    qlora_overhead_torchao=0.0,
    oom_center=0.0,
    oom_scale=0.05,
    cnn_activation_bytes_per_gflop=float(SERVED.cnn_activation_bytes_per_gflop),
    detection_activation_bytes_per_gflop=float(SERVED.cnn_activation_bytes_per_gflop),
    diffusion_activation_bytes_per_gflop=float(SERVED.cnn_activation_bytes_per_gflop),
    cnn_activation_bytes_per_element=float(SERVED.cnn_activation_bytes_per_element),
)

#: Bytes-per-GFLOP grid of the vision/diffusion activation constants: the ResNet-50 prior
#: × 2^(k/10), k = -30 … 30 (1/8 … 8 × the prior in 7 % steps).
_PER_GFLOP_GRID = [
    round(SERVED.cnn_activation_bytes_per_gflop * 2 ** (k / 10)) * 1.0 for k in range(-30, 31)
]

#: Search grids of the fitted constants (physically plausible ranges).
GRIDS: dict[str, list[float]] = {
    # unfused_logit_bytes is not fitted: only universal-llm-trainer (C-6) runs a long context
    # with a 128k vocabulary unfused, so a fit elsewhere would absorb unrelated errors; it
    # stays at its count, 4 logit-sized 16-bit tensors alive when backward starts (8 B).
    # chunked_logit_bytes is not fitted either: it is a count, 4 B a 16-bit logit (see
    # MemoryParams). On the 0…4 grid the fit sat on 4 (the top edge); widened to 0…8 it
    # went to 5.5, pulled by LitGPT LoRA/QLoRA rows that are under by 3-15 % at every value
    # (L-1…L-4 at micro-batch 1, where the logits are small: a miss elsewhere) while
    # torchtune's LoRA/QLoRA rows go further over; a fitted value would absorb those misses
    "lora_activation_factor": [0.4 + 0.02 * i for i in range(31)],  # 0.4 … 1.0
    "qlora_overhead": [0.02 * i for i in range(51)],  # 0 … 1.0
    "qlora_overhead_torchao": [0.02 * i for i in range(51)],
    # one activation constant per vision/diffusion family, each fitted on its own cases
    "cnn_activation_bytes_per_gflop": _PER_GFLOP_GRID,
    "detection_activation_bytes_per_gflop": _PER_GFLOP_GRID,
    "diffusion_activation_bytes_per_gflop": _PER_GFLOP_GRID,
    # CNNs with a published activation count: the same 1/8 … 8 × range around its prior
    "cnn_activation_bytes_per_element": [
        round(SERVED.cnn_activation_bytes_per_element * 2 ** (k / 10), 3) for k in range(-30, 31)
    ],
}
OOM_CENTERS = [-0.40 + 0.005 * i for i in range(161)]  # utilisation 0.67 … 1.49
#: A case informs a constant when its prediction moves by more than this (log) across the
#: constant's grid.
SENSITIVITY = 0.05

#: Share of fits/OOM labels the OOM fit treats as possibly wrong (robust logistic regression:
#: a published config that omits a setting, or a run the model cannot describe).
LABEL_NOISE = 0.02
#: Prior width of the OOM boundary around "peak = usable VRAM" (log-utilisation).
CENTER_PRIOR_SD = 0.05
OOM_SCALES = [0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3]


@dataclass(frozen=True)
class Case:
    """One published case, ready to predict."""

    case_id: str
    group: str
    description: str
    workload: Workload
    gpu_count: int
    vram_gib: float | None
    gpu: str
    metric: str
    observed_gib: float | None
    outcome: str
    family: str
    in_scope: bool
    scope: str


def family(w: Workload, gpu_count: int) -> str:
    """Reporting family: LLM full / LoRA / QLoRA / FSDP-ZeRO, encoder, CNN, ViT, diffusion…"""
    if w.architecture == Architecture.TRANSFORMER_DECODER:
        if gpu_count > 1 and w.sharding != Sharding.NONE:
            return "LLM FSDP/ZeRO"
        return {Method.FULL: "LLM full", Method.LORA: "LLM LoRA", Method.QLORA: "LLM QLoRA"}[
            w.method
        ]
    if w.architecture == Architecture.TRANSFORMER_ENCODER:
        return "encoder / seq2seq"
    if w.architecture == Architecture.CNN and w.vision_task == VisionTask.DETECTION:
        return "detection"
    return {
        Architecture.CNN: "CNN",
        Architecture.VIT: "ViT",
        Architecture.DIFFUSION_UNET: "diffusion",
        Architecture.DIFFUSION_TRANSFORMER: "diffusion",
    }.get(w.architecture, w.architecture.value)


def load_cases(ds: Dataset) -> list[Case]:
    """Every case the core can express (rows whose architecture it lacks are skipped)."""
    out = []
    for row in ds.memory_cases:
        w = case_workload(ds, row)
        if w is None:
            continue
        gpu = ds.catalog.get(row["gpu"]) if row["gpu"] else None
        vram = (
            gpu.vram_gib
            if gpu
            else (float(row["gpu_vram_gib"]) if row.get("gpu_vram_gib") else None)
        )
        count = int(float(row["gpu_count"] or 1))
        scope = (row.get("scope") or "").strip()
        observed = float(row["observed_gib"]) if row["observed_gib"].strip() else None
        out.append(
            Case(
                case_id=row["case_id"],
                group=row.get("source_group") or row["case_id"],
                description=row["description"],
                workload=w,
                gpu_count=count,
                vram_gib=vram,
                gpu=gpu.name if gpu else (f"{row['gpu_vram_gib']} GB GPU" if vram else "–"),
                metric=row["metric"],
                observed_gib=observed,
                outcome=row["outcome"],
                family=family(w, count),
                in_scope=not scope.startswith(("out", "review")),
                scope=scope,
            )
        )
    return out


@functools.lru_cache(maxsize=4096)
def with_memory(params: MemoryParams) -> Calibration:
    """The served calibration with ``params`` as its memory section (what a fold or a grid
    point of the fit predicts with; memoised, the grids revisit the same values)."""
    return replace(SERVED, memory=params)


class Peaks:
    """The model's memory breakdown of each (case, constants) asked, kept for one fit or one
    cross-validation: the folds and the grids revisit the same pairs (leave-one-source-out
    asks 160,047 times for 38,763 pairs). Holds the cases it was asked about (keyed by
    identity, so an id is never reused while kept)."""

    def __init__(self) -> None:
        self._breakdowns: dict[tuple[int, MemoryParams], MemoryBreakdown] = {}
        self._cases: dict[int, Case] = {}

    def of(self, case: Case, params: MemoryParams) -> MemoryBreakdown:
        """:func:`peak_memory_bytes` of ``case`` at its micro-batch with ``params``."""
        key = (id(case), params)
        b = self._breakdowns.get(key)
        if b is None:
            w = case.workload
            b = peak_memory_bytes(w, case.gpu_count, w.micro_batch_size, with_memory(params))
            self._breakdowns[key] = b
            self._cases[id(case)] = case
        return b


def predict_metric_gib(case: Case, params: MemoryParams, peaks: Peaks | None = None) -> float:
    """The model's figure in the case's metric, GiB (``peaks``: breakdowns kept between
    calls)."""
    b = (peaks or Peaks()).of(case, params)
    if case.metric in ("alloc", "active"):
        return b.allocated_gib
    if case.metric == "reserved":
        return b.allocated_gib * SLACK
    return b.total_gib


def log_utilization(case: Case, params: MemoryParams, peaks: Peaks | None = None) -> float | None:
    """log(predicted peak / usable VRAM), ``None`` without a known GPU size."""
    if not case.vram_gib:
        return None
    b = (peaks or Peaks()).of(case, params)
    return math.log(max(b.total_gib, 1e-9) / usable_vram_gib(case.vram_gib, case.gpu))


def _size_loss(cases: list[Case], params: MemoryParams, peaks: Peaks) -> float:
    errs = [
        abs(math.log(max(predict_metric_gib(c, params, peaks), 1e-6) / c.observed_gib))
        for c in cases
        if c.observed_gib
    ]
    return statistics.median(errs) if errs else 0.0


def _informed(
    cases: list[Case], params: MemoryParams, name: str, grid: list[float], peaks: Peaks
) -> list[Case]:
    """The cases whose prediction moves by more than ``SENSITIVITY`` across ``name``'s grid:
    each constant is fitted on the cases that inform it."""
    lo = replace(params, **{name: grid[0]})
    hi = replace(params, **{name: grid[-1]})
    out = []
    for c in cases:
        a, b = predict_metric_gib(c, lo, peaks), predict_metric_gib(c, hi, peaks)
        if abs(math.log(max(b, 1e-9) / max(a, 1e-9))) > SENSITIVITY:
            out.append(c)
    return out


def _fit_oom(cases: list[Case], params: MemoryParams, peaks: Peaks) -> MemoryParams:
    points = []
    for c in cases:
        x = log_utilization(c, params, peaks)
        if x is not None:
            points.append((x, 1 if c.outcome == "oom" else 0))
    n_oom = sum(y for _, y in points)
    n_fit = len(points) - n_oom
    if not n_oom or not n_fit:
        return params
    best: tuple[float, float, float] | None = None
    for scale in OOM_SCALES:
        for center in OOM_CENTERS:
            ll = _log_likelihood(points, center, scale, n_oom, n_fit)
            # weak priors: a 10 % logistic width (log-normal, sd 1) and the boundary at the
            # usable VRAM (centre 0, sd CENTER_PRIOR_SD in log-utilisation)
            ll -= 0.01 * (math.log(scale / 0.1)) ** 2
            ll -= 0.5 * (center / CENTER_PRIOR_SD) ** 2 / len(points)
            # ties (separable data): prefer the centre closest to utilisation 1
            key = (ll, -abs(center), scale)
            if best is None or key > (best[0], -abs(best[1]), best[2]):
                best = (ll, center, scale)
    assert best is not None
    return replace(params, oom_center=best[1], oom_scale=best[2])


def _log_likelihood(
    points: list[tuple[float, int]], center: float, scale: float, n_oom: int, n_fit: int
) -> float:
    """The OOM labels' log-likelihood under a robust logistic boundary at ``center`` (log
    utilisation) of width ``scale``, each class weighted by its count: a LABEL_NOISE share of
    cases may be mislabelled or mis-specified, so one outlier cannot drag the boundary. (The
    innermost loop of the fit: z clipped to ±60 by comparisons, the functions bound once.)"""
    exp, log = math.exp, math.log
    noise, spread = LABEL_NOISE, 1 - 2 * LABEL_NOISE
    ll = 0.0
    for x, y in points:
        z = (x - center) / scale
        if z > 60.0:
            z = 60.0
        elif z < -60.0:
            z = -60.0
        p = noise + spread / (1.0 + exp(-z))
        ll += (log(p) / n_oom) if y else (log(1 - p) / n_fit)
    return ll


def fit_params(
    cases: Iterable[Case], prior: MemoryParams = PRIOR, peaks: Peaks | None = None
) -> MemoryParams:
    """Fitted constants for ``cases`` (in-scope ones only), starting from ``prior``
    (``peaks``: breakdowns kept between fits of the same cases)."""
    peaks = peaks or Peaks()
    train = [c for c in cases if c.in_scope]
    sized = [c for c in train if c.observed_gib]
    params = prior
    for _ in range(2):
        for name, grid in GRIDS.items():
            informed = _informed(sized, params, name, grid, peaks)
            if not informed:
                continue
            scores = [(_size_loss(informed, replace(params, **{name: v}), peaks), v) for v in grid]
            best_loss = min(s for s, _ in scores)
            # among (near-)ties keep the value closest to the prior
            prior_value = getattr(prior, name)
            value = min(
                (v for s, v in scores if s <= best_loss + 1e-9),
                key=lambda v: abs(v - prior_value),
            )
            params = replace(params, **{name: value})
    return _fit_oom(train, params, peaks)


@dataclass(frozen=True)
class CaseResult:
    """A held-out prediction of one case."""

    case: Case
    predicted_gib: float
    risk: str | None
    probability: float | None

    @property
    def ape(self) -> float | None:
        """|predicted / observed − 1| where a number was published."""
        if self.case.observed_gib is None:
            return None
        return abs(self.predicted_gib / self.case.observed_gib - 1)

    @property
    def under(self) -> bool | None:
        """Predicted below the published figure."""
        if self.case.observed_gib is None:
            return None
        return self.predicted_gib < self.case.observed_gib


def predict_case(case: Case, params: MemoryParams, peaks: Peaks | None = None) -> CaseResult:
    """Predict ``case`` with ``params``: figure in its metric, risk on its GPU."""
    risk = prob = None
    if case.vram_gib:
        est = estimate_memory(
            case.workload,
            vram_gib=case.vram_gib,
            gpu_count=case.gpu_count,
            cal=with_memory(params),
            with_fixes=False,
            gpu=case.gpu,
        )
        risk, prob = est.oom_risk.value, est.oom_probability
    return CaseResult(case, predict_metric_gib(case, params, peaks), risk, prob)


def leave_one_source_out(cases: list[Case]) -> list[CaseResult]:
    """Each in-scope source group predicted with constants fitted on the other groups;
    out-of-scope cases predicted with constants fitted on all in-scope cases."""
    groups = sorted({c.group for c in cases if c.in_scope})
    out: list[CaseResult] = []
    peaks = Peaks()  # the folds share most (case, constants) pairs
    for g in groups:
        params = fit_params([c for c in cases if c.group != g], peaks=peaks)
        out += [predict_case(c, params, peaks) for c in cases if c.group == g and c.in_scope]
    full = fit_params(cases, peaks=peaks)
    out += [predict_case(c, full, peaks) for c in cases if not c.in_scope]
    return out


@dataclass(frozen=True)
class Summary:
    """Accuracy of a set of held-out predictions."""

    n_sized: int
    median_ape: float
    p90_ape: float
    under_fraction: float
    n_oom: int
    oom_recall: float
    n_fit: int
    fit_specificity: float
    fit_low: float


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def summarize(results: Iterable[CaseResult]) -> Summary:
    """Median/p90 APE, underestimates, OOM recall (OOM called ``high``) and fit specificity
    (fitting runs not called ``high``; ``fit_low``: called ``low``)."""
    rows = list(results)
    apes = [r.ape for r in rows if r.ape is not None]
    unders = [r.under for r in rows if r.under is not None]
    ooms = [r for r in rows if r.risk and r.case.outcome == "oom"]
    fits = [r for r in rows if r.risk and r.case.outcome == "fits"]
    return Summary(
        n_sized=len(apes),
        median_ape=statistics.median(apes) if apes else math.nan,
        p90_ape=_quantile(apes, 0.9),
        under_fraction=sum(unders) / len(unders) if unders else math.nan,
        n_oom=len(ooms),
        oom_recall=sum(r.risk == OomRisk.HIGH.value for r in ooms) / len(ooms)
        if ooms
        else math.nan,
        n_fit=len(fits),
        fit_specificity=sum(r.risk != OomRisk.HIGH.value for r in fits) / len(fits)
        if fits
        else math.nan,
        fit_low=sum(r.risk == OomRisk.LOW.value for r in fits) / len(fits) if fits else math.nan,
    )


def gib(value: float) -> float:
    """Bytes → GiB (helper for reports)."""
    return value / GIB
