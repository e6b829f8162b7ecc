"""tools/trace_estimate.py counts the functions of app/ a call visits, and only those."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from app.model.calibration import load_calibration
from app.model.throughput.range import _range
from app.model.types import Situation

TOOL = Path(__file__).resolve().parents[2] / "tools" / "trace_estimate.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trace_estimate", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_traced_lists_the_app_functions_a_call_visits() -> None:
    tool = _tool()
    cal = load_calibration()  # loaded before the trace
    with tool.traced() as trace:
        # _range -> range_factors -> range_situation -> the Situation enum's property of the
        # same name (dict.get is not under app/)
        _range(100.0, Situation.MEASURED_RESCALED, cal)
    assert trace.functions == {
        ("app/model/throughput/range.py", "_range"),
        ("app/model/throughput/range.py", "range_factors"),
        ("app/model/vocabulary.py", "range_situation"),
        ("app/model/vocabulary.py", "Situation.range_situation"),
    }
    assert tool.Trace.files(trace.functions) == {
        "app/model/throughput/range.py",
        "app/model/vocabulary.py",
    }
    # nothing ran under ThroughputModel.estimate
    assert trace.throughput == set()
