"""The ``gpucost`` command line: serve, db upgrade, seed."""

from __future__ import annotations

import logging
import sys

import click
from rich.console import Console
from sqlalchemy import func, select

from app.db.migrate import upgrade
from app.db.models import GpuModel
from app.db.seed import SeedError, seed_all
from app.db.session import create_engine_from_url, create_session_factory
from app.settings import get_settings

console = Console(stderr=True)


def _seed(url: str, seed_dir_override: str | None = None) -> int:
    settings = get_settings()
    seed_dir = settings.seed_dir if seed_dir_override is None else seed_dir_override
    engine = create_engine_from_url(url)
    factory = create_session_factory(engine)
    try:
        with factory() as session, session.begin():
            report = seed_all(session, seed_dir)  # type: ignore[arg-type]
    finally:
        engine.dispose()
    if report.changed == 0:
        console.print("seed: nothing to change (already up to date)")
    for table in sorted(set(report.inserted) | set(report.updated)):
        console.print(
            f"seed: {table}: {report.inserted.get(table, 0)} inserted, "
            f"{report.updated.get(table, 0)} updated"
        )
    return report.changed


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def main(verbose: bool) -> None:
    """gpucost: where to rent GPUs for a training job.

    The database URL comes from GPUCOST_DATABASE_URL (default: SQLite file gpucost.db in the
    current directory).
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


@main.group()
def db() -> None:
    """Database schema commands."""


@db.command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(revision: str) -> None:
    """Apply Alembic migrations up to REVISION (default: head)."""
    engine = create_engine_from_url(get_settings().database_url)
    try:
        upgrade(engine, revision)
    finally:
        engine.dispose()
    console.print(f"database at {revision}")


@main.command()
def seed() -> None:
    """Load seed_data/ (GPU catalog, benchmarks, presets, offers, rates); idempotent."""
    try:
        _seed(get_settings().database_url)
    except SeedError as exc:
        console.print(f"[red]seed failed:[/red] {exc}")
        sys.exit(1)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
def serve(host: str, port: int) -> None:
    """Apply migrations, seed an empty database, and serve the API and web page."""
    import uvicorn

    from app.asgi import create_app

    settings = get_settings()
    engine = create_engine_from_url(settings.database_url)
    try:
        upgrade(engine)
        with create_session_factory(engine)() as session:
            empty = (session.scalar(select(func.count()).select_from(GpuModel)) or 0) == 0
    finally:
        engine.dispose()
    if empty:
        console.print("empty database: loading seed data")
        _seed(settings.database_url)
    console.print(f"serving on http://{host}:{port}  (OpenAPI: http://{host}:{port}/schema)")
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")


if __name__ == "__main__":
    main()
