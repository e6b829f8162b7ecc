"""Rows of an unstated board variant (torchtune's "A100 (variant not stated)")."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from app.model.pooled import place_unstated_variants, unstated_variant
from app.model.types import BenchmarkPoint, Precision
from tests.unit.helpers import A100_80_SXM

CATALOG = {
    "A100 SXM4 80GB": A100_80_SXM,
    "A100 PCIe 80GB": replace(
        A100_80_SXM, name="A100 PCIe 80GB", memory_bandwidth_gbs=1935.0, form_factor="PCIe"
    ),
    "A100 SXM4 40GB": replace(
        A100_80_SXM, name="A100 SXM4 40GB", vram_gib=40.0, memory_bandwidth_gbs=1555.0
    ),
    "V100 SXM2 32GB": replace(
        A100_80_SXM, name="V100 SXM2 32GB", architecture="Volta", vram_gib=32.0
    ),
}


def _row(i: int, peak: float) -> BenchmarkPoint:
    return BenchmarkPoint(
        id=i, gpu="", gpu_count=1, interconnect=None, workload="Llama 3.2 3B", method="full",
        precision=Precision.BF16, batch_size_per_gpu=2, seq_len=4096, throughput_total=6960.0,
        throughput_unit="tokens/s", peak_memory_gib=peak, source="torchtune",
        source_ref="README", gpu_label="A100 (variant not stated)",
    )  # fmt: skip


def test_80gb_boards_that_compute_alike_make_one_spec() -> None:
    spec = unstated_variant("A100 (variant not stated)", CATALOG, 60.0)
    assert spec is not None
    assert spec.vram_gib == 80.0 and spec.bf16_tflops == A100_80_SXM.bf16_tflops
    assert spec.memory_bandwidth_gbs == pytest.approx(math.sqrt(2039.0 * 1935.0))


def test_no_spec_without_a_variant_family_or_when_variants_differ() -> None:
    assert unstated_variant("V100 32GB", CATALOG, None) is None  # variant not said to be unstated
    assert unstated_variant("P100 (variant not stated)", CATALOG, None) is None  # none named so
    slow = {**CATALOG, "A100 PCIe 80GB": replace(CATALOG["A100 PCIe 80GB"], bf16_tflops=300.0)}
    assert unstated_variant("A100 (variant not stated)", slow, 60.0) is None


def test_one_table_ran_on_one_board() -> None:
    # the table's 60 GiB row bounds the board for its 17.6 GiB row too (no 40GB board)
    placed, specs = place_unstated_variants([_row(1, 17.6), _row(2, 60.0)], CATALOG)
    assert {p.gpu for p in placed} == set(specs) and len(specs) == 1
    assert next(iter(specs.values())).vram_gib == 80.0
