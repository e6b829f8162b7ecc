"""Inputs a new user really types (the newcomer pass, 2026-12-04): each one either resolves to
what it names or gets a 400 naming the field and saying what to write instead."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.db

RTX4090 = {"gpu": "RTX 4090"}


@pytest.mark.parametrize("typed", ["Llama3-8B-LoRA", "llama3 8b lora", "LLAMA3_8B_LORA"])
def test_a_preset_in_any_case_or_separator_is_the_preset(client: Any, typed: str) -> None:
    """``Llama3-8B-LoRA`` was a 400 listing all 58 slugs; it is llama3-8b-lora, echoed as the
    slug, with the slug's own answer."""
    asked = client.post(
        "/v1/estimate", json={"workload": {"preset": typed}, "hardware": RTX4090}
    ).json()
    slug = client.post(
        "/v1/estimate", json={"workload": {"preset": "llama3-8b-lora"}, "hardware": RTX4090}
    ).json()
    assert asked["workload"]["preset"] == "llama3-8b-lora"
    assert asked["estimate"]["samples_per_s"] == slug["estimate"]["samples_per_s"]


def test_a_misspelt_preset_names_the_closest_slugs(client: Any) -> None:
    """A near miss names the close slugs, not the whole list; nothing close keeps the list."""
    r = client.post(
        "/v1/estimate", json={"workload": {"preset": "llama3-8b-lorra"}, "hardware": RTX4090}
    )
    assert r.status_code == 400
    [entry] = r.json()["extra"]
    assert entry["key"] == "workload.preset"
    assert "did you mean 'llama3-8b-lora'" in entry["message"]
    assert "waveglow-ljspeech" not in entry["message"]
    far = client.post("/v1/estimate", json={"workload": {"preset": "zzz"}, "hardware": RTX4090})
    assert far.status_code == 400
    assert "known: alexnet-imagenet-tf, " in far.json()["extra"][0]["message"]
