"""One list of workload fields: the core ``Workload``'s outside-given fields
(``WORKLOAD_INPUTS``) are exactly the API's ``WorkloadIn``, the ranking form's workload fields
and the seed loader's ``PRESET_FIELDS``, with the same descriptions and bounds."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from typing import Any

import pytest
from pydantic import ValidationError

from app.data.rows import PRESET_FIELDS, workload_cells
from app.interface.query import COUNT_PARAMS, parse_rank_query
from app.interface.schemas import CudaLibrary, WorkloadIn
from app.model.job import build_workload
from app.model.types import WORKLOAD_INPUTS, Precision, Workload
from app.model.workload_inputs import INPUT_KEY, INPUTS
from app.settings import PROJECT_ROOT
from app.web.forms import WORKLOAD_ADVANCED, WORKLOAD_MAIN

#: Workload fields set from the preset's measurements or by the resolver (``input_notes``:
#: what it did with the given fields), never given from outside.
PRESET_ONLY = {
    "benchmark_workloads",
    "benchmark_method",
    "units_per_sample",
    "throughput_unit",
    "matches_preset",
    "input_notes",
    "recipe_stack",
}


def test_every_workload_field_is_an_input_or_preset_only() -> None:
    # a field added to Workload without its InputSpec (an INPUTS entry) fails here
    names = {f.name for f in dataclasses.fields(Workload)}
    assert names - PRESET_ONLY == set(WORKLOAD_INPUTS)
    assert names >= PRESET_ONLY


def test_each_input_table_entry_is_its_own_fields_metadata() -> None:
    # the table (app.model.workload_inputs.INPUTS) is keyed by field name: an entry read by
    # another field, or left unread, fails here; the order is the workload's declaration order
    given = {f.name: f.metadata[INPUT_KEY] for f in dataclasses.fields(Workload) if f.metadata}
    assert list(given) == list(INPUTS)
    assert all(given[name] is INPUTS[name][INPUT_KEY] for name in INPUTS)
    seq_len = WORKLOAD_INPUTS["seq_len"].spec
    assert seq_len.description.startswith("tokens per sample (sequence length); ")
    assert "4k = 4096" in seq_len.description and seq_len.tokens and not seq_len.count


def test_request_model_has_every_input_in_order() -> None:
    assert list(WorkloadIn.model_fields) == list(WORKLOAD_INPUTS)


def test_the_written_request_model_is_what_the_inputs_give() -> None:
    # WorkloadIn is written out (tools/gen_workload_in.py) so that mypy sees its fields;
    # --check fails when an input is added, renamed or retyped without rewriting it
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "gen_workload_in.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    hints = typing.get_type_hints(WorkloadIn)
    for name, given in WORKLOAD_INPUTS.items():
        kind = list[CudaLibrary] if name == "cuda_only_libraries" else given.kind
        assert hints[name] == kind | None, name
        assert WorkloadIn.model_fields[name].annotation == kind | None, name
    assert hints["precision"] == Precision | None and hints["params"] == int | None


def test_form_shows_every_input_but_the_preset_once() -> None:
    names = [f.name for f in (*WORKLOAD_MAIN, *WORKLOAD_ADVANCED)]
    assert len(names) == len(set(names))
    assert set(names) == set(WORKLOAD_INPUTS) - {"preset"}


def test_seed_loader_reads_every_input_but_the_preset() -> None:
    # ``preset`` is the row's slug column, not a field of it
    assert set(PRESET_FIELDS) == set(WORKLOAD_INPUTS) - {"preset"}


def test_request_fields_carry_the_inputs_description_and_bounds() -> None:
    for name, given in WORKLOAD_INPUTS.items():
        info = WorkloadIn.model_fields[name]
        assert info.description == given.spec.description, name
        assert info.default is None, name
        bounds = {
            key: getattr(meta, key)
            for meta in info.metadata
            for key in ("gt", "ge", "le", "pattern")
            if getattr(meta, key, None) is not None
        }
        spec = {
            key: getattr(given.spec, key)
            for key in ("gt", "ge", "le", "pattern")
            if getattr(given.spec, key) is not None
        }
        assert bounds == spec, name


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        ("layers", 10_000, True),  # le=10_000
        ("layers", 10_001, False),
        ("layers", 0, False),  # gt=0
        ("dataset_gb", 0.0, True),  # ge=0
        ("cpu_ms_per_sample", 0.0009, False),  # ge=1e-3
        ("min_cuda", "12.1", True),
        ("min_cuda", "12.x", False),  # VERSION_PATTERN
        ("cuda_only_libraries", ["bitsandbytes"] * 9, False),  # max_items=8
        ("preset", "x" * 201, False),  # free text: at most MAX_TEXT (200)
    ],
)
def test_request_bounds_come_from_the_input_spec(field: str, value: Any, ok: bool) -> None:
    if ok:
        assert getattr(WorkloadIn.model_validate({field: value}), field) == value
    else:
        with pytest.raises(ValidationError) as exc:
            WorkloadIn.model_validate({field: value})
        assert [e["loc"][0] for e in exc.value.errors()] == [field]


def test_form_kinds_follow_the_field_types() -> None:
    form = {f.name: f for f in (*WORKLOAD_MAIN, *WORKLOAD_ADVANCED)}
    assert form["precision"].kind == "select"
    assert [v for v, _ in form["precision"].choices] == [p.value for p in Precision]
    assert form["precision"].choices[3] == ("bf16_amp", "BF16 mixed (AMP)")
    assert form["packed"].choices == (("true", "on"), ("false", "off"))
    assert (form["params"].kind, form["vae_params"].kind) == ("count", "count")
    assert (form["layers"].kind, form["layers"].step) == ("number", "1")
    assert (form["epochs"].kind, form["epochs"].step) == ("number", "any")
    assert form["min_cuda"].kind == form["cuda_only_libraries"].kind == "text"


def test_a_seed_row_reads_into_a_workload() -> None:
    row = {
        "architecture": "transformer_decoder",
        "params": "7e9",
        "micro_batch_size": "4",
        "epochs": "2.5",
        "packed": "true",
        "precision": "bf16",
        "cuda_only_libraries": "bitsandbytes|flash-attn",
        "seq_len": "",
        "tied_embeddings": "true",  # not a workload field: ignored
    }
    cells = workload_cells(row)
    assert cells == {
        "architecture": "transformer_decoder",
        "params": 7_000_000_000,
        "micro_batch_size": 4,
        "epochs": 2.5,
        "packed": True,
        "precision": "bf16",
        "cuda_only_libraries": "bitsandbytes|flash-attn",
    }
    w = build_workload(cells)
    assert (w.params, w.seq_len, w.precision) == (7_000_000_000, None, Precision.BF16)
    assert w.cuda_only_libraries == ("bitsandbytes", "flash-attn")


def test_every_count_box_of_the_form_takes_a_human_count() -> None:
    # the form's count boxes hint "e.g. 84M": the flat parser reads them all as counts
    form = {f.name for f in (*WORKLOAD_MAIN, *WORKLOAD_ADVANCED) if f.kind == "count"}
    tokens = {f.name for f in (*WORKLOAD_MAIN, *WORKLOAD_ADVANCED) if f.kind == "tokens"}
    assert tokens == {"seq_len"}
    assert form | tokens == set(COUNT_PARAMS)
    query = parse_rank_query(
        {"preset": "sd15-unet-finetune", "vae_params": "84M", "text_encoder_params": "123.06M"}
    )
    workload = query.request.workload.model_dump(exclude_unset=True)
    assert (workload["vae_params"], workload["text_encoder_params"]) == (84_000_000, 123_060_000)
