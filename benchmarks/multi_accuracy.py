"""Multi-GPU section of ``python -m benchmarks.accuracy``: the communication model of
:mod:`app.model.comm` on the measured multi-GPU rows, in-sample (1-GPU row × n × η) and at
the API's level with each GPU count and each link class held out
(:mod:`app.calibrate.multi_cv`). Run alone: ``python -m benchmarks.multi_accuracy``.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence

from app.calibrate.dataset import Dataset, load_dataset
from app.calibrate.multi_cv import leave_gpu_count_out, leave_link_class_out, pair_link_class
from app.calibrate.validate import Residual, ape_stats, multigpu_residuals
from app.model.calibration import load_calibration
from app.model.comm import link_table
from app.settings import PROJECT_ROOT

#: Issue 26: median APE of both held-out protocols.
TARGETS = {"multi_lgco_median": 0.12, "multi_llco_median": 0.12}


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def _table(res: Sequence[Residual], key: Callable[[Residual], str], title: str) -> list[str]:
    by: dict[str, list[Residual]] = defaultdict(list)
    for r in res:
        by[key(r)].append(r)
    out = [f"| {title} | median APE | p90 | rows |", "|---|---|---|---|"]
    for k in sorted(by):
        med, p90, n = ape_stats([r.ape for r in by[k]])
        out.append(f"| {k.lstrip('0')} | {_pct(med)} | {_pct(p90)} | {n} |")
    med, p90, n = ape_stats([r.ape for r in res])
    out.append(f"| **all** | **{_pct(med)}** | {_pct(p90)} | {n} |")
    return out


def multi_section(ds: Dataset) -> tuple[list[str], dict[str, float], list[Residual]]:
    """Report lines, headline numbers and the in-sample residuals of the multi-GPU model."""
    cal = load_calibration()
    multi = multigpu_residuals(ds)
    lgco = leave_gpu_count_out(ds)
    llco = leave_link_class_out(ds)
    numbers = {
        "multi_median": ape_stats([r.ape for r in multi])[0],
        "linear_median": ape_stats([r.baselines["linear"] / r.actual - 1 for r in multi])[0],
        "multi_lgco_median": ape_stats([r.ape for r in lgco])[0],
        "multi_llco_median": ape_stats([r.ape for r in llco])[0],
    }
    numbers["linear_median"] = statistics.median(
        abs(r.baselines["linear"] / r.actual - 1) for r in multi
    )
    table = link_table()
    bw = ", ".join(f"{c} {q} {v:g}" for (c, q), v in sorted(table.items()) if "busbw" in q)
    lines = [
        "## Multi-GPU model (2-1,024 GPUs)",
        "",
        "Each multi-GPU row runs over a named link class (`app/model/comm.py`: NVSwitch, "
        "NVLink bridge pairs, Infinity Fabric, PCIe peer-to-peer through a switch, PCIe "
        "through the host bridge, several machines over a network). Its efficiency is "
        "η = (1-κ)^log2(n) · t/(t + max(0, t_comm − overlap · hideable · t)), t the step's "
        "compute time, t_comm the bytes the strategy moves per step (DDP/ZeRO-1 all-reduce, "
        "ZeRO-2 reduce-scatter per micro-batch, ZeRO-3/FSDP all-gathers and reduce-scatter "
        "per micro-batch) over the published bus bandwidth (`seed_data/link_bandwidth.csv`: "
        f"{bw}) plus a per-call latency. Fitted (rows weighted by their communication share): "
        f"overlap {cal.comm_overlap}, κ {cal.scaling_loss_per_doubling} per doubling.",
        "",
        "In-sample, each row predicted as its suite's 1-GPU measurement × n × η:",
        "",
        *_table(multi, lambda r: r.basis, "link class"),
        "",
        f"Linear scaling (η = 1) median APE: {_pct(numbers['linear_median'])}.",
        "",
        "At the API's level (the served path, measured efficiencies of other counts and links "
        "included), each GPU count held out in turn (leave-one-GPU-count-out, target median "
        f"≤ {_pct(TARGETS['multi_lgco_median'])}):",
        "",
        *_table(lgco, lambda r: f"{r.row.gpu_count:04d}", "GPUs"),
        "",
        "Each link class held out in turn (its rows' answers from the published bandwidths and "
        "the constants fitted on the other classes; leave-one-link-class-out, target median "
        f"≤ {_pct(TARGETS['multi_llco_median'])}):",
        "",
        *_table(llco, lambda r: pair_link_class(ds, r.row), "link class"),
        "",
        f"Multi-GPU range factor (GPU counts not measured): {cal.multi_gpu_range[0]:.2f} – "
        f"{cal.multi_gpu_range[1]:.2f}.",
        "",
    ]
    return lines, numbers, multi


def main() -> None:
    """Print the section's numbers."""
    _, numbers, _ = multi_section(load_dataset(PROJECT_ROOT / "seed_data"))
    for key, value in numbers.items():
        print(f"{key:<20} {_pct(value)}")


if __name__ == "__main__":
    main()
