"""A LoRA base loaded in 8 bits, through the HTTP API (issue 23, with issue 24 item 1): the
throughput answer states the int8 base and runs its matmuls at LLM.int8's measured speed
(Dettmers et al. 2022, arXiv:2208.07339 Table 5; app/model/int8_base.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import LLAMA_7B_SHAPE

pytestmark = pytest.mark.db

#: U-9's LLaMA-7B LoRA (tloen/alpaca-lora) as ../shared/real_runs/time_cases.json writes it
LLAMA7B_LORA: dict[str, Any] = {
    "architecture": "transformer_decoder",
    **LLAMA_7B_SHAPE,
    "method": "lora",
    "lora_rank": 16,
    "precision": "fp16_amp",
    "micro_batch_size": 8,
    "seq_len": 256,
    "gradient_checkpointing": True,
    "samples_per_epoch": 49_760,
}


def estimate(client: Any, **extra: Any) -> dict[str, Any]:
    body = {"workload": {**LLAMA7B_LORA, **extra}, "hardware": {"gpu": "RTX 3090"}}
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json()["estimate"])


def test_an_int8_base_is_slower_by_the_sourced_factor_on_the_base_share(client: Any) -> None:
    sixteen = estimate(client)
    eight = estimate(client, base_dtype="load_in_8bit")
    # base share f = 6·(N − 2·32,000·4,096)·256 / (6·N·256 + 16·32·4,096·256²) = 0.94850;
    # Table 5 at model dimension 4,096: 0.86x fp16 -> step x(1 − f + f/0.86) = x1.1544
    n = 6_738_415_616
    share = 6 * (n - 2 * 32_000 * 4096) * 256 / (6 * n * 256 + 16 * 32 * 4096 * 256**2)
    factor = 1 - share + share / 0.86
    assert factor == pytest.approx(1.1544, abs=1e-4)
    # and the backward rebuilds the 16-bit weights once per micro-batch (bitsandbytes
    # MatMul8bitLt.backward): 11 B × (N − 2·32,000·4,096) int8 parameters at the RTX 3090's
    # 936 GB/s = 0.07611 s on each micro-batch of 8 samples
    dequant = 11 * (n - 2 * 32_000 * 4096) / 936e9
    assert dequant == pytest.approx(0.07611, abs=1e-5)
    step = 8 / sixteen["samples_per_s"] * factor + dequant
    assert eight["samples_per_s"] == pytest.approx(8 / step, rel=1e-6)
    assert eight["epoch_hours"] > sixteen["epoch_hours"]
    notes = " | ".join(eight["notes"])
    assert "base dtype int8" in notes and "arXiv:2208.07339" in notes
    assert "extrapolated" in notes
    assert "rebuilds the int8 base's 16-bit weights once per micro-batch" in notes
    assert "76 ms at the GPU's 936 GB/s" in notes
    # a 16-bit base's answer says nothing of int8
    assert not any("LLM.int8" in n for n in sixteen["notes"])
    assert estimate(client, base_dtype="fp16")["samples_per_s"] == sixteen["samples_per_s"]


def test_an_int8_base_without_a_measured_ratio_says_it_is_outside_the_model(
    client: Any,
) -> None:
    small = {"params": 30_000_000, "layers": 6, "hidden_size": 512, "heads": 8, "kv_heads": 8}
    small["ffn_hidden_size"] = 2048
    eight = estimate(client, base_dtype="int8", **small)
    sixteen = estimate(client, **small)
    assert eight["samples_per_s"] < sixteen["samples_per_s"]
    assert any("outside the measured model" in n for n in eight["notes"]), eight["notes"]


def test_the_weight_rebuild_weighs_more_on_a_small_micro_batch(client: Any) -> None:
    """The rebuild is per micro-batch, the matmuls per sample: at micro-batch 1 the int8 base
    costs more of the step than at 8 (same GPU, same per-sample matmul factor)."""
    ratios = []
    for batch in (1, 8):
        sixteen = estimate(client, micro_batch_size=batch)
        eight = estimate(client, base_dtype="int8", micro_batch_size=batch)
        ratios.append(sixteen["samples_per_s"] / eight["samples_per_s"])
    assert ratios[0] > ratios[1] > 1.1544
