"""Tables written to a pipe or a file keep their figures (newcomer finding: rich's default of
80 columns without a terminal cut the rank table to ``6.…``)."""

from __future__ import annotations

import io

import pytest

from app.cli_ask import PIPED_WIDTH, out_console


def test_a_piped_table_gets_the_wide_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr("sys.stdout", io.StringIO())  # no terminal
    assert out_console().width == PIPED_WIDTH == 200


def test_columns_still_decides_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert out_console().width == 100
