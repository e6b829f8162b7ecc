"""Run Alembic migrations programmatically (``gpucost db upgrade``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, func, inspect, select

from app.resources import migrations_dir as packaged_migrations_dir

#: ``pg_advisory_lock`` key held while migrating and seeding (the bytes of "gpucost:"; the
#: refresh job uses a different key).
SETUP_LOCK_KEY = int.from_bytes(b"gpucost:", "big")


@contextlib.contextmanager
def setup_lock(engine: Engine) -> Iterator[None]:
    """Hold the database's setup lock: migrations and seeding from several processes (N
    replicas starting on one fresh database) run one after the other, never interleaved.

    On PostgreSQL a session-level advisory lock (``pg_advisory_lock``, waits for the holder;
    released when the connection ends, also on a crash). SQLite serialises writers itself;
    nothing is taken there.
    """
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as conn:
        conn.execute(select(func.pg_advisory_lock(SETUP_LOCK_KEY)))
        conn.commit()
        try:
            yield
        finally:
            conn.execute(select(func.pg_advisory_unlock(SETUP_LOCK_KEY)))
            conn.commit()


def alembic_config(url: str, migrations_dir: Path | None = None) -> Config:
    """Alembic config pointing at the packaged migrations (or ``migrations_dir``) and ``url``."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir or packaged_migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` on ``engine``'s database."""
    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)


def is_migrated(engine: Engine) -> bool:
    """True when the database has an Alembic version table (some migration was applied)."""
    return inspect(engine).has_table("alembic_version")


def revisions(engine: Engine) -> tuple[str | None, str | None]:
    """(the database's current Alembic revision, the newest revision in ``migrations/``)."""
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(
        alembic_config(engine.url.render_as_string(hide_password=False))
    ).get_current_head()
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    return current, head
