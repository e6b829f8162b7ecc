"""instance_offer.row_version: the catalog version that last wrote each offer

A worker holding the offers of catalog version ``V`` reads only the rows with
``row_version > V`` when the version moves (``app.services.snapshot_build.update_snapshot``), instead of every
offer. A database trigger stamps every inserted or updated row, so no writer can forget it.

Ordering (PostgreSQL): the stamp is the catalog version plus one, read with ``FOR UPDATE`` on
the ``catalog_version`` row, which the writer then holds until it commits (its statement's
``catalog_version_bump`` updates that row anyway). A second writer waits for that lock and
reads the version the first one committed, so every row committed after a reader saw version
``V`` carries a stamp above ``V``. SQLite has one writer at a time; its trigger writes the
stamp after the row (SQLite's ``BEFORE`` triggers cannot set ``NEW``). That nested ``UPDATE``
does not fire the stamp trigger again (``recursive_triggers`` is off, and its ``WHEN`` clause
stops it if it is on), but it would fire 0010's per-row ``catalog_version_instance_offer_update``
and bump the version a second time per written row: that trigger is recreated with
``WHEN NEW.row_version = OLD.row_version``, so only the stamp's own update (the one statement
that changes ``row_version``) skips it. Deleted rows are not stamped: a reader detects them by the row count.

Revision ID: 0011_offer_row_version
Revises: 0010_catalog_version
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011_offer_row_version'
down_revision = '0010_catalog_version'
branch_labels = None
depends_on = None

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION offer_row_version_stamp() RETURNS trigger AS $$
BEGIN
    NEW.row_version := (SELECT version FROM catalog_version WHERE id = 1 FOR UPDATE) + 1;
    RETURN NEW;
END
$$ LANGUAGE plpgsql
"""

#: 0010's SQLite per-row bump on offer updates (recreated here with and without the ``WHEN``)
_SQLITE_BUMP = (
    "CREATE TRIGGER catalog_version_instance_offer_update AFTER UPDATE ON instance_offer "
    "FOR EACH ROW {when}BEGIN UPDATE catalog_version SET version = version + 1, "
    "reference_version = reference_version, changed_at = CURRENT_TIMESTAMP WHERE id = 1; END"
)

_SQLITE_STAMP = (
    "UPDATE instance_offer SET row_version = "
    "(SELECT version FROM catalog_version WHERE id = 1) + 1 WHERE id = NEW.id"
)


def upgrade() -> None:
    op.add_column(
        'instance_offer',
        sa.Column('row_version', sa.BigInteger(), server_default='0', nullable=False),
    )
    op.create_index(
        op.f('ix_instance_offer_row_version'), 'instance_offer', ['row_version'], unique=False
    )
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(_PG_FUNCTION)
        op.execute(
            "CREATE TRIGGER offer_row_version BEFORE INSERT OR UPDATE ON instance_offer "
            "FOR EACH ROW EXECUTE FUNCTION offer_row_version_stamp()"
        )
        return
    op.execute(
        "CREATE TRIGGER offer_row_version_insert AFTER INSERT ON instance_offer "
        f"FOR EACH ROW BEGIN {_SQLITE_STAMP}; END"
    )
    op.execute(
        "CREATE TRIGGER offer_row_version_update AFTER UPDATE ON instance_offer "
        f"FOR EACH ROW WHEN NEW.row_version = OLD.row_version BEGIN {_SQLITE_STAMP}; END"
    )
    op.execute("DROP TRIGGER IF EXISTS catalog_version_instance_offer_update")
    op.execute(_SQLITE_BUMP.format(when="WHEN NEW.row_version = OLD.row_version "))


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("DROP TRIGGER IF EXISTS offer_row_version ON instance_offer")
        op.execute("DROP FUNCTION IF EXISTS offer_row_version_stamp()")
    else:
        op.execute("DROP TRIGGER IF EXISTS offer_row_version_insert")
        op.execute("DROP TRIGGER IF EXISTS offer_row_version_update")
        op.execute("DROP TRIGGER IF EXISTS catalog_version_instance_offer_update")
        op.execute(_SQLITE_BUMP.format(when=""))
    op.drop_index(op.f('ix_instance_offer_row_version'), table_name='instance_offer')
    op.drop_column('instance_offer', 'row_version')
