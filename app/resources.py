"""Where the installed package keeps its data: Alembic migrations and the seed CSVs.

The checkout's top-level ``migrations/`` and ``seed_data/`` folders are packaged as
``app.migrations`` and ``app.seed_data`` (``[tool.setuptools.package-dir]`` in pyproject.toml),
so a wheel, an editable install and a source checkout all find them through
``importlib.resources``, whatever the current directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _package_dir(package: str) -> Path:
    """The folder of ``package`` on disk.

    Raises:
        RuntimeError: the package is not installed as plain files (e.g. run from a zip), which
            Alembic and the CSV loaders need.
    """
    root = files(package)
    if not isinstance(root, Path):
        raise RuntimeError(f"{package} is not installed as files on disk ({root!r})")
    return root


def migrations_dir() -> Path:
    """The Alembic script folder (``env.py``, ``versions/``)."""
    return _package_dir("app.migrations")


def seed_dir() -> Path:
    """The seed-data folder (``gpus.csv``, ``benchmarks.csv``, ``offers*.csv``, ...)."""
    return _package_dir("app.seed_data")
