"""Memory section of ``python -m benchmarks.accuracy``: leave-one-source-out on the
published cases (``seed_data/memory_cases.csv``), through the served memory core.

Protocol: app/calibrate/memory_fit.py. Run alone: ``python -m benchmarks.memory_accuracy``.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

from app.calibrate.dataset import Dataset, load_dataset
from app.calibrate.memory_fit import (
    CaseResult,
    Summary,
    leave_one_source_out,
    load_cases,
    summarize,
)
from app.calibrate.validate import memory_checks
from app.model.calibration import load_calibration
from app.settings import PROJECT_ROOT

#: Issue 9 targets.
TARGETS = {"median_ape": 0.12, "oom_recall": 0.90, "fit_specificity": 0.90}
#: Public real runs (``../shared/real_runs``, scored by its ``score.py``) the model still gets
#: wrong, each with its cause (issue 24); kept by hand, since the scorer reads a running server.
REAL_RUN_MISSES = Path(__file__).with_name("real_run_misses.md")

#: Source groups whose peaks the project's own stacks measured (issue 24: median ≤ 10 %).
OWN_GROUPS = ("torchtune-readme", "torchtune-987", "litgpt-resource-tables")
OWN_TARGET = 0.10
#: The published 1x RTX 4090 peak of torchtune's single-device 8B full fine-tune (T-11).
TARGET_CASE = "T-11"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def _row(name: str, s: Summary) -> str:
    return (
        f"| {name} | {_pct(s.median_ape)} | {_pct(s.p90_ape)} | {_pct(s.under_fraction)} | "
        f"{s.n_sized} | {_pct(s.oom_recall)} ({s.n_oom}) | {_pct(s.fit_specificity)} ({s.n_fit}) |"
    )


def own_peak_errors(ds: Dataset, inside: list[CaseResult]) -> list[float]:
    """|predicted / observed − 1| of the peaks measured with torchtune and LitGPT (held out
    by source group) and of torchtitan's benchmark rows with a peak (``memory_checks``)."""
    errors = [r.ape for r in inside if r.case.group in OWN_GROUPS and r.ape is not None]
    for check in memory_checks(ds):
        if "(torchtitan)" in check.description and check.observed_gib:
            errors.append(abs(check.predicted_gib / check.observed_gib - 1))
    return errors


def memory_section(ds: Dataset) -> tuple[list[str], dict[str, float], list[CaseResult]]:
    """Markdown lines, headline numbers and the held-out predictions."""
    cases = load_cases(ds)
    res = leave_one_source_out(cases)
    inside = [r for r in res if r.case.in_scope]
    head = summarize(inside)
    target = next((r for r in res if r.case.case_id == TARGET_CASE), None)
    numbers = {
        "memory_median": head.median_ape,
        "memory_p90": head.p90_ape,
        "memory_under": head.under_fraction,
        "memory_oom_recall": head.oom_recall,
        "memory_fit_specificity": head.fit_specificity,
        "memory_cases": float(len(cases)),
        "memory_groups": float(len({c.group for c in cases})),
        "memory_t11_ape": target.ape if target and target.ape is not None else math.nan,
    }

    def verdict(key: str, value: float, le: bool) -> str:
        ok = value <= TARGETS[key] if le else value >= TARGETS[key]
        return "met" if ok else "**not met**"

    lines = [
        "## Memory (leave-one-source-out)",
        "",
        f"{len(cases)} published cases from {numbers['memory_groups']:.0f} independent sources "
        f"(`seed_data/memory_cases.csv`, `source_group`); {len(inside)} describe set-ups the "
        "model covers. Each source group is predicted with the constants of "
        "the `memory` section of `app/model/calibration.json` refitted without it "
        "(`app/calibrate/memory_fit.py`; "
        "served constants: `python tools/fit_memory.py`). Figures are like for like: "
        "`alloc`/`active` = allocated bytes, `reserved` = allocated × allocator slack, `smi` "
        "= reserved + CUDA context (+ NCCL). OOM recall: OOM runs called `high`; fit "
        "specificity: runs that fit not called `high`.",
        "",
        "| check | result | target | verdict |",
        "|---|---|---|---|",
        f"| median peak APE | {_pct(head.median_ape)} | ≤ 12 % | "
        f"{verdict('median_ape', head.median_ape, True)} |",
        f"| OOM recall | {_pct(head.oom_recall)} of {head.n_oom} | ≥ 90 % | "
        f"{verdict('oom_recall', head.oom_recall, False)} |",
        f"| fit specificity | {_pct(head.fit_specificity)} of {head.n_fit} | ≥ 90 % | "
        f"{verdict('fit_specificity', head.fit_specificity, False)} |",
    ]
    own = own_peak_errors(ds, inside)
    own_median = statistics.median(own) if own else math.nan
    numbers["memory_own_median"] = own_median
    lines.append(
        f"| project's own measured peaks (torchtune, LitGPT held out; torchtitan benchmark "
        f"rows) | {_pct(own_median)} over {len(own)} | ≤ 10 % | "
        f"{'met' if own_median <= OWN_TARGET else '**not met**'} |"
    )
    if target:
        ok = (target.ape or 1) <= 0.15 and target.risk != "high"
        lines.append(
            f"| llama31-8b-full-single-device on 1x RTX 4090 ({TARGET_CASE}, published "
            f"{target.case.observed_gib} GiB) | {target.predicted_gib:.1f} GiB "
            f"({_pct(target.ape or math.nan)}), risk {target.risk} | within 15 %, not high | "
            f"{'met' if ok else '**not met**'} |"
        )
    lines += [
        "",
        f"p90 APE {_pct(head.p90_ape)}; underestimates {_pct(head.under_fraction)} of the "
        f"cases with a number; fitting runs called `low` {_pct(head.fit_low)}.",
        "",
        "| family / metric | median APE | p90 APE | under | n | OOM recall (n) | fit "
        "specificity (n) |",
        "|---|---|---|---|---|---|---|",
    ]
    by: dict[str, list[CaseResult]] = defaultdict(list)
    for r in inside:
        by[r.case.family].append(r)
        by[f"metric: {r.case.metric}"].append(r)
    for key in sorted(by):
        lines.append(_row(key, summarize(by[key])))
    lines.append(_row("**all in scope**", head))
    served = load_calibration().memory
    lines += [
        "",
        "Vision and diffusion families: `CNN` = classification CNNs (NVIDIA DLE ResNet-50 and "
        "(SE-)ResNeXt-101 per-GPU batch sizes and timm's RTX 3090 train benchmark for "
        "ResNet-18…200, ResNeXt, SE-ResNeXt, wide ResNets and VGG-11…19: fits/OOM only). "
        "Every CNN row carries timm's published forward activation count (`infer_macts`, "
        "fvcore: convolution and matmul outputs), so its activations are bytes per activation "
        "element × count × micro-batch; no CNN row has a peak figure, so that constant keeps "
        "its prior, Lambda's ResNet-50 slope ÷ ResNet-50's 11.11 M elements, and these rows "
        "test it out of sample. `ViT` = timm's plain ViTs (tiny…giant, "
        "patch 8–32, 224/384 px) on the same benchmark, fits/OOM only (the transformer formula "
        "on (image / patch)² + 1 tokens without Korthikanti's dropout masks, timm's benchmark "
        "trains at drop rate 0; nothing fitted on them but the OOM boundary; the per-element "
        "rule with the CNN prior, tried instead, gave ViT fit specificity 83.3 % and OOM recall "
        "85.7 % held out, so ViTs keep the formula); "
        "`detection` = FPN two-stage "
        "and RetinaNet detectors from the detectron2 and mmdetection model zoos (activations "
        "per backbone GFLOP at the input pixels; each zoo is predicted with the constant fitted "
        "on the other); `diffusion` = the SD 1.x UNet with its frozen text encoder, VAE and "
        "EMA copy (PEFT README peaks, diffusers README fits/OOM statements; the peaks all come "
        "from one source, so held out they are predicted with the prior). Served activation "
        "constants, "
        "bytes per GFLOP at 16-bit activations: CNN "
        f"{served.cnn_activation_bytes_per_gflop / 1e6:.2f} M, detection "
        f"{served.detection_activation_bytes_per_gflop / 1e6:.2f} M, diffusion "
        f"{served.diffusion_activation_bytes_per_gflop / 1e6:.2f} M (CNNs without an "
        "activation count); CNNs with one: "
        f"{served.cnn_activation_bytes_per_element:.2f} B per activation element. "
        "Rows held for review "
        "(`review: …`) are published facts the model "
        "misses that stay out of the pinned headline until reviewed; they are listed with the "
        "out-of-scope rows.",
    ]
    out_scope = [r for r in res if not r.case.in_scope]
    if out_scope:
        lines += ["", _row_header_out(), "|---|---|---|"]
        groups: dict[str, list[CaseResult]] = defaultdict(list)
        for r in out_scope:
            groups[r.case.scope].append(r)
        for scope, rows in sorted(groups.items()):
            s = summarize(rows)
            lines.append(
                f"| {scope[:110]} | {len(rows)} | OOM recall {_pct(s.oom_recall)} ({s.n_oom}), "
                f"fit specificity {_pct(s.fit_specificity)} ({s.n_fit}), median APE "
                f"{_pct(s.median_ape)} |"
            )
    review = [r for r in out_scope if r.case.scope.startswith("review")]
    if review:
        lines += [
            "",
            "Held for review (constants fitted on every in-scope case):",
            "",
            "| case | source | family | GPU | outcome | predicted GiB | risk | P(OOM) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in review:
            c = r.case
            prob = f"{r.probability:.3f}" if r.probability is not None else "–"
            lines.append(
                f"| {c.case_id} | {c.group} | {c.family} | {c.gpu} | {c.outcome} | "
                f"{r.predicted_gib:.2f} | {r.risk or '–'} | {prob} |"
            )
    lines += ["", REAL_RUN_MISSES.read_text(encoding="utf-8").rstrip("\n")]
    lines += [
        "",
        "| case | source | family | GPU | metric | observed GiB | outcome | predicted GiB | "
        "risk | APE |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(inside, key=lambda r: (r.case.group, r.case.case_id)):
        c = r.case
        obs = f"{c.observed_gib:.2f}" if c.observed_gib is not None else "–"
        wrong = (c.outcome == "oom") != (r.risk == "high") if r.risk else False
        risk = f"**{r.risk}**" if wrong else (r.risk or "–")
        lines.append(
            f"| {c.case_id} | {c.group} | {c.family} | {c.gpu} | {c.metric} | {obs} | "
            f"{c.outcome} | {r.predicted_gib:.2f} | {risk} | "
            f"{_pct(r.ape) if r.ape is not None else '–'} |"
        )
    lines.append("")
    return lines, numbers, res


def _row_header_out() -> str:
    return (
        "Out-of-scope rows and rows held for review (reported, not in the headline):\n\n"
        "| scope | cases | result |"
    )


def main() -> None:
    """Print the memory section."""
    lines, numbers, _ = memory_section(load_dataset(PROJECT_ROOT / "seed_data"))
    print("\n".join(lines))
    for k, v in numbers.items():
        print(f"{k}: {v:.4g}")


if __name__ == "__main__":
    main()
