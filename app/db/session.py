"""Engine and session factories (built on demand, never at import time)."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session, sessionmaker

#: Errors meaning "the database is down, slow or out of connections right now" (not a bug and
#: not bad input): the server answers them 503 with ``Retry-After``. ``OperationalError``
#: covers refused connections, connect timeouts and statement timeouts (psycopg
#: ``QueryCanceled``); ``TimeoutError`` is the pool's "no free connection in time".
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError, DisconnectionError, PoolTimeoutError)


def create_engine_from_url(
    url: str,
    *,
    echo: bool = False,
    pool_size: int = 10,
    max_overflow: int = 10,
    pool_timeout_s: float = 30.0,
    connect_timeout_s: float | None = None,
    statement_timeout_ms: int | None = None,
) -> Engine:
    """Build an engine for ``url`` (PostgreSQL via psycopg 3, or SQLite).

    Args:
        pool_size, max_overflow, pool_timeout_s: the connection pool (SQLAlchemy ``QueuePool``;
            ignored for in-memory SQLite, which has one connection per thread).
        connect_timeout_s: PostgreSQL ``connect_timeout`` (libpq rounds up to whole seconds,
            at least 2), SQLite's busy timeout. ``None``: the driver's default.
        statement_timeout_ms: PostgreSQL ``statement_timeout`` of every session, ms.

    SQLite gets foreign-key enforcement switched on per connection.
    """
    pool: dict[str, Any] = {
        "pool_size": pool_size,
        "max_overflow": max_overflow,
        "pool_timeout": pool_timeout_s,
    }
    if url.startswith("sqlite"):
        connect_args: dict[str, Any] = {"check_same_thread": False}
        if connect_timeout_s is not None:
            connect_args["timeout"] = connect_timeout_s
        if make_url(url).database in (None, "", ":memory:"):
            pool = {}
        engine = create_engine(url, echo=echo, connect_args=connect_args, **pool)

        @event.listens_for(engine, "connect")
        def _sqlite_fk(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    connect_args = {}
    if connect_timeout_s is not None:
        connect_args["connect_timeout"] = max(2, math.ceil(connect_timeout_s))
    if statement_timeout_ms:
        connect_args["options"] = f"-c statement_timeout={int(statement_timeout_ms)}"
    return create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect_args, **pool)


def create_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Session factory bound to ``engine``; sessions do not expire objects on commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)
