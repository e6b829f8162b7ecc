"""Shared fixtures: throwaway PostgreSQL databases, copied from one migrated, seeded template
made once per test process.

The admin URL comes from ``GPUCOST_TEST_ADMIN_URL`` (default: the local ``postgres`` user over
TCP with trust auth, as on the development and CI machines). Tests never use the network
beyond that local server.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.db.migrate import upgrade
from app.db.seed import seed_all
from app.db.session import create_engine_from_url, create_session_factory
from app.settings import PROJECT_ROOT, Settings

ADMIN_URL = os.environ.get(
    "GPUCOST_TEST_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
SEED_DIR = PROJECT_ROOT / "seed_data"


def create_database(template: str | None = None) -> str:
    """Create a database on the test server, empty or a copy of the database at ``template``
    (a URL); return its URL."""
    name = f"gpucost_test_{uuid.uuid4().hex[:10]}"
    copy = f' TEMPLATE "{make_url(template).database}"' if template else ""
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    except Exception as exc:  # pragma: no cover - environment problem, explained
        pytest.fail(
            f"cannot create a PostgreSQL test database via {ADMIN_URL!r}: {exc}. "
            "Start PostgreSQL (see README) or set GPUCOST_TEST_ADMIN_URL."
        )
    finally:
        admin.dispose()
    return make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    """Drop a database made by :func:`create_database`."""
    name = make_url(url).database
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def migrated_and_seeded(url: str) -> None:
    """Apply migrations and load the seed data into ``url``."""
    engine = create_engine_from_url(url)
    try:
        upgrade(engine)
        with create_session_factory(engine)() as session, session.begin():
            seed_all(session, SEED_DIR)
    finally:
        engine.dispose()


#: the database migrated and seeded once per test process (each xdist worker has its own), which
#: every seeded database of the run is copied from (``CREATE DATABASE ... TEMPLATE``: a file copy
#: on the server, about a hundredth of the CPU of migrating and seeding again); nothing connects
#: to it after it is seeded, as PostgreSQL requires of a template
_template_url: str | None = None


def seeded_template() -> str:
    """The URL of this process's migrated, seeded template database (made on first use)."""
    global _template_url
    if _template_url is None:
        url = create_database()
        try:
            migrated_and_seeded(url)
        except BaseException:
            drop_database(url)
            raise
        _template_url = url
    return _template_url


def pytest_sessionfinish() -> None:
    """Drop the template database at the end of the run (if one was made)."""
    global _template_url
    if _template_url is not None:
        drop_database(_template_url)
        _template_url = None


@contextlib.contextmanager
def seeded_database() -> Iterator[str]:
    """A throwaway database, migrated and seeded (a copy of :func:`seeded_template`), dropped on
    exit."""
    url = create_database(template=seeded_template())
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture(scope="session")
def seeded_url() -> Iterator[str]:
    """A migrated, seeded PostgreSQL database shared by read-only tests (a copy of the
    template: the template itself takes no connections)."""
    with seeded_database() as url:
        yield url


@pytest.fixture
def fresh_url() -> Iterator[str]:
    """An empty PostgreSQL database for one test that writes."""
    url = create_database()
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture(scope="session")
def client(seeded_url: str) -> Iterator[object]:
    """Litestar test client on the seeded database."""
    from litestar.testing import TestClient

    from app.asgi import create_app

    # the version is checked on every request (the server's default, 0.5 s, lets an answer
    # lag a write made through another surface, such as the maintainer CLI, by that long)
    app = create_app(Settings(database_url=seeded_url, catalog_poll_s=0))
    with TestClient(app) as c:
        yield c
