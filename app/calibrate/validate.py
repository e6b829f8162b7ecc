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

import contextlib
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.calibrate.dataset import Dataset, rate_rows, row_workload, units
from app.estimate import fitted
from app.estimate.floprate import FlopRateModel
from app.estimate.linalg import lstsq
from app.estimate.memory import (
    CUDA_CONTEXT_GIB,
    NCCL_GIB,
    SLACK,
    estimate_memory,
    peak_memory_bytes,
)
from app.estimate.multigpu import link_class, multi_gpu_efficiency
from app.estimate.scaling import F_COMPUTE, blend_predict, fp32_ratio_predict, group_key
from app.estimate.throughput import (
    ThroughputModel,
    family,
    flops_peak_tflops,
    precision_class,
    training_flops_per_sample,
)
from app.estimate.types import (
    Architecture,
    Basis,
    BenchmarkPoint,
    Interconnect,
    OomRisk,
    Precision,
    Workload,
)


@dataclass(frozen=True)
class Residual:
    """A held-out measurement and predictions of it (same units)."""

    row: BenchmarkPoint
    actual: float
    predicted: float
    basis: str
    baselines: dict[str, float]

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


@contextlib.contextmanager
def patched(**constants: Any) -> Iterator[None]:
    """Temporarily replace constants of :mod:`app.estimate.fitted` (per-fold refits)."""
    old = {k: getattr(fitted, k) for k in constants}
    for k, v in constants.items():
        setattr(fitted, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(fitted, k, v)


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
            and group_key(p) == key
        ):
            by_gpu.setdefault(p.gpu, []).append(p.throughput_total)
    return [(ds.catalog[g], statistics.median(v)) for g, v in by_gpu.items()]


def logo(ds: Dataset) -> list[Residual]:
    """Leave-one-GPU-out residuals of every single-GPU measurement (same suite)."""
    out = []
    rows = rate_rows(ds)
    for gpu_name in sorted({r.gpu for r in rows}):
        train = [p for p in ds.points if p.gpu != gpu_name]
        gpu = ds.catalog[gpu_name]
        for r in (x for x in rows if x.gpu == gpu_name):
            w = row_workload(ds, r)
            if w is None:
                continue
            suite = [p for p in train if p.source == r.source]
            model = ThroughputModel(w, points=suite, catalog=ds.catalog, flops_table=ds.flops_table)
            rate, basis, _, _ = model.single_gpu(gpu)
            if rate <= 0:
                continue
            refs = _group_refs(ds, suite, r)
            baselines = {}
            if refs:
                baselines["fp32_ratio"] = fp32_ratio_predict(refs, gpu)
                baselines["blend"] = blend_predict(
                    refs, gpu, r.precision, F_COMPUTE[family(w.architecture)]
                )
            out.append(Residual(r, r.throughput_total, rate * units(w), basis.value, baselines))
    return out


def fit_mfu_prior(ds: Dataset, exclude: frozenset[str] = frozenset()) -> dict[str, float]:
    """Median achieved MFU per ``family|precision class`` over single-GPU measurements.

    MFU = throughput × training FLOPs per unit ÷ (peak TFLOPS of the precision × 1e12).
    """
    by_key: dict[str, list[float]] = {}
    for p in rate_rows(ds):
        entry = ds.flops_table.get((p.workload, p.method))
        if entry is None or p.workload in exclude:
            continue
        fam, per_unit = entry[0], entry[1]
        peak = flops_peak_tflops(ds.catalog[p.gpu], p.precision)
        mfu = p.throughput_total * per_unit / (peak * 1e12)
        by_key.setdefault(f"{fam}|{precision_class(p.precision)}", []).append(mfu)
    return {k: round(statistics.median(v), 4) for k, v in sorted(by_key.items())}


def fit_flops_rate_model(
    ds: Dataset, exclude: frozenset[str] = frozenset()
) -> dict[str, tuple[float, float, float]]:
    """Least-squares ``log FLOP/s = a + b log peak + c log BW`` per ``family|precision class``.

    Over single-GPU measurements with a FLOPs estimate; needs ≥ 6 rows on ≥ 4 GPUs.
    """
    groups: dict[str, list[tuple[list[float], float]]] = {}
    gpus: dict[str, set[str]] = {}
    for p in rate_rows(ds):
        entry = ds.flops_table.get((p.workload, p.method))
        if entry is None or p.workload in exclude:
            continue
        fam, per_unit = entry[0], entry[1]
        gpu = ds.catalog[p.gpu]
        key = f"{fam}|{precision_class(p.precision)}"
        x = [
            1.0,
            math.log(flops_peak_tflops(gpu, p.precision)),
            math.log(gpu.memory_bandwidth_gbs or 1.0),
        ]
        groups.setdefault(key, []).append((x, math.log(p.throughput_total * per_unit)))
        gpus.setdefault(key, set()).add(p.gpu)
    out = {}
    for key, rows in sorted(groups.items()):
        if len(rows) < 6 or len(gpus[key]) < 4:
            continue
        coef = lstsq([x for x, _ in rows], [y for _, y in rows])
        out[key] = (round(coef[0], 4), round(coef[1], 4), round(coef[2], 4))
    return out


def lowo(ds: Dataset) -> list[Residual]:
    """Leave-one-workload-out residuals (FLOPs model) of workloads with a FLOPs estimate.

    The naive baseline is FLOPs ÷ (peak × a flat MFU of 0.3).
    """
    out = []
    rows = rate_rows(ds)
    for label in sorted({r.workload for r in rows}):
        train = [p for p in ds.points if p.workload != label]
        table = {k: v for k, v in ds.flops_table.items() if k[0] != label}
        prior = {**fitted.MFU_PRIOR, **fit_mfu_prior(ds, frozenset({label}))}
        rate_model = fit_flops_rate_model(ds, frozenset({label}))
        donors = FlopRateModel(train, ds.catalog, table)
        with patched(MFU_PRIOR=prior, FLOPS_RATE_MODEL=rate_model):
            for r in (x for x in rows if x.workload == label):
                w = row_workload(ds, r)
                if w is None or not training_flops_per_sample(w):
                    continue
                model = ThroughputModel(
                    w, points=train, catalog=ds.catalog, flops_table=table, flop_rates=donors
                )
                rate, basis, _, _ = model.single_gpu(ds.catalog[r.gpu])
                if rate <= 0:
                    continue
                naive = (
                    flops_peak_tflops(ds.catalog[r.gpu], r.precision)
                    * 1e12
                    * 0.3
                    / (training_flops_per_sample(w) or 1.0)
                )
                out.append(
                    Residual(
                        r,
                        r.throughput_total,
                        rate * units(w),
                        basis.value,
                        {"flat_mfu_0.3": naive * units(w)},
                    )
                )
    return out


def leave_one_replicate_out(ds: Dataset) -> list[Residual]:
    """Residuals of the ``measured`` basis: a row predicted from the same GPU's other rows."""
    out = []
    rows = rate_rows(ds)
    by_key: dict[tuple[str, str, str, str], list[BenchmarkPoint]] = {}
    for p in rows:
        by_key.setdefault((p.gpu, p.workload, p.method, p.precision.value), []).append(p)
    for group in by_key.values():
        if len(group) < 2:
            continue
        for r in group:
            w = row_workload(ds, r)
            if w is None:
                continue
            others = [p for p in group if p.id != r.id]
            model = ThroughputModel(w, points=others, catalog=ds.catalog)
            rate, basis, _, _ = model.single_gpu(ds.catalog[r.gpu])
            if basis == Basis.MEASURED and rate > 0:
                out.append(Residual(r, r.throughput_total, rate * units(w), basis.value, {}))
    return out


def _multi_pairs(ds: Dataset) -> list[tuple[BenchmarkPoint, BenchmarkPoint, Workload]]:
    """(multi-GPU row, its 1-GPU row, workload with the preset's units) pairs."""
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
    return pairs


def multigpu_residuals(ds: Dataset) -> list[Residual]:
    """Multi-GPU rows predicted as 1-GPU throughput × n × η (baseline: linear scaling)."""
    out = []
    for r, base, w in _multi_pairs(ds):
        gpu = ds.catalog[r.gpu]
        link = Interconnect.NVLINK if r.interconnect == "nvlink" else Interconnect.PCIE
        per_gpu_samples = base.throughput_total / (w.units_per_sample or 1.0)
        eta = multi_gpu_efficiency(
            w,
            gpu,
            r.gpu_count,
            link,
            per_gpu_samples,
            micro_batch=r.batch_size_per_gpu or w.micro_batch_size,
        )
        linear = base.throughput_total * r.gpu_count
        out.append(
            Residual(r, r.throughput_total, linear * eta, link_class(gpu, link), {"linear": linear})
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


def _metric_gib(w: Workload, gpu_count: int, metric: str) -> float:
    b = peak_memory_bytes(w, gpu_count, w.micro_batch_size)
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
        return None  # non-square detection inputs: outside the model
    optimizer = row["optimizer"]
    values: dict[str, Any] = {
        "architecture": arch,
        "params": _int(row["params"]),
        "layers": _int(row["layers"]),
        "hidden_size": _int(row["hidden_size"]),
        "heads": _int(row["heads"]),
        "kv_heads": _int(row["kv_heads"]),
        "ffn_hidden_size": _int(row["ffn_hidden_size"]),
        "vocab_size": _int(row["vocab_size"]),
        "seq_len": _int(row["seq_len"]),
        "image_size": _int(image),
        "micro_batch_size": _int(row["micro_batch_size"]) or 1,
        "precision": row["precision"],
        "optimizer": optimizer,
        "method": row["method"],
        "lora_rank": _int(row["lora_rank"]),
        "gradient_checkpointing": row["gradient_checkpointing"] == "true",
        "attention": row["attention"] or "sdpa",
        "sharding": row["sharding"] or "none",
        "cpu_offload": row["cpu_offload"] == "true",
        "samples_per_epoch": 1,
    }
    for flag in (
        "fused_cross_entropy",
        "optimizer_in_backward",
        "activation_offloading",
        "full_model_init",
    ):
        values[flag] = (row.get(flag) or "").strip() == "true"
    if (row.get("double_quant") or "").strip() == "false":
        values["double_quant"] = False
    meta: dict[str, Any] = {}
    if arch == "diffusion_unet" and "sd15-unet-finetune" in ds.presets:
        # same UNet as the preset: its published forward cost sizes the activations
        values["forward_gflops_per_sample"] = ds.presets["sd15-unet-finetune"].fields.get(
            "forward_gflops_per_sample"
        )
    if arch == "cnn" and "resnet50-imagenet" in ds.presets and values["params"] == 25557032:
        meta = dict(ds.presets["resnet50-imagenet"].meta)
        values["forward_gflops_per_sample"] = ds.presets["resnet50-imagenet"].fields.get(
            "forward_gflops_per_sample"
        )
    from app.services.presets import build_workload

    return build_workload(values, meta)


#: Benchmark rows with a peak-memory figure that the model can express: (source, GPU label,
#: workload, task substring, precision) → (preset, overrides, metric). Lambda v0 rows (nvidia-smi
#: of the filled GPU) are added automatically.
PEAK_ROW_CONFIGS: list[tuple[Callable[[BenchmarkPoint], bool], str, dict[str, Any], str]] = [
    # torchtitan Table 1/3: Llama 3.1 8B FSDP, local batch 2, seq 8192, selective AC (modelled
    # as full checkpointing), bf16 mixed precision
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
        {"gradient_checkpointing": True, "sharding": "fsdp"},
        "reserved",
    ),
]


def memory_checks(ds: Dataset) -> list[MemoryCheck]:
    """Predicted vs observed for the §7 cases and the benchmark peak-memory rows."""
    out = []
    for row in ds.memory_cases:
        gpu = ds.catalog.get(row["gpu"])
        w = case_workload(ds, row)
        if gpu is None or w is None:
            continue
        count = _int(row["gpu_count"]) or 1
        est = estimate_memory(w, vram_gb=gpu.vram_gb, gpu_count=count)
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
                predicted_gib=_metric_gib(w, count, metric),
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
        est = estimate_memory(w, vram_gb=gpu.vram_gb, gpu_count=p.gpu_count)
        out.append(
            MemoryCheck(
                case=f"bench-{p.id}",
                description=f"{p.workload} {p.precision.value} bs "
                f"{p.batch_size_per_gpu} ({p.source})",
                gpu=gpu.name,
                metric=metric,
                observed_gib=p.peak_memory_gib,
                outcome="fits",
                predicted_gib=_metric_gib(w, p.gpu_count, metric),
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
