"""Migrations: the models and the Alembic history agree; upgrade/downgrade round-trips."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from app.db.migrate import alembic_config, upgrade
from app.db.models import Base
from app.db.session import create_engine_from_url

pytestmark = pytest.mark.db


def test_upgrade_downgrade_upgrade_and_no_drift(fresh_url: str) -> None:
    engine = create_engine_from_url(fresh_url)
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], diff
    cfg = alembic_config(fresh_url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(engine)
    assert "instance_offer" in inspect(engine).get_table_names()
    engine.dispose()
