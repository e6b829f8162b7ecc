"""Properties users take for granted, on the served answers of /v1/estimate and /v1/rank.

More GPUs of the same kind and link are never slower; fp32 is slower than fp16 mixed
precision on tensor-core GPUs (presets and custom workloads); more work per sample is never
faster; micro-batch 1 is slower than a full batch; siblings keep their order.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.db

PRESETS = ["resnet50-imagenet", "bert-base-squad", "gpt2-124m-pretrain", "llama3-8b-lora"]
TENSOR_CORE_GPUS = ["A100 SXM4 80GB", "H100 SXM 80GB", "V100 SXM2 16GB", "GeForce RTX 4090", "L4"]


def rate(client: Any, workload: dict[str, Any], gpu: str, **hardware: Any) -> float:
    r = client.post(
        "/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu, **hardware}}
    )
    assert r.status_code == 200, r.text
    return float(r.json()["estimate"]["samples_per_s"])


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "GeForce RTX 4090", "V100 SXM2 16GB"])
@pytest.mark.parametrize("link", ["nvlink", "pcie"])
def test_more_gpus_never_slower(client: Any, preset: str, gpu: str, link: str) -> None:
    counts = [0.25, 0.5, 1, 2, 3, 4, 6, 8, 16]  # whole from 1 up (1.5 GPUs is a 400)
    rates = [rate(client, {"preset": preset}, gpu, gpu_count=n, interconnect=link) for n in counts]
    assert rates == sorted(rates), list(zip(counts, rates, strict=True))
    assert rates[1] == pytest.approx(rates[2] / 2)  # half a GPU: half the rate


CUSTOM = {
    "resnet50-imagenet": {"image_size": 256},
    "bert-base-squad": {"layers": 24, "hidden_size": 1024, "heads": 16, "params": 335_000_000},
    "gpt2-124m-pretrain": {"seq_len": 2048},
    "llama3-8b-lora": {"seq_len": 4096},
}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("gpu", TENSOR_CORE_GPUS)
@pytest.mark.parametrize("custom", [False, True])
def test_fp32_slower_than_fp16_amp_on_tensor_cores(
    client: Any, preset: str, gpu: str, custom: bool
) -> None:
    w: dict[str, Any] = {"preset": preset, **(CUSTOM[preset] if custom else {})}
    fp16 = rate(client, {**w, "precision": "fp16_amp"}, gpu)
    fp32 = rate(client, {**w, "precision": "fp32"}, gpu)
    assert fp32 < fp16


@pytest.mark.parametrize(
    ("preset", "field", "values"),
    [
        ("resnet50-imagenet", "image_size", [160, 224, 256, 320]),
        ("bert-base-squad", "seq_len", [128, 384, 512]),
        ("bert-base-squad", "layers", [6, 12, 24]),
        ("gpt2-124m-pretrain", "seq_len", [512, 1024, 2048]),
        ("gpt2-124m-pretrain", "layers", [12, 24, 48]),
        ("llama3-8b-lora", "seq_len", [1024, 2048, 4096]),
    ],
)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "GeForce RTX 3090", "L4"])
def test_more_work_per_sample_never_faster(
    client: Any, preset: str, field: str, values: list[int], gpu: str
) -> None:
    rates = [rate(client, {"preset": preset, field: v}, gpu) for v in values]
    assert rates == sorted(rates, reverse=True), list(zip(values, rates, strict=True))
    assert rates[0] > rates[-1]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "H100 SXM 80GB", "L4"])
def test_micro_batch_1_slower_than_full_batch(client: Any, preset: str, gpu: str) -> None:
    presets = client.get("/v1/workloads").json()
    full = next(p for p in presets if p["preset"] == preset)["micro_batch_size"]
    assert full > 1
    one = rate(client, {"preset": preset, "micro_batch_size": 1}, gpu)
    assert one < rate(client, {"preset": preset, "micro_batch_size": full}, gpu)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("precision", ["fp16_amp", "fp32"])
def test_siblings_keep_their_order(client: Any, preset: str, precision: str) -> None:
    w = {"preset": preset, "precision": precision}
    sxm = rate(client, w, "A100 SXM4 80GB")
    pcie = rate(client, w, "A100 PCIe 80GB")
    assert 0.9 <= sxm / pcie <= 1.35
    h100 = rate(client, w, "H100 SXM 80GB")
    v100 = rate(client, w, "V100 SXM2 16GB")
    assert h100 > sxm > v100


def _rank(client: Any, preset: str) -> list[dict[str, Any]]:
    r = client.post(
        "/v1/rank", json={"workload": {"preset": preset}, "limit": 1000, "sort": "samples_per_s"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    return body["results"] + body["frontier"]


@pytest.mark.parametrize("preset", PRESETS)
def test_rank_more_gpus_never_slower_and_generations_keep_order(client: Any, preset: str) -> None:
    rows = _rank(client, preset)
    by: dict[tuple[str, str], dict[float, float]] = {}
    for x in rows:
        o = x["offer"]
        if o["gpu"] is None:
            continue
        key = (o["gpu"], o["interconnect"] or "")
        by.setdefault(key, {})[o["gpu_count"]] = x["estimate"]["samples_per_s"]
    checked = 0
    for key, per_count in by.items():
        counts = sorted(per_count)
        rates = [per_count[n] for n in counts]
        assert rates == sorted(rates), (key, list(zip(counts, rates, strict=True)))
        checked += len(counts) > 1
    assert checked >= 3
    single = {o: r for (o, _), c in by.items() for n, r in c.items() if n == 1}
    assert single["H100 SXM 80GB"] > single["A100 SXM4 80GB"]
    v100 = [r for (g, _), c in by.items() if g.startswith("V100") for n, r in c.items() if n == 1]
    assert v100 and single["A100 SXM4 80GB"] > max(v100)


def test_rank_uses_one_software_level_for_every_gpu(client: Any) -> None:
    # ResNet-50: every single-GPU estimate stands at the same suite's level, so the A100
    # SXM and PCIe boards of the same memory are within the siblings' band
    rows = _rank(client, "resnet50-imagenet")
    single = {
        x["offer"]["gpu"]: x["estimate"]["samples_per_s"]
        for x in rows
        if x["offer"]["gpu_count"] == 1 and x["offer"]["gpu"]
    }
    if "A100 PCIe 80GB" in single and "A100 SXM4 80GB" in single:
        assert 0.9 <= single["A100 SXM4 80GB"] / single["A100 PCIe 80GB"] <= 1.35
    notes = {
        n
        for x in rows
        for n in x["estimate"]["notes"]
        if "software level" in n and x["offer"]["gpu_count"] == 1
    }
    levels = {n.split("software level of ")[1] for n in notes}
    assert len(levels) == 1, levels


@pytest.mark.parametrize(
    ("workload", "gpu", "situation", "words"),
    [
        ({"preset": "bert-base-squad"}, "A100 SXM4 80GB", "measured", "measured on this GPU"),
        ({"preset": "bert-base-squad"}, "A100 PCIe 40GB", "measured", "measured on this GPU"),
        ({"preset": "bert-base-squad"}, "L40S", "sibling", "same architecture"),
        ({"preset": "bert-base-squad"}, "B200", "extrapolated", "other GPU architectures"),
        ({"preset": "vit-b16-imagenet"}, "A100 SXM4 80GB", "flops_model", "never measured"),
        ({"preset": "bert-base-squad", "layers": 24}, "A100 SXM4 80GB", "derived", "derived"),
        (
            {"preset": "llama3-8b-lora", "precision": "fp32"},
            "A100 SXM4 80GB",
            "precision_switch",
            "only at another precision",
        ),
    ],
)
def test_answer_names_the_situation_in_words(
    client: Any, workload: dict[str, Any], gpu: str, situation: str, words: str
) -> None:
    r = client.post("/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu}})
    assert r.status_code == 200, r.text
    e = r.json()["estimate"]
    assert e["situation"] == situation
    assert words in e["notes"][0]
    assert e["samples_per_s_low"] < e["samples_per_s"] < e["samples_per_s_high"]
