"""instance_offer.source_kind and refresh_run.source_kind: first-hand API, public catalog or seed

Offers already refreshed from a provider API (``source`` starting ``live: ``) become ``api``;
every other stored offer is hand-kept seed data (``seed``). Refresh runs so far were API runs.

Revision ID: 0009_source_kind
Revises: 0006_vram_gib
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0009_source_kind'
down_revision = '0006_vram_gib'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('instance_offer', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('source_kind', sa.String(length=16), nullable=False, server_default='seed')
        )
    op.execute("UPDATE instance_offer SET source_kind = 'api' WHERE source LIKE 'live: %'")
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('source_kind', sa.String(length=16), nullable=False, server_default='api')
        )


def downgrade() -> None:
    with op.batch_alter_table('refresh_run', schema=None) as batch_op:
        batch_op.drop_column('source_kind')
    with op.batch_alter_table('instance_offer', schema=None) as batch_op:
        batch_op.drop_column('source_kind')
