"""Which functions and files of ``app/`` one ``POST /v1/estimate`` visits (issue 31).

Run: ``python tools/trace_estimate.py [--list] [--database-url URL]``.

Two requests, the bodies the API gets (:data:`CASES`): (a) the ``resnet50-imagenet`` preset on
one RTX A5000 and (b) a custom 7B decoder (Llama-like: 32 layers, hidden 4096, 32 heads,
sequence 4096, bf16) on one H100 SXM 80GB. Each is answered by the handler every surface
calls (:meth:`app.operations.Operation.call`: the request's validation, the job's resolution,
the estimate and the answer), on the database the server would use (``GPUCOST_DATABASE_URL``,
by default ``gpucost.db`` in the current directory, migrated and seeded on first use:
:class:`app.backends.LocalBackend`).

What is counted, by :func:`sys.setprofile` ``call`` events of Python code under ``app/``:

* ``request``: everything the handler runs, once the reference data is loaded and the pooled
  fits of every family are built (both are per data load, not per request: done before);
* ``samples_per_s``: the part of it under ``ThroughputModel.estimate`` (the one number's path);
* ``repeat``: the same request again (the estimator's cache hit path), counted apart.

A function is one code object (file, first line, qualified name); comprehensions and generator
expressions (``<listcomp>``, ``<genexpr>``, ...) are parts of their function and not counted;
lambdas are. Nothing is filtered beyond that: the numbers are what a reader stepping through
the request would open.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app") + os.sep
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's app/, whichever one is installed

#: name → the ``POST /v1/estimate`` body
CASES: dict[str, dict[str, Any]] = {
    "resnet50-a5000": {
        "workload": {"preset": "resnet50-imagenet"},
        "hardware": {"gpu": "RTX A5000", "gpu_count": 1},
    },
    "custom-7b-decoder-h100": {
        "workload": {
            "architecture": "transformer_decoder",
            "params": 6_738_415_616,
            "layers": 32,
            "hidden_size": 4096,
            "heads": 32,
            "ffn_hidden_size": 11008,
            "vocab_size": 32000,
            "seq_len": 4096,
            "micro_batch_size": 1,
            "precision": "bf16_amp",
            "attention": "sdpa",
            "samples_per_epoch": 100_000,
            "epochs": 1,
        },
        "hardware": {"gpu": "H100 SXM 80GB", "gpu_count": 1},
    },
}

#: the function whose callees make the ``samples_per_s`` path (qualified name)
THROUGHPUT_ENTRY = "ThroughputModel.estimate"


@dataclass
class Trace:
    """Functions of ``app/`` visited, as (file relative to the repository, qualified name)."""

    functions: set[tuple[str, str]] = field(default_factory=set)
    #: the subset visited under :data:`THROUGHPUT_ENTRY`
    throughput: set[tuple[str, str]] = field(default_factory=set)

    @staticmethod
    def files(functions: set[tuple[str, str]]) -> set[str]:
        return {f for f, _ in functions}


@contextmanager
def traced() -> Iterator[Trace]:
    """Record every Python function under ``app/`` called inside the block."""
    trace = Trace()
    depth = 0  # > 0 while inside THROUGHPUT_ENTRY

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        nonlocal depth
        if event not in ("call", "return"):
            return
        code = frame.f_code
        if not code.co_filename.startswith(APP):
            return
        if code.co_name.startswith("<") and code.co_name != "<lambda>":
            return  # a comprehension or generator expression: part of its function
        key = (os.path.relpath(code.co_filename, ROOT), code.co_qualname)
        if event == "return":
            if key[1] == THROUGHPUT_ENTRY:
                depth -= 1
            return
        if key[1] == THROUGHPUT_ENTRY:
            depth += 1
        trace.functions.add(key)
        if depth:
            trace.throughput.add(key)

    sys.setprofile(profile)
    try:
        yield trace
    finally:
        sys.setprofile(None)


def report(name: str, part: str, functions: set[tuple[str, str]], listing: bool) -> str:
    """One line of counts (and with ``listing`` the functions by file)."""
    files = Trace.files(functions)
    lines = [f"{name:24} {part:14} {len(functions):4d} functions in {len(files):3d} files"]
    if listing:
        for f in sorted(files):
            names = sorted(q for g, q in functions if g == f)
            lines.append(f"    {f} ({len(names)}): {', '.join(names)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the functions by file")
    parser.add_argument("--database-url", help="default: GPUCOST_DATABASE_URL or a temp SQLite")
    args = parser.parse_args(argv)
    from app.backends import LocalBackend
    from app.operations import ESTIMATE
    from app.settings import Settings

    url = args.database_url or os.environ.get("GPUCOST_DATABASE_URL")
    if url is None:
        url = f"sqlite:///{tempfile.gettempdir()}/gpucost-trace.db"
    backend = LocalBackend(Settings(database_url=url))
    try:
        with backend.deps() as deps:
            ref = deps.ref
            for fam in ("cnn", "transformer", "other"):
                ref.throughput_data.fit(fam)
            for name, body in CASES.items():
                with traced() as first:
                    answer = ESTIMATE.call(body, deps)
                with traced() as again:
                    ESTIMATE.call(body, deps)
                rate = answer.estimate.samples_per_s
                situation = getattr(answer.estimate, "situation", "")
                print(f"{name}: {rate:.4g} samples/s ({situation})")
                print(report(name, "request", first.functions, args.list))
                print(report(name, "samples_per_s", first.throughput, args.list))
                print(report(name, "repeat", again.functions, args.list))
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
