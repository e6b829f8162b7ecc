"""The README's terminal and MCP examples are what the commands print on the seeded database.

A block checked here follows the line ``<!-- checked by tests/test_readme_cli.py: KIND -->``:

- ``cli``: a ``text`` block of ``$ gpucost ...`` lines, each followed by what the command prints
  (stdout and stderr as a terminal shows them, 100 columns, no NVIDIA driver on ``PATH``);
- ``mcp``: a ``json`` block, the text the ``resolve_gpu`` MCP tool answers for the arguments on
  its first line (``// arguments: {...}``).

``GPUCOST_WRITE_README=1 pytest tests/test_readme_cli.py`` rewrites the blocks instead (after a
change of the seed data or the estimator), for review in the diff.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from app.backends import LocalBackend
from app.cli import main
from app.mcp_server import create_server
from app.settings import Settings, get_settings

pytestmark = pytest.mark.db

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(
    r"<!-- checked by tests/test_readme_cli\.py: (?P<kind>\w+) -->\n```(?P<lang>\w+)\n"
    r"(?P<body>.*?)\n```",
    re.DOTALL,
)


def _run_cli(text: str, tmp_path: Path) -> str:
    """Each ``$ gpucost ...`` line of ``text`` run, followed by what it printed."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.startswith("$ gpucost "):
            continue
        args = shlex.split(line.removeprefix("$ gpucost "))
        result = CliRunner().invoke(main, args, env={"COLUMNS": "100", "PATH": str(tmp_path)})
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        out += [line, *(r.rstrip() for r in result.output.rstrip("\n").splitlines())]
    return "\n".join(out)


def _run_mcp(text: str, backend: LocalBackend) -> str:
    first = text.splitlines()[0]
    arguments = json.loads(first.removeprefix("// arguments: "))
    from mcp import Client

    async def go() -> str:
        async with Client(create_server(backend), mode="legacy") as client:
            r = await client.call_tool("resolve_gpu", arguments)
            return r.content[0].text  # type: ignore[union-attr]

    answer = json.loads(anyio.run(go))
    return f"{first}\n{json.dumps(answer, indent=2, ensure_ascii=False)}"


@pytest.fixture
def env(seeded_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GPUCOST_DATABASE_URL", seeded_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_readme_terminal_and_mcp_examples(env: None, seeded_url: str, tmp_path: Path) -> None:
    readme = README.read_text(encoding="utf-8")
    backend = LocalBackend(Settings(database_url=seeded_url), prepare=False)
    producers: dict[str, Callable[[str], str]] = {
        "cli": lambda body: _run_cli(body, tmp_path),
        "mcp": lambda body: _run_mcp(body, backend),
    }
    blocks = list(_BLOCK.finditer(readme))
    assert {m["kind"] for m in blocks} == set(producers), "a checked block of each kind"
    try:
        real = {m.start(): producers[m["kind"]](m["body"]) for m in blocks}
    finally:
        backend.close()
    if os.environ.get("GPUCOST_WRITE_README") == "1":
        for m in reversed(blocks):
            start, end = m.span("body")
            readme = readme[:start] + real[m.start()] + readme[end:]
        README.write_text(readme, encoding="utf-8")
        return
    for m in blocks:
        assert real[m.start()] == m["body"], f"README block at {m.start()} is not the real output"


def check_or_write(kind: str, real: str) -> None:
    """Assert the README's one block of ``kind`` is ``real``, or with
    ``GPUCOST_WRITE_README=1`` write it there."""
    text = README.read_text(encoding="utf-8")
    pattern = re.compile(
        rf"(<!-- checked by tests/test_\w+\.py: {kind} -->\n```\w+\n)(.*?)(\n```)", re.DOTALL
    )
    found = pattern.findall(text)
    assert len(found) == 1, f"one README block of kind {kind}"
    if os.environ.get("GPUCOST_WRITE_README") == "1":
        README.write_text(pattern.sub(lambda m: m[1] + real + m[3], text), encoding="utf-8")
        return
    assert found[0][1] == real, f"README block {kind} is not the real output"
