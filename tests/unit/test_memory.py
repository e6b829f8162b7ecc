"""Memory model: formulas against hand-worked numbers (estimation.md §1-§5)."""

from __future__ import annotations

import dataclasses

import pytest

from app.estimate.memory import (
    CUDA_CONTEXT_GIB,
    GIB,
    NF4_BYTES_PER_PARAM,
    SLACK,
    activation_bytes_per_sample,
    estimate_memory,
    lora_trainable_params,
    oom_risk,
    state_bytes,
)
from app.estimate.types import (
    Architecture,
    Attention,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)
from tests.unit.helpers import GPT2, LLAMA3_8B

ONE_B = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    params=1_000_000_000,
    layers=24,
    hidden_size=2048,
    seq_len=1024,
    samples_per_epoch=1,
)


@pytest.mark.parametrize(
    ("precision", "optimizer", "per_param"),
    [
        (Precision.FP32, Optimizer.ADAMW, 16),  # 4 weights + 4 grads + 8 Adam moments
        (Precision.BF16_AMP, Optimizer.ADAMW, 18),  # HF AMP: 6 + 4 + 8
        (Precision.BF16, Optimizer.ADAMW, 8),  # pure bf16: 2 + 2 + 4
        (Precision.FP16_AMP, Optimizer.ADAMW_8BIT, 12),  # 6 + 4 + 2
        (Precision.FP32, Optimizer.SGD_MOMENTUM, 12),  # 4 + 4 + 4
    ],
)
def test_state_bytes_per_param(precision: Precision, optimizer: Optimizer, per_param: int) -> None:
    w = dataclasses.replace(ONE_B, precision=precision, optimizer=optimizer)
    s = state_bytes(w, gpu_count=1)
    assert s.weights + s.gradients + s.optimizer == pytest.approx(per_param * 1e9)


def test_zero_stages_divide_states_by_data_parallel_degree() -> None:
    # ZeRO paper (mixed precision, K = 12): stage 1 2+2+12/8, stage 2 2+(2+12)/8,
    # stage 3 (2+2+12)/8 bytes per parameter on 8 GPUs.
    expected = {Sharding.ZERO1: 4 + 12 / 8, Sharding.ZERO2: 2 + 14 / 8, Sharding.ZERO3: 16 / 8}
    for stage, per_param in expected.items():
        w = dataclasses.replace(ONE_B, sharding=stage)
        s = state_bytes(w, gpu_count=8)
        assert s.weights + s.gradients + s.optimizer == pytest.approx(per_param * 1e9), stage


def test_qlora_base_is_nf4_except_embeddings() -> None:
    w = Workload(**LLAMA3_8B, precision=Precision.BF16, method=Method.QLORA, lora_rank=8)
    emb = 2 * 128256 * 4096  # untied input embedding + LM head stay bf16
    pt = lora_trainable_params(w)
    expected_base = (8_030_261_248 - emb) * NF4_BYTES_PER_PARAM * 1.06 + emb * 2
    assert state_bytes(w, 1).weights == pytest.approx(expected_base + pt * 4)
    # rank 8 on q,k,v,o,gate,up,down of 32 layers: 8*(8192+5120+5120+8192+18432*2+18432)*32
    assert pt == 8 * 32 * (8192 + 5120 + 5120 + 8192 + 18432 + 18432 + 18432)


def test_gpt2_activation_bytes_hand_worked() -> None:
    # L * 17 copies * 2 B * s * h + fp32 logits 6 * s * V (Korthikanti 34 sbh bytes per layer)
    expected = 12 * 17 * 2 * 1024 * 768 + 6 * 1024 * 50304
    assert activation_bytes_per_sample(GPT2) == pytest.approx(expected)


def test_checkpointing_stores_layer_inputs_plus_one_layer() -> None:
    w = dataclasses.replace(GPT2, gradient_checkpointing=True)
    # layer inputs + max(one layer's 17 copies, fp32 logits): 6*s*V = 309 MB > 26.7 MB
    expected = 12 * 2 * 1024 * 768 + max(17 * 2 * 1024 * 768, 6 * 1024 * 50304)
    assert activation_bytes_per_sample(w) == pytest.approx(expected)


def test_eager_attention_adds_score_matrices() -> None:
    eager = dataclasses.replace(GPT2, attention=Attention.EAGER)
    extra = activation_bytes_per_sample(eager) - activation_bytes_per_sample(GPT2)
    assert extra == pytest.approx(12 * 12 * 1024 * 1024 * 5)  # a*s^2*(2*2+1) per layer


def test_peak_is_states_plus_activations_with_slack_and_context() -> None:
    est = estimate_memory(GPT2, vram_gb=24)
    states = 18 * 124_373_760
    act = activation_bytes_per_sample(GPT2)
    assert est.peak_memory_gib == pytest.approx((states + act) * SLACK / GIB + CUDA_CONTEXT_GIB)
    assert est.usable_vram_gib == pytest.approx(24 * 0.985)


def test_max_micro_batch_size_is_the_largest_that_fits() -> None:
    est = estimate_memory(GPT2, vram_gb=24)
    b = est.max_micro_batch_size
    fits = estimate_memory(dataclasses.replace(GPT2, micro_batch_size=b), vram_gb=24)
    over = estimate_memory(dataclasses.replace(GPT2, micro_batch_size=b + 1), vram_gb=24)
    assert fits.memory_utilization <= 1.0 < over.memory_utilization
    # (23.64 - 0.5 - 18*124.37e6*1.1/2**30) / (629.9e6*1.1/2**30) = 20.85 / 0.6453 = 32.3
    assert b == 32


@pytest.mark.parametrize(
    ("utilization", "risk"),
    [
        (0.5, OomRisk.LOW),
        (0.849, OomRisk.LOW),
        (0.85, OomRisk.MEDIUM),
        (1.0, OomRisk.MEDIUM),
        (1.01, OomRisk.HIGH),
    ],
)
def test_oom_bands(utilization: float, risk: OomRisk) -> None:
    assert oom_risk(utilization) == risk


def test_llama3_8b_full_does_not_fit_24gb_but_qlora_does() -> None:
    full = Workload(**LLAMA3_8B, precision=Precision.BF16_AMP)
    qlora = Workload(**LLAMA3_8B, precision=Precision.BF16, method=Method.QLORA, lora_rank=8)
    assert estimate_memory(full, vram_gb=24).oom_risk == OomRisk.HIGH
    assert estimate_memory(qlora, vram_gb=24).oom_risk != OomRisk.HIGH
