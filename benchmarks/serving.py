"""``gpucost serve`` as a child process on a free loopback port, for the load benchmark and the
tests that need a real server (schemathesis, replicas, the SQLite default).

The process runs in its own session (``start_new_session``) so that stopping it stops the
workers ``--workers N`` forks as well.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gpucost_command() -> list[str]:
    """The ``gpucost`` script next to this interpreter (``python -m app.cli`` without it)."""
    exe = shutil.which("gpucost", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "app.cli"]


def serve_process(
    port: int,
    *args: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
    stdout: int = subprocess.DEVNULL,
    stderr: int = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Start ``gpucost serve --port PORT *args`` in its own session (stop it with
    :func:`stop`), with the environment ``env``, in ``cwd``; its output goes to ``stdout`` and
    ``stderr`` (``subprocess.DEVNULL``, ``PIPE`` or ``STDOUT``)."""
    return subprocess.Popen(
        [*gpucost_command(), "serve", "--port", str(port), *args],
        env=dict(env),
        cwd=cwd,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )


def wait_healthy(proc: subprocess.Popen[bytes], base: str, timeout_s: float = 120) -> None:
    """Return once ``GET {base}/healthz`` answers 2xx (polled every 0.3 s).

    Raises:
        RuntimeError: the process ended, or ``timeout_s`` passed first (the process is killed;
            the message holds its piped stdout, if any).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).is_success:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc, timeout_s=0)
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise RuntimeError(f"gpucost serve at {base} did not come up:\n{out}")
        time.sleep(0.3)


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    """Stop a server started in its own session: SIGTERM to the session, SIGKILL after
    ``timeout_s`` seconds (at once with 0)."""
    if proc.poll() is None and timeout_s > 0:
        os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout_s)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
