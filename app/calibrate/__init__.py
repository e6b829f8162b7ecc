"""Offline calibration and validation of the estimators against the seeded measurements.

``dataset`` reads the seed CSVs; ``fit`` derives every constant in
:mod:`app.model.fitted` (``python tools/fit_constants.py``); ``validate`` cross-validates
the estimators (``python -m benchmarks.accuracy``). Both go through the same pure core the
API uses. Nothing here runs in the web service.
"""
