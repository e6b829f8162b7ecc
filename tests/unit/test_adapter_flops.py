"""LoRA adapters' FLOPs in the training count (newcomer finding #9: rank had no effect on
throughput): ``6·r·(d_in + d_out)`` per adapted linear a token, counted above the ridge rank
below which an adapter's time is its activation traffic (app/model/flops.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.model.flops import (
    ADAPTER_RIDGE_RANK,
    adapter_params,
    training_flops_per_sample,
    transformer_flops,
)
from app.model.memory_states import lora_trainable_params
from app.model.types import Method, Workload
from tests.unit.helpers import LLAMA3_8B

# Llama 3.1 8B, seven adapted linears a block: q 4096+4096, k and v 4096+1024 each,
# o 4096+4096, gate and up 4096+14336 each, down 14336+4096 = 81,920 a layer, 32 layers
PER_RANK = 32 * 81_920


def _lora(rank: int, **fields: object) -> Workload:
    return Workload(**{**LLAMA3_8B, "method": Method.LORA, "lora_rank": rank, **fields})


def test_ridge_rank_is_the_a100s_flops_over_bytes() -> None:
    # 312 TFLOP/s dense bf16 over 2,039 GB/s (seed_data/gpus.csv, A100 SXM4 80GB)
    assert ADAPTER_RIDGE_RANK == 153
    assert round(312e12 / 2039e9) == 153


def test_adapter_parameters_by_hand() -> None:
    assert lora_trainable_params(_lora(8)) == 8 * PER_RANK == 20_971_520
    assert lora_trainable_params(_lora(1024)) == 1024 * PER_RANK == 2_684_354_560
    # below the ridge rank no adapter FLOPs add time; above it the ranks beyond it do
    assert adapter_params(_lora(8)) == 0
    assert adapter_params(_lora(153)) == 0
    assert adapter_params(_lora(1024)) == pytest.approx(871 * PER_RANK)
    assert adapter_params(_lora(1024)) == pytest.approx(2_283_274_240)
    assert adapter_params(_lora(1024, method=Method.QLORA)) == pytest.approx(2_283_274_240)
    assert adapter_params(_lora(1024, method=Method.FULL)) == 0


def test_rank_1024_adds_six_times_its_adapters_per_token() -> None:
    r8, r1024 = _lora(8, gradient_checkpointing=False), _lora(1024, gradient_checkpointing=False)
    (m8, a8), (m1024, a1024) = transformer_flops(r8), transformer_flops(r1024)
    assert a1024 == a8  # attention untouched
    # 6 x 2,283,274,240 x 2,048 tokens = 2.8057e13 FLOPs a sample
    assert m1024 - m8 == pytest.approx(6 * 2_283_274_240 * 2048)
    # recomputed with full checkpointing: one more adapter forward, 8 in all
    ckpt = transformer_flops(replace(r1024, gradient_checkpointing=True))[0]
    base = transformer_flops(replace(r8, gradient_checkpointing=True))[0]
    assert ckpt - base == pytest.approx(8 * 2_283_274_240 * 2048)


def test_more_rank_never_fewer_flops() -> None:
    flops = [training_flops_per_sample(_lora(r)) or 0.0 for r in (8, 16, 64, 153, 256, 1024)]
    assert flops == sorted(flops)
    assert flops[0] == flops[3]  # ranks 8..153: the measured LoRA rate's own traffic
    # Llama 3.1 8B at rank 1,024, recompute on, per token: (6N + 16·L·h·s + 8A) / (6N +
    # 16·L·h·s) = (48,181,567,488 + 4,294,967,296 + 18,266,193,920) / 52,476,534,784
    assert flops[-1] / flops[0] == pytest.approx(70_742_728_704 / 52_476_534_784)
