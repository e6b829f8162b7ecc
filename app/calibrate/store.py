"""Write one section of ``app/model/calibration.json`` (read-modify-write, deterministic).

``tools/fit_constants.py`` writes the ``throughput`` section, ``tools/fit_memory.py`` the
``memory`` section; each leaves the other section as it is. A section's ``fitted_on`` date
moves only when its constants change, so a refit that reproduces the file writes the same
bytes. ``data_sha256`` names the seed files the fit read (:func:`seed_sha256`). Layout:
:mod:`app.model.calibration`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from app.model.calibration import CALIBRATION_PATH, FORMAT, render, version_of

#: The seed files the calibration data set reads (:func:`app.calibrate.dataset.load_dataset`
#: and the link table of :mod:`app.model.comm`), as glob patterns under ``seed_data/``.
SEED_PATTERNS = (
    "gpus.csv",
    "benchmarks*.csv",
    "workloads*.csv",
    "preset_facts.csv",
    "memory_cases.csv",
    "link_bandwidth.csv",
)


def seed_sha256(seed_dir: Path, patterns: Iterable[str] = SEED_PATTERNS) -> str:
    """SHA-256 (hex) over the names and bytes of the seed files matching ``patterns``,
    in sorted order."""
    digest = hashlib.sha256()
    paths = sorted({p for pattern in patterns for p in seed_dir.glob(pattern)})
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def jsonable(value: Any) -> Any:
    """Tuples as lists, mapping keys as strings, recursively (what JSON can hold)."""
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def read_document(path: Path = CALIBRATION_PATH) -> dict[str, Any]:
    """The parsed calibration file (an empty skeleton when there is none yet)."""
    if not path.exists():
        return {"format": FORMAT, "version": "", "throughput": {}, "memory": {}}
    return dict(json.loads(path.read_text(encoding="utf-8")))


def with_section(
    doc: Mapping[str, Any], name: str, body: Mapping[str, Any], key: str, today: dt.date
) -> dict[str, Any]:
    """``doc`` with section ``name`` replaced by ``body`` (its constants under ``key``),
    ``fitted_on`` kept when those constants are unchanged, and ``version`` recomputed."""
    new = jsonable(body)
    old = doc.get(name) or {}
    same = old.get(key) == new.get(key)
    new["fitted_on"] = old.get("fitted_on") if same and old.get("fitted_on") else today.isoformat()
    out = {**doc, "format": FORMAT, name: new}
    if out.get("throughput", {}).get("constants") is not None and out.get("memory", {}).get(
        "params"
    ):
        out["version"] = version_of(out)
    return out


def write_section(
    name: str,
    body: Mapping[str, Any],
    key: str,
    path: Path = CALIBRATION_PATH,
    *,
    check: bool = False,
) -> bool:
    """Write section ``name`` of the calibration file (see :func:`with_section`); with
    ``check``, write nothing. Returns whether the file's text changes."""
    doc = read_document(path)
    text = render(with_section(doc, name, body, key, dt.datetime.now(dt.UTC).date()))
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if not check and text != current:
        path.write_text(text, encoding="utf-8")
    return text != current


def differences(
    committed: Any, refit: Any, rel_tol: float, abs_tol: float, where: str = ""
) -> list[str]:
    """Where ``refit`` differs from ``committed`` beyond ``rel_tol`` (relative) and
    ``abs_tol`` (absolute) on numbers (:func:`math.isclose`), or in structure: one line per
    difference, ``[]`` when they agree. Both as JSON holds them (:func:`jsonable`)."""
    if isinstance(committed, dict) and isinstance(refit, dict):
        out = [f"{where}/{k}: only in one" for k in sorted(set(committed) ^ set(refit))]
        for k in sorted(set(committed) & set(refit)):
            out += differences(committed[k], refit[k], rel_tol, abs_tol, f"{where}/{k}")
        return out
    if isinstance(committed, list) and isinstance(refit, list) and len(committed) == len(refit):
        return [
            line
            for i, (a, b) in enumerate(zip(committed, refit, strict=True))
            for line in differences(a, b, rel_tol, abs_tol, f"{where}[{i}]")
        ]
    numbers = (int, float)
    if isinstance(committed, numbers) and isinstance(refit, numbers):
        if math.isclose(committed, refit, rel_tol=rel_tol, abs_tol=abs_tol):
            return []
    elif committed == refit:
        return []
    return [f"{where}: committed {committed!r}, refit {refit!r}"]
