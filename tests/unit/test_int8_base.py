"""A LoRA base loaded in 8 bits (bitsandbytes LLM.int8) in a step's time (app/model/int8_base.py).

Hand-checked against Dettmers et al. 2022 (arXiv:2208.07339) Table 5, the figures of
``seed_data/int8_matmul_speed.csv``.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from app.data.rows import Int8SpeedRow, read_rows
from app.model.int8_base import int8_base_time, int8_matmul_speed, int8_speed_table
from app.model.throughput import estimate_throughput
from app.model.types import Architecture, BaseDtype, GpuSpec, Method, Precision, Workload
from app.settings import PROJECT_ROOT
from tests.unit.helpers import A100_80_SXM, LLAMA_7B_SHAPE, RTX_4090

SEED = PROJECT_ROOT / "seed_data"

#: U-9's LLaMA-7B LoRA (tloen/alpaca-lora): the shape of ../shared/real_runs/time_cases.json
LLAMA7B_LORA = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    **LLAMA_7B_SHAPE,
    method=Method.LORA,
    lora_rank=16,
    precision=Precision.FP16_AMP,
    micro_batch_size=8,
    seq_len=256,
    gradient_checkpointing=True,
)
INT8 = dataclasses.replace(LLAMA7B_LORA, base_dtype=BaseDtype.INT8)


def test_the_table_the_model_reads_is_the_seed_rows() -> None:
    rows = read_rows(SEED / "int8_matmul_speed.csv", Int8SpeedRow)
    assert tuple(sorted((float(r.model_dim), r.speed_vs_fp16) for r in rows)) == (
        int8_speed_table()
    )
    # Table 5, row "LLM.int8() (vector-wise+decomp)": 0.14x at 768 ... 1.81x at 12288
    assert int8_speed_table()[0] == (768.0, 0.14)
    assert int8_speed_table()[-1] == (12288.0, 1.81)
    assert all(r.source == "https://arxiv.org/abs/2208.07339" and r.seen_on for r in rows)


def test_speed_is_the_measured_column_or_log_interpolated_between_two() -> None:
    assert int8_matmul_speed(4096) == (0.86, True)
    # halfway in log(width) between 4096 (0.86x) and 5140 (1.22x): the mean, 1.04
    mid = math.sqrt(4096 * 5140)
    speed, inside = int8_matmul_speed(mid)
    assert inside and speed == pytest.approx(1.04)
    # outside 768-12288: the nearest column, flagged
    assert int8_matmul_speed(512) == (0.14, False)
    assert int8_matmul_speed(16384) == (1.81, False)
    with pytest.raises(ValueError, match="width"):
        int8_matmul_speed(0)


def test_llama7b_lora_share_and_factor_by_hand() -> None:
    # matmul FLOPs per sample with checkpointing: (4 + 2)·N·s; the base's int8 part leaves
    # out the 16-bit input embedding and LM head (2 × 32,000 × 4,096); attention (12 + 4)·L·h·s²
    n, tables, s = 6_738_415_616, 2 * 32_000 * 4096, 256
    matmul = 6 * n * s
    attention = 16 * 32 * 4096 * s * s
    share = 6 * (n - tables) * s / (matmul + attention)
    assert share == pytest.approx(0.94850, abs=1e-5)
    got = int8_base_time(INT8)
    assert got is not None
    assert got.share == pytest.approx(share)
    assert got.speed == 0.86
    # 1 − f + f / 0.86 = 1.1544
    assert got.factor == pytest.approx(1 - share + share / 0.86)
    assert got.factor == pytest.approx(1.1544, abs=1e-4)
    assert "base dtype int8" in got.notes[0] and "arXiv:2208.07339" in got.notes[0]
    assert got.notes[1].startswith("extrapolated")


def test_a_16_bit_or_unset_base_is_untouched() -> None:
    assert int8_base_time(LLAMA7B_LORA) is None
    assert int8_base_time(dataclasses.replace(LLAMA7B_LORA, base_dtype=BaseDtype.BF16)) is None
    # a full fine-tune has no frozen base
    full = dataclasses.replace(INT8, method=Method.FULL)
    assert int8_base_time(full) is None


def test_without_a_measured_ratio_the_answer_says_so() -> None:
    # QLoRA with an int8 base: its fitted QLoRA slowdown applies, int8 is not measured
    qlora = int8_base_time(dataclasses.replace(INT8, method=Method.QLORA))
    assert qlora is not None and qlora.factor == 1.0
    assert "outside the measured model" in qlora.notes[0]
    # a width below the table's 768: the nearest column, and said
    small = int8_base_time(
        dataclasses.replace(INT8, params=30_000_000, layers=6, hidden_size=512, heads=8)
    )
    assert small is not None and small.speed == 0.14
    assert "outside the measured model" in small.notes[1]


def test_int8_base_estimate_is_the_16_bit_one_divided_by_the_factor() -> None:
    sixteen = estimate_throughput(LLAMA7B_LORA, RTX_4090)
    eight = estimate_throughput(INT8, RTX_4090)
    # each micro-batch of 8 at x1.1544 the time, plus the backward's weight rebuild:
    # 11 B × 6,476,271,616 int8 parameters at the RTX 4090's 1,008 GB/s = 0.070674 s
    rebuild = 11 * 6_476_271_616 / 1008e9
    assert rebuild == pytest.approx(0.070674, abs=1e-6)
    step = 8 / sixteen.samples_per_s * 1.1544 + rebuild
    assert eight.samples_per_s == pytest.approx(8 / step, rel=1e-4)
    assert any("base dtype int8" in n for n in eight.notes)
    assert not any("int8" in n for n in sixteen.notes)


@pytest.mark.parametrize("gpu", [A100_80_SXM, RTX_4090])
@pytest.mark.parametrize("hidden", [512, 768, 2048, 4096, 5120, 8192, 16384])
@pytest.mark.parametrize("seq", [128, 2048])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_an_int8_base_is_never_faster_than_a_16_bit_one(
    gpu: GpuSpec, hidden: int, seq: int, checkpointing: bool
) -> None:
    layers = 32
    w = dataclasses.replace(
        LLAMA7B_LORA,
        params=12 * layers * hidden * hidden + 2 * 32000 * hidden,
        hidden_size=hidden,
        ffn_hidden_size=4 * hidden,
        heads=hidden // 128,
        kv_heads=hidden // 128,
        seq_len=seq,
        gradient_checkpointing=checkpointing,
    )
    for dtype in (BaseDtype.BF16, BaseDtype.FP16):
        sixteen = estimate_throughput(dataclasses.replace(w, base_dtype=dtype), gpu)
        eight = estimate_throughput(dataclasses.replace(w, base_dtype=BaseDtype.INT8), gpu)
        assert eight.samples_per_s <= sixteen.samples_per_s
