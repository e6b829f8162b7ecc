"""Offline calibration and validation of the estimators against the seeded measurements.

``dataset`` reads the seed CSVs; ``fit`` derives every constant of the ``throughput``
section of ``app/model/calibration.json`` (``python tools/fit_constants.py``; ``store``
writes a section, ``memory_fit`` the ``memory`` one); ``validate`` cross-validates
the estimators (``python -m benchmarks.accuracy``). Both go through the same pure core the
API uses. Nothing here runs in the web service.
"""
