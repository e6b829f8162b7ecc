"""gpu_model.vram_gb -> vram_gib: the column holds binary GiB (datasheet memory sizes are binary)

Revision ID: 0006_vram_gib
Revises: 0005_submitted_benchmarks
Create Date: 2026-12-01
"""
from __future__ import annotations

from alembic import op


revision = '0006_vram_gib'
down_revision = '0005_submitted_benchmarks'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('gpu_model', schema=None) as batch_op:
        batch_op.alter_column('vram_gb', new_column_name='vram_gib')


def downgrade() -> None:
    with op.batch_alter_table('gpu_model', schema=None) as batch_op:
        batch_op.alter_column('vram_gib', new_column_name='vram_gb')
