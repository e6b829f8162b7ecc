"""The estimator's vocabulary (app/model/vocabulary.py), the job's field metadata
(app/model/job.py) and the one rule for hours and cost (app/model/epoch_cost.py)."""

from __future__ import annotations

import json
import math
import pprint
from dataclasses import replace

import numpy as np
import pytest

from app.model import vocabulary as v
from app.model.cost import combine
from app.model.epoch_cost import run_costs, served_rates
from app.model.job import FIELD_GROUPS, REQUIRED_WITHOUT_PRESET, THROUGHPUT_FIELDS
from app.model.memory import estimate_memory
from app.model.types import (
    WORKLOAD_INPUTS,
    FieldGroup,
    Hardware,
    ThroughputEstimate,
)
from app.model.vocabulary import Architecture, Basis, Family, Precision, PrecisionClass, Situation
from tests.unit.helpers import A100_80_SXM, GPT2


@pytest.mark.parametrize(
    ("text", "parts", "version"),
    [
        ("12.4", 2, (12, 4)),
        ("12", 2, (12, 0)),  # Vast writes cuda_max_good 12.0 as "12"
        ("12.", 2, (12, 0)),
        (" 8.9 ", 2, (8, 9)),
        ("12.4.1", 2, (12, 4)),
        ("12.4.1", 3, (12, 4, 1)),
        ("12.4", 3, (12, 4, 0)),
        ("NeMo 26.06", 2, None),
        ("12.x", 2, None),
        ("", 2, None),
        (None, 2, None),
    ],
)
def test_parse_version(text: str | None, parts: int, version: tuple[int, ...] | None) -> None:
    assert v.parse_version(text, parts) == version


def test_a_driver_version_without_minor_is_as_new_as_dot_zero() -> None:
    version = v.parse_version("12")
    assert version is not None and not version < (12, 0)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1.13", 1.13),
        ("2.3", 2.03),
        ("2.3.1+cu121", 2.03),
        ("0.4.0 (main@5e85bd62)", 0.04),
        ("main@2013a4dd", 0.0),
        ("NeMo 26.06", 0.0),
        ("2", 0.0),
        ("2.", 0.0),
        (None, 0.0),
    ],
)
def test_minor_version_number(text: str | None, number: float) -> None:
    assert v.minor_version_number(text) == pytest.approx(number)


def test_precision_classes() -> None:
    two = {p.value: p.precision_class for p in Precision}
    three = {p.value: p.mfu_class for p in Precision}
    assert two == {
        "fp32": "32",
        "tf32": "32",
        "fp16_amp": "16",
        "bf16_amp": "16",
        "bf16": "16",
        "fp8": "16",
    }
    assert three == {**two, "fp8": "8"}


def test_families_and_architecture_rules() -> None:
    assert {a.value: a.family for a in Architecture} == {
        "cnn": "cnn",
        "vit": "transformer",
        "transformer_encoder": "transformer",
        "transformer_decoder": "transformer",
        "diffusion_unet": "cnn",
        "diffusion_transformer": "transformer",
        "rnn_seq2seq": "other",
        "tts": "other",
        "vocoder": "other",
        "recommender": "other",
    }
    assert {a for a in Architecture if a.counts_tokens} == {
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.RNN_SEQ2SEQ,
    }
    assert {a for a in Architecture if a.takes_lora} == {
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.VIT,
        Architecture.DIFFUSION_UNET,
        Architecture.DIFFUSION_TRANSFORMER,
    }
    assert Architecture.VIT.shape_fields == ("layers", "hidden_size")
    assert Architecture.DIFFUSION_TRANSFORMER.shape_fields == (
        "layers",
        "hidden_size",
        "image_size",
    )
    assert Architecture.DIFFUSION_TRANSFORMER.takes_images
    assert not Architecture.DIFFUSION_TRANSFORMER.counts_tokens
    assert Architecture.TRANSFORMER_DECODER.shape_fields == ("layers", "hidden_size", "seq_len")
    assert Architecture.CNN.shape_fields == ()


def test_words_read_as_their_strings() -> None:
    # keys of generated constants (pprint writes keys by repr), JSON and messages unchanged
    table = {Family.TRANSFORMER: 1.0, PrecisionClass.HALF: 2.0}
    assert pprint.pformat(table, sort_dicts=True) == "{'16': 2.0, 'transformer': 1.0}"
    assert json.dumps(table) == '{"transformer": 1.0, "16": 2.0}'
    assert {"cnn": 3}[Family.CNN] == 3
    assert f"{Family.OTHER}|{PrecisionClass.FP8}" == "other|8"


def test_situation_basis_and_range() -> None:
    assert {s.value: s.basis for s in Situation} == {
        "measured": Basis.MEASURED,
        "measured_rescaled": Basis.SCALED,
        "sibling": Basis.SCALED,
        "extrapolated": Basis.SCALED,
        "flops_model": Basis.FLOPS_MODEL,
        "derived": Basis.SCALED,
        "precision_switch": Basis.SCALED,
        "submitted": Basis.SCALED,
    }
    assert Situation.MEASURED_RESCALED.range_situation == Situation.MEASURED
    assert Situation.SIBLING.range_situation == Situation.SIBLING


def test_field_lists_come_from_the_field_metadata() -> None:
    shape = "architecture params layers hidden_size heads kv_heads ffn_hidden_size vocab_size"
    more = "seq_len image_size method gradient_checkpointing checkpoint_granularity"
    more += " forward_gflops_per_sample"
    assert set(THROUGHPUT_FIELDS) == {*shape.split(), *more.split(), "lookup_params"}
    assert REQUIRED_WITHOUT_PRESET == ("architecture", "params", "samples_per_epoch")
    grouped = [name for names in FIELD_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(WORKLOAD_INPUTS)  # every given field in one group
    assert FIELD_GROUPS[FieldGroup.PRESET] == ("preset",)
    software = "stack min_cuda cuda_build cuda_only_libraries min_compute_capability"
    assert FIELD_GROUPS[FieldGroup.SOFTWARE] == tuple(software.split())


def test_served_rates_and_run_costs() -> None:
    # 100 samples/s (80-120); a loader of 50/s caps the first offer, none the second
    rates = served_rates(
        np.array([100.0, 100.0]),
        np.array([80.0, 80.0]),
        np.array([120.0, 120.0]),
        np.array([50.0, math.inf]),
    )
    assert rates.samples_per_s.tolist() == [50.0, 100.0]
    assert rates.low.tolist() == [50.0, 80.0]
    assert rates.high.tolist() == [50.0, 120.0]
    # 360,000 samples an epoch: 2 h at 50/s, 1 h at 100/s (1/1.2 h at 120/s, 1.25 h at 80/s)
    run = run_costs(360_000.0, 3, rates, np.array([4.0, math.nan]))
    assert run.epoch_hours.tolist() == [2.0, 1.0]
    assert run.epoch_hours_low[1] == pytest.approx(1 / 1.2)
    assert run.epoch_hours_high[1] == pytest.approx(1.25)
    assert run.cost_per_epoch[0] == 8.0 and math.isnan(run.cost_per_epoch[1])
    assert run.total_hours.tolist() == [6.0, 3.0]
    assert run.total_cost[0] == 24.0
    stopped = run_costs(
        10.0, 1, served_rates(*(np.array([x]) for x in (0.0, 0.0, 0.0, 5.0))), np.array([0.0])
    )
    assert math.isinf(stopped.epoch_hours[0]) and math.isnan(stopped.cost_per_epoch[0])


def test_cuda_too_old_reads_versions_as_numbers() -> None:
    """A driver that says CUDA ``12`` runs a job that needs ``12.0``, not one that needs
    ``12.1`` (cost.hardware_warnings through combine)."""
    mem = estimate_memory(GPT2, vram_gib=80, with_fixes=False)
    names = ("samples_per_s", "samples_per_s_low", "samples_per_s_high")
    rates = dict(zip(names, (10.0, 8.0, 12.0), strict=True))
    tp = ThroughputEstimate(**rates, basis=Basis.SCALED, multi_gpu_efficiency=1.0)
    hw = Hardware(gpu=A100_80_SXM, max_cuda="12")

    def codes(min_cuda: str) -> set[str]:
        e = combine(replace(GPT2, min_cuda=min_cuda), hw, tp, mem)
        return {w.code.value for w in e.warnings}

    assert "cuda_too_old" not in codes("12.0")
    assert "cuda_too_old" in codes("12.1")
