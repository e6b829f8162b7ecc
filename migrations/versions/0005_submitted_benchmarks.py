"""throughput_benchmark: submitted measurements (status, environment, submitter, run id)

Revision ID: 0005_submitted_benchmarks
Revises: 0004
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0005_submitted_benchmarks'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('throughput_benchmark', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('status', sa.String(length=16), nullable=False, server_default='accepted')
        )
        batch_op.add_column(sa.Column('hold_reason', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('run_id', sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column('environment', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('submitted_by', sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_unique_constraint('uq_throughput_benchmark_run_id', ['run_id'])
        batch_op.create_index('ix_throughput_benchmark_status', ['status'])


def downgrade() -> None:
    with op.batch_alter_table('throughput_benchmark', schema=None) as batch_op:
        batch_op.drop_index('ix_throughput_benchmark_status')
        batch_op.drop_constraint('uq_throughput_benchmark_run_id', type_='unique')
        batch_op.drop_column('submitted_at')
        batch_op.drop_column('submitted_by')
        batch_op.drop_column('environment')
        batch_op.drop_column('run_id')
        batch_op.drop_column('hold_reason')
        batch_op.drop_column('status')
