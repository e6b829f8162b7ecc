"""Fit every constant of the ``throughput`` section of app/model/calibration.json from
seed_data/ and write that section (the ``memory`` section is tools/fit_memory.py's).

Run from the repository root: ``python tools/fit_constants.py [--check]``. ``--check`` writes
nothing and exits 1 when the refit differs from the committed constants by more than the
refit tolerance (:data:`REL_TOL`, :data:`ABS_TOL`), printing each difference.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.calibrate.dataset import load_dataset
from app.calibrate.fit import fit_all
from app.calibrate.store import differences, jsonable, read_document, seed_sha256, write_section
from app.model.calibration import CALIBRATION_PATH
from app.settings import PROJECT_ROOT

#: Refit tolerance of ``--check``: every constant is rounded by the fit (4 decimals for
#: ratios, whole bytes, grid points), so a faithful refit agrees to well within 1e-6 relative;
#: 1e-9 absolute lets a constant that is 0 stay 0 up to float noise.
REL_TOL = 1e-6
ABS_TOL = 1e-9


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--seed-dir", type=Path, default=PROJECT_ROOT / "seed_data")
    parser.add_argument("--out", type=Path, default=CALIBRATION_PATH)
    args = parser.parse_args()
    constants = jsonable(fit_all(load_dataset(args.seed_dir)))
    if args.check:
        committed = read_document(args.out).get("throughput", {}).get("constants", {})
        diffs = differences(committed, constants, REL_TOL, ABS_TOL)
        for line in diffs:
            print(line)
        print("fitted constants differ" if diffs else "fitted constants are up to date")
        sys.exit(1 if diffs else 0)
    body = {"data_sha256": seed_sha256(args.seed_dir), "constants": constants}
    changed = write_section("throughput", body, "constants", args.out)
    print(f"wrote {args.out}" if changed else f"{args.out} unchanged")


if __name__ == "__main__":
    main()
