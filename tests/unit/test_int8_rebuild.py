"""The int8 base's weight rebuild in the backward (app/model/int8_base.py ``int8_rate``),
pure: hand-checked figures for U-9's LLaMA-7B LoRA (tloen/alpaca-lora)."""

from __future__ import annotations

import pytest

from app.model.int8_base import (
    DEQUANT_BYTES_PER_PARAM,
    int8_base_time,
    int8_dequant_seconds,
    int8_rate,
)
from app.model.types import Architecture, BaseDtype, Method, Precision
from app.model.workload import Workload
from tests.unit.helpers import LLAMA_7B_SHAPE

N = LLAMA_7B_SHAPE["params"]


def llama7b(**extra: object) -> Workload:
    fields: dict[str, object] = {
        "architecture": Architecture.TRANSFORMER_DECODER,
        **LLAMA_7B_SHAPE,
        "method": Method.LORA,
        "lora_rank": 16,
        "precision": Precision.FP16_AMP,
        "micro_batch_size": 8,
        "seq_len": 256,
        "gradient_checkpointing": True,
        "base_dtype": BaseDtype.INT8,
    }
    fields.update(extra)
    return Workload(**fields)  # type: ignore[arg-type]


def test_the_rebuild_moves_eleven_bytes_per_int8_parameter() -> None:
    # undo_layout 1+1, contiguous copy 1+1, .to(float16) 1+2, .mul_ 2+2
    assert DEQUANT_BYTES_PER_PARAM == 11
    int8_params = N - 2 * 32_000 * 4096  # the input embedding and LM head stay 16-bit
    assert int8_params == 6_476_271_616
    # 11 × 6,476,271,616 B / 936 GB/s (RTX 3090) = 0.076110 s; / 448 GB/s (RTX A4000) 0.159016
    assert int8_dequant_seconds(llama7b(), 936) == pytest.approx(0.076110, abs=1e-6)
    assert int8_dequant_seconds(llama7b(), 448) == pytest.approx(0.159016, abs=1e-6)
    with pytest.raises(ValueError, match="bandwidth_gbs"):
        int8_dequant_seconds(llama7b(), 0)


def test_the_rate_adds_the_rebuild_to_each_micro_batch() -> None:
    factor = int8_base_time(llama7b())
    assert factor is not None and factor.factor == pytest.approx(1.1544, abs=1e-4)
    # 3 samples/s with a 16-bit base: 8 / (8/3 × 1.15441 + 0.076110) = 2.53604
    rate, notes = int8_rate(llama7b(), 3.0, 936)
    assert rate == pytest.approx(2.53604, abs=1e-5)
    assert "76 ms at the GPU's 936 GB/s" in notes[-1]
    # micro-batch 1: 1 / (1/3 × 1.15441 + 0.076110) = 2.16961: the rebuild weighs 8× more
    rate1, _ = int8_rate(llama7b(micro_batch_size=1), 3.0, 936)
    assert rate1 == pytest.approx(2.16961, abs=1e-5)


def test_no_rebuild_without_an_int8_base_or_a_bandwidth() -> None:
    assert int8_rate(llama7b(base_dtype=BaseDtype.BF16), 3.0, 936) == (3.0, ())
    factor = int8_base_time(llama7b())
    assert factor is not None
    rate, notes = int8_rate(llama7b(), 3.0, None)
    assert rate == pytest.approx(3.0 / factor.factor)
    assert notes == factor.notes
