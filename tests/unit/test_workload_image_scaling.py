"""A preset's published per-sample forward cost and activation count at a custom image size
(app/services/workloads.py): a CNN's scale with the pixel area, a ViT's activation count is
dropped (attention's products grow with tokens², not pixels)."""

from __future__ import annotations

from typing import Any

import pytest

from app.services.reference import ReferenceData
from app.services.workloads import resolve_workload
from tests.unit.helpers import preset_reference


def _ref(slug: str, **fields: Any) -> ReferenceData:
    return preset_reference(slug, {"params": 25_557_032, "samples_per_epoch": 1_281_167, **fields})


CNN = _ref(
    "rn50",
    architecture="cnn",
    image_size=224,
    forward_gflops_per_sample=8.178,
    forward_activations_per_sample=11.11,
)


def test_a_cnn_presets_counts_scale_with_the_pixel_area() -> None:
    w, _, _ = resolve_workload({"preset": "rn50", "image_size": 448}, CNN)
    # (448 / 224)² = 4
    assert w.forward_gflops_per_sample == pytest.approx(32.712)
    assert w.forward_activations_per_sample == pytest.approx(44.44)
    same, _, _ = resolve_workload({"preset": "rn50"}, CNN)
    assert same.forward_activations_per_sample == pytest.approx(11.11)


def test_a_given_activation_count_is_kept_as_given() -> None:
    w, _, _ = resolve_workload(
        {"preset": "rn50", "image_size": 448, "forward_activations_per_sample": 30.0}, CNN
    )
    assert w.forward_activations_per_sample == pytest.approx(30.0)
    assert w.forward_gflops_per_sample == pytest.approx(32.712)


def test_a_vit_presets_activation_count_holds_at_its_own_size_only() -> None:
    vit = _ref(
        "vitb",
        architecture="vit",
        image_size=224,
        layers=12,
        hidden_size=768,
        heads=12,
        forward_gflops_per_sample=35.128,
        forward_activations_per_sample=23.9,
    )
    own, _, _ = resolve_workload({"preset": "vitb"}, vit)
    assert own.forward_activations_per_sample == pytest.approx(23.9)
    bigger, _, _ = resolve_workload({"preset": "vitb", "image_size": 384}, vit)
    assert bigger.forward_activations_per_sample is None


def test_a_changed_network_drops_the_presets_activation_count() -> None:
    # ResNet-50's 11.11 M elements describe ResNet-50, not a network with twice its forward cost
    w, _, _ = resolve_workload({"preset": "rn50", "forward_gflops_per_sample": 16.356}, CNN)
    assert w.forward_activations_per_sample is None
    assert any("activation count (11.11 M" in n for n in w.input_notes)
    kept, _, _ = resolve_workload(
        {"preset": "rn50", "params": 30_000_000, "forward_activations_per_sample": 12.0}, CNN
    )
    assert kept.forward_activations_per_sample == pytest.approx(12.0)
    same, _, _ = resolve_workload({"preset": "rn50", "params": 25_557_032}, CNN)
    assert same.forward_activations_per_sample == pytest.approx(11.11)
