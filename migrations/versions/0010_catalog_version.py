"""catalog_version: one counter every write to the catalog bumps, in the writer's transaction

One row (``id`` 1). ``version`` rises on every statement that writes the offers, their prices,
the providers, the refresh runs, the GPU catalog, the benchmarks, the presets or the exchange
rates; ``reference_version`` is set to the new ``version`` when the write is to the reference
tables (GPU catalog, aliases, benchmarks, presets, rates: what
``app.services.reference.load_reference`` reads). Database triggers do it, so no writer (the
refresh, ``gpucost seed``, a submission, a revoke, a hand-written SQL fix) can forget it, and
it commits or rolls back with the write itself. PostgreSQL: one bump per statement
(``FOR EACH STATEMENT``) plus ``pg_notify('gpucost_catalog', version)``; SQLite: one per row
(SQLite has no statement triggers).

Revision ID: 0010_catalog_version
Revises: 0009_source_kind
Create Date: 2026-12-03
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0010_catalog_version'
down_revision = '0009_source_kind'
branch_labels = None
depends_on = None

#: tables whose writes change what a ranking or a listing shows (offers side)
OFFER_TABLES = ('instance_offer', 'price_observation', 'provider', 'refresh_run')
#: tables load_reference reads (the estimator's inputs)
REFERENCE_TABLES = ('gpu_model', 'throughput_benchmark', 'workload_preset', 'currency_rate')

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION catalog_version_bump() RETURNS trigger AS $$
DECLARE
    bumped bigint;
BEGIN
    UPDATE catalog_version
    SET version = version + 1,
        reference_version = CASE WHEN TG_ARGV[0] = 'reference'
                                 THEN version + 1 ELSE reference_version END,
        changed_at = now()
    WHERE id = 1
    RETURNING version INTO bumped;
    PERFORM pg_notify('gpucost_catalog', bumped::text);
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""


def _kind(table: str) -> str:
    return 'reference' if table in REFERENCE_TABLES else 'offers'


def upgrade() -> None:
    op.create_table(
        'catalog_version',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('version', sa.BigInteger(), nullable=False),
        sa.Column('reference_version', sa.BigInteger(), nullable=False),
        sa.Column('changed_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_catalog_version')),
    )
    op.execute("INSERT INTO catalog_version (id, version, reference_version) VALUES (1, 1, 1)")
    dialect = op.get_bind().dialect.name
    tables = (*OFFER_TABLES, *REFERENCE_TABLES)
    if dialect == 'postgresql':
        op.execute(_PG_FUNCTION)
        for table in tables:
            op.execute(
                f"CREATE TRIGGER catalog_version_{table} "
                f"AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION catalog_version_bump('{_kind(table)}')"
            )
        return
    for table in tables:
        reference = "version + 1" if _kind(table) == 'reference' else "reference_version"
        for event in ('INSERT', 'UPDATE', 'DELETE'):
            op.execute(
                f"CREATE TRIGGER catalog_version_{table}_{event.lower()} "
                f"AFTER {event} ON {table} FOR EACH ROW BEGIN "
                f"UPDATE catalog_version SET version = version + 1, "
                f"reference_version = {reference}, changed_at = CURRENT_TIMESTAMP "
                f"WHERE id = 1; END"
            )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    tables = (*OFFER_TABLES, *REFERENCE_TABLES)
    for table in tables:
        if dialect == 'postgresql':
            op.execute(f"DROP TRIGGER IF EXISTS catalog_version_{table} ON {table}")
        else:
            for event in ('insert', 'update', 'delete'):
                op.execute(f"DROP TRIGGER IF EXISTS catalog_version_{table}_{event}")
    if dialect == 'postgresql':
        op.execute("DROP FUNCTION IF EXISTS catalog_version_bump()")
    op.drop_table('catalog_version')
