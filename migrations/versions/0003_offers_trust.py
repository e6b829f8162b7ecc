"""instance_offer: suspect flag and reason, GPU note, offer link, last_seen_at nullable;
refresh_run: suspect count

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('instance_offer', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('suspect', sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column('suspect_reason', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('gpu_note', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('offer_url', sa.Text(), nullable=True))
        batch_op.alter_column(
            'last_seen_at', existing_type=sa.DateTime(timezone=True), nullable=True
        )
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('offers_suspect', sa.Integer(), nullable=False, server_default='0')
        )


def downgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.drop_column('offers_suspect')
    op.execute("UPDATE instance_offer SET last_seen_at = first_seen_at WHERE last_seen_at IS NULL")
    with op.batch_alter_table('instance_offer', schema=None) as batch_op:
        batch_op.alter_column(
            'last_seen_at', existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.drop_column('offer_url')
        batch_op.drop_column('gpu_note')
        batch_op.drop_column('suspect_reason')
        batch_op.drop_column('suspect')
