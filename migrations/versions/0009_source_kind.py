"""refresh_run.source_kind: what a refresh run read (the provider's API or a public catalog)

Runs so far were API runs (``api``). An offer's own source kind is not stored: it follows from
its ``price_kind`` (0007; ``catalog`` is a new value of it, ``app.price_age.source_kind``).

Revision ID: 0009_source_kind
Revises: 0008_watches
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0009_source_kind'
down_revision = '0008_watches'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('source_kind', sa.String(length=16), nullable=False, server_default='api')
        )


def downgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.drop_column('source_kind')
