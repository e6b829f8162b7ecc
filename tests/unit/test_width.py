"""A transformer's FLOPs without its lookup tables, and the share of the peak its width
reaches (``width_efficiency``), as the derived and FLOPs-model situations use them."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace
from typing import cast

import pytest

from app.calibrate.validate import best_width_h0, patched
from app.estimate.pooled import matmul_rows_per_sample
from app.estimate.throughput import (
    estimate_throughput,
    matmul_params,
    training_flops_per_sample,
    width_efficiency,
)
from app.estimate.types import Architecture, Precision, Situation, Workload
from app.services.reference import Preset, ReferenceData
from app.services.workloads import resolve_workload
from tests.unit.helpers import A100_80_SXM
from tests.unit.test_throughput import BERT, point

#: Transformer-XL base as DLE builds it (workloads.csv): 191,950,298 parameters, of which the
#: 267,735 × 512 tied table's rows outside the 19,997-word head cluster are lookups only
TXL_BASE = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    params=191_950_298,
    layers=16,
    hidden_size=512,
    heads=8,
    vocab_size=267_735,
    seq_len=192,
    micro_batch_size=32,
    precision=Precision.FP16_AMP,
    samples_per_epoch=537_640,
    lookup_params=126_841_856,
)


def test_lookup_params_leave_the_flops_count() -> None:
    # 191,950,298 − (267,735 − 19,997) × 512 = 65,108,442 multiplied per token
    assert matmul_params(TXL_BASE) == 65_108_442
    # per token 6 × 65,108,442 + 12 × 16 × 512 × 192 = 409,525,020; × 192 tokens
    assert training_flops_per_sample(TXL_BASE) == pytest.approx(409_525_020 * 192)
    # without the field a decoder counts every parameter
    plain = dataclasses.replace(TXL_BASE, lookup_params=None)
    assert matmul_params(plain) == 191_950_298
    # an encoder's default is its vocab × hidden table (BERT-base: 86,042,882)
    bert = dataclasses.replace(BERT, vocab_size=30_522)
    assert matmul_params(bert) == 109_483_778 - 30_522 * 768


def test_width_efficiency_is_h_over_h_plus_h0() -> None:
    with patched(WIDTH_H0={"transformer": 1000.0}):
        assert width_efficiency(TXL_BASE) == pytest.approx(512 / 1512)
        wide = dataclasses.replace(TXL_BASE, hidden_size=1024)
        assert width_efficiency(wide) == pytest.approx(1024 / 2024)
        cnn = Workload(architecture=Architecture.CNN, params=25_557_032, samples_per_epoch=1)
        assert width_efficiency(cnn) == 1.0
    with patched(WIDTH_H0={}):
        assert width_efficiency(TXL_BASE) == 1.0


def test_best_width_h0_recovers_the_h0_its_pairs_were_made_with() -> None:
    widths = [(512, 1024), (768, 2048), (1024, 4096), (2048, 8192)]

    def made(h0: float) -> list[tuple[int, int, float]]:
        return [(a, b, math.log((1 + h0 / b) / (1 + h0 / a))) for a, b in widths]

    assert best_width_h0(made(1000.0)) == 1000.0
    assert best_width_h0(made(0.0)) == 0.0
    # 631 = round(10 ** 2.80), the grid point at 1 % steps nearest 630
    assert best_width_h0(made(630.0)) == 631.0


def test_matmul_rows_carry_a_micro_batch_between_widths() -> None:
    # 384 tokens × 768 wide per BERT-base sample; samples of a CNN count as 1
    assert matmul_rows_per_sample(BERT) == 384 * 768
    assert matmul_rows_per_sample(TXL_BASE) == 192 * 512


def test_a_wider_variant_is_scaled_by_flops_and_width() -> None:
    # BERT-base measured at 443 sequences/s (micro-batch 320); a 1024-wide variant at the same
    # micro-batch is read on BERT's curve at 320 × 1024 / 768 = 427 (above the measured
    # batch: no gain), times the FLOPs ratio, times (1024 / 2024) / (768 / 1768)
    pts = [point("A100 SXM4 80GB", 443, 320)]
    wider = dataclasses.replace(BERT, hidden_size=1024, params=200_000_000, matches_preset=False)
    with patched(WIDTH_H0={"transformer": 1000.0}):
        tp = estimate_throughput(wider, A100_80_SXM, points=pts, reference=BERT)
    assert tp.situation == Situation.DERIVED
    flops = training_flops_per_sample(BERT) / training_flops_per_sample(wider)
    width = (1024 / 2024) / (768 / 1768)
    assert tp.samples_per_s == pytest.approx(443 * flops * width, rel=0.01)


def _txl_reference() -> ReferenceData:
    fields = {
        "architecture": "transformer_decoder",
        "params": 191_950_298,
        "layers": 16,
        "hidden_size": 512,
        "heads": 8,
        "vocab_size": 267_735,
        "seq_len": 192,
        "samples_per_epoch": 537_640,
        "lookup_params": 126_841_856,
    }
    preset = Preset(
        slug="txl",
        name="txl",
        fields=fields,
        benchmark_workloads=(),
        benchmark_method=None,
        units_per_sample=None,
        throughput_unit=None,
        source="test",
        notes=None,
    )
    return cast(ReferenceData, SimpleNamespace(presets={"txl": preset}))


def test_a_changed_table_shape_drops_the_presets_lookup_params() -> None:
    ref = _txl_reference()
    deeper, _, _ = resolve_workload({"preset": "txl", "layers": 24, "params": 246_550_000}, ref)
    assert deeper.lookup_params == 126_841_856  # the same tables
    wider, _, _ = resolve_workload({"preset": "txl", "hidden_size": 1024}, ref)
    assert wider.lookup_params is None
    assert any("lookup_params (126,841,856" in n for n in wider.input_notes)
    given, _, _ = resolve_workload(
        {"preset": "txl", "hidden_size": 1024, "lookup_params": 250_000_000}, ref
    )
    assert given.lookup_params == 250_000_000
