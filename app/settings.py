"""Service settings, read from ``GPUCOST_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Root of the source checkout (the folder holding ``migrations/`` and ``seed_data/``).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SQLITE_URL = "sqlite:///gpucost.db"


class Settings(BaseSettings):
    """Runtime settings.

    ``database_url`` comes from ``GPUCOST_DATABASE_URL``. Without it, an SQLite file
    ``gpucost.db`` in the current working directory is used (the zero-setup default).
    PostgreSQL URLs are written ``postgresql+psycopg://user@host:5432/dbname``.
    """

    model_config = SettingsConfigDict(env_prefix="GPUCOST_", extra="ignore")

    database_url: str = Field(default=DEFAULT_SQLITE_URL)
    seed_dir: Path = Field(default=PROJECT_ROOT / "seed_data")
    migrations_dir: Path = Field(default=PROJECT_ROOT / "migrations")
    #: Offers whose provider last refreshed successfully longer ago than this are ``stale``.
    stale_after_hours: float = 48.0
    #: An offer whose source last showed it longer ago than this (or never dated it) is
    #: ``stale`` (``GPUCOST_OFFER_STALE_AFTER_DAYS``).
    offer_stale_after_days: float = Field(default=7.0, gt=0)


@functools.cache
def get_settings() -> Settings:
    """Return the process-wide settings, read once from the environment."""
    return Settings()
