"""Write docs/mfu_table.md: the credible-MFU table and every measured row behind it.

Run from the repository root: ``python tools/mfu_table.py [--check]``. The table is
``mfu_range`` of app/model/calibration.json (``tools/fit_constants.py`` fits it with
:func:`app.calibrate.mfu_fit.fit_mfu_range`); this lists, per cell, the rows that count
(source, workload, GPU × count, precision, MFU, HFU) and the rows held for an implausible
MFU with the reason. ``--check`` exits 1 when the committed file differs.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from written_file import write_or_check

from app.calibrate.dataset import load_dataset
from app.calibrate.mfu_fit import (
    MfuRow,
    adapter_rows,
    fit_fp8_gain,
    fit_mfu_range,
    fp8_pairs,
    mfu_rows,
)
from app.model.mfu import MIN_ADAPTER_SOURCES
from app.settings import PROJECT_ROOT

TARGET = PROJECT_ROOT / "docs" / "mfu_table.md"


def _cell(key: str) -> str:
    """A ``family|size|class`` key as a table can show it (``transformer · 1B-20B · 16``)."""
    return key.replace("|", " · ")


def _row(r: MfuRow) -> str:
    p = r.point
    return (
        f"| {p.id} | {p.source} | {p.workload} ({p.method}) | {p.gpu} × {p.gpu_count} | "
        f"{p.precision.value} | {r.mfu:.3f} | {r.hfu:.3f} |"
    )


def render(seed_dir: Path) -> str:
    """The document's text."""
    ds = load_dataset(seed_dir)
    table = fit_mfu_range(ds)
    rows = list(mfu_rows(ds))
    lines = [
        "# Credible MFU per family, size and precision",
        "",
        "Written by `python tools/mfu_table.py` from `seed_data/benchmarks*.csv`; do not edit.",
        "MFU = model FLOPs per sample (6N per token for full training, 4N for LoRA/QLoRA, plus",
        "12·L·h·s attention; no recompute) × samples/s per GPU ÷ the dense datasheet peak at",
        "the precision run; HFU counts the recomputed forward of activation checkpointing.",
        "Rates are tuned rates: an eager-class row's rate (timm's sheets) is divided by its",
        'class\'s fitted efficiency (`stack_efficiency`, docs/model.md "The training stack").',
        "Every answer is held below its cell's highest MFU and HFU (docs/model.md#throughput).",
        "Rows above `app/model/mfu.py` IMPLAUSIBLE_MFU (transformers 0.75, others 1.0) are",
        "held out of the data, listed at the end with the reason.",
        "",
        "Cells: family · size (parameters) · precision class (32: fp32/tf32, 16, 8: fp8).",
        "A transformer cell's LoRA/QLoRA rows also form its `adapter` cell where they come",
        f"from at least {MIN_ADAPTER_SOURCES} sources; it holds LoRA/QLoRA answers too (their MFU",
        "counts 4N per token and the adapters' own matmuls and the base's casts take time it",
        "does not count). Adapter rows of fewer sources form no cell (listed at the end): one",
        "source's runs are one configuration, not a range; the size cell alone bounds them.",
        "",
        "| cell | p10 MFU | median | highest MFU | highest HFU | rows |",
        "|---|---|---|---|---|---|",
    ]
    for key, (p10, mid, top, hfu, n) in table.items():
        lines.append(f"| {_cell(key)} | {p10:.3f} | {mid:.3f} | {top:.3f} | {hfu:.3f} | {n} |")
    by: dict[str, list[MfuRow]] = defaultdict(list)
    held = []
    for r in rows:
        (by[r.key] if r.held is None else held).append(r)
    for key in list(by):
        by[key + "|adapter"] = adapter_rows(key, by[key])
    for key in table:
        lines += [
            "",
            f"## {_cell(key)}",
            "",
            "| id | source | workload | GPU × count | precision | MFU | HFU |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [_row(r) for r in sorted(by[key], key=lambda r: -r.mfu)]
    lines += [
        "",
        "## Held: implausible MFU",
        "",
        "| id | source | workload | GPU × count | precision | MFU | HFU |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for r in sorted(held, key=lambda r: -r.mfu)]
    lone = [k for k, v in by.items() if k.endswith("|adapter") and v and k not in table]
    lines += [
        "",
        f"## Adapter rows of fewer than {MIN_ADAPTER_SOURCES} sources: no cell",
        "",
        "| cell it would form | id | source | workload | GPU × count | precision | MFU | HFU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(lone):
        lines += [f"| {_cell(key)} " + _row(r) for r in sorted(by[key], key=lambda r: -r.mfu)]
    median, top, n = fit_fp8_gain(ds)
    lines += [
        "",
        "## fp8 over 16-bit: measured pairs of one job",
        "",
        "The same source, GPU, GPU count, interconnect, workload, method, sequence length and",
        "micro-batch",
        "measured at fp8 and at 16 bits (the best row of each side where a configuration",
        f"sweep gives several). Gain: median ×{median:.2f}, highest ×{top:.2f} over {n} pairs",
        "(`fp8_gain` of the calibration): an fp8 answer that stands on no fp8 measurement of",
        "its GPU is held to the highest × the 16-bit answer and warned `fp8_gain_extrapolated`.",
        "",
        "| fp8 id | 16-bit id | source | workload | GPU × count | seq | micro-batch | gain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in fp8_pairs(ds):
        p = x.fp8
        lines.append(
            f"| {p.id} | {x.sixteen.id} | {p.source} | {p.workload} ({p.method}) | "
            f"{p.gpu} × {p.gpu_count} | {p.seq_len or ''} | {p.batch_size_per_gpu or ''} | "
            f"{x.ratio:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    text = render(PROJECT_ROOT / "seed_data")
    write_or_check(TARGET, text, check=args.check, what="docs/mfu_table.md")


if __name__ == "__main__":
    main()
