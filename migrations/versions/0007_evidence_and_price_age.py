"""Evidence no one can bend, prices with an age: instance_offer.price_kind; submitted rows'
corroboration; revoked submitters; the submissions' audit trail

Revision ID: 0007_evidence_and_price_age
Revises: 0006_vram_gib
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from app.migrations.ops import PK, drop_table


revision = '0007_evidence_and_price_age'
down_revision = '0006_vram_gib'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('instance_offer', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                'price_kind', sa.String(length=16), nullable=False, server_default='hand_kept'
            )
        )
    # offers stored by `gpucost refresh` read the provider's API (app/db/ingest.py)
    op.execute("UPDATE instance_offer SET price_kind = 'scraped' WHERE source LIKE 'live: %'")
    with op.batch_alter_table('throughput_benchmark', schema=None) as batch_op:
        batch_op.add_column(sa.Column('corroborated_by', sa.String(length=100), nullable=True))
        batch_op.add_column(
            sa.Column('corroborated_at', sa.DateTime(timezone=True), nullable=True)
        )
    op.create_table(
        'revoked_submitter',
        sa.Column('id', PK, nullable=False),
        sa.Column('identity', sa.String(length=100), nullable=False),
        sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('revoked_by', sa.String(length=100), nullable=False),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('rows_revoked', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_revoked_submitter')),
        sa.UniqueConstraint('identity', name=op.f('uq_revoked_submitter_identity')),
    )
    op.create_table(
        'submission_event',
        sa.Column('id', PK, nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('action', sa.String(length=16), nullable=False),
        sa.Column('actor', sa.String(length=100), nullable=False),
        sa.Column('submitter', sa.String(length=100), nullable=False),
        sa.Column('benchmark_id', PK, nullable=True),
        sa.Column('configuration', sa.JSON(), nullable=False),
        sa.Column('answer_before', sa.Float(), nullable=True),
        sa.Column('answer_after', sa.Float(), nullable=True),
        sa.Column('unit', sa.String(length=32), nullable=False),
        sa.Column('detail', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ['benchmark_id'],
            ['throughput_benchmark.id'],
            name=op.f('fk_submission_event_benchmark_id_throughput_benchmark'),
            ondelete='SET NULL',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_submission_event')),
    )
    op.create_index('ix_submission_event_submitter', 'submission_event', ['submitter'])
    op.create_index('ix_submission_event_at', 'submission_event', ['at'])


def downgrade() -> None:
    drop_table('submission_event', 'ix_submission_event_at', 'ix_submission_event_submitter')
    drop_table('revoked_submitter')
    with op.batch_alter_table('throughput_benchmark', schema=None) as batch_op:
        batch_op.drop_column('corroborated_at')
        batch_op.drop_column('corroborated_by')
    with op.batch_alter_table('instance_offer', schema=None) as batch_op:
        batch_op.drop_column('price_kind')
