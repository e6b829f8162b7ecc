"""GPU identity, VRAM units, driver CUDA and GPU-count rules through the API (seeded DB)."""

from __future__ import annotations

from typing import Any

import pytest

RESNET = {"preset": "resnet50-imagenet"}


def _keys(r: Any) -> list[str]:
    return [e["key"] for e in r.json()["extra"]]


@pytest.mark.parametrize("count", [1.5, 2.25, 7.9])
def test_a_fractional_count_of_one_or_more_is_400_naming_the_field(
    client: Any, count: float
) -> None:
    r = client.post(
        "/v1/estimate", json={"workload": RESNET, "hardware": {"gpu": "A10", "gpu_count": count}}
    )
    assert r.status_code == 400 and _keys(r) == ["hardware.gpu_count"], r.text
    r = client.post("/v1/rank", json={"workload": RESNET, "filters": {"gpu_count": count}})
    assert r.status_code == 400 and _keys(r) == ["filters.gpu_count"], r.text
    r = client.get("/v1/offers", params={"gpu_count": count})
    assert r.status_code == 400 and _keys(r) == ["gpu_count"], r.text
    assert "whole" in r.json()["extra"][0]["message"]


def test_fractions_below_one_and_whole_counts_are_accepted(client: Any) -> None:
    # the seed lists half-card slices (gpu_count 0.5)
    halves = client.get("/v1/offers", params={"gpu_count": 0.5}).json()["items"]
    assert halves and all(o["gpu_count"] == 0.5 for o in halves)
    r = client.post(
        "/v1/estimate", json={"workload": RESNET, "hardware": {"gpu": "A10", "gpu_count": 0.5}}
    )
    assert r.status_code == 200, r.text
    r = client.post(
        "/v1/estimate", json={"workload": RESNET, "hardware": {"gpu": "A10", "gpu_count": 2}}
    )
    assert r.status_code == 200, r.text


GPT2 = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257}


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"n_embd": -1}, "n_embd"),
        ({"n_embd": 769}, "n_embd"),  # 769 / 12 heads
        ({"n_layer": 1e12}, "n_layer"),  # above WorkloadIn's 10,000 layers
    ],
)
def test_hf_config_bad_sizes_are_400_naming_the_config_key(
    client: Any, over: dict, key: str
) -> None:
    r = client.post("/v1/workloads/from-hf-config", json={**GPT2, **over})
    assert r.status_code == 400, r.text
    assert _keys(r) == [key]
    assert "missing" not in r.json()["extra"][0]["message"]


def test_an_h100_on_a_cuda_10_driver_warns_with_a_stable_code(client: Any) -> None:
    body = {"workload": RESNET, "hardware": {"gpu": "H100 SXM", "max_cuda": "10.0"}}
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    [w] = [w for w in r.json()["estimate"]["warnings"] if w["code"] == "driver_too_old_for_gpu"]
    assert w["values"]["min_cuda_for_gpu"] == "11.8" and w["values"]["max_cuda"] == "10.0"
    body["hardware"]["max_cuda"] = "12.4"
    codes = [
        w["code"] for w in client.post("/v1/estimate", json=body).json()["estimate"]["warnings"]
    ]
    assert "driver_too_old_for_gpu" not in codes
