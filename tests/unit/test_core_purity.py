"""The estimation core imports nothing from the database, HTTP or framework layers."""

from __future__ import annotations

import ast
from pathlib import Path

import app.model

FORBIDDEN = (
    "sqlalchemy",
    "litestar",
    "httpx",
    "pydantic",
    "app.db",
    "app.api",
    "app.services",
    "scrapers",
    "alembic",
)


def test_estimate_package_is_pure() -> None:
    root = Path(app.model.__file__).parent
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(FORBIDDEN), f"{path.name} imports {name}"
