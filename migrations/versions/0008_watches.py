"""watches: saved jobs with a budget or deadline, their matching offers and events

Revision ID: 0008_watches
Revises: 0006_vram_gib
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from app.migrations.ops import PK, create_index, drop_table


revision = '0008_watches'
down_revision = '0007_evidence_and_price_age'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'watch',
        sa.Column('id', PK, nullable=False),
        sa.Column('owner', sa.String(length=200), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('request', sa.JSON(), nullable=False),
        sa.Column('webhook_url', sa.Text(), nullable=True),
        sa.Column('price_move_fraction', sa.Float(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_checked_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_watch')),
    )
    create_index('watch', op.f('ix_watch_owner'), ['owner'])
    op.create_table(
        'watch_match',
        sa.Column('id', PK, nullable=False),
        sa.Column('watch_id', PK, nullable=False),
        sa.Column('offer_id', PK, nullable=False),
        sa.Column('price_per_hour', sa.Float(), nullable=True),
        sa.Column('total_cost', sa.Float(), nullable=True),
        sa.Column('total_hours', sa.Float(), nullable=False),
        sa.Column('active', sa.Boolean(), nullable=False),
        sa.Column('first_seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['offer_id'], ['instance_offer.id'], name=op.f('fk_watch_match_offer_id_instance_offer'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['watch_id'], ['watch.id'], name=op.f('fk_watch_match_watch_id_watch'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_watch_match')),
        sa.UniqueConstraint('watch_id', 'offer_id', name=op.f('uq_watch_match_watch_id_offer_id')),
    )
    op.create_table(
        'watch_event',
        sa.Column('id', PK, nullable=False),
        sa.Column('watch_id', PK, nullable=False),
        sa.Column('offer_id', PK, nullable=True),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('message', sa.Text(), nullable=False),
        sa.Column('old_price_per_hour', sa.Float(), nullable=True),
        sa.Column('new_price_per_hour', sa.Float(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('delivery_error', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['offer_id'], ['instance_offer.id'], name=op.f('fk_watch_event_offer_id_instance_offer'), ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['watch_id'], ['watch.id'], name=op.f('fk_watch_event_watch_id_watch'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_watch_event')),
    )
    create_index('watch_event', 'ix_watch_event_watch_id_created_at', ['watch_id', 'created_at'])


def downgrade() -> None:
    drop_table('watch_event', 'ix_watch_event_watch_id_created_at')
    drop_table('watch_match')
    drop_table('watch', op.f('ix_watch_owner'))
