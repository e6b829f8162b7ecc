"""refresh_run: baseline_offers (shrink guard: the last successful run's offer count)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('baseline_offers', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.drop_column('baseline_offers')
