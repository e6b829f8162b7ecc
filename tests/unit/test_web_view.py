"""Pure pieces of the ranking page: regions by country, the preset picker, the answer's
picks, warning colours and labels, the language choice, the form's preset values."""

from __future__ import annotations

from typing import Any

import pytest

from app.interface.responses import answer_picks
from app.interface.schemas import RankedOfferOut, WarningOut
from app.services.regions import matching_regions, region_matches
from app.web.forms import all_form_fields, preset_form_values
from app.web.i18n import accept_language, parse_lang, with_lang
from app.web.picker import picker_groups, preset_kind, split_name
from app.web.ranking_view import (
    gpu_groups,
    parse_pins,
    toggled,
    warning_label,
    warning_level,
)

REGIONS = [
    "华北",
    "China",
    "us-east-1",
    "eastus",
    "Texas, US, NA",
    "ewr",
    "FIN-01",
    "eu-north1",
    "Quebec, CA, NA",
    "australia-southeast1",
    "Russia",
]


def test_a_country_matches_its_regions_own_labels() -> None:
    # the cheapest ¥0.75/h listing is labelled 华北 (North China): "China" must keep it
    assert matching_regions("China", REGIONS) == ["华北", "China"]
    assert matching_regions("中国", REGIONS) == ["华北", "China"]
    assert matching_regions("cn", REGIONS) == ["华北", "China"]
    assert matching_regions("US", REGIONS) == ["us-east-1", "eastus", "Texas, US, NA", "ewr"]
    assert matching_regions("Finland", REGIONS) == ["FIN-01", "eu-north1"]
    # a substring still works as before, a country's code never matches inside a word
    assert matching_regions("us-east", REGIONS) == ["us-east-1"]
    assert not region_matches("US", "australia-southeast1") and not region_matches("US", "Russia")
    assert matching_regions("华北", REGIONS) == ["华北"]


def test_presets_group_by_kind_with_short_names() -> None:
    assert split_name("Llama 3.1 8B QLoRA fine-tune, NF4 base (torchtune llama3_1/8B_qlora)") == (
        "Llama 3.1 8B QLoRA fine-tune",
        "NF4 base · torchtune llama3_1/8B_qlora",
    )
    assert split_name("ResNet-50 (tf_cnn_benchmarks), 224px") == (
        "ResNet-50",
        "tf_cnn_benchmarks, 224px",
    )
    assert split_name("Plain") == ("Plain", "")
    decoder = {"architecture": "transformer_decoder", "method": "full"}
    assert preset_kind({**decoder, "method": "qlora"}, "x") == "llm_finetune"
    assert preset_kind(decoder, "Llama full fine-tune") == "llm_finetune"
    assert preset_kind(decoder, "MPT-7B pre-training") == "llm_pretrain"
    assert preset_kind({"architecture": "cnn"}, "ResNet") == "vision"
    assert preset_kind({"architecture": "diffusion_unet"}, "SD") == "diffusion"
    assert preset_kind({"architecture": "vocoder"}, "WaveGlow") == "speech"
    assert preset_kind({"architecture": "recommender"}, "NCF") == "other"

    class P:
        def __init__(self, slug: str, name: str, fields: dict[str, Any]) -> None:
            self.slug, self.name, self.fields = slug, name, fields

    groups = picker_groups(
        [P("r", "ResNet-50 v1.5, ImageNet", {"architecture": "cnn"}), P("q", "Q (x)", decoder)]
    )
    assert [g.kind for g in groups] == ["llm_pretrain", "vision"]  # in the order of KINDS
    assert groups[1].items[0].short == "ResNet-50 v1.5" and "resnet" in groups[1].items[0].search


def _row(
    offer_id: int,
    cost: float | None,
    hours: float,
    pareto: bool,
    oom: str = "low",
    bookable: bool = True,
    codes: tuple[str, ...] = (),
) -> RankedOfferOut:
    return RankedOfferOut.model_construct(
        rank=offer_id,
        pareto_optimal=pareto,
        price_per_hour=None if cost is None else cost / hours,
        offer=type(
            "O",
            (),
            {
                "id": offer_id,
                "gpu": "A100",
                "gpu_name_raw": "A100",
                "gpu_count": 8.0,
                "bookable": bookable,
            },
        )(),
        estimate=type(
            "E",
            (),
            {
                "cost_per_epoch": cost,
                "epoch_hours": hours,
                "total_cost": cost,
                "total_hours": hours,
                "oom_risk": oom,
                "peak_memory_gib": 10.0,
                "memory": type("M", (), {"usable_vram_gib": 20.0})(),
                "warnings": [type("W", (), {"code": c})() for c in codes],
            },
        )(),
    )


def test_answer_picks_cheapest_fastest_and_best_value_that_fit() -> None:
    rows = [
        _row(1, 10.0, 100.0, True),  # cheapest; 10 x 100 = 1000
        _row(2, 20.0, 20.0, True),  # 400: best value
        _row(3, 80.0, 8.0, True),  # fastest; 640
        _row(4, 5.0, 1.0, False, "high"),  # OOM: never picked
        _row(5, 50.0, 50.0, False),  # dominated by 2: 2500 but not on the front
        _row(6, 30.0, 10.0, True, bookable=False),  # a quoted example: 300, not rentable
        _row(7, None, 0.5, False),  # no price
    ]
    picks = answer_picks(rows)
    assert (picks.cheapest_offer_id, picks.fastest_offer_id, picks.best_value_offer_id) == (
        1,
        3,
        2,
    )
    # without the preference for rentable offers the quoted example is the best value
    assert answer_picks(rows, prefer_bookable=False).best_value_offer_id == 6
    assert answer_picks([rows[3], rows[6]]).cheapest_offer_id is None
    # an offer that cannot run the job as asked (QLoRA's bitsandbytes on an MI300X, a disk
    # too small) is no pick, however cheap and fast: the picks stay 1, 3 and 2
    for code in ("cuda_only_library", "disk_too_small", "compute_capability_too_low"):
        blocked = _row(8, 1.0, 1.0, True, codes=(code, "spot_interruptible"))
        picks = answer_picks([*rows, blocked])
        assert (picks.cheapest_offer_id, picks.fastest_offer_id, picks.best_value_offer_id) == (
            1,
            3,
            2,
        ), code
    # a caution is no blocker: the same offer with only a spot warning is every pick
    free = answer_picks([*rows, _row(8, 1.0, 1.0, True, codes=("spot_interruptible",))])
    assert free.cheapest_offer_id == free.fastest_offer_id == free.best_value_offer_id == 8


def test_gpu_groups_compare_models_by_count() -> None:
    rows = [_row(1, 10.0, 10.0, True), _row(2, 8.0, 12.0, True), _row(3, 1.0, 1.0, False, "high")]
    (group,) = gpu_groups(rows)
    assert group.offers == 3 and group.cheapest is not None and group.fastest is not None
    assert group.cheapest.offer.id == 2 and group.fastest.offer.id == 1
    # an offer whose GPU cannot run the job's software is neither the group's cheapest nor
    # its fastest
    (group,) = gpu_groups([*rows, _row(4, 0.5, 0.5, False, codes=("cuda_only_library",))])
    assert group.offers == 4 and group.cheapest is not None and group.fastest is not None
    assert group.cheapest.offer.id == 2 and group.fastest.offer.id == 1


@pytest.mark.parametrize(
    ("code", "level"),
    [
        ("oom", "blocker"),
        ("disk_too_small", "blocker"),
        ("ram_short", "blocker"),
        ("ram_below_vram", "caution"),
        ("vcpus_unlisted", "gap"),
        ("spot_interruptible", "caution"),
        ("no_nvlink", "caution"),
    ],
)
def test_red_means_the_run_fails_as_asked(code: str, level: str) -> None:
    assert warning_level(code) == level


def test_warning_labels_carry_their_figure_in_both_languages() -> None:
    w = WarningOut(code="disk_too_small", message="...", values={"disk_gb": 70, "needed_gb": 158})
    assert warning_label(w, "en") == "disk 70 < 158 GB"
    assert warning_label(w, "zh-CN") == "硬盘 70 < 所需 158 GB"
    gap = WarningOut(code="vcpus_unlisted", message="...", values={})
    assert warning_label(gap, "en") == "vCPUs not listed"


def test_pins_parse_toggle_and_cap() -> None:
    assert parse_pins("12,40,12") == ([12, 40], None)
    assert parse_pins("1,2,3,4,5")[1] and parse_pins("x")[1]
    assert toggled([12, 40], 12) == "40" and toggled([12], 40) == "12,40"
    assert toggled([12], 12) is None


def test_language_from_the_url_or_the_browser() -> None:
    assert accept_language("zh-CN,zh;q=0.9,en;q=0.8") == "zh-CN"
    assert accept_language("en-US,en;q=0.9,zh;q=0.5") == "en"
    assert accept_language("fr-FR, zh-TW;q=0.7") == "zh-CN"
    assert accept_language("fr") == "en" and accept_language(None) == "en"
    assert parse_lang("zh") == parse_lang("zh_CN") == parse_lang("ZH-Hans") == "zh-CN"
    assert parse_lang("de") is None
    assert with_lang("/gpus?family=A100", "zh-CN") == "/gpus?family=A100&lang=zh-CN"
    assert with_lang("/?lang=en&x=1", "zh-CN") == "/?x=1&lang=zh-CN"
    assert with_lang("https://a.b/", "zh-CN") == "https://a.b/" and with_lang("/x", None) == "/x"


def test_preset_values_round_trip_through_the_flat_parameters() -> None:
    fields = {
        "params": 8_030_261_248,
        "precision": "bf16",
        "gradient_checkpointing": True,
        "epochs": 90.0,
        "dataset_gb": 147.897,
        "cuda_only_libraries": ["bitsandbytes", "flash-attn"],
        "not_a_form_field": 1,
    }
    shown = preset_form_values(fields, all_form_fields())
    assert shown == {
        "params": "8.03B",
        "precision": "bf16",
        "gradient_checkpointing": "true",
        "epochs": "90",
        "dataset_gb": "147.897",
        "cuda_only_libraries": "bitsandbytes, flash-attn",
    }
