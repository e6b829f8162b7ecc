"""The package ships what it needs: every subpackage, the migrations and the seed data."""

from __future__ import annotations

import tomllib

from app import resources
from app.settings import PROJECT_ROOT, Settings


def _pyproject() -> dict:
    with (PROJECT_ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def test_every_package_is_listed_for_the_wheel() -> None:
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(PROJECT_ROOT).parts)
        for top in ("app", "scrapers")
        for init in (PROJECT_ROOT / top).rglob("__init__.py")
    }
    assert {"app", "app.model", "scrapers"} <= found
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_packaged_data_dirs_map_to_the_checkout_folders() -> None:
    assert _pyproject()["tool"]["setuptools"]["package-dir"] == {
        "app.migrations": "migrations",
        "app.seed_data": "seed_data",
    }
    # the package data globs cover every file there
    data = _pyproject()["tool"]["setuptools"]["package-data"]
    assert data["app.seed_data"] == ["*.csv", "*.md"]
    shipped = {p.suffix for p in (PROJECT_ROOT / "seed_data").iterdir()} - {".py"}
    assert shipped <= {".csv", ".md"}


def test_resources_resolve_to_migrations_and_seed_data() -> None:
    assert (resources.migrations_dir() / "env.py").is_file()
    assert len(list((resources.migrations_dir() / "versions").glob("0*.py"))) >= 2
    assert (resources.seed_dir() / "gpus.csv").is_file()
    settings = Settings(database_url="sqlite://")
    assert settings.seed_dir == resources.seed_dir()
    assert settings.migrations_dir == resources.migrations_dir()
