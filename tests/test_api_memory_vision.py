"""Vision / diffusion memory set-up through the HTTP API (issue 9): fields in, components and
notes out."""

from __future__ import annotations

from typing import Any

import pytest

from app.model.memory import GIB

pytestmark = pytest.mark.db


def estimate(client: Any, workload: dict[str, Any], gpu: str = "A100 80GB SXM4") -> Any:
    r = client.post("/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu}})
    assert r.status_code == 200, r.text
    return r.json()["estimate"]


def test_sd15_preset_breakdown_shows_text_encoder_vae_and_ema(client: Any) -> None:
    e = estimate(client, {"preset": "sd15-unet-finetune"})
    mem = e["memory"]
    # preset: fp16 mixed precision, so the frozen CLIP text encoder and VAE are fp16 (2 B)
    assert mem["text_encoder_gib"] == pytest.approx(123_060_480 * 2 / GIB)
    assert mem["vae_gib"] == pytest.approx(83_653_863 * 2 / GIB)
    # --use_ema: an fp32 copy of the 859,520,964-parameter UNet
    assert mem["ema_gib"] == pytest.approx(859_520_964 * 4 / GIB)
    assert mem["weights_gib"] > mem["text_encoder_gib"] + mem["vae_gib"]
    assert not any("text_encoder_params" in n for n in e["notes"])


def test_unet_without_components_says_they_are_not_counted(client: Any) -> None:
    e = estimate(
        client,
        {
            "architecture": "diffusion_unet",
            "params": 859_520_964,
            "image_size": 512,
            "forward_gflops_per_sample": 808.8,
            "samples_per_epoch": 1000,
        },
    )
    assert e["memory"]["text_encoder_gib"] == 0 and e["memory"]["vae_gib"] == 0
    assert any("text_encoder_params" in n for n in e["notes"])


def test_detector_fields_reach_the_memory_model(client: Any) -> None:
    base = {
        "architecture": "cnn",
        "params": 41_755_286,
        "image_size": 1344,
        "micro_batch_size": 2,
        "precision": "fp32",
        "optimizer": "sgd_momentum",
        "forward_gflops_per_sample": 134.38 * 2,
        "samples_per_epoch": 118_287,
    }
    det = estimate(client, {**base, "vision_task": "detection", "backbone_gflops_224": 8.178})
    cls = estimate(client, base)
    # different activation rules: per backbone GFLOP at the pixels vs per forward GFLOP
    assert det["memory"]["activations_gib"] != cls["memory"]["activations_gib"]
    assert any("C4/DC5" in n for n in det["notes"])
    assert not any("C4/DC5" in n for n in cls["notes"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("vision_task", "panoptic"),
        ("backbone_gflops_224", -1),
        ("patch_size", 0),
        ("text_encoder_params", -1),
        ("vae_params", "many"),
        ("ema_weights", "sometimes"),
        ("max_boxes_per_image", 0),
        ("num_classes", -3),
    ],
)
def test_bad_vision_fields_are_4xx_naming_the_field(client: Any, field: str, value: Any) -> None:
    r = client.post(
        "/v1/estimate",
        json={
            "workload": {"preset": "sd15-unet-finetune", field: value},
            "hardware": {"gpu": "T4"},
        },
    )
    assert 400 <= r.status_code < 500, r.text
    assert field in r.text


def test_max_micro_batch_size_is_a_batch_whose_own_verdict_is_low(client: Any) -> None:
    def est(**over: Any) -> dict[str, Any]:
        return dict(estimate(client, {"preset": "llama3-8b-lora", **over}, "A100 80GB SXM4"))

    most = est()["max_micro_batch_size"]
    at, above = est(micro_batch_size=most), est(micro_batch_size=most + 1)
    # the batch offered as fitting is one the answer itself calls low (P(OOM) < 0.1) ...
    assert at["oom_risk"] == "low" and at["oom_probability"] < 0.1
    assert at["max_micro_batch_size"] == most
    # ... and the next one is not
    assert above["oom_risk"] != "low" and above["oom_probability"] >= 0.1
    assert at["peak_memory_gib"] < at["memory"]["usable_vram_gib"]


def test_diffusion_transformer_is_accepted_with_flops_from_its_shape(client: Any) -> None:
    dit = {
        "architecture": "diffusion_transformer",
        "params": 675_129_632,
        "layers": 28,
        "hidden_size": 1152,
        "heads": 16,
        "image_size": 256,
        "micro_batch_size": 32,
        "precision": "bf16",
        "samples_per_epoch": 1_281_167,
    }
    e = estimate(client, dit)
    assert e["basis"] == "flops_model"
    # 32 × 28 layers × 20 copies × 2 B × 256 tokens × 1,152 (DiT blocks, no dropout)
    assert e["memory"]["activations_gib"] == pytest.approx(32 * 28 * 20 * 2 * 256 * 1152 / GIB)
    assert any("256 latent tokens" in n for n in e["notes"])
    # joint attention over 333 text tokens costs time and memory
    sd3 = estimate(client, {**dit, "seq_len": 333})
    assert sd3["samples_per_s"] < e["samples_per_s"]
    assert sd3["memory"]["activations_gib"] > e["memory"]["activations_gib"]


def test_diffusion_transformer_without_image_size_is_a_4xx_naming_it(client: Any) -> None:
    r = client.post(
        "/v1/estimate",
        json={
            "workload": {
                "architecture": "diffusion_transformer",
                "params": 675_129_632,
                "layers": 28,
                "hidden_size": 1152,
                "samples_per_epoch": 1000,
            },
            "hardware": {"gpu": "A100 80GB SXM4"},
        },
    )
    assert r.status_code == 400
    assert "workload.image_size" in r.text
