"""Fit every constant of app/model/fitted.py from seed_data/ and rewrite that module.

Run from the repository root: ``python tools/fit_constants.py [--check]``. ``--check`` exits 1
when the committed module differs from what the data gives (CI-friendly).
"""

from __future__ import annotations

import argparse
import pprint
import sys
from pathlib import Path

from app.calibrate.dataset import load_dataset
from app.calibrate.fit import fit_all
from app.settings import PROJECT_ROOT

TARGET = PROJECT_ROOT / "app" / "model" / "fitted.py"

HEADER = '''"""Constants fitted from seed_data/ by ``python tools/fit_constants.py``; do not edit.

* ACTIVATION_BYTES_PER_SAMPLE: "label|16/32" -> (activation bytes per sample, reference
  image side or None, fixed bytes), from Lambda v0 peak memory (nvidia-smi) at several batches.
* CNN_ACTIVATION_BYTES_PER_GFLOP, CNN_ACTIVATION_BYTES_PER_ELEMENT (per forward activation
  element, fvcore count), DEFAULT_ACTIVATION_BYTES_PER_PARAM: fallbacks derived from those fits.
* MFU_PRIOR: median achieved MFU per "family|precision class" over single-GPU measurements.
* MFU_RANGE: "family|size|class" -> (10th percentile, median, highest MFU, highest HFU, rows)
  of the measured rows that pass app/model/mfu.py's plausibility limit: the credible bound
  of every answer (app/calibrate/mfu_fit.py; rows listed in docs/mfu_table.md).
* INTENSITY_SLOPE: per non-transformer family, slope of log achieved FLOP rate on log forward
  intensity (FLOPs per activation element), one point per workload, ridge-shrunk
  (app/calibrate/validate.py fit_intensity_slope).
* WIDTH_H0: h0 of a transformer's width efficiency h / (h + h0) on its 6N matmul FLOPs
  (time per sample ∝ 6N·(1 + h0/h) + attention FLOPs), least squares over the log rate ratios
  of pairs of networks measured under the same conditions (app/calibrate/validate.py
  fit_width_h0).
* QLORA_SLOWDOWN: geometric mean LoRA/QLoRA throughput ratio (same model, same GPU).
* COMM_OVERLAP, SCALING_LOSS_PER_DOUBLING: multi-GPU model (app/model/comm.py), fitted to
  the 2-512 GPU measurements weighted by their communication share.
* RANGE_FACTORS, MULTI_GPU_RANGE: 10th/90th percentiles of actual/predicted in
  served-path cross-validation, per situation and per basis (see app/calibrate/fit.py).
"""
'''


def render(constants: dict[str, object]) -> str:
    """The module text for ``constants`` (stable ordering, so re-runs are identical)."""
    lines = [HEADER]
    for name in sorted(constants):
        text = pprint.pformat(constants[name], width=100 - len(name) - 3, sort_dicts=True)
        lines.append(f"{name} = {text}\n")
    return "\n".join(lines)


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--seed-dir", type=Path, default=PROJECT_ROOT / "seed_data")
    args = parser.parse_args()
    text = render(fit_all(load_dataset(args.seed_dir)))
    if args.check:
        same = TARGET.read_text(encoding="utf-8") == text
        print("fitted constants are up to date" if same else "fitted constants differ")
        sys.exit(0 if same else 1)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
