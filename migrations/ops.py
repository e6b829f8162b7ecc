"""Operations the migrations repeat, written once: the same DDL as the Alembic commands they
stand for (each revision's upgrade and downgrade emit what they emitted before these helpers)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

#: The id columns: BIGINT, INTEGER on SQLite (where only INTEGER PRIMARY KEY autoincrements).
PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def create_index(table: str, name: str, columns: list[str]) -> None:
    """A non-unique index ``name`` on ``table``'s ``columns`` (in batch mode, for SQLite)."""
    with op.batch_alter_table(table, schema=None) as batch_op:
        batch_op.create_index(name, columns, unique=False)


def drop_table(table: str, *indexes: str) -> None:
    """Drop ``table``'s ``indexes`` (in batch mode, for SQLite), then ``table``."""
    if indexes:
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name in indexes:
                batch_op.drop_index(name)
    op.drop_table(table)
