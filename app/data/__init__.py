"""The one reader of ``seed_data/*.csv``.

:mod:`app.data.rows` holds a typed row schema per seed file and :func:`app.data.rows.read_rows`,
which reads a file into those rows (a bad cell fails naming the file, line and column);
:mod:`app.data.load` turns the rows into the estimation core's types (``GpuSpec``,
``BenchmarkPoint``, presets, rates). Seeding (:mod:`app.db.seed`), serving
(:mod:`app.services.reference`) and calibration (:mod:`app.calibrate.dataset`) all read
through here, so they see the same values (tests/test_calibrate_same_data.py).

Imports nothing of the database, services or HTTP layers (pyproject.toml, import-linter).
"""
