"""The README's whole answer for the guide's RTX 3090 listing is the live answer.

The block follows ``<!-- checked by tests/test_readme_answer.py: answer -->``: the answer of
``POST /v1/rank`` to the body of the ``curl`` command above it, pretty-printed as
``python -m json.tool`` prints it (4 spaces, ASCII). Compared on every field except what
moves with the clock: ``age_days`` and the "N days old" of the messages. Numbers are compared
to 12 significant digits: the last of a float's 17 move with the numerics library's version
(numpy 2.4 summed a 1×RTX 3090 answer ~1e-15 apart from the release that wrote the block).
``GPUCOST_WRITE_README=1 pytest tests/test_readme_answer.py`` rewrites the block (after a
change of the seed data or the estimator), for review in the diff.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

from tests.test_readme_cli import README, check_or_write

pytestmark = pytest.mark.db

_BLOCK = re.compile(
    r"-d '(?P<body>\{[^']*\})'\n```\n(?:(?!```).)*?"
    r"<!-- checked by tests/test_readme_answer\.py: answer -->\n```json\n(?P<json>.*?)\n```",
    re.DOTALL,
)
_DAYS_OLD = re.compile(r"\b\d+(\.\d+)? days old\b")


def _clockless(value: Any) -> Any:
    """``value`` without what changes with the day the answer is made, floats to 12
    significant digits."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _clockless(v) for k, v in value.items() if k != "age_days"}
    if isinstance(value, list):
        return [_clockless(v) for v in value]
    if isinstance(value, str):
        return _DAYS_OLD.sub("N days old", value)
    return value


def test_readme_whole_answer_is_the_live_one(client: Any) -> None:
    found = _BLOCK.search(README.read_text(encoding="utf-8"))
    assert found, "the README's curl command and its checked answer"
    r = client.post("/v1/rank", json=json.loads(found["body"]))
    assert r.status_code == 200, r.text
    live = r.json()
    if os.environ.get("GPUCOST_WRITE_README") == "1":
        check_or_write("answer", json.dumps(live, indent=4))
        return
    assert _clockless(json.loads(found["json"])) == _clockless(live)
