"""Accuracy of the estimators, cross-validated on the seeded measurements.

Run: ``python -m benchmarks.accuracy`` (writes docs/accuracy.md and docs/accuracy.png and
prints the headline table). Everything goes through the same estimation core the API uses
(app.model) with the constants in app/model/calibration.json; see app/calibrate/validate.py
for the protocols.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from app.calibrate.dataset import Dataset, load_dataset, rate_rows
from app.calibrate.nested import nested_ranges
from app.calibrate.validate import (
    DERIVED_PAIRS,
    MemoryCheck,
    Residual,
    WidthPair,
    ape_stats,
    best_width_h0,
    derived,
    fit_width_h0,
    loao,
    logo,
    logo_multi,
    lowo,
    lowo_folds,
    lowo_multi,
    measured_elsewhere,
    memory_checks,
    precision_switch,
    width_pairs,
)
from app.model.calibration import load_calibration
from app.model.throughput import flops_peak_tflops, precision_class, range_factors
from app.model.types import Situation
from app.settings import PROJECT_ROOT
from benchmarks.memory_accuracy import TARGETS as MEMORY_TARGETS
from benchmarks.memory_accuracy import memory_section
from benchmarks.multi_accuracy import TARGETS as MULTI_TARGETS
from benchmarks.multi_accuracy import multi_section

#: Issue targets (docs/accuracy.md states whether each is met).
TARGETS = {
    "logo_median": 0.10,
    "logo_p90": 0.30,
    "loao_median": 0.12,
    "derived_median": 0.10,
    "lowo_median": 0.20,
    "llm_logo_median": 0.15,
    "memory_median": MEMORY_TARGETS["median_ape"],
    **MULTI_TARGETS,
}
#: Share of held-out measurements each protocol's ranges should contain.
COVERAGE_TARGET = (0.75, 0.85)


def pct(x: float) -> str:
    """Fraction → "12.3 %" ("–" for NaN)."""
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def stats_row(name: str, apes: list[float]) -> str:
    """Markdown row: name | median | p90 | n."""
    med, p90, n = ape_stats(apes)
    return f"| {name} | {pct(med)} | {pct(p90)} | {n} |"


def baseline_apes(rows: Iterable[Residual], name: str) -> list[float]:
    """Absolute percentage errors of the baseline ``name`` on ``rows``."""
    return [abs(r.baselines[name] / r.actual - 1) for r in rows]


def headline_logo(res: list[Residual]) -> list[Residual]:
    """LOGO rows whose workload was measured on another GPU of the same suite."""
    return [r for r in res if r.baselines]


def grouped(res: Iterable[Residual], key: Callable[[Residual], str]) -> dict[str, list[Residual]]:
    """Residuals grouped by ``key``, sorted by group name."""
    out: dict[str, list[Residual]] = defaultdict(list)
    for r in res:
        out[key(r)].append(r)
    return dict(sorted(out.items()))


def coverage(res: Iterable[Residual], basis: str) -> tuple[float, int]:
    """Share of residuals whose actual value falls inside the basis's low–high range."""
    low, high = load_calibration().range_factors[basis]
    rows = list(res)
    inside = sum(1 for r in rows if r.predicted * low <= r.actual <= r.predicted * high)
    return (inside / len(rows) if rows else math.nan), len(rows)


#: Marker size (pt²), alpha, colour and legend label of each series of the accuracy plot.
PLOT_SERIES = {
    "blend": (7, 0.35, "#bbbbbb", "§4.5 blend baseline (LOGO)"),
    "lowo": (8, 0.55, "#e08a2c", "FLOPs model (leave-one-workload-out)"),
    "logo": (8, 0.7, "#1f5fa8", "calibrated time model (leave-one-GPU-out)"),
}


def plot(lg: list[Residual], lw: list[Residual], path: Path) -> None:
    """Predicted vs measured (log-log) for LOGO (calibrated and blend) and LOWO."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6.5), dpi=110)
    head = headline_logo(lg)
    points = {  # (measured, predicted) of each series in PLOT_SERIES
        "blend": [(r.actual, r.baselines["blend"]) for r in head],
        "lowo": [(r.actual, r.predicted) for r in lw],
        "logo": [(r.actual, r.predicted) for r in head],
    }
    for name, (size, alpha, color, label) in PLOT_SERIES.items():
        xy = points[name]
        xs, ys = [x for x, _ in xy], [y for _, y in xy]
        ax.scatter(xs, ys, s=size, alpha=alpha, color=color, label=label)
    values = [r.actual for r in lg + lw] + [r.predicted for r in lg + lw]
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    for f in (0.75, 1.25):
        ax.plot([lo, hi], [lo * f, hi * f], color="black", lw=0.5, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured throughput (published units, 1 GPU)")
    ax.set_ylabel("predicted throughput")
    ax.set_title(
        "gpucost throughput estimates vs published measurements\n(dotted: ±25 %)", fontsize=10
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def memory_table(checks: list[MemoryCheck]) -> list[str]:
    """Markdown table of memory cases."""
    lines = [
        "| case | description | GPU | metric | observed GiB | outcome | predicted GiB "
        "| predicted risk | right side | APE |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        observed = f"{c.observed_gib:.2f}" if c.observed_gib is not None else "–"
        ape = pct(c.ape) if c.ape is not None else "–"
        lines.append(
            f"| {c.case} | {c.description[:70]} | {c.gpu} | {c.metric} | {observed} | "
            f"{c.outcome} | {c.predicted_gib:.2f} | {c.predicted_risk} | "
            f"{'yes' if c.right_side else '**no**'} | {ape} |"
        )
    return lines


def mfu_table(ds: Dataset) -> list[str]:
    """Markdown rows: per measured workload with a FLOPs estimate, the median achieved MFU
    (throughput × training FLOPs per unit ÷ the peak of the precision, as the FLOPs model
    counts it: ``flops_peak_tflops``) of its single-GPU rows, per precision class."""
    by: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for p in rate_rows(ds):
        entry = ds.flops_table.get((p.workload, p.method))
        if entry is None:
            continue
        peak = flops_peak_tflops(ds.catalog[p.gpu], p.precision) * 1e12
        by[(p.workload, p.method)][precision_class(p.precision)].append(
            p.throughput_total * entry[1] / peak
        )
    out = []
    for (label, method), cls in sorted(by.items()):
        cells = [f"{statistics.median(cls[c]):.3f}" if cls.get(c) else "–" for c in ("16", "32")]
        n = sum(len(v) for v in cls.values())
        out.append(f"| {label} | {method} | {cells[0]} | {cells[1]} | {n} |")
    return out


def not_derived_note(dv: list[Residual]) -> str:
    """Sentence naming the derived pairs whose rows never reached the ``derived`` situation
    (the base preset has no usable measurement, so the served path used the FLOPs model)."""
    pairs = dict(DERIVED_PAIRS)
    fallback = sorted(
        {r.row.workload for r in dv if r.basis != "derived"}
        - {r.row.workload for r in dv if r.basis == "derived"}
    )
    if not fallback:
        return ""
    names = ", ".join(f"{a} (from `{pairs[a]}`)" for a in fallback if a in pairs)
    return (
        f"No usable measurement stands for the base of {names}, so its rows are FLOPs-model "
        "estimates, counted here all the same."
    )


def txl_pairs(ds: Dataset) -> list[WidthPair]:
    """:func:`width_pairs` of the Transformer-XL networks alone (the docs' comparison)."""
    others = frozenset(label for label in lowo_folds(ds) if "Transformer-XL" not in label)
    return width_pairs(ds, others)


def width_fold_range(ds: Dataset) -> str:
    """The range of ``WIDTH_H0`` over the leave-one-workload-out folds, as text."""
    values = sorted(
        {fit_width_h0(ds, held).get("transformer", 0.0) for held in lowo_folds(ds).values()}
    )
    return f"{values[0]:.0f}-{values[-1]:.0f}"


def protocol_row(name: str, res: list[Residual], target: str = "") -> str:
    """Markdown row: protocol | median | mean | p90 APE | coverage | rows | target."""
    med, p90, n = ape_stats([r.ape for r in res])
    mean = sum(r.ape for r in res) / n if n else math.nan
    cov = sum(r.inside for r in res) / n if n else math.nan
    lo, hi = COVERAGE_TARGET
    cov_text = pct(cov) if lo <= cov <= hi else f"**{pct(cov)}**"
    return f"| {name} | {pct(med)} | {pct(mean)} | {pct(p90)} | {cov_text} | {n} | {target} |"


def build_report(ds: Dataset) -> tuple[str, dict[str, float], list[Residual], list[Residual]]:
    """The markdown report, the headline numbers, and the LOGO/LOWO residuals."""
    cal = load_calibration()
    # every protocol's ranges from quantiles fitted outside its folds (app/calibrate/nested.py)
    nested = nested_ranges(
        ds,
        {
            "logo": logo(ds),
            "loao": loao(ds),
            "lowo": lowo(ds),
            "derived": derived(ds),
            "precision_switch": precision_switch(ds),
            "measured_elsewhere": measured_elsewhere(ds),
            "llm_logo": logo_multi(ds),
            "llm_lowo": lowo_multi(ds),
        },
    )
    lg, la, lw, dv = nested["logo"], nested["loao"], nested["lowo"], nested["derived"]
    ps, me = nested["precision_switch"], nested["measured_elsewhere"]
    lgm, lwm = nested["llm_logo"], nested["llm_lowo"]
    multi_lines, multi_numbers, _ = multi_section(ds)
    mem = memory_checks(ds)
    head = headline_logo(lg)

    blend = baseline_apes(head, "blend")
    fp32 = baseline_apes(head, "fp32_ratio")
    bench_mem = [c for c in mem if c.case.startswith("bench-")]
    memory_lines, memory_numbers, _ = memory_section(ds)

    def cov(res: list[Residual]) -> float:
        return sum(r.inside for r in res) / len(res) if res else math.nan

    numbers = {
        "logo_median": ape_stats([r.ape for r in lg])[0],
        "logo_p90": ape_stats([r.ape for r in lg])[1],
        "logo_coverage": cov(lg),
        "loao_median": ape_stats([r.ape for r in la])[0],
        "loao_coverage": cov(la),
        "lowo_median": ape_stats([r.ape for r in lw])[0],
        "lowo_mean": statistics.fmean(r.ape for r in lw) if lw else math.nan,
        "lowo_p90": ape_stats([r.ape for r in lw])[1],
        "lowo_coverage": cov(lw),
        "lowo_workload_median": statistics.median(
            ape_stats([r.ape for r in rs])[0]
            for rs in grouped(lw, lambda r: r.row.workload).values()
        )
        if lw
        else math.nan,
        "derived_median": ape_stats([r.ape for r in dv])[0],
        "derived_coverage": cov(dv),
        "precision_switch_median": ape_stats([r.ape for r in ps])[0],
        "precision_switch_coverage": cov(ps),
        "measured_elsewhere_median": ape_stats([r.ape for r in me])[0],
        "measured_elsewhere_coverage": cov(me),
        "llm_logo_median": ape_stats([r.ape for r in lgm])[0],
        "llm_logo_coverage": cov(lgm),
        "llm_lowo_median": ape_stats([r.ape for r in lwm])[0],
        "llm_lowo_coverage": cov(lwm),
        "blend_median": ape_stats(blend)[0],
        "fp32_median": ape_stats(fp32)[0],
        **multi_numbers,
        **memory_numbers,
    }

    def verdict(key: str) -> str:
        return "met" if numbers[key] <= TARGETS[key] else "**not met**"

    def target(key: str) -> str:
        return f"median ≤ {pct(TARGETS[key])}: {verdict(key)}"

    out = [
        "# Accuracy of gpucost's estimates",
        "",
        "Generated by `python -m benchmarks.accuracy` from `seed_data/`. Every throughput "
        "figure below comes from the served path — `ThroughputModel.estimate` in "
        "`app/model/throughput/`, the function `/v1/estimate`, `/v1/rank` and the web "
        "page call — with the held-out rows removed from the data it sees (protocols: "
        "`app/calibrate/validate.py`; constants: `app/model/calibration.json`, fitted by "
        "`python tools/fit_constants.py`). Each held-out row is predicted at the API's "
        "level: its GPU, GPU count, link, precision, micro-batch, checkpointing and stack "
        "(what a request states), but no software level: the served path picks the suite "
        "it would pick for the preset (`validate.served_residual`, `software=None`), and a "
        "preset's row stands on the preset's own measured labels. APE = |predicted / "
        "measured − 1|; coverage = share of held-out measurements inside the low–high "
        "range the served path gives with nested range quantiles: each row's range is "
        "rebuilt from the 10th/90th percentiles of the residuals of rows outside its fold "
        "(not its GPU, architecture or network; `app/calibrate/nested.py`), never from its "
        "own (target "
        f"{pct(COVERAGE_TARGET[0])}–{pct(COVERAGE_TARGET[1])}; bold when outside). Until "
        "issue 23 each held-out row was handed its own suite (which the API never "
        "receives) and scored against ranges fitted on its own residual: leave-one-GPU-out "
        "8.2 % (p90 28.8 %), leave-one-architecture-out 14.3 %, derived 11.1 %, LLM "
        "leave-one-GPU-out 16.1 %, measured elsewhere 6.4 % then; at the API's level "
        "9.8 % (p90 36.0 %), 15.6 %, 14.6 %, 20.0 %, 8.7 % (leave-one-workload-out 20.8 % "
        "either way: the FLOPs model has no suite).",
        "",
        "## Headline (served path, single GPU)",
        "",
        "| protocol | median APE | mean APE | p90 APE | coverage | rows | target |",
        "|---|---|---|---|---|---|---|",
        protocol_row(
            "leave-one-GPU-out (the GPU removed from every suite)",
            lg,
            f"{target('logo_median')}; p90 ≤ {pct(TARGETS['logo_p90'])}: {verdict('logo_p90')}",
        ),
        protocol_row("leave-one-architecture-out", la, target("loao_median")),
        protocol_row("leave-one-workload-out (FLOPs model)", lw, target("lowo_median")),
        protocol_row(
            "derived workloads (large from base, see below)", dv, target("derived_median")
        ),
        protocol_row("precision switch (fp32/tf32 ↔ 16-bit rows removed)", ps),
        protocol_row("measured elsewhere (the GPU's rows of one suite removed)", me),
        protocol_row(
            "LLMs measured on several GPUs only: leave-one-GPU-out, per GPU",
            lgm,
            target("llm_logo_median"),
        ),
        protocol_row("LLMs measured on several GPUs only: leave-one-workload-out", lwm),
        "",
        "Leave-one-workload-out removes the workload's whole network (the same shape measured "
        "on another task or in another framework: `validate.lowo_folds`; BERT-large SQuAD "
        "with BERT-large pre-training, ResNet-50 v1.5 with the TensorFlow ResNet-50; in the "
        "LLM protocol Llama 3 8B with Llama 3.1 8B, MPT-125M with GPT-2 124M, the Llama 70Bs "
        "together). Its "
        "median is over rows, so the workloads with most rows weigh most; the median over "
        "workloads of each workload's median APE is "
        f"{pct(numbers['lowo_workload_median'])} "
        f"({len(grouped(lw, lambda r: r.row.workload))} workloads).",
        "",
        "The LLM rows (llm-foundry, Megatron-Bridge, NeMo, torchtitan, llm.c, nanoGPT; "
        "`seed_data/benchmarks_llm.csv`) are 8-1024-GPU runs: each is predicted at its own GPU "
        "count and link and compared per GPU; their rows at a sequence length other than the "
        "preset's are not used (another sequence length is another workload).",
        "",
        "New architectures (issue 23 item 4): an `extrapolated` estimate (no GPU of the "
        "target's architecture measured the workload) takes the form chosen per family by "
        "leave-one-architecture-out inside the data it is given "
        "(`app/model/throughput/extrapolate.py`, each inner fold refitted): the pooled "
        "model (zero architecture terms), the nearest measured GPU of another architecture "
        "moved by the pooled spec slopes, or moved by (peak ratio)^f × (bandwidth "
        "ratio)^(1−f), f in 0, ¼, ½, ¾, 1, or that ratio form averaged over the three "
        "nearest measured GPUs of other architectures (`near:f`, added after the figures "
        "below; docs/model.md). Every reported fold chooses on its own training "
        "rows (`validate._with_nested_form`), never on the rows it is scored on; on all the "
        f"data the choice is {dict(cal.extrapolation_form)}. Against the pooled model "
        "alone: LLM leave-one-GPU-out 20.0 % → 14.1 %, leave-one-architecture-out 15.6 % → "
        "15.6 % (p90 43.6 % → 48.4 %; Hopper held out, CNN / other / transformer rows "
        "13.8 / 19.5 / 13.3 % → 8.4 / 8.9 / 6.5 %, Ampere held out 10.7 / 17.1 / 19.6 % → "
        "14.9 / 29.5 / 20.1 %: a held-out generation between measured ones is interpolated "
        "better by the pooled model than carried from one neighbour), leave-one-GPU-out "
        "9.8 % → 9.9 % (p90 36.0 % → 36.2 %), derived 14.6 % unchanged; B200 / GB200 in "
        "LLM leave-one-GPU-out 29.0 / 25.0 % → 31.3 / 28.1 % (4 / 22 rows). The candidate "
        "set was fixed before these figures; one measured after (the same plus the pooled "
        "model shrunk halfway toward each ratio: leave-one-architecture-out 15.5 %, p90 "
        "48.4 %, LLM leave-one-GPU-out 17.9 %) is not kept.",
        "",
        "| memory check | model | target | result |",
        "|---|---|---|---|",
        f"| memory, leave-one-source-out median peak APE | {pct(numbers['memory_median'])} | "
        f"≤ 12 % | {verdict('memory_median')} |",
        f"| memory, OOM recall / fit specificity | {pct(numbers['memory_oom_recall'])} / "
        f"{pct(numbers['memory_fit_specificity'])} | ≥ 90 % / ≥ 90 % | see Memory |",
        "",
        f"Baselines on the {len(head)} leave-one-GPU-out rows whose workload was measured on "
        "another GPU of the same suite (the baselines, unlike the served path, are handed "
        "the row's suite): compute/bandwidth blend (estimation.md §4.5) median "
        f"{pct(numbers['blend_median'])} (p90 {pct(ape_stats(blend)[1])}), FP32-TFLOPS ratio "
        f"median {pct(numbers['fp32_median'])} (p90 {pct(ape_stats(fp32)[1])}); the served "
        f"path on the same rows: median {pct(ape_stats([r.ape for r in head])[0])} (p90 "
        f"{pct(ape_stats([r.ape for r in head])[1])}).",
        "",
        "Before this model (the per-suite time model, served path, same 780 rows): "
        "leave-one-GPU-out median 16.7 %, mean 29.5 %, p90 72.9 %, coverage 48.8 %.",
        "",
        "Derived pairs (target's rows removed; the target predicted as a custom variant of "
        "the base preset by the ratio of time-weighted training FLOPs "
        "(`width_weighted_flops`); the target's whole network out of the data and of the "
        "refitted constants): "
        + ", ".join(f"{a} from `{b}`" for a, b in DERIVED_PAIRS)
        + "."
        + (f" {note}" if (note := not_derived_note(dv)) else ""),
        "",
        "### By situation (all protocols above pooled)",
        "",
        "| situation | range (× estimate) | median APE | coverage | rows |",
        "|---|---|---|---|---|",
    ]
    pooled = lg + la + lw + dv + ps + me + lgm + lwm
    for sit, rows in grouped(pooled, lambda r: r.basis).items():
        low, high = range_factors(Situation(sit))
        c = ape_stats([r.ape for r in rows])
        out.append(f"| {sit} | {low:.2f} – {high:.2f} | {pct(c[0])} | {pct(cov(rows))} | {c[2]} |")
    out += [
        "",
        "## Leave-one-GPU-out by GPU and by workload",
        "",
        "| GPU | served path median APE (p90) | blend | FP32 ratio | rows |",
        "|---|---|---|---|---|",
    ]
    for gpu, rows in grouped(lg, lambda r: r.row.gpu).items():
        c = ape_stats([r.ape for r in rows])
        with_base = [r for r in rows if r.baselines]
        b = ape_stats(baseline_apes(with_base, "blend"))
        f = ape_stats(baseline_apes(with_base, "fp32_ratio"))
        out.append(f"| {gpu} | {pct(c[0])} ({pct(c[1])}) | {pct(b[0])} | {pct(f[0])} | {c[2]} |")
    out += [
        "",
        "| workload | LOGO median APE (p90) | LOAO median | LOWO median | rows |",
        "|---|---|---|---|---|",
    ]
    la_by = grouped(la, lambda r: r.row.workload)
    lw_by = grouped(lw, lambda r: r.row.workload)
    for label, rows in grouped(lg, lambda r: r.row.workload).items():
        c = ape_stats([r.ape for r in rows])
        a = ape_stats([r.ape for r in la_by.get(label, [])])
        w = ape_stats([r.ape for r in lw_by.get(label, [])])
        out.append(f"| {label} | {pct(c[0])} ({pct(c[1])}) | {pct(a[0])} | {pct(w[0])} | {c[2]} |")
    out += [
        "",
        "Workloads without a published forward cost (SSD, Mask R-CNN, GNMT, Tacotron 2, "
        "WaveGlow, NCF) have no FLOPs estimate and cannot be predicted without their own "
        "measurements (no LOWO figure). MFU differs about threefold between workloads on "
        "the same GPU, which bounds what a FLOPs model can do without a measurement of the "
        "workload itself. The table below gives the achieved MFU of the workloads the LOWO "
        "and derived figures are made of (FLOPs as the model counts them): inside one "
        "family and on the same GPUs it differs by up to about threefold (Transformer-XL "
        "base vs large, BERT vs Transformer-XL, the PyTorch vs the TensorFlow ResNet-50). "
        "Transformer-XL's MFU is low (the table below) once its adaptive softmax is counted as "
        "the code runs it (round 5 below).",
        "",
        "| workload | method | median MFU, 16-bit | median MFU, fp32/tf32 | single-GPU rows |",
        "|---|---|---|---|---|",
        *mfu_table(ds),
        "",
        "What moved these figures (issue 8, round 4; each change measured on every "
        "protocol): (1) an encoder's token-embedding table is a lookup, not a matmul, and a "
        "task-head encoder has no vocabulary projection, so BERT's FLOPs count 86.0M of its "
        "109.5M parameters (`matmul_params`, Kaplan et al. 2020): LOWO median 40.7 % → "
        "36.0 %; (2) CNN donors weighted by similarity of training FLOPs per sample, the rule "
        "transformers already use on parameters (`donor_weight`): LOWO 36.0 % → 32.6 %; "
        "(3) the LOWO folds refit the MFU cap (`MFU_MAX`) without the held-out workload, as "
        "they already refit the MFU prior and the FLOP-rate model (it had capped at the "
        "workload's own MFU): 32.6 % → 33.0 %; (4) 80 published NVIDIA DLE PyTorch rows "
        "(BERT-large SQuAD and pre-training, ResNeXt101-32x4d, SE-ResNeXt101-32x4d, "
        "EfficientNet-B0/B4), which give ResNet-50 v1.5 and BERT-base donors of their own "
        "lab and framework: LOWO 33.0 % → 26.0 % (ResNet-50 v1.5 and BERT-base now within "
        "−0.35…+0.19 in median log(predicted/actual)), but mean and p90 rose, because the "
        "EfficientNets (depthwise convolutions, MFU 0.02-0.04) are predicted 4.6-8× too fast "
        "from dense CNNs and Transformer-XL large now borrows BERT-large's rate (+0.9); "
        "(5) a review found DLE's BERT-large phase-2 pre-training length-binned (bin size "
        "64: sequences/s of unknown length), so all its rows are held as suspect, and the "
        "EfficientNet rows above 8 GPUs span several DGX nodes (dropped: one instance "
        "only): LOWO 26.0 % → 21.5 %; (6) the same review found the folds leaked twins "
        "(BERT-large SQuAD kept BERT-large pre-training as a same-size donor, ResNet-50 v1.5 "
        "kept the TensorFlow ResNet-50), so a fold now removes the whole network: "
        "21.5 % → 27.4 % (the headline). "
        "Tried and removed: derived workloads times the donors' FLOP-rate trend with size; "
        "on the data before (4) it moved derived 17.4 % → 16.3 %, on the data after (4) it "
        "made it 22.3 % (19.2 % for transformers only): the trend across workloads mixes "
        "architecture with size. Tried and not kept: donors evaluated at the held-out "
        "row's software level (LOWO 32.6 % → 32.0 %, only because the median row moves: "
        "the transformer rows it changes got worse) or restricted to the row's source "
        "(35.7 %); CNN similarity on FLOPs per parameter (CNN rows worse); dropping the "
        "same-attention-kernel partition (LOWO 40.7 % → 61.5 %: borrowing the SDPA LLMs' "
        "FLOP rate puts BERT and the Transformer-XLs 1.5 to 4.4 times too fast); a derived "
        "workload's micro-batch counted in tokens of its own sequence length (derived "
        "17.4 % → 29.3 %). (7) Arithmetic intensity for CNNs. On the roofline a "
        "kernel's FLOP rate is its intensity × bandwidth while memory-bound and the peak once "
        "compute-bound, and CNNs span 20× in forward FLOPs per activation element "
        "(`forward_intensity`, fvcore activation counts as timm publishes them: "
        "EfficientNet-B0 114, ResNet-50 736, VGG-16 2,282). A CNN with an activation count "
        "borrows only from CNNs with one, weighted by intensity similarity instead of FLOPs "
        "size, each donor's rate moved along the slope of log FLOP rate on log intensity "
        f"(`INTENSITY_SLOPE` {cal.intensity_slope}: one point per workload, its mean "
        "residual against the FLOP-rate model, shrunk towards 0 by a prior of standard "
        "deviation 0.5 and clipped to the roofline's [0, 1]; refitted in every LOWO fold, "
        "0.62-0.88 across them). On the final data and folds (after (5) and (6)) it takes "
        "LOWO 27.4 % → 23.2 % (mean → 39.6 %, p90 → 86.0 %, per-workload median 40.9 % → "
        "27.2 %); measured by its author before (5) and (6): LOWO median 26.0 % → 26.0 %, "
        "mean 62.8 % → 49.9 %, p90 "
        "153.7 % → 119.1 %, coverage 78.1 % → 80.8 % (the flops_model range 0.51-2.10 → "
        "0.58-1.85, which also moves the LLM protocols' coverage: leave-one-GPU-out 82.5 % → "
        "80.7 %, leave-one-workload-out 85.4 % → 78.4 %); in median log(predicted/actual) "
        "EfficientNet-B0/B4 +2.10/+1.53 → +0.49/+0.16, VGG-16 −1.01 → −0.32, ResNet-50 "
        "(tf_cnn_benchmarks) −0.48 → −0.31, ResNet-152 −0.28 → −0.23, but Inception v3/v4 "
        "−0.23/−0.00 → +0.29/+0.45 (high intensity, 1,274/1,629, without VGG-16's rate: one "
        "slope through nets whose kernels differ in more than intensity) and ResNet-50 v1.5 "
        "−0.13 → +0.03; derived and every other figure unchanged. Tried and not kept: the "
        "roofline's own shape (rate ∝ I/(I + I₀), the ridge I₀ fitted per fold: LOWO "
        "26.4 % / mean 49.7 % / p90 119.1 %), FLOPs-size weights with the slope (26.5 % / "
        "49.8 % / 119.1 %), donors without an activation count (AlexNet) kept unshifted "
        "(26.1 % / 51.3 % / 132.2 %), intensity weights without the slope (25.7 % / 56.1 % / "
        "149.8 %: the EfficientNets stay 2.8-5.4× too fast). What remains is "
        "workload-specific: AlexNet (no activation count, so the FLOPs-size rule) reaches "
        "3.6× the FLOP rate of the other CNNs, the Inceptions now come out 1.3-1.6× too "
        "fast.",
        "",
        "Round 5 (issue 8, derived workloads; each change measured on every protocol when "
        "it landed; the current figures are the headline table's): (8) `lookup_params`, a "
        "workload field: the parameters a token only looks up, left out of the FLOPs count. "
        "Transformer-XL's adaptive embedding and softmax (DLE `proj_adaptive_softmax.py`: "
        "every token is projected onto the 19,997-word head cluster, only the tokens whose "
        "target falls in a tail cluster onto it) had counted base's whole 267,735 × 512 "
        "table as matmul weights: base multiplies 65.1M of its 192.0M parameters per token, "
        "large 268.4M of 285.2M (seed_data/workloads.md). Alone this made derived 17.4 % → "
        "57.1 % (base from large +0.68, large from base −0.99 in median log error): the "
        "overcount had hidden that the narrower base reaches a lower share of the peak "
        "(median MFU in the table above). (9) Width efficiency (`width_efficiency`): per "
        "token and layer a transformer's matmuls cost 24·h² FLOPs and the memory-bound work "
        "around them moves bytes ∝ h, so its MFU goes as h / (h + h₀), h the width its "
        "multiplied parameters make (`matmul_width`, √(N / 12L), so that a hidden_size "
        "changed without its parameters moves no efficiency). "
        f"`WIDTH_H0` {cal.width_h0} is fitted (`fit_width_h0`) on the log rate ratios "
        f"of the {len(width_pairs(ds))} pairs of transformer networks of one architecture "
        "measured under the same conditions (GPU, suite, precision, GPU count; a multi-GPU "
        "row at its 1-GPU rate, the modelled data-parallel efficiency divided out), one "
        "point per pair of networks at their sequence lengths (round 6); most pairs are MPT "
        "sizes, and the one Transformer-XL pair alone "
        f"would give {best_width_h0(txl_pairs(ds)):.0f}. It is refitted on the training rows "
        "of every fold of every protocol (without the target's network in the derived and "
        f"leave-one-workload-out folds: {width_fold_range(ds)}). A derived workload is "
        "scaled by it next to the FLOPs ratio, and a transformer donor's rate in the FLOPs "
        "model is moved by it, as a CNN donor's is moved along the intensity slope (since "
        "round 6 on the matmul FLOPs only: (12)). (10) The "
        "micro-batch carried between networks in matmul rows (tokens × width, "
        "`matmul_rows_per_sample`): a derived workload's micro-batch is read on the "
        "reference's measured batch curve at the same tokens × width (a fraction of a "
        "sample where the reference is wider), and the FLOPs model takes its donors' batch "
        "effect out and the workload's in by one law in those units (`PooledData.b0_work`). "
        "A measured group keeps its b0 in tokens: in matmul rows it took leave-one-GPU-out "
        "p90 29.6 % → 31.2 %. Counted in tokens alone derived was 17.4 % (Transformer-XL "
        "large −0.25, base +0.17); in matmul rows 12.8 %. (11) A transformer in the FLOPs "
        "model borrows from donors of its own architecture (decoder, encoder, ViT) and "
        "attention kernel where there are any (a decoder Transformer-XL had borrowed the "
        "encoders' BERT rate, three times its own). Derived folds now also refit the FLOPs "
        "model's constants without the target's network and drop its whole network from the "
        "data (they had dropped only its own label). With (8)-(11) and a review's fixes "
        "(the width from the parameters, 1-GPU rates in the width fit, one batch law inside "
        "the FLOPs model, the width refitted per fold everywhere): derived 17.4 % → 12.2 %, "
        "leave-one-workload-out 23.2 % → 21.5 % (mean 39.6 % → 25.8 %, p90 86.0 % → 49.2 %, "
        "per-workload median 27.2 % → 24.8 %), LLM leave-one-workload-out 19.0 % → 15.8 %, "
        "leave-one-GPU-out and leave-one-architecture-out within 0.1 point. Tried and not "
        "kept: a CNN derived workload moved along the intensity slope as well (ResNet-152 "
        "−0.15 → +0.11, Inception v4 −0.07 → +0.14 in median log error; derived 12.8 % → "
        "13.4 %). What keeps derived above 10 %: Transformer-XL large and base at −0.11 / "
        "+0.09 in median log error, 13 % / 20 % median APE (the pair's width effect is "
        "steeper than the MPT sizes' that their folds fit), Llama 3.1 8B −0.27 (torchtune "
        "single-GPU fine-tuning of Llama 3.2 3B carried to torchtitan pre-training on 8-128 "
        "H100s, its fp8 rows at the 16-bit rate: a workload never measured at fp8 has no "
        "known fp8 gain), Llama 2 13B +0.89 (NeMo fp8 on H100 carried to torchtitan on 64 "
        "A100s), MPT-30B +0.17, ResNet-152 −0.15.",
        "",
        "Round 6 (a review of round 5): (12) the width efficiency had divided every FLOP, "
        "attention's too, so at a long sequence (attention FLOPs dominating) more parameters "
        "at the same depth made a model faster (GPT-2 124M's 12 layers at sequence 8,192 on "
        "an A100: 0.05× its parameters 9.0 samples/s, 0.5× 14.5). The memory-bound work it "
        "stands for grows with tokens and width, not with the sequence, so it is now charged "
        "to the 6N part only: time ∝ 6N·(1 + h₀/h) + attention FLOPs "
        "(`width_weighted_flops`), for derived workloads, FLOPs-model donors and the "
        "`WIDTH_H0` fit alike (a property test sweeps the parameters at sequence 1,024 and "
        "8,192). The fit's pairs are now one point per pair of networks at one sequence "
        "length each (they had averaged log MFU over a network's sequence lengths, which the "
        "attention share moves) and never one network at two lengths (BERT-large fine-tuned "
        "vs pre-trained). With it: derived 12.2 % → 12.4 %, leave-one-workload-out 21.5 % → "
        "20.5 % (mean 25.8 % → 25.6 %, p90 49.2 % → 50.4 %), LLM leave-one-workload-out "
        "15.8 % → 17.1 %, leave-one-GPU-out and leave-one-architecture-out unchanged. The "
        "Transformer-XL pair, read directly (57 cells of one GPU, suite and precision with "
        "both batches stated): base's tokens/s is 2.0-2.4× large's (median 2.2×, 19 cells) "
        "where large runs micro-batch 24-48, 2.2-3.9× (median 2.9×, 29 cells) where it runs "
        "2-8. The former is close to the ratio of their matmul widths (1.9×: "
        "large reaches twice base's MFU, as if nearly all of base's time were the memory-"
        "bound work, h₀ ≫ h), which the MPT sizes' h₀ (about 900) cannot give; the latter "
        "is a batch effect no per-network law here carries (counting it in tokens instead of "
        "matmul rows moved derived 12.4 % → 19.6 %). No other eager-attention pair is "
        "measured under one suite, so no fold can learn an eager kernel's h₀ apart. "
        "(13) A derived estimate never claims more FLOP/s than the datasheet peak (Llama 2 "
        "13B from the 7B preset, measured only at fp8 on H100s, had come out at 1.4× an "
        "A100's bf16 peak: +0.89 → +0.46 in median log error, derived median unchanged); "
        "the FLOPs model's cap at the highest measured MFU was tried there too and not kept "
        "(Llama 3.1 8B's own torchtune rows hold that maximum, so its fold's cap is 0.52 and "
        "its rows fell −0.26 → −0.35). (14) Counts given for a shape (params, lookup_params, "
        "vocab_size) that leave fewer than half the parameters its layers × width blocks "
        "hold are a 400: below that the width, and with it the batch fill, went to zero, so "
        "more parameters had come out faster (a property test sweeps 0.5×-4× of the blocks "
        "on the FLOPs model and two derived presets, at sequence 8,192 and micro-batch 1). "
        "Tried and not kept: attention FLOPs at the width efficiency of hidden_size "
        "(`WIDTH_H0` refit 617): derived 12.4 % → 12.9 %, leave-one-workload-out 20.5 % → "
        "21.8 % (per-workload median 25.9 %), LLM leave-one-workload-out 17.1 % → 15.8 %. As "
        "kept, attention runs at the donors' matmul-peak share, so at sequences far beyond "
        "the measured ones (GPT-2 at 32,768 tokens) the implied MFU is high (0.87 on an "
        "A100); no measurement here pins it. (15) From a newcomer's probing: the peak cap of "
        "(13) applied to derived answers alone, so where the preset's own estimate already "
        "stood above the peak (Llama 2 7B extrapolated from H100 fp8 to an A100 at bf16, 1.3× "
        "its peak; precision switches on V100s at 2-2.4×) one more parameter cut the answer "
        "21-79 %. Now every estimate that stands on no measurement on the GPU (sibling, "
        "extrapolated, precision switch) is capped at the peak, and a derived one at the "
        "peak or its preset's own rate, whichever is higher (a property test adds 10⁶ "
        "parameters to two such presets): leave-one-GPU-out 8.2 % → 8.3 % (p90 29.6 % → "
        "29.0 %), leave-one-architecture-out 14.4 % → 14.5 %, LLM leave-one-GPU-out 21.8 % → "
        "21.0 %, derived and leave-one-workload-out unchanged. An encoder preset now keeps "
        "its own token table (vocab × hidden) when vocab_size or hidden_size changes, as a "
        "Transformer-XL preset keeps its lookup_params: a wider BERT on the preset's "
        "parameters had lost multiplied parameters to the growing table and come out up to "
        "3.2× faster. A preset recast as another family (MPT-1B as a CNN) keeps its own "
        "micro-batch instead of a fraction of a sample (it came out at 1.5e-5 samples/s). "
        "(16) A range's high end stops at the datasheet peak (unless the estimate itself "
        "stands above it). Tried and not kept: the cap at the family's highest measured MFU "
        "times the batch curve's share at the micro-batch (so that a capped answer still "
        "gains with the micro-batch; as kept, a capped answer is the same at every "
        "micro-batch that stays capped): LLM leave-one-GPU-out 21.0 % → 19.5 % but its "
        "coverage 84.8 % → 86.0 %, out of the 75-85 % band the ranges are held to.",
        "",
    ]
    out += multi_lines

    out += [
        *memory_lines,
        "### Benchmark rows with a peak-memory figure",
        "",
        "Benchmark rows with a peak-memory figure. Lambda v0 rows are nvidia-smi readings of "
        "GPUs whose batch was tuned to fill memory (the caching allocator holds more than the "
        "job needs, so they are upper bounds); their non-transformer rows are in-sample (the "
        "per-sample activation slope is fitted on them). torchtitan rows use selective "
        "activation checkpointing. The torchtune README rows are memory cases (T- rows above).",
        "",
        f"Out-of-sample benchmark rows: median APE "
        f"{pct(ape_stats([c.ape for c in bench_mem if not c.in_sample and c.ape])[0])}; "
        f"in-sample (fitted) rows: "
        f"{pct(ape_stats([c.ape for c in bench_mem if c.in_sample and c.ape])[0])}. These "
        "runs all completed, yet "
        f"{sum(not c.right_side for c in bench_mem)} of {len(bench_mem)} are called `high` "
        "(10 of 81 before the OOM boundary was refitted on the timm ViT and CNN cases, round 5: "
        "the boundary is fitted across families, so one family's cases move every family's "
        "verdicts).",
        "",
        *memory_table(bench_mem),
        "",
        "## Plot",
        "",
        "![predicted vs measured](accuracy.png)",
        "",
    ]
    return "\n".join(out), numbers, lg, lw


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    ds = load_dataset(PROJECT_ROOT / "seed_data")
    report, numbers, lg, lw = build_report(ds)
    args.out.mkdir(exist_ok=True)
    (args.out / "accuracy.md").write_text(report, encoding="utf-8")
    if not args.no_plot:
        plot(lg, lw, args.out / "accuracy.png")
    width = max(len(k) for k in numbers)
    for key, value in numbers.items():
        target = TARGETS.get(key)
        shown = pct(value) if key not in ("memory_cases", "memory_groups") else f"{value:.3g}"
        suffix = ""
        if target is not None:
            verdict = "met" if value <= target else "NOT MET"
            suffix = f"  (target ≤ {pct(target)}: {verdict})"
        elif key.endswith("_coverage"):
            lo, hi = COVERAGE_TARGET
            ok = "met" if lo <= value <= hi else "NOT MET"
            suffix = f"  (target {pct(lo)}-{pct(hi)}: {ok})"
        print(f"{key:<{width}}  {shown}{suffix}")
    print(f"wrote {args.out / 'accuracy.md'} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
