"""Fit the memory model's constants on seed_data/memory_cases.csv and write the ``memory``
section of app/model/calibration.json (``--check``: write nothing, exit 1 when the refit
differs from the committed constants by more than :data:`REL_TOL` / :data:`ABS_TOL`).

Run: ``python tools/fit_memory.py``. Method: app/calibrate/memory_fit.py (fit_params).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.calibrate.dataset import load_dataset  # noqa: E402
from app.calibrate.memory_fit import fit_params, load_cases  # noqa: E402
from app.calibrate.store import (  # noqa: E402
    differences,
    read_document,
    seed_sha256,
    write_section,
)
from app.model.calibration import CALIBRATION_PATH  # noqa: E402

#: Refit tolerance of ``--check``: the constants are grid points (6 decimals kept), so a
#: faithful refit lands on the same point; 1e-9 absolute for constants at 0.
REL_TOL = 1e-6
ABS_TOL = 1e-9


def refit(seed_dir: Path) -> dict[str, Any]:
    """The memory section fitted on every in-scope case of ``seed_dir``."""
    cases = load_cases(load_dataset(seed_dir))
    params = fit_params(cases)
    return {
        "data_sha256": seed_sha256(seed_dir),
        "cases": sum(c.in_scope for c in cases),
        "params": {k: round(v, 6) for k, v in asdict(params).items()},
    }


def main() -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--seed-dir", type=Path, default=ROOT / "seed_data")
    parser.add_argument("--out", type=Path, default=CALIBRATION_PATH)
    args = parser.parse_args()
    body = refit(args.seed_dir)
    if args.check:
        committed = read_document(args.out).get("memory", {})
        diffs = differences(
            {"cases": committed.get("cases"), "params": committed.get("params")},
            {"cases": body["cases"], "params": body["params"]},
            REL_TOL,
            ABS_TOL,
        )
        for line in diffs:
            print(line)
        if diffs:
            print(f"{args.out}: memory constants are stale: run python tools/fit_memory.py")
        return 1 if diffs else 0
    changed = write_section("memory", body, "params", args.out)
    print(f"wrote {args.out}" if changed else f"{args.out} unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
