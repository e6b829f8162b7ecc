"""The ``gpucost`` command line: serve, db upgrade, seed, refresh."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from app.settings import get_settings

if TYPE_CHECKING:
    from pathlib import Path

    from rich.progress import TaskID
    from sqlalchemy import Engine

    from app.services.refresh import RefreshReport

console = Console(stderr=True)


def _seed(url: str, seed_dir_override: str | None = None) -> int:
    from app.db.migrate import setup_lock
    from app.db.session import create_engine_from_url

    settings = get_settings()
    seed_dir = settings.seed_dir if seed_dir_override is None else seed_dir_override
    engine = create_engine_from_url(url)
    try:
        with setup_lock(engine):
            return _seed_locked(engine, seed_dir)
    finally:
        engine.dispose()


def _seed_locked(engine: Engine, seed_dir: str | Path) -> int:
    """Migrate and seed (the caller holds :func:`app.db.migrate.setup_lock`)."""
    from app.db.migrate import upgrade
    from app.db.seed import seed_all
    from app.db.session import create_session_factory

    upgrade(engine)  # seeding an unmigrated database would fail: migrate first
    with create_session_factory(engine)() as session, session.begin():
        report = seed_all(session, seed_dir)  # type: ignore[arg-type]
    if report.changed == 0:
        console.print("seed: nothing to change (already up to date)")
    for table in sorted(set(report.inserted) | set(report.updated)):
        console.print(
            f"seed: {table}: {report.inserted.get(table, 0)} inserted, "
            f"{report.updated.get(table, 0)} updated"
        )
    return report.changed


class _Cli(click.Group):
    """Turns database connection and URL errors into one clear line and exit code 2."""

    def invoke(self, ctx: click.Context) -> object:
        from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

        try:
            return super().invoke(ctx)
        except (ArgumentError, NoSuchModuleError, ModuleNotFoundError) as exc:
            console.print(
                f"[red]gpucost:[/red] GPUCOST_DATABASE_URL is not a usable database "
                f"URL ({exc}); use sqlite:///path.db or "
                "postgresql+psycopg://user@host:5432/dbname"
            )
            sys.exit(2)
        except OperationalError as exc:
            console.print(f"[red]gpucost:[/red] database unreachable: {exc.orig or exc}")
            sys.exit(2)


def ensure_database(engine: Engine, seed_dir: str | Path) -> None:
    """Migrate the database to head and load the seed data into an empty one (``serve`` and
    the commands that answer from the local database), under the setup lock."""
    from sqlalchemy import func, select

    from app.db.migrate import revisions, setup_lock, upgrade
    from app.db.models import GpuModel
    from app.db.session import create_session_factory

    current, head = revisions(engine)
    with create_session_factory(engine)() as session:
        empty = current is None or (
            (session.scalar(select(func.count()).select_from(GpuModel)) or 0) == 0
        )
    if current == head and not empty:
        return
    with setup_lock(engine):
        upgrade(engine)
        with create_session_factory(engine)() as session:
            empty = (session.scalar(select(func.count()).select_from(GpuModel)) or 0) == 0
        if empty:
            console.print("empty database: loading seed data")
            _seed_locked(engine, seed_dir)


@click.group(cls=_Cli)
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def main(verbose: bool) -> None:
    """gpucost: where to rent GPUs for a training job.

    The database URL comes from GPUCOST_DATABASE_URL (default: SQLite file gpucost.db in the
    current directory).
    """
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


@main.group()
def db() -> None:
    """Database schema commands."""


@db.command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(revision: str) -> None:
    """Apply Alembic migrations up to REVISION (default: head)."""
    from app.db.migrate import setup_lock, upgrade
    from app.db.session import create_engine_from_url

    engine = create_engine_from_url(get_settings().database_url)
    try:
        with setup_lock(engine):
            upgrade(engine, revision)
    finally:
        engine.dispose()
    console.print(f"database at {revision}")


@main.command()
def seed() -> None:
    """Load seed_data/ (GPU catalog, benchmarks, presets, offers, rates); idempotent.

    Applies pending migrations first.
    """
    from app.db.seed import SeedError

    try:
        _seed(get_settings().database_url)
    except SeedError as exc:
        console.print(f"[red]seed failed:[/red] {exc}")
        sys.exit(1)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes (uvicorn workers) sharing the port; each has its own "
    "connection pool of GPUCOST_DB_POOL_SIZE + GPUCOST_DB_MAX_OVERFLOW.",
)
def serve(host: str, port: int, workers: int) -> None:
    """Apply migrations, seed an empty database, and serve the API and web page.

    Migrating and seeding run under the database's setup lock, so several replicas started
    at once on one fresh PostgreSQL database do it once, one after the other.
    """
    import uvicorn

    from app.db.session import create_engine_from_url

    settings = get_settings()
    engine = create_engine_from_url(settings.database_url)
    try:
        ensure_database(engine, settings.seed_dir)
    finally:
        engine.dispose()
    console.print(
        f"serving on http://{host}:{port} with {workers} worker(s)  "
        f"(OpenAPI: http://{host}:{port}/schema/openapi.json)"
    )
    # every worker builds its own app (and pool) from the same GPUCOST_* environment
    uvicorn.run(
        "app.asgi:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
    )


#: ``gpucost refresh`` exit codes.
EXIT_OK, EXIT_PROVIDER_FAILED, EXIT_SETUP, EXIT_LOCKED, EXIT_SUSPECT = 0, 1, 2, 3, 4


@main.command()
@click.option(
    "--provider",
    "providers",
    multiple=True,
    metavar="NAME",
    help="Refresh only this provider (repeatable): vast, runpod, azure, aws, lambda, "
    "vultr. Default: every enabled provider.",
)
@click.option(
    "--dry-run", is_flag=True, help="Fetch and compare with the database, but write nothing."
)
@click.option(
    "--accept-shrink",
    "accept_shrink",
    multiple=True,
    metavar="NAME",
    help="Apply this provider's answer even if it has far fewer offers than its last "
    "successful run (repeatable; see GPUCOST_SCRAPER_MAX_SHRINK_FRACTION).",
)
def refresh(providers: tuple[str, ...], dry_run: bool, accept_shrink: tuple[str, ...]) -> None:
    """Fetch current offers from the providers and store them (the nightly job).

    Each provider is applied in its own transaction with one refresh-run record; a provider
    that fails keeps its stored offers. A provider whose answer shrank by more than
    GPUCOST_SCRAPER_MAX_SHRINK_FRACTION (default 0.5) against its last successful run is not
    applied (status suspect) unless named in --accept-shrink. Exit codes: 0 every enabled
    provider succeeded, 1 at least one failed, 2 setup problem (unknown provider, missing key,
    database not migrated), 3 another refresh is running, 4 none failed but at least one was
    held back as suspect. Provider URLs, keys, timeouts and retries come
    from GPUCOST_SCRAPER_* variables (see docs/refresh.md).
    """
    from sqlalchemy.exc import OperationalError

    from app.db.migrate import revisions
    from app.db.session import create_engine_from_url, create_session_factory
    from app.services.refresh import (
        RefreshLockedError,
        RefreshOptions,
        RefreshSetupError,
        run_refresh,
    )
    from app.watches import after_refresh
    from scrapers.settings import load_scraper_settings

    settings = get_settings()
    engine = create_engine_from_url(settings.database_url)
    try:
        current, head = revisions(engine)
        if current != head:
            console.print(
                f"[red]refresh:[/red] database at revision {current or 'none'}, "
                f"code at {head}: run `gpucost db upgrade` first"
            )
            sys.exit(EXIT_SETUP)
        with _RefreshProgress(dry_run) as progress:
            options = RefreshOptions(
                seed_dir=settings.seed_dir,
                providers=providers,
                dry_run=dry_run,
                progress=progress.update,
                accept_shrink=accept_shrink,
            )
            report = run_refresh(
                engine,
                create_session_factory(engine),
                load_scraper_settings(),
                options,
                after_refresh=after_refresh,
            )
    except RefreshSetupError as exc:
        console.print(f"[red]refresh:[/red] {exc}")
        sys.exit(EXIT_SETUP)
    except RefreshLockedError as exc:
        console.print(f"[yellow]refresh:[/yellow] {exc}; not starting a second one")
        sys.exit(EXIT_LOCKED)
    except OperationalError as exc:
        console.print(f"[red]refresh:[/red] database unreachable: {exc.orig or exc}")
        sys.exit(EXIT_SETUP)
    finally:
        engine.dispose()
    _print_refresh_summary(report)
    if report.webhooks is not None:  # the watches' posts (bounded by their own deadline)
        console.print(f"watches: posting {len(report.webhooks.found)} event(s) to webhooks")
        report.webhooks.join()
    statuses = {o.status for o in report.outcomes}
    sys.exit(
        EXIT_PROVIDER_FAILED
        if "error" in statuses
        else EXIT_SUSPECT
        if "suspect" in statuses
        else EXIT_OK
    )


class _RefreshProgress:
    """A rich progress display: one line per provider with its phase (stderr)."""

    def __init__(self, dry_run: bool):
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[provider]}", table_column=Column(min_width=7)),
            TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=True)),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            expand=True,
        )
        self.tasks: dict[str, TaskID] = {}
        self.prefix = "[dim](dry run)[/dim] " if dry_run else ""

    def __enter__(self) -> _RefreshProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, slug: str, phase: str, detail: str) -> None:
        """Show ``phase`` (and ``detail``) for ``slug``."""
        from rich.markup import escape

        colour = {"ok": "green", "error": "red", "skipped": "yellow", "suspect": "magenta"}.get(
            phase, "cyan"
        )
        text = f"{self.prefix}[{colour}]{phase}[/{colour}] {escape(detail)}".rstrip()
        done = phase in ("ok", "error", "skipped", "suspect")
        if slug not in self.tasks:
            self.tasks[slug] = self.progress.add_task(text, provider=slug, total=1)
        self.progress.update(self.tasks[slug], description=text, completed=1 if done else 0)


def _print_refresh_summary(report: RefreshReport) -> None:
    from rich.markup import escape
    from rich.table import Table

    title = "refresh (dry run: nothing written)" if report.dry_run else "refresh"
    table = Table(title=f"{title} at {report.observed_at:%Y-%m-%d %H:%M:%S} UTC")
    table.add_column("provider")
    table.add_column("status")
    for column in ("seen", "new", "changed", "gone", "suspect", "skipped", "time"):
        table.add_column(column, justify="right")
    notes: list[str] = []
    for o in report.outcomes:
        c = o.counts
        style = {"ok": "green", "error": "red", "skipped": "yellow", "suspect": "magenta"}[o.status]
        table.add_row(
            o.slug + (" (public catalog)" if o.source_kind == "catalog" else ""),
            f"[{style}]{o.status}[/{style}]",
            *(
                str(v)
                for v in (
                    (c.seen, c.new, c.changed, c.gone, c.suspect) if c else ("", "", "", "", "")
                )
            ),
            str(o.skipped_rows or ""),
            f"{o.duration_s:.1f}s" if o.status != "skipped" else "",
        )
        if o.error:
            notes.append(f"[{style}]{o.slug}[/{style}]: {escape(o.error)}")
        if c and c.unknown_gpu_names:
            notes.append(
                f"{o.slug}: GPU names with no catalog match (stored raw): "
                f"{', '.join(c.unknown_gpu_names)}"
            )
        if c and c.suspect:
            notes.append(
                f"{o.slug}: {c.suspect} offer(s) stored suspect (implausible; left out of "
                "rankings, see GET /v1/offers?include_suspect=true)"
            )
        if o.skipped_rows:
            notes.append(f"{o.slug}: {o.skipped_rows} row(s) skipped, e.g. {escape(o.warnings[0])}")
    console.print(table)
    for note in notes:
        console.print(note, highlight=False)
    failed = [o.slug for o in report.outcomes if o.status == "error"]
    if failed:
        console.print(
            f"[red]failed:[/red] {', '.join(failed)} (their stored offers are "
            "unchanged; see GET /v1/refresh-runs)"
        )
    suspect = [o.slug for o in report.outcomes if o.status == "suspect"]
    if suspect:
        console.print(
            f"[magenta]held back:[/magenta] {', '.join(suspect)} (answer shrank; stored offers "
            "unchanged; apply with --accept-shrink " + " --accept-shrink ".join(suspect) + ")"
        )


def _register_answer_commands() -> None:
    """``rank``, ``estimate``, ``offers``, ``launch``, ``mcp`` and ``bench-setup``
    (:mod:`app.cli_ask`; the MCP server in :mod:`app.mcp_server`, the PyTorch choice in
    :mod:`app.torch_setup`)."""
    from app.cli_ask import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_register_answer_commands()

if __name__ == "__main__":
    main()


@main.command()
@click.argument("preset")
@click.option("--steps", default=20, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--warmup", default=3, show_default=True, type=click.IntRange(0, 10_000))
@click.option("--micro-batch", type=click.IntRange(1, 1_000_000), help="Samples per GPU per step.")
@click.option(
    "--precision",
    type=click.Choice(["fp32", "tf32", "fp16_amp", "bf16_amp", "bf16"]),
    help="Default: the preset's.",
)
@click.option("--gpus", default=1, show_default=True, type=click.IntRange(1, 1024))
@click.option("--submit", "submit_url", help="gpucost server to send the result to.")
@click.option("--token", envvar="GPUCOST_TOKEN", help="Bearer token for --submit.")
def bench(
    preset: str,
    steps: int,
    warmup: int,
    micro_batch: int | None,
    precision: str | None,
    gpus: int,
    submit_url: str | None,
    token: str | None,
) -> None:
    """Measure PRESET's training throughput on this machine (needs PyTorch: bench-setup).

    Random weights and synthetic data of the preset's shape; warm-up, then timed optimizer
    steps. DDP over --gpus GPUs (torchrun) when more than one. --submit sends the result with
    the machine's environment to POST /v1/benchmarks.
    """
    try:
        import torch  # noqa: F401 - only to say clearly that the extra is missing
    except ImportError as exc:
        raise click.ClickException(
            "gpucost bench needs PyTorch: run `gpucost bench-setup` (installs the build this "
            "machine's NVIDIA driver supports)"
        ) from exc
    from rich.progress import Progress
    from rich.table import Table

    from app import bench as bench_mod
    from app.cli_ask import out_console

    out = out_console()
    options: dict[str, Any] = {"steps": steps, "warmup": warmup, "micro_batch_size": micro_batch}
    options["precision"] = precision
    try:
        bench_mod.load_preset(preset)
        if gpus > 1:
            result = bench_mod.run_distributed(preset, gpus, options)
        else:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task(f"bench {preset}", total=warmup + steps)
                result = bench_mod.run_bench(
                    preset, **options, progress=lambda done, _t: bar.update(task, completed=done)
                )
    except bench_mod.BenchError as exc:
        raise click.ClickException(str(exc)) from exc
    table = Table(title=f"gpucost bench {preset}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    spread = result.step_time_s
    env = result.environment

    def gib(v: float | None) -> str:
        return f"{v:.2f}" if v is not None else "— (CPU)"

    def opt(v: object) -> str:
        return str(v) if v else "—"

    tokens = f"{result.tokens_per_s:.4g}" if result.tokens_per_s else "—"
    ram = f"{env['ram_gib']:.1f}" if env.get("ram_gib") else "—"
    rows = [
        ("device", f"{result.gpu_count}× {env.get('gpu_name') or 'CPU (' + env['cpu'] + ')'}"),
        ("precision / micro-batch", f"{result.precision} / {result.micro_batch_size}"),
        ("timed steps (warm-up)", f"{result.steps} ({result.warmup})"),
        ("samples/s", f"{result.samples_per_s:.4g}"),
        ("tokens/s", tokens),
        (
            "step time s: median (min–max)",
            f"{spread['median']:.4g} ({spread['min']:.4g}–{spread['max']:.4g})",
        ),
        ("peak memory allocated GiB", gib(result.peak_memory_gib)),
        ("peak memory reserved GiB", gib(result.reserved_memory_gib)),
        (
            "driver / CUDA / torch",
            f"{opt(env.get('driver'))} / {opt(env.get('cuda'))} / {env['torch']}",
        ),
        ("vCPUs / RAM GiB", f"{env['vcpus']} / {ram}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    out.print(table)
    if submit_url:
        import httpx

        try:
            r = bench_mod.submit(result, submit_url, token)
        except httpx.HTTPError as exc:
            raise click.ClickException(f"submit to {submit_url} failed: {exc}") from exc
        if r.status_code not in (200, 201):
            raise click.ClickException(f"server answered {r.status_code}: {r.text[:500]}")
        row = r.json()
        out.print(
            f"submitted: benchmark {row['id']} ({row['status']}"
            + (f": {row['hold_reason']}" if row.get("hold_reason") else "")
            + f"), run id {result.run_id}"
        )


@main.group()
def submissions() -> None:
    """Maintainer commands for submitted measurements (gpucost bench runs).

    A server picks up what these change within its reference cache's lifetime (60 s).
    """


def _review(action: Any) -> Any:
    """Run ``action(session, ref, now)`` in one transaction on a freshly loaded reference."""
    import datetime as dt

    from app.db.session import create_engine_from_url, create_session_factory
    from app.services.reference import load_reference

    settings = get_settings()
    engine = create_engine_from_url(settings.database_url)
    try:
        with create_session_factory(engine)() as session, session.begin():
            ref = load_reference(session, settings.seed_dir)
            return action(session, ref, dt.datetime.now(dt.UTC))
    finally:
        engine.dispose()


@submissions.command("revoke")
@click.argument("identity")
@click.option("--by", "maintainer", required=True, help="Your name, for the audit trail.")
@click.option("--reason", default=None, help="Why, for the audit trail.")
def submissions_revoke(identity: str, maintainer: str, reason: str | None) -> None:
    """Revoke the token named IDENTITY and every row it submitted, in one transaction.

    Its token is refused from then on; its rows become `revoked` (kept, never used); rows of
    other submitters that only it corroborated are held again. Prints the served answer of
    every configuration it moved, before and after.
    """
    from app.services.submissions import ReviewError, revoke

    try:
        done = _review(lambda s, ref, now: revoke(s, ref, identity, maintainer, reason, now))
    except ReviewError as exc:
        console.print(f"[red]revoke:[/red] {exc}")
        sys.exit(1)
    console.print(
        f"revoked {done.identity}: {done.rows_revoked} row(s) revoked, "
        f"{done.rows_reheld} other row(s) held again"
    )
    for config, before, after in done.answers:
        what = f"{config['preset']} on {config['gpu_count']}x {config['gpu']}"
        if before is None or after is None:
            console.print(f"  {what}: no served answer")
        else:
            console.print(f"  {what}: {before:.4g} -> {after:.4g} samples/s")


@submissions.command("approve")
@click.argument("run_id")
@click.option("--by", "maintainer", required=True, help="Your name, for the audit trail.")
def submissions_approve(run_id: str, maintainer: str) -> None:
    """Corroborate the held run RUN_ID as a maintainer: it is accepted and may move its
    answer up to the plausibility band (2x)."""
    from app.services.submissions import ReviewError, approve

    try:
        row = _review(lambda s, ref, now: approve(s, ref, run_id, maintainer, now))
    except ReviewError as exc:
        console.print(f"[red]approve:[/red] {exc}")
        sys.exit(1)
    console.print(f"approved run {run_id} (row {row['id']}, {row['submitted_by']})")


@submissions.command("events")
@click.option("--submitter", default=None, help="Only this submitter's rows.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
def submissions_events(submitter: str | None, limit: int) -> None:
    """Print the audit trail, newest first, one JSON object per line (the same entries as
    GET /v1/submissions/events)."""
    import json

    from app.db.session import create_engine_from_url, create_session_factory
    from app.services.submissions import list_events

    settings = get_settings()
    engine = create_engine_from_url(settings.database_url)
    try:
        with create_session_factory(engine)() as session:
            items, _ = list_events(session, submitter=submitter, limit=limit)
    finally:
        engine.dispose()
    for item in items:
        click.echo(json.dumps(item, default=str, ensure_ascii=False))
