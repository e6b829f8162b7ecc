"""refresh_run: unknown GPU names and scraper warnings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('unknown_gpu_names', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('warnings', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.drop_column('warnings')
        batch_op.drop_column('unknown_gpu_names')
