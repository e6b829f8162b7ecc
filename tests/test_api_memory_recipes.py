"""Memory answers for the recipes people run, through the HTTP API (issue 24): the frozen base
dtype as people write it, torchtune presets' chunked loss, and a verdict that a measured run
contradicts."""

from __future__ import annotations

from typing import Any

import pytest

from app.model.calibration import load_calibration
from app.model.memory import GIB

pytestmark = pytest.mark.db


def post(client: Any, workload: dict[str, Any], gpu: str = "RTX 4090") -> Any:
    return client.post("/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu}})


@pytest.mark.parametrize("written", ["int8", "8bit", "8-bit", "load_in_8bit", "LLM.int8"])
def test_an_int8_base_is_accepted_as_written_and_stated(client: Any, written: str) -> None:
    r = post(client, {"preset": "llama3-8b-lora", "base_dtype": written})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["base_dtype"] == "int8"
    notes = body["estimate"]["notes"]
    assert any("frozen base counted in int8 (as given)" in n for n in notes), notes
    # 8.03 B parameters: the int8 base (1 B + fp32 row scales, 16-bit embeddings and LM
    # head: 9,087,750,404 B) against the bf16 base (16,060,522,496 B)
    bf16 = post(client, {"preset": "llama3-8b-lora"}).json()["estimate"]["memory"]
    int8 = body["estimate"]["memory"]
    assert bf16["weights_gib"] - int8["weights_gib"] == pytest.approx(
        (16_060_522_496 - 9_087_750_404) / GIB, rel=1e-6
    )


def test_a_junk_base_dtype_is_a_400_naming_the_field(client: Any) -> None:
    r = post(client, {"preset": "llama3-8b-lora", "base_dtype": "int7"})
    assert r.status_code == 400
    assert "base_dtype" in r.text and "int8" in r.text


def test_torchtune_lora_presets_count_their_chunked_loss(client: Any) -> None:
    # llama3_1/8B_lora_single_device.yaml: LinearCrossEntropyLoss, so the loss keeps every
    # chunk's saved log-softmax, 4 B a 16-bit logit (MemoryParams): 2 samples x 2,048
    # tokens x 128,256 entries = 525,336,576 logits x 4 B = 1.957 GiB, not the unfused
    # 4 x 2 B = 8 B each (3.914 GiB)
    logits = 2 * 2048 * 128256
    chunked, unfused = 4.0, 8.0
    assert load_calibration().memory.chunked_logit_bytes == chunked
    assert load_calibration().memory.unfused_logit_bytes == unfused
    r = post(client, {"preset": "llama3-8b-lora"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["fused_cross_entropy"] is True
    assert body["estimate"]["memory"]["logits_gib"] == pytest.approx(chunked * logits / GIB)
    assert body["estimate"]["memory"]["logits_gib"] == pytest.approx(1.957, abs=1e-3)
    # a request may still say its loss is unfused
    plain = post(client, {"preset": "llama3-8b-lora", "fused_cross_entropy": False}).json()
    assert plain["estimate"]["memory"]["logits_gib"] == pytest.approx(unfused * logits / GIB)


def test_gradients_kept_between_steps_are_counted_at_the_peak(client: Any) -> None:
    # Llama 3.2 3B full fine-tune, pure bf16, AdamW, one GPU, no accumulation: zero_grad
    # sets the gradients to None (PyTorch 2.0's default), so the 2 B bf16 gradients of the
    # 3,212,749,824 parameters are not alive when the activations peak; zeroed in place they
    # are (6,425,499,648 B more)
    job = {
        "preset": "llama32-3b-full",
        "optimizer": "adamw",
        "optimizer_in_backward": False,
        "gradient_checkpointing": False,
    }
    freed = post(client, job, gpu="H100 SXM 80GB").json()["estimate"]["memory"]
    kept = post(client, {**job, "set_grads_to_none": False}, gpu="H100 SXM 80GB").json()
    kept_mem = kept["estimate"]["memory"]
    assert freed["gradients_gib"] == 0
    assert kept_mem["gradients_gib"] == pytest.approx(2 * 3_212_749_824 / GIB)
    assert kept_mem["allocated_gib"] - freed["allocated_gib"] == pytest.approx(
        2 * 3_212_749_824 / GIB
    )
    assert post(client, {**job, "set_grads_to_none": "maybe"}).status_code == 400


def test_a_verdict_a_measured_run_contradicts_says_so(client: Any) -> None:
    # Lambda ran BERT-base SQuAD at micro-batch 96 on the RTX 4090 (seed_data/benchmarks.csv):
    # the throughput answer is that measurement, so a "high" memory verdict carries a note
    body = post(client, {"preset": "bert-base-squad"}).json()
    e = body["estimate"]
    assert e["situation"] == "measured"
    if e["oom_risk"] == "high":
        assert any("were measured on this GPU model" in n for n in e["notes"]), e["notes"]
    # DLE's apex amp O2 runs the encoder in fp16: Korthikanti's count as written,
    # 12 layers x 18,874,368 B per sample x 96 = 20.25 GiB of activations
    assert e["memory"]["activations_gib"] == pytest.approx(12 * 18_874_368 * 96 / GIB)
    # a micro-batch nobody measured on this card gets no such note
    other = post(client, {"preset": "bert-base-squad", "micro_batch_size": 200}).json()
    assert other["estimate"]["situation"] != "measured"
    assert not any("were measured on this GPU model" in n for n in other["estimate"]["notes"])
