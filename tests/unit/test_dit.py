"""The diffusion-transformer architecture (DiT, SD3's MMDiT, Flux): tokens, FLOPs and
activation memory from the shape, checked against hand counts and the DiT paper."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.model.flops import dit_token_params, matmul_params, training_flops_per_sample
from app.model.memory import (
    activation_bytes_per_sample,
    frozen_component_bytes,
    memory_notes,
    transformer_tokens,
)
from app.model.types import Method, Precision, Workload
from app.model.vocabulary import Architecture

#: DiT-XL/2 (Peebles & Xie arXiv:2212.09748, Table 4): 28 layers, hidden 1,152, 16 heads,
#: 675,129,632 parameters (as facebookresearch/DiT train.py prints them; SiT-XL/2, the same
#: network, has the same count, Ma et al. arXiv:2401.08740), 256 px → 32² latent → 256 tokens
DIT_XL2 = Workload(
    architecture=Architecture.DIFFUSION_TRANSFORMER,
    params=675_129_632,
    layers=28,
    hidden_size=1152,
    heads=16,
    image_size=256,
    precision=Precision.BF16,
)


def test_tokens_are_latent_patches_plus_text_tokens() -> None:
    assert transformer_tokens(DIT_XL2) == 256  # (256 / 8 / 2)²
    assert transformer_tokens(replace(DIT_XL2, patch_size=4)) == 64  # DiT-XL/4
    # SD3 at 1,024 px: 128² latent / 2² = 4,096 image tokens + 333 text tokens
    assert transformer_tokens(replace(DIT_XL2, image_size=1024, seq_len=333)) == 4096 + 333


def test_flops_from_the_shape_match_the_dit_paper() -> None:
    # 12·L·h² multiplied per token, not the per-sample adaLN weights in params
    assert dit_token_params(DIT_XL2) == 28 * 12 * 1152**2 == 445_906_944
    assert matmul_params(DIT_XL2) == 445_906_944
    flops = training_flops_per_sample(DIT_XL2)
    assert flops is not None
    # forward multiply-accumulates = training FLOPs / 6: 114.15 G matmul + 4.23 G attention
    forward_macs = flops / 6
    assert forward_macs == pytest.approx(445_906_944 * 256 + 2 * 28 * 256**2 * 1152)
    assert forward_macs / 1e9 == pytest.approx(118.6, rel=0.005)  # the paper's 118.6 Gflops


def test_params_below_the_shape_count_are_kept() -> None:
    # a params figure smaller than the shape's per-token weights is not overridden
    small = replace(DIT_XL2, params=100_000_000)
    assert matmul_params(small) == 100_000_000


def test_activations_are_dit_blocks_without_dropout() -> None:
    # pure bf16, SDPA, no checkpointing: L × (9 + 2·4 + 4 adaLN − 1 mask copy) × 2 B × s × h
    per_sample = activation_bytes_per_sample(DIT_XL2)
    assert per_sample == pytest.approx(28 * 20 * 2 * 256 * 1152)
    # the dropout field cannot add masks a DiT block does not have
    assert activation_bytes_per_sample(replace(DIT_XL2, dropout=True)) == per_sample
    # joint text tokens add activations; checkpointing removes most of them
    assert activation_bytes_per_sample(replace(DIT_XL2, seq_len=77)) > per_sample
    ckpt = activation_bytes_per_sample(replace(DIT_XL2, gradient_checkpointing=True))
    assert ckpt == pytest.approx((28 * 2 + 20 * 2) * 256 * 1152)


def test_frozen_components_and_notes() -> None:
    w = replace(
        DIT_XL2,
        precision=Precision.BF16_AMP,
        method=Method.LORA,
        text_encoder_params=1_000,
        vae_params=500,
    )
    assert frozen_component_bytes(w) == (2_000.0, 1_000.0)
    notes = " ".join(memory_notes(replace(DIT_XL2, seq_len=333)))
    assert "256 latent tokens + 333 text tokens (patch 2 assumed)" in notes
    assert "text_encoder_params" in notes


def test_params_of_dit_and_mmdit_are_within_their_shape() -> None:
    from app.model.shape import shape_params_range, shape_warnings

    assert shape_params_range(DIT_XL2) == (445_906_944, 3 * 445_906_944)
    assert shape_warnings(DIT_XL2) == []
    # SD3-medium: 24 MMDiT layers at h 1,536 (2 B parameters)
    sd3 = replace(DIT_XL2, params=2_028_328_000, layers=24, hidden_size=1536, heads=24)
    assert shape_warnings(sd3) == []
    # a count of another model is still warned about
    assert shape_warnings(replace(DIT_XL2, params=10_000_000_000)) != []
