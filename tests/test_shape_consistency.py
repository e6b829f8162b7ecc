"""Contradictory and inapplicable workload fields, through real requests."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.db

HW = {"gpu": "A100 80GB SXM4"}


def post(client: Any, workload: dict[str, Any]) -> Any:
    return client.post("/v1/estimate", json={"workload": workload, "hardware": HW})


@pytest.mark.parametrize(
    ("over", "key", "reason"),
    [
        # 4096 / 7 = 585.14...: no whole head size (and the preset's 8 kv heads now exceed 7)
        ({"heads": 7}, "workload.heads", "not divisible by 7 heads"),
        ({"heads": 7, "kv_heads": 7}, "workload.heads", "not divisible by 7 heads"),
        # 64 key/value heads for 32 query heads
        ({"kv_heads": 64}, "workload.kv_heads", "more than the 32 heads"),
        # 32 heads cannot be shared over 5 key/value heads
        ({"kv_heads": 5}, "workload.kv_heads", "not divisible by 5"),
        # a rank-100000 update of a 4096-wide matrix
        ({"lora_rank": 100_000}, "workload.lora_rank", "above hidden_size 4096"),
    ],
)
def test_an_impossible_shape_is_a_400_naming_the_field(
    client: Any, over: dict[str, Any], key: str, reason: str
) -> None:
    r = post(client, {"preset": "llama3-8b-lora", **over})
    assert r.status_code == 400, r.text
    err, *more = r.json()["extra"]
    assert err["key"] == key and reason in err["message"]
    # every problem is named at once: 7 heads with the preset's 8 key/value heads
    assert [e["key"] for e in more] == (["workload.kv_heads"] if over == {"heads": 7} else [])


def test_every_preset_shape_is_possible_and_its_params_match_it(client: Any) -> None:
    for p in client.get("/v1/workloads").json():
        body = {"workload": {"preset": p["preset"], "samples_per_epoch": 1000}, "hardware": HW}
        r = client.post("/v1/estimate", json=body)
        assert r.status_code == 200, (p["preset"], r.text)
        codes = [w["code"] for w in r.json()["estimate"]["warnings"]]
        assert "params_off_shape" not in codes, p["preset"]


def test_params_far_from_the_shape_is_a_warning(client: Any) -> None:
    # far above (a mixture of experts counts every expert): a warning
    r = post(client, {"preset": "llama3-8b-lora", "params": 47_000_000_000})
    assert r.status_code == 200, r.text
    [w] = [w for w in r.json()["estimate"]["warnings"] if w["code"] == "params_off_shape"]
    # plain MLP, tied: 32 × (2·4096² + 2·4096·8·128 + 2·4096·14336) + 128256·4096
    # = 32 × 159,383,552 + 525,336,576 = 5,625,610,240; gated, untied: 32 × (41,943,040
    # + 3·4096·14336) + 2·525,336,576 = 8,029,995,008 (Meta's 8,030,261,248 less 266,240 norms)
    assert w["values"] == {
        "params": 47_000_000_000,
        "shape_params_low": 5_625_610_240,
        "shape_params_high": 8_029_995_008,
    }
    # far below the 32 blocks' 5,100,273,664 (5,625,610,240 less the 525,336,576 table): no
    # model of this shape, a 400 naming params
    r = post(client, {"preset": "llama3-8b-lora", "params": 1000})
    assert r.status_code == 400, r.text
    assert r.json()["extra"][0]["key"] == "workload.params"
    assert "5,100,273,664 that 32 layers of width 4096 hold" in r.text


@pytest.mark.parametrize(
    ("preset", "field", "value"),
    [
        ("llama3-8b-full", "lora_rank", 64),
        ("llama3-8b-lora", "image_size", 512),
        ("resnet50-imagenet", "seq_len", 4096),
    ],
)
def test_a_field_that_does_not_apply_is_ignored_with_a_note(
    client: Any, preset: str, field: str, value: int
) -> None:
    base = post(client, {"preset": preset}).json()
    r = post(client, {"preset": preset, field: value})
    assert r.status_code == 200, r.text
    e, b = r.json()["estimate"], base["estimate"]
    assert (e["basis"], e["situation"]) == (b["basis"], b["situation"])
    assert e["samples_per_s"] == b["samples_per_s"]
    assert e["peak_memory_gib"] == b["peak_memory_gib"]
    assert f"{field} {value} ignored" in e["notes"][0]
    assert r.json()["workload"].get(field) == base["workload"].get(field)
