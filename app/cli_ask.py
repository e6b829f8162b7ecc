"""``gpucost rank``, ``estimate``, ``offers`` and ``launch``: the API's answers in a terminal.

Each command builds the request the API takes (``POST /v1/rank``'s body, ``GET /v1/offers``'s
parameters ...) from its options, asks a backend (:mod:`app.backends`: the local database by
default, a running server with ``--server URL``) and prints a table, or with ``--json`` the
API's answer byte for byte. Workload, filter and ranking fields are given as
``--set NAME=VALUE`` (the API's field names, values as the flat query parameters write them:
``--set params=7B --set seq_len=2048 --set gradient_checkpointing=true``) or by the dedicated
options; they are typed by the request models, not by click, so that a bad value gets the
API's own 400 (the same message naming the same field) and exit code 2.

Exit codes: 0 an answer; 2 the request was refused (4xx: bad input, no such offer, no launch
file for that provider); 1 the server failed or could not be reached.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from pydantic import BaseModel

#: a request body's sections: the key a field goes under ("": the top level) → its model
Sections: TypeAlias = "Mapping[str, type[BaseModel]]"

#: Exit codes (module docstring).
EXIT_REFUSED, EXIT_FAILED = 2, 1

#: Messages, counts and errors (stderr); lines are not wrapped, so they read the same in a log.
err_console = Console(stderr=True, soft_wrap=True)

#: Columns of a table written to a file or a pipe (rich's default there is 80, which cut the
#: rank table's figures to ``6.…``); ``$COLUMNS`` still decides when it is set.
PIPED_WIDTH = 200


def out_console() -> Console:
    """Standard output: the terminal's width, or :data:`PIPED_WIDTH` columns when it is no
    terminal and ``$COLUMNS`` is unset."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()
    return Console(width=PIPED_WIDTH)


def typed_value(annotation: Any, name: str, text: str) -> Any:
    """``text`` as the JSON value a body carries for a field of ``annotation``: a whole number
    (counts as people write them: ``7B``; a length in tokens ``4k`` = 4096), a number,
    ``true``/``false`` or a comma-separated list where the field is one; the text itself
    otherwise (the model's validation then names the field and the reason, as the API does)."""
    import typing

    from app.interface.counts import GRAMMARS, parse_count
    from app.interface.query import query_text_error, scalar_kind
    from app.model.types import unwrap_optional

    grammar = GRAMMARS.get(name)
    if grammar and (count := parse_count(text, grammar)) is not None and count.isdigit():
        return int(count)
    kind = scalar_kind(annotation)
    if kind is not None and query_text_error(text, kind) is None:
        return text == "true" if kind is bool else kind(float(text) if kind is float else text)
    if typing.get_origin(unwrap_optional(annotation)) is list:
        return [x.strip() for x in text.split(",") if x.strip()]
    return text


def build_body(
    pairs: Sequence[tuple[str, Any]], sections: Mapping[str, type[BaseModel]]
) -> dict[str, Any]:
    """A request body from ``NAME=VALUE`` pairs: each name goes to the first section whose
    model has the field (``""``: the body's top level), text typed by :func:`typed_value`
    (values already typed, from a ``config.json``, kept); a name
    no section has goes to the first section (whose validation reports it, as the API
    reports an unknown field)."""
    body: dict[str, Any] = {}
    for name, text in pairs:
        where, model = next(
            ((k, m) for k, m in sections.items() if name in m.model_fields),
            next(iter(sections.items())),
        )
        field = model.model_fields.get(name)
        value = (
            typed_value(field.annotation, name, text)
            if field is not None and isinstance(text, str)
            else text
        )
        (body.setdefault(where, {}) if where else body)[name] = value
    return body


def _pairs(sets: Sequence[str], **named: str | None) -> list[tuple[str, str]]:
    out = [(k, v) for k, v in named.items() if v is not None]
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r}: write NAME=VALUE", param_hint="--set")
        out.append((name.strip(), value))
    return out


@contextmanager
def backend(server: str | None) -> Iterator[Any]:
    """The backend for ``--server`` (a running gpucost) or the local database."""
    from app.backends import HttpBackend, LocalBackend
    from app.settings import get_settings

    b: Any = HttpBackend(server) if server else LocalBackend(get_settings())
    try:
        yield b
    finally:
        b.close()


def ask(server: str | None, what: str, run: Callable[[Any], Any]) -> Any:
    """Run ``run(backend)`` under a progress line; a server that cannot be reached exits 1."""
    import httpx

    try:
        with backend(server) as b, err_console.status(what):
            return run(b)
    except httpx.HTTPError as exc:
        err_console.print(f"[red]gpucost:[/red] {escape(server or '')}: {escape(str(exc))}")
        sys.exit(EXIT_FAILED)


def finish(answer: Any, as_json: bool) -> Any:
    """Print a refused or failed answer and exit (2 for a 4xx, 1 otherwise); return the
    parsed JSON of a good one (after printing its bytes with ``as_json``)."""
    if answer.ok and as_json:
        sys.stdout.buffer.write(answer.body + b"\n")
        sys.stdout.flush()
    if answer.ok:
        return answer.json() if answer.media_type == "application/json" else None
    if as_json:
        sys.stdout.buffer.write(answer.body + b"\n")
    else:
        try:
            err = answer.json()
        except ValueError:
            err = {"detail": answer.body.decode(errors="replace")[:500]}
        err_console.print(f"[red]gpucost:[/red] {escape(str(err.get('detail')))}", highlight=False)
        extra = err.get("extra")
        for e in extra if isinstance(extra, list) else []:
            if e.get("message") == err.get("detail"):
                continue  # a one-field answer whose sentence is the message
            err_console.print(
                f"  {escape(str(e.get('key', '')))}: {escape(str(e.get('message')))}",
                highlight=False,
            )
    sys.exit(EXIT_REFUSED if 400 <= answer.status < 500 else EXIT_FAILED)


def _hf_fields(b: Any, path: Path, as_json: bool) -> list[tuple[str, Any]]:
    from app.operations import HF_CONFIG

    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--hf-config") from None
    from app.interface.schemas import WorkloadIn

    answer = b.call(HF_CONFIG, config)
    if not answer.ok:
        finish(answer, as_json)  # exits
    out = answer.json()
    fields = out["fields"]
    notes = list(out["notes"])
    if fields.get("max_positions"):
        notes.append(f"the model takes up to {fields['max_positions']} tokens per sequence")
    for note in notes:
        err_console.print(f"[dim]config.json: {escape(note)}[/dim]", highlight=False)
    # the workload's fields (as the ranking page fills its form); max_positions is a bound
    return [(k, v) for k, v in fields.items() if k in WorkloadIn.model_fields]


def num(v: float | None, digits: int = 3) -> str:
    """A figure for a table: thousands grouped, about ``digits`` significant digits."""
    if v is None:
        return "—"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}" if abs(v) >= 0.001 else f"{v:.2g}"


def _two(v: float | None, low: float | None, high: float | None) -> str:
    """A figure over its low–high range."""
    if v is None:
        return "—"
    if low is None or high is None:
        return num(v)
    return f"{num(v)}\n[dim]{num(low, 2)}–{num(high, 2)}[/dim]"


# --- shared options ---------------------------------------------------------------------------

_workload_options = [
    click.argument("preset", required=False),
    click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="NAME=VALUE",
        help="Any request field by its API name (repeatable): seq_len=4k (4096), params=7B, "
        "micro_batch_size=8, precision=bf16_amp, method=lora, epochs=3 ...",
    ),
    click.option(
        "--hf-config",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="A Hugging Face config.json: its shape fields (layers, hidden_size, heads, "
        "vocab_size, params ...) join the workload; --set overrides them.",
    ),
    click.option("--currency", help="Prices and costs in this ISO 4217 code (USD, CNY, EUR)."),
    click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer as is."),
    click.option(
        "--server",
        metavar="URL",
        envvar="GPUCOST_SERVER",
        help="Ask a running gpucost (http://host:8000) instead of the local database.",
    ),
]


def with_options(
    options: Sequence[Callable[[Callable[..., Any]], Callable[..., Any]]],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding ``options`` (click options and arguments) in their order."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


#: the options ``rank`` and ``estimate`` share
workload_options = with_options(_workload_options)


def ask_job(what: str, operation: Any, sections: Sections, options: dict[str, Any]) -> Any:
    """Ask ``operation`` (rank, estimate) about one training job, given the options of
    :func:`workload_options` and the command's own in ``options``: the body holds
    --hf-config's fields, then the named options, then the --set pairs, each in the first of
    ``sections`` whose model has the field (:func:`build_body`); ``what`` is the progress
    line. Returns the answer's JSON; a refused or failed answer exits (:func:`finish`)."""
    named = dict(options)
    server, as_json = named.pop("server"), named.pop("as_json")
    hf_config, sets = named.pop("hf_config"), named.pop("sets")

    def run(b: Any) -> Any:
        pairs: list[tuple[str, Any]] = _hf_fields(b, hf_config, as_json) if hf_config else []
        pairs += _pairs(sets, **named)
        body = build_body(pairs, sections)
        body.setdefault("workload", {})
        return b.call(operation, body)

    return finish(ask(server, what, run), as_json)


_offer_filter_options = [
    click.option("--gpu", help="Only this GPU (any alias; A100 matches every A100)."),
    click.option("--gpu-count", help="Exactly this many GPUs per instance."),
    click.option("--provider", help="Only this provider (vast, aws, runpod ...)."),
    click.option("--region", help="Region contains this text."),
    click.option("--billing", help="on_demand, spot, reserved_1y or reserved_3y."),
]

#: the offer filters ``rank`` and ``offers`` share (the API's filter fields)
offer_filter_options = with_options(_offer_filter_options)


# --- rank -------------------------------------------------------------------------------------


@click.command()
@workload_options
@offer_filter_options
@click.option("--max-total-cost", help="Budget for all epochs, in --currency.")
@click.option("--max-total-hours", help="Deadline: wall-clock hours for all epochs.")
@click.option(
    "--sort", help="cost_per_epoch (default), epoch_hours, total_cost, price_per_hour, ..."
)
@click.option("--limit", default="10", show_default=True, help="Most offers shown.")
def rank(**options: Any) -> None:
    """Rank rentable offers for a training job (POST /v1/rank).

    PRESET is a workload preset (gpucost rank resnet50-imagenet; the list: GET /v1/workloads
    or the MCP tool list_presets). The table shows, per offer, the price, throughput, epoch
    time and cost per epoch with their ranges, the run's total, the OOM risk and peak memory.
    """
    from app.interface.schemas import OfferFilters, RankRequest, WorkloadIn
    from app.operations import RANK

    sections: Sections = {"workload": WorkloadIn, "filters": OfferFilters, "": RankRequest}
    out = ask_job("ranking offers…", RANK, sections, options)
    if not options["as_json"]:
        print_ranking(out)


def _gpu(o: dict[str, Any]) -> str:
    name = (o["gpu"] or o["gpu_name_raw"]).removeprefix("GeForce ")
    return f"{escape(name)} ×{o['gpu_count']:g}"


def print_ranking(out: dict[str, Any]) -> None:
    """The ranking as a table (stdout): per offer the price, and throughput, epoch hours and
    cost per epoch over their low–high ranges, the run's total (spot: expected) and the OOM
    risk with peak memory as a share of usable VRAM; counts on stderr. Fits 100 columns."""
    cur = out["currency"]
    w = out["workload"]
    table = Table(
        title=f"{w.get('preset') or 'custom workload'}: {out['total_offers']} offers estimated, "
        f"costs in {cur}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True, min_width=3)
    table.add_column("offer", no_wrap=True, overflow="ellipsis", max_width=20)
    table.add_column("GPU, per h", no_wrap=True, overflow="ellipsis", max_width=16)
    for name in ("samples/s", "epoch h", "per epoch", "total"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("OOM", no_wrap=True, min_width=6)
    for r in out["results"]:
        o, e = r["offer"], r["estimate"]
        oom = {"low": "green", "medium": "yellow", "high": "red"}[e["oom_risk"]]
        table.add_row(
            f"{r['rank']}{'*' if r['pareto_optimal'] else ''}",
            f"{escape(o['provider'])}\n[dim]{escape(o['instance_type'][:20])}"
            + (" spot" if o["billing"] == "spot" else "")
            + "[/dim]",
            f"{_gpu(o)}\n{num(r['price_per_hour'])}",
            _two(e["samples_per_s"], e["samples_per_s_low"], e["samples_per_s_high"]),
            _two(e["epoch_hours"], e["epoch_hours_low"], e["epoch_hours_high"]),
            _two(e["cost_per_epoch"], e["cost_per_epoch_low"], e["cost_per_epoch_high"]),
            num(e["expected_total_cost"] or e["total_cost"]),
            f"[{oom}]{e['oom_risk']}[/{oom}]\n[dim]{e['memory_utilization']:.0%}[/dim]",
        )
    out_console().print(table)
    err_console.print(
        "* on the cost/time Pareto frontier; under each figure its low–high range; OOM: risk "
        f"and peak memory / usable VRAM. {out['over_budget_offers']} over budget, "
        f"{len(out['unestimable'])} not estimable.",
        highlight=False,
        soft_wrap=True,
    )


# --- estimate ---------------------------------------------------------------------------------


@click.command()
@workload_options
@click.option("--gpu", required=True, help="The GPU (a catalog name or alias: 'A100 80GB SXM4').")
@click.option("--gpu-count", help="GPUs (default 1).")
@click.option("--interconnect", help="nvlink, nvswitch or pcie.")
@click.option("--price-per-hour", help="Price of the whole machine per hour, in --currency.")
@click.option("--billing", help="on_demand, spot ...; spot adds interruptions.")
def estimate(**options: Any) -> None:
    """Estimate a training job on one what-if machine (POST /v1/estimate).

    Throughput, epoch time (with ranges), peak memory per GPU and the OOM risk; with
    --price-per-hour the cost per epoch too. Hardware fields beyond the options go in --set
    (vcpus=32, ram_gib=256, disk_gb=500, max_cuda=12.4, vram_gib=..., gpus_per_node=8,
    network_gbps=400).
    """
    from app.interface.schemas import EstimateRequest, HardwareIn, WorkloadIn
    from app.operations import ESTIMATE

    sections: Sections = {"workload": WorkloadIn, "hardware": HardwareIn, "": EstimateRequest}
    out = ask_job("estimating…", ESTIMATE, sections, options)
    if not options["as_json"]:
        print_estimate(out)


def print_estimate(out: dict[str, Any]) -> None:
    """The estimate as a two-column table (stdout), its warnings and notes (stderr)."""
    e, hw, w = out["estimate"], out["hardware"], out["workload"]
    cur = e["currency"]
    table = Table(title=f"{w.get('preset') or 'custom workload'} on {hw['gpu']} ×{hw['gpu_count']}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("samples/s", _two(e["samples_per_s"], e["samples_per_s_low"], e["samples_per_s_high"])),
        ("tokens/s", _two(e["tokens_per_s"], None, None)),
        ("epoch hours", _two(e["epoch_hours"], e["epoch_hours_low"], e["epoch_hours_high"])),
        ("all epochs, hours", _two(e["total_hours"], None, None)),
        (
            f"{cur} per epoch",
            _two(e["cost_per_epoch"], e["cost_per_epoch_low"], e["cost_per_epoch_high"]),
        ),
        (f"all epochs, {cur}", num(e["total_cost"])),
        (
            "peak memory per GPU",
            f"{e['peak_memory_gib']:.1f} GiB of {e['memory']['usable_vram_gib']:.1f} usable",
        ),
        ("OOM risk", f"{e['oom_risk']} (max low-risk micro-batch {e['max_micro_batch_size']})"),
        ("multi-GPU efficiency", f"{e['multi_gpu_efficiency']:.2f}"),
        ("basis", f"{e['basis']} ({e['situation']})"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    out_console().print(table)
    for warning in e["warnings"]:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning['message'])}")
    for note in e["notes"][:3]:
        err_console.print(f"[dim]{escape(note)}[/dim]", highlight=False)


# --- offers -----------------------------------------------------------------------------------


@click.command()
@offer_filter_options
@click.option("--min-gpu-count", help="At least this many GPUs.")
@click.option("--min-vram-gib", help="At least this much VRAM per GPU, GiB.")
@click.option("--max-price-per-hour", help="Highest price of the instance, in --currency.")
@click.option("--currency", help="Of --max-price-per-hour (prices shown as listed).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0, 1_000_000_000))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer as is.")
@click.option("--server", metavar="URL", envvar="GPUCOST_SERVER", help="Ask a running gpucost.")
def offers(limit: int, offset: int, as_json: bool, server: str | None, **named: str | None) -> None:
    """List offers, filtered (GET /v1/offers), ordered by id."""
    params = {k: v for k, v in named.items() if v is not None}
    params |= {"limit": str(limit), "offset": str(offset)}
    out = finish(ask(server, "reading offers…", lambda b: b.offers(params)), as_json)
    if as_json:
        return
    shown = len(out["items"])
    table = Table(title=f"{out['total']} offers, {shown} shown", title_justify="left")
    for name in ("id", "offer", "GPU", "VRAM", "vCPU", "RAM"):
        table.add_column(name, justify="left" if name in ("offer", "GPU") else "right")
    table.add_column("price/h", justify="right")

    def num(v: float | None) -> str:
        return "—" if v is None else f"{v:g}"

    for o in out["items"]:
        table.add_row(
            str(o["id"]),
            f"{escape(o['provider'])} {escape(o['instance_type'][:24])}\n[dim]"
            f"{escape(o['region'][:24])} {o['billing']}{' stale' if o['stale'] else ''}[/dim]",
            _gpu(o),
            num(o["vram_gib_per_gpu"]),
            num(o["vcpus"]),
            num(o["ram_gib"]),
            "—" if o["price_per_hour"] is None else f"{o['price_per_hour']:g} {o['currency']}",
        )
    out_console().print(table)


# --- launch -----------------------------------------------------------------------------------


@click.command()
@click.argument("offer_id", type=click.IntRange(1, 2**53 - 1))
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(["skypilot", "dstack"]),
    help="skypilot: a task YAML for `sky launch`; dstack: a task for `dstack apply -f`.",
)
@click.option("--preset", help="The workload preset (its estimate goes in the comments).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Workload fields.")
@click.option("--currency", help="Of the prices and costs in the comments.")
@click.option("--max-total-cost", help="Budget for all epochs (in the comments).")
@click.option("--max-total-hours", help="Deadline, hours (in the comments).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the file here (default: stdout).",
)
@click.option("--server", metavar="URL", envvar="GPUCOST_SERVER", help="Ask a running gpucost.")
def launch(
    offer_id: int,
    fmt: str,
    sets: tuple[str, ...],
    output: Path | None,
    server: str | None,
    **named: str | None,
) -> None:
    """A SkyPilot or dstack launch file for offer OFFER_ID (GET /v1/offers/{id}/launch).

    It asks that provider for the offer's instance type, region, GPU × count, spot or
    on-demand and a disk the job fits on; the estimate and budget are YAML comments. A
    provider the launcher does not support is refused (exit 2) with the reason.
    """
    params = {"format": fmt, **dict(_pairs(sets, **named))}
    answer = ask(server, "writing the launch file…", lambda b: b.launch(offer_id, params))
    finish(answer, False)
    if output is None:
        sys.stdout.buffer.write(answer.body)
    else:
        output.write_bytes(answer.body)
        err_console.print(f"wrote {output} ({fmt})")


@click.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: an assistant starts this command; http: streamable HTTP at /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="With --transport http.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@click.option("--server", metavar="URL", envvar="GPUCOST_SERVER", help="Ask a running gpucost.")
def mcp(transport: str, host: str, port: int, server: str | None) -> None:
    """Serve the MCP tools rank_offers, estimate, resolve_gpu, list_presets and
    workload_from_hf_config (the API's answers; from the local database, or --server)."""
    from app.mcp_server import serve

    with backend(server) as b:
        serve(b, transport, host, port)


@click.command("bench-setup")
@click.option("--dry-run", is_flag=True, help="Say what would be installed; install nothing.")
@click.option("--cpu", is_flag=True, help="Install PyTorch's CPU build (no NVIDIA GPU here).")
def bench_setup(dry_run: bool, cpu: bool) -> None:
    """Install the PyTorch build this machine's NVIDIA driver and GPUs run (for `gpucost bench`).

    Reads nvidia-smi (the driver's CUDA version, each GPU's compute capability), picks the
    newest PyTorch wheel index (cu118 ... cu130) both allow and installs torch from it into
    this Python with pip. Exit 1 with the reason when no build fits (driver too old, GPU too
    new for the driver) or when there is no NVIDIA driver (then --cpu installs the CPU build).
    """
    import shlex
    import subprocess

    from app import torch_setup as ts
    from app.settings import get_settings

    out = out_console()
    try:
        if cpu:
            url = f"{ts.INDEX_URL}/cpu"
            out.print("PyTorch build: cpu (gpucost bench will measure the CPU)")
        else:
            machine = ts.probe()
            if machine is None:
                raise ts.SetupError(
                    "no NVIDIA driver here (nvidia-smi is not on PATH), so no PyTorch CUDA "
                    "build can run: install the NVIDIA driver first, or the CPU build with --cpu "
                    "(gpucost bench then measures the CPU)"
                )
            build = ts.choose(machine, ts.load_builds(get_settings().seed_dir))
            gpus = ", ".join(
                g.name
                + (
                    f" (compute capability {g.compute_capability[0]}.{g.compute_capability[1]})"
                    if g.compute_capability
                    else ""
                )
                for g in machine.gpus
            )
            out.print(
                f"driver {machine.driver} supports CUDA {machine.cuda[0]}.{machine.cuda[1]}; "
                f"GPUs: {gpus or 'none listed'}",
                highlight=False,
                soft_wrap=True,
            )
            out.print(
                f"PyTorch build: {build.index} (CUDA {build.cuda[0]}.{build.cuda[1]})",
                highlight=False,
            )
            url = build.url
    except ts.SetupError as exc:
        err_console.print(
            f"[red]bench-setup:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        sys.exit(EXIT_FAILED)
    command = ts.pip_command(sys.executable, url)
    out.print(f"$ {shlex.join(command)}", highlight=False, markup=False, soft_wrap=True)
    if not dry_run:
        sys.exit(subprocess.run(command, check=False).returncode)


COMMANDS: list[click.Command] = [rank, estimate, offers, launch, mcp, bench_setup]
