"""Engine and session factories (built on demand, never at import time)."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def create_engine_from_url(url: str, *, echo: bool = False) -> Engine:
    """Build an engine for ``url`` (PostgreSQL via psycopg 3, or SQLite).

    SQLite gets foreign-key enforcement switched on per connection.
    """
    if url.startswith("sqlite"):
        engine = create_engine(url, echo=echo, connect_args={"check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _sqlite_fk(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(url, echo=echo, pool_pre_ping=True, pool_size=10, max_overflow=10)


def create_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Session factory bound to ``engine``; sessions do not expire objects on commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)
