"""docs/model.md's worked memory figures are what the API serves (review #9: the paragraphs
had kept figures from before two model changes). Each figure is read from the paragraph and
compared with POST /v1/estimate on the seeded database, to the digits the paragraph gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.db

MODEL_MD = Path(__file__).resolve().parents[1] / "docs" / "model.md"
RTX_4090 = {"gpu": "GeForce RTX 4090", "gpu_count": 1}


def estimate(client: Any, preset: str) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={"workload": {"preset": preset}, "hardware": RTX_4090})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["estimate"]
    return out


def doc_text() -> str:
    return " ".join(MODEL_MD.read_text(encoding="utf-8").split())


def test_llama3_8b_lora_on_a_4090_as_the_doc_says(client: Any) -> None:
    m = re.search(
        r"with it ([\d.]+) GiB \(([\d.]+) GiB allocated, ([\d.]+) GiB peak with slack and "
        r"context, `(\w+)`, max micro-batch (\d+)\)",
        doc_text(),
    )
    assert m, "the llama3-8b-lora paragraph of docs/model.md changed shape"
    logits, allocated, peak, risk, max_mb = m.groups()
    e = estimate(client, "llama3-8b-lora")
    assert e["memory"]["logits_gib"] == pytest.approx(float(logits), abs=0.005)
    assert e["memory"]["allocated_gib"] == pytest.approx(float(allocated), abs=0.005)
    assert e["peak_memory_gib"] == pytest.approx(float(peak), abs=0.005)
    assert e["oom_risk"] == risk
    assert e["max_micro_batch_size"] == int(max_mb)
    # by hand: 2 x 2,048 tokens x 128,256 entries x 4 B (the chunked-loss count) = 1.957 GiB
    assert float(logits) == pytest.approx(2 * 2048 * 128256 * 4 / 2**30, abs=0.005)


def test_bert_base_squad_on_a_4090_as_the_doc_says(client: Any) -> None:
    text = doc_text()
    m = re.search(r"\(([\d.]+) GiB of activations, ([\d.]+) GiB peak\)", text)
    assert m, "the bert-base-squad paragraph of docs/model.md changed shape"
    activations, peak = (float(g) for g in m.groups())
    usable = re.search(r"against the ([\d.]+) GiB the 4090 reports", text)
    allocated = re.search(r"slack under ~(\d+) % of the ([\d.]+) GiB allocated", text)
    assert usable and allocated
    e = estimate(client, "bert-base-squad")
    assert e["memory"]["activations_gib"] == pytest.approx(activations, abs=0.005)
    assert e["peak_memory_gib"] == pytest.approx(peak, abs=0.005)
    assert e["memory"]["usable_vram_gib"] == pytest.approx(float(usable.group(1)), abs=0.005)
    assert e["memory"]["allocated_gib"] == pytest.approx(float(allocated.group(2)), abs=0.005)
    assert e["oom_risk"] == "high"
    # the slack at which it would fit: (usable - 0.5 GiB context) / allocated - 1, ~7 %
    room = (e["memory"]["usable_vram_gib"] - 0.5) / e["memory"]["allocated_gib"] - 1
    assert round(room * 100) == int(allocated.group(1))
    # Korthikanti's count by hand: 12 layers x 18,874,368 B x 96 samples = 20.25 GiB
    assert activations == pytest.approx(12 * 18_874_368 * 96 / 2**30, abs=0.005)


def test_a_full_fine_tune_shows_its_freed_gradients(client: Any) -> None:
    # review #14: bert-base-squad on 1 GPU, no accumulation: its fp32 gradients (4 B x
    # 109,483,778 = 0.408 GiB) are not alive at the activation peak; the breakdown says so
    # (gradients_gib + gradients_freed_gib = their size) and the total stays the peak
    r = client.post(
        "/v1/estimate", json={"workload": {"preset": "bert-base-squad"}, "hardware": RTX_4090}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["params"] == 109_483_778
    m = body["estimate"]["memory"]
    assert m["gradients_gib"] == pytest.approx(0.0, abs=1e-9)
    assert m["gradients_freed_gib"] == pytest.approx(4 * 109_483_778 / 2**30, rel=1e-9)
    parts = m["weights_gib"] + m["gradients_gib"] + m["optimizer_gib"] + m["activations_gib"]
    assert body["estimate"]["peak_memory_gib"] == pytest.approx(parts + m["overhead_gib"])
