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


def _offers(client: Any, **params: object) -> list[dict]:
    r = client.get("/v1/offers", params={**params, "limit": 1000})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def _keys_of(items: list[dict]) -> set[tuple[str, str]]:
    return {(o["provider"], o["offer_key"]) for o in items}


def test_a_family_filter_lists_the_ambiguous_offers_of_that_family(client: Any) -> None:
    # stored "ambiguous … not guessed": every candidate is an H100, so gpu=H100 lists them
    h100 = _keys_of(_offers(client, gpu="H100"))
    assert {
        ("aws", "p5.4xlarge"),
        ("gcp", "a3-highgpu-1g"),
        ("paperspace", "H100"),
        ("paperspace", "H100x8"),
        ("vultr", "vbm-112c-2048gb-8-h100-gpu"),
    } <= h100
    assert ("lambda", "gpu_1x_a100") in _keys_of(_offers(client, gpu="A100"))
    assert ("chenjianyun", "A800 80GB (single GPU, lowest listing)") in _keys_of(
        _offers(client, gpu="A800")
    )
    # a filter narrower than the candidates does not list them: Vultr's 8x H100 (NVSwitch) is
    # SXM 80 GB or SXM 96 GB, so gpu="H100 80GB" (SXM or PCIe, 80 GB) leaves it out
    narrow = _keys_of(_offers(client, gpu="H100 80GB"))
    assert ("vultr", "vbm-112c-2048gb-8-h100-gpu") not in narrow
    assert ("paperspace", "H100") in narrow  # H100 PCIe 80GB or H100 SXM 80GB
    sxm = _keys_of(_offers(client, gpu="H100 SXM 80GB"))
    assert ("paperspace", "H100") not in sxm  # could be the PCIe card
    # AWS P5 and GCP A3 are SXM boards by their instance family (app.gpu_names)
    assert {("aws", "p5.4xlarge"), ("gcp", "a3-highgpu-1g")} <= sxm
    assert ("lambda", "gpu_1x_a100") not in _keys_of(_offers(client, gpu="H100"))


def test_listed_ambiguous_offers_stay_unmatched_and_unestimable(client: Any) -> None:
    # Paperspace's "H100": no instance family, interconnect or VRAM tells SXM from PCIe
    [one] = [o for o in _offers(client, provider="paperspace") if o["offer_key"] == "H100"]
    assert one["gpu"] is None and "ambiguous" in one["gpu_note"]
    r = client.post(
        "/v1/rank",
        json={
            "workload": RESNET,
            "filters": {"gpu": "H100", "provider": "paperspace"},
            "limit": 1000,
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert "H100" not in {x["offer"]["offer_key"] for x in body["results"]}
    assert "H100" in {x["offer"]["offer_key"] for x in body["unestimable"]}


def test_the_instance_name_resolves_the_board_and_the_note_keeps_to_the_label(
    client: Any,
) -> None:
    # Verda 1H100.80S.32V: "80S" is 80 GB SXM in Verda's naming (providers.md §7.5)
    verda = [o for o in _offers(client, provider="verda") if o["offer_key"] == "1H100.80S.32V"]
    assert verda and {o["gpu"] for o in verda} == {"H100 SXM 80GB"}
    # a label saying SXM is never "also" the PCIe card
    cudo = [o for o in _offers(client, provider="cudo") if o["gpu_name_raw"] == "H100-SXM"]
    assert cudo and all("PCIe" not in (o["gpu_note"] or "") for o in cudo)
    assert all(o["gpu"] == "H100 SXM 80GB" for o in cudo)


@pytest.mark.parametrize(
    ("gpu", "candidates"),
    [
        ("A100", ["A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB"]),
        ("H100", ["H100 SXM 80GB", "H100 PCIe 80GB", "H100 SXM 96GB HBM2e (500 W)"]),
    ],
)
def test_an_ambiguous_what_if_gpu_is_400_listing_the_candidates(
    client: Any, gpu: str, candidates: list[str]
) -> None:
    r = client.post("/v1/estimate", json={"workload": RESNET, "hardware": {"gpu": gpu}})
    assert r.status_code == 400, r.text
    [err] = r.json()["extra"]
    assert err["key"] == "hardware.gpu" and "ambiguous" in err["message"]
    assert all(c in err["message"] for c in candidates)


def test_a_what_if_gpu_resolves_when_the_hardware_tells_the_models_apart(client: Any) -> None:
    hw = {"gpu": "A100", "interconnect": "pcie", "vram_gib": 80}
    r = client.post("/v1/estimate", json={"workload": RESNET, "hardware": hw})
    assert r.status_code == 200, r.text
    assert r.json()["hardware"]["gpu"] == "A100 PCIe 80GB"


@pytest.mark.parametrize(("gpu", "vram"), [("L40S", 48), ("H100 SXM 80GB", 80), ("B200", 180)])
def test_one_card_has_one_vram_whatever_the_listing_wrote(
    client: Any, gpu: str, vram: float
) -> None:
    # Vast lists the driver's readings (L40S 44.99, H100 79.65, B200 179.06 GiB), RunPod/OCI/
    # Lambda the datasheet's: every full-card offer stores the catalog size
    items = [o for o in _offers(client, gpu=gpu) if o["gpu_count"] >= 1]
    assert len({o["provider"] for o in items}) >= 2
    assert {o["vram_gib_per_gpu"] for o in items} == {vram}
    vast = [o for o in items if o["provider"] == "vast"]
    assert any("stored as" in (o["gpu_note"] or "") for o in vast)  # the raw reading kept


def test_the_same_card_gets_the_same_oom_verdict_at_every_provider(client: Any) -> None:
    body = {
        "workload": {"preset": "llama31-8b-full-single-device"},
        "filters": {"gpu": "L40S", "gpu_count": 1},
        "limit": 1000,
    }
    r = client.post("/v1/rank", json=body)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len({x["offer"]["provider"] for x in results}) >= 2
    assert len({x["estimate"]["memory"]["usable_vram_gib"] for x in results}) == 1
    assert len({x["estimate"]["oom_risk"] for x in results}) == 1


def test_vultrs_a100_plans_are_the_80gb_pcie_card(client: Any) -> None:
    # seed rows: Vultr cloud GPU plans list gpu_type "NVIDIA_A100", the A100 80GB PCIe
    # (../shared/docs/providers.md §10), whole (80 GB) and a half slice (no VRAM listed)
    vultr = {
        o["offer_key"]: o["gpu"]
        for o in _offers(client, gpu="A100")
        if o["provider"] == "vultr" and o["offer_key"].startswith("vcg-a100-")
    }
    assert vultr == {
        "vcg-a100-12c-120g-80vram": "A100 PCIe 80GB",
        "vcg-a100-6c-60g-40vram": "A100 PCIe 80GB",
    }


def _catalog(client: Any, q: str) -> list[str]:
    r = client.get("/v1/gpus", params={"q": q})
    assert r.status_code == 200, r.text
    return [g["canonical_name"] for g in r.json()]


def test_a_typed_gpu_name_never_takes_a_providers_convention(client: Any) -> None:
    # Vultr's "NVIDIA_A100" is its A100 PCIe 80GB, SkyPilot's "A100" the SXM4 40GB: typed
    # without a provider, both name the whole family (catalog order)
    a100s = ["A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB"]
    assert _catalog(client, "NVIDIA_A100") == a100s
    assert _catalog(client, "A100 80GB") == ["A100 SXM4 80GB", "A100 PCIe 80GB"]
    # "RTX 6000" is listed under three boards (gpu_aliases.csv): all three, not the first
    assert sorted(_catalog(client, "RTX 6000")) == ["Quadro RTX 6000", "RTX 6000 Ada", "RTX A6000"]
    # a name that leaves several models open is not one GPU's page: the catalog lists them
    for key in ("A100", "NVIDIA_A100", "RTX 6000"):
        r = client.get(f"/gpus/{key}", params={"format": "json"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/gpus?family="), key
    page = client.get("/gpus/NVIDIA A100-SXM4-80GB", params={"format": "json"})
    assert page.status_code == 200 and page.json()["gpu"]["canonical_name"] == "A100 SXM4 80GB"
