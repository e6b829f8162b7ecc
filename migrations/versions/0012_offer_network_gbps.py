"""instance_offer.network_gbps: the network between machines an offer states

Gbit/s per machine (InfiniBand, RoCE, EFA or Ethernet), as the provider states it and
``scrapers.records.network_gbps`` reads it (AWS price list "Network Performance": ``3200
Gigabit`` on p5.48xlarge); ``NULL`` where not stated. An estimate whose GPUs span several
machines uses it, else a stated default (``app.model.comm.default_network_gbps``), and says
which. Existing rows are ``NULL`` until their provider is scraped again.

Revision ID: 0012_offer_network_gbps
Revises: 0011_offer_row_version
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012_offer_network_gbps'
down_revision = '0011_offer_row_version'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('instance_offer', sa.Column('network_gbps', sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column('instance_offer', 'network_gbps')
