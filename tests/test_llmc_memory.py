"""llm.c's GPT-2 presets on the hardware their scripts ran on (POST /v1/estimate, seeded
database): the memory set-up of ``workloads_memory.csv`` reaches the estimate.

karpathy/llm.c@f1e2ace6:scripts/run_gpt2_350M.sh trains d24 with ``-b 64 -t 1024 -r 0 -z 1`` on
8 x A100 80GB SXM; train_gpt2.cu's fused classifier keeps only the bf16 logits, which its
backward overwrites with their gradient (``fused_cross_entropy``).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.model.calibration import load_calibration
from app.model.memory import (
    COPIES_GPT,
    CUDA_CONTEXT_GIB,
    GIB,
    NCCL_GIB,
    SLACK,
    ZERO_BUCKET_ELEMENTS,
)

pytestmark = pytest.mark.db

A100_8 = {"gpu": "A100 SXM4 80GB", "gpu_count": 8}


def estimate(client: Any, workload: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={"workload": workload, "hardware": A100_8})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["estimate"]
    return out


def test_llmc_350m_on_8_a100_80gb_is_not_high(client: Any) -> None:
    e = estimate(client, {"preset": "gpt2-350m-pretrain-llmc"})
    b = e["memory"]
    p, layers, h, s, vocab, batch, n = 354_871_296, 24, 1024, 1024, 50304, 64, 8
    # ZeRO paper mixed precision, optimizer state sharded over 8: 2 + 2 + (4 + 8) / 8 B/param
    assert b["weights_gib"] == pytest.approx(2 * p / GIB, rel=1e-9)  # 0.661
    assert b["gradients_gib"] == pytest.approx(2 * p / GIB, rel=1e-9)  # 0.661
    assert b["optimizer_gib"] == pytest.approx(12 * p / n / GIB, rel=1e-9)  # 0.496
    # COPIES_GPT (17) copies of b*s*h at 2 B per layer (no recompute, -r 0) + the logits:
    # llm.c's fused classifier overwrites its bf16 logits with their gradient
    # (llmc/fused_classifier.cuh), so 2 B a logit: 2 x 64 x 1024 x 50304 = 6,593,445,888 B
    logits = 2 * batch * s * vocab
    assert logits == 6_593_445_888
    acts = layers * COPIES_GPT * 2 * batch * s * h + logits  # 61,354,278,912 B
    assert b["logits_gib"] == pytest.approx(logits / GIB, rel=1e-9)  # 6.14
    assert b["activations_gib"] == pytest.approx(acts / GIB, rel=1e-9)  # 57.14
    bucket = ZERO_BUCKET_ELEMENTS * 2  # DeepSpeed ZeRO-1 reduce bucket, 0.93 GiB
    allocated = 4 * p + 12 * p / n + acts + bucket  # 64,306,071,040 B
    assert b["buffers_gib"] == pytest.approx(bucket / GIB, rel=1e-9)
    assert b["allocated_gib"] == pytest.approx(allocated / GIB, rel=1e-9)  # 59.89
    # llm.c's AdamW is one in-place kernel (llmc/adamw.cuh): no step temporary
    assert b["optimizer_step_gib"] == 0
    peak = allocated * SLACK / GIB + CUDA_CONTEXT_GIB + NCCL_GIB  # 67.88 GiB
    assert e["peak_memory_gib"] == pytest.approx(peak, rel=1e-9)
    # the same figures as literals, worked by hand: a changed constant must be reviewed here
    # 64,306,071,040 B / 2^30 = 59.89 GiB; x 1.10 slack + 0.5 context + 1.5 NCCL = 67.88
    assert b["allocated_gib"] == pytest.approx(59.89, abs=0.01)
    assert e["peak_memory_gib"] == pytest.approx(67.88, abs=0.01)
    usable = 79.14  # what CUDA reports on an A100 SXM4 80GB (app/model/vram.py)
    assert e["memory_utilization"] == pytest.approx(peak / usable, rel=1e-9)  # 0.858
    assert e["oom_risk"] != "high"
    # what the model cannot express for llm.c is said, not fudged
    assert any("reduce-scatters the gradients in place" in n for n in e["notes"])
    assert any("fused_classifier" in n for n in e["notes"])


def test_unfused_loss_is_what_made_the_350m_preset_high(client: Any) -> None:
    # the same run with a plain PyTorch loss (8 B per logit: logits, log-softmax output, its
    # gradient and the logits' gradient at 16-bit) is 24.56 GiB of logits instead of 6.14
    e = estimate(client, {"preset": "gpt2-350m-pretrain-llmc", "fused_cross_entropy": False})
    logits = load_calibration().memory.unfused_logit_bytes * 64 * 1024 * 50304
    assert e["memory"]["logits_gib"] == pytest.approx(logits / GIB, rel=1e-9)
    fused = estimate(client, {"preset": "gpt2-350m-pretrain-llmc"})
    assert e["peak_memory_gib"] > fused["peak_memory_gib"]


@pytest.mark.parametrize(
    "preset",
    ["gpt2-124m-pretrain-llmc", "gpt2-774m-pretrain-llmc", "gpt2-1558m-pretrain-llmc"],
)
def test_other_llmc_presets_fit_their_scripts_hardware(client: Any, preset: str) -> None:
    e = estimate(client, {"preset": preset})
    assert e["oom_risk"] == "low", e["memory"]
    assert e["memory"]["logits_gib"] > 0
