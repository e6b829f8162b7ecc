"""Offline calibration and validation of the estimators against the seeded measurements.

``dataset`` reads the seed CSVs; ``fit`` derives every constant of the ``throughput``
section of ``app/model/calibration.json`` (``python tools/fit_constants.py``; ``store``
writes a section, ``memory_fit`` the ``memory`` one); ``validate`` cross-validates
the estimators (``python -m benchmarks.accuracy``). Both go through the same pure core the
API uses. Nothing here runs in the web service.
"""

import os

# The fits and cross-validation folds solve hundreds of small ridge regressions (a few
# hundred columns each); a multi-threaded BLAS spends longer starting threads than solving
# them, the more so on a shared machine (one pooled-model refit loop: 7.6 s → 2.8 s on a
# loaded 2-core box). Offline tools (tools/fit_constants.py, benchmarks.accuracy) import this
# package before numpy, so BLAS runs on one thread unless the environment says otherwise;
# where numpy is already loaded this changes nothing.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
