"""Inputs a new user really types (the newcomer pass, 2026-12-04): each one either resolves to
what it names or gets a 400 naming the field and saying what to write instead."""

from __future__ import annotations

from typing import Any

import pytest

from app.interface.field_names import reason

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


@pytest.mark.parametrize(("typed", "kind"), [("Spot", "spot"), ("on-demand", "on_demand")])
def test_a_billing_kind_in_any_case_filters_as_its_word(client: Any, typed: str, kind: str) -> None:
    """``"billing": "Spot"`` was a 400 while every workload word took any case; it ranks the
    same offers as ``spot``, in the body, the query string and the page alike."""
    body = {"workload": {"preset": "resnet50-imagenet"}, "limit": 200}
    typed_ids = [
        row["offer"]["id"]
        for row in client.post("/v1/rank", json={**body, "filters": {"billing": typed}}).json()[
            "results"
        ]
    ]
    word = client.post("/v1/rank", json={**body, "filters": {"billing": kind}}).json()
    assert typed_ids == [row["offer"]["id"] for row in word["results"]]
    assert typed_ids and {row["offer"]["billing"] for row in word["results"]} == {kind}
    query = client.get("/v1/rank", params={"preset": "resnet50-imagenet", "billing": typed})
    assert query.status_code == 200
    assert (
        client.get("/", params={"preset": "resnet50-imagenet", "billing": typed}).status_code == 200
    )


def test_an_unknown_billing_kind_names_the_four(client: Any) -> None:
    r = client.post(
        "/v1/rank",
        json={"workload": {"preset": "resnet50-imagenet"}, "filters": {"billing": "hourly"}},
    )
    assert r.status_code == 400
    [entry] = r.json()["extra"]
    assert entry["key"] == "filters.billing"
    assert "'on_demand', 'spot', 'reserved_1y' or 'reserved_3y'" in entry["message"]


@pytest.mark.parametrize("count", ["8x", "x8", "8 GPUs"])
def test_a_gpu_count_written_as_text_says_how_to_write_it(client: Any, count: str) -> None:
    """``"gpu_count": "8x"`` got "Input should be a valid number" and the page's
    ``gpu_count=8x`` "a number written as a decimal, e.g. 1.5": a GPU count of 1.5 is itself
    refused. Both now say a number of GPUs, e.g. 8."""
    body = {
        "workload": {"preset": "llama3-8b-lora"},
        "hardware": {"gpu": "H100 SXM", "gpu_count": count},
    }
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 400
    [entry] = r.json()["extra"]
    assert entry == {
        "key": "hardware.gpu_count",
        "message": f"{count!r}: must be a number of GPUs written as digits, e.g. 8 (not 8x); "
        "below 1 a share of one card, e.g. 0.5",
    }
    q = client.get("/v1/rank", params={"preset": "llama3-8b-lora", "gpu_count": count})
    assert q.status_code == 400
    assert q.json()["extra"] == [
        {
            "key": "gpu_count",
            "message": "must be a number of GPUs written as digits, e.g. 8 (not 8x); "
            "below 1 a share of one card, e.g. 0.5",
        }
    ]
    f = client.post(
        "/v1/rank",
        json={"workload": {"preset": "llama3-8b-lora"}, "filters": {"min_gpu_count": count}},
    )
    assert f.status_code == 400
    assert f.json()["extra"][0]["key"] == "filters.min_gpu_count"
    assert "e.g. 8 (not 8x)" in f.json()["extra"][0]["message"]


def test_a_gpu_count_as_digits_still_filters_in_a_query_string(client: Any) -> None:
    """``gpu_count=8`` in a query string (the page, ``GET /v1/rank``) is a number; in a body
    ``"8"`` stays the strict 400 it was (a body writes a JSON number)."""
    q = client.get("/v1/rank", params={"preset": "resnet50-imagenet", "gpu_count": "8"})
    assert q.status_code == 200
    assert q.json()["results"] and {x["offer"]["gpu_count"] for x in q.json()["results"]} == {8}
    assert (
        client.get("/", params={"preset": "resnet50-imagenet", "gpu_count": "8"}).status_code == 200
    )
    body = {
        "workload": {"preset": "resnet50-imagenet"},
        "hardware": {"gpu": "RTX 4090", "gpu_count": "8"},
    }
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 400
    assert r.json()["extra"][0]["key"] == "hardware.gpu_count"


def _gpu_reason(client: Any, hardware: dict[str, Any]) -> str:
    r = client.post(
        "/v1/estimate", json={"workload": {"preset": "llama3-8b-lora"}, "hardware": hardware}
    )
    assert r.status_code == 400
    [entry] = r.json()["extra"]
    assert entry["key"] == "hardware.gpu"
    return str(entry["message"])


def test_an_ambiguous_gpu_says_which_field_tells_the_boards_apart(client: Any) -> None:
    """``A100-80G`` is SXM4 or PCIe; the 400 said "name one of them" without saying that
    ``interconnect`` nvswitch or pcie picks one (``nvlink`` does not: PCIe cards take bridges),
    or that ``vram_gib`` picks a size."""
    assert _gpu_reason(client, {"gpu": "A100-80G"}) == (
        "GPU 'A100-80G' is ambiguous: could be A100 SXM4 80GB or A100 PCIe 80GB; name one of "
        "them, or give interconnect (nvswitch: the SXM board, pcie: the PCIe card)"
    )
    # two boards x two sizes: neither field alone picks one, both together do
    assert _gpu_reason(client, {"gpu": "A100"}).endswith(
        "name one of them, or give interconnect (nvswitch: the SXM board, pcie: the PCIe card) "
        "and vram_gib"
    )
    # the size given, only the board is left to say
    assert _gpu_reason(client, {"gpu": "A100", "vram_gib": 80}).endswith(
        "or give interconnect (nvswitch: the SXM board, pcie: the PCIe card)"
    )
    # and what the hint says works
    ok = client.post(
        "/v1/estimate",
        json={
            "workload": {"preset": "llama3-8b-lora"},
            "hardware": {"gpu": "A100-80G", "interconnect": "nvswitch"},
        },
    )
    assert ok.json()["hardware"]["gpu"] == "A100 SXM4 80GB"


@pytest.mark.parametrize(
    ("typed", "count", "name"),
    [
        ("8x H100", 8, "H100"),
        ("H100 x8", 8, "H100"),
        ("H100x8", 8, "H100"),
        ("4×4090", 4, "4090"),
        ("RTX A6000 x 2", 2, "RTX A6000"),
    ],
)
def test_a_count_written_into_the_gpu_name_says_where_it_goes(
    client: Any, typed: str, count: int, name: str
) -> None:
    """``"gpu": "8x H100"`` was "unknown GPU '8x H100'"."""
    assert _gpu_reason(client, {"gpu": typed}) == (
        f"unknown GPU {typed!r}: the count goes in gpu_count ({count}), the name alone in gpu "
        f"({name!r})"
    )


@pytest.mark.parametrize("typed", ["GTX 1060", "Radeon RX 6600", "RTX 2070"])
def test_the_x_of_a_gpu_name_is_no_count(client: Any, typed: str) -> None:
    """The X of RTX/GTX/RX before a model number was read as a count ("the count goes in
    gpu_count (2080), the name alone in gpu ('RT')"): an unknown name is only unknown."""
    reason = _gpu_reason(client, {"gpu": typed})  # cards the catalog does not hold
    assert reason.startswith(f"unknown GPU {typed!r}")
    assert "gpu_count" not in reason


def test_the_offers_billing_filter_reads_any_case_and_names_the_kinds(client: Any) -> None:
    """``GET /v1/offers?billing=Spot`` was "Invalid enum value 'Spot'", naming no kind."""
    spot = client.get("/v1/offers", params={"billing": "spot", "limit": 1000}).json()
    typed = client.get("/v1/offers", params={"billing": "Spot", "limit": 1000}).json()
    assert typed["total"] == spot["total"] > 0
    assert [o["id"] for o in typed["items"]] == [o["id"] for o in spot["items"]]
    bad = client.get("/v1/offers", params={"billing": "hourly"})
    assert bad.status_code == 400
    assert bad.json()["extra"] == [
        {
            "key": "billing",
            "message": "Input should be 'on_demand', 'spot', 'reserved_1y' or 'reserved_3y'",
        }
    ]


def test_the_page_recaps_a_preset_typed_in_another_case_as_the_preset(client: Any) -> None:
    """``/?preset=Llama3-8B-LoRA`` ranked (the API reads it) but recapped "Custom workload",
    the form empty; the page reads the preset as the API does."""
    typed = client.get("/", params={"preset": "Llama3-8B-LoRA", "gpu": "RTX 4090"})
    slug = client.get("/", params={"preset": "llama3-8b-lora", "gpu": "RTX 4090"})
    assert typed.status_code == slug.status_code == 200
    assert "Llama 3.1 8B LoRA fine-tune" in typed.text
    assert "Custom workload ·" not in typed.text
    assert 'id="preset-llama3-8b-lora" checked' in typed.text


def test_a_validators_reason_comes_without_pydantics_value_error_prefix(client: Any) -> None:
    """Reasons a validator raises read as written, not "Value error, must be a count: …"."""
    r = client.post(
        "/v1/estimate",
        json={"workload": {"preset": "llama3-8b-lora", "params": "7 billion"}, "hardware": RTX4090},
    )
    assert r.json()["extra"] == [
        {"key": "workload.params", "message": "must be a count: 7B, 25.6M, 8e9, 1,281,167"}
    ]
    q = client.get("/v1/rank", params={"preset": "llama3-8b-lora", "gpu_count": "1.5"})
    assert q.json()["extra"] == [
        {
            "key": "gpu_count",
            "message": "1.5 GPUs: a count of 1 or more must be whole (fractions only below 1, "
            "a slice of one card)",
        }
    ]


def test_a_reason_keeps_the_value_as_written_with_a_dash_in_it() -> None:
    """A validator's reason quoting a value with " - " in it was cut there (``'8``), as
    pydantic's own messages are cut before their context. Bodies Litestar validates itself
    are still cut there (litestar/_signature/model.py ``_build_error_message``)."""
    raised = ValueError("'8 - 2': must be a number of GPUs")
    error = {"type": "value_error", "msg": f"Value error, {raised}", "ctx": {"error": raised}}
    assert reason(error) == "'8 - 2': must be a number of GPUs"
    own = {"type": "int_parsing", "msg": "Input should be a valid integer - more context"}
    assert reason(own) == "Input should be a valid integer"


def test_an_ambiguous_gpu_suggests_no_field_that_would_leave_two(client: Any) -> None:
    """``RTX 6000`` (seed_data/gpu_aliases.csv: Quadro RTX 6000 24 GB, RTX A6000 48 GB, RTX 6000
    Ada 48 GB) was told "give vram_gib", but 48 still leaves two cards: only naming one does."""
    reason = _gpu_reason(client, {"gpu": "RTX 6000"})
    assert reason.startswith("GPU 'RTX 6000' is ambiguous")
    assert reason.endswith("name one of them")
