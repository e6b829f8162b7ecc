"""Query-string numbers and booleans are read strictly, one rule for every GET endpoint
(``app.interface.query.query_text_error``): integers ``-?[0-9]+``, numbers a plain decimal with an
optional exponent, booleans ``true``/``false`` (the OpenAPI document types them so)."""

from __future__ import annotations

from typing import Any

import pytest

from app.interface.query import query_text_error

INTEGER = "must be a whole number written as digits, e.g. 1000 (no _, +, spaces or exponent)"
NUMBER = "must be a number written as a decimal, e.g. 1.5, 40 or 2e-3"
#: a GPU count's own reason (1.5 GPUs is refused: the number rule's example would mislead)
GPUS = (
    "must be a number of GPUs written as digits, e.g. 8 (not 8x); below 1 a share of one "
    "card, e.g. 0.5"
)
BOOLEAN = "must be true or false"
RANK = "/v1/rank?preset=resnet50-imagenet&gpu=A100&"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        # parameters the API declares (Litestar parsed 1e2 as 100 and 1/True as true)
        ("/v1/offers?limit=1_000", INTEGER),
        ("/v1/offers?limit=1e2", INTEGER),
        ("/v1/offers?limit=%2B5", INTEGER),
        ("/v1/offers?limit=5.0", INTEGER),
        ("/v1/offers?offset=0x10", INTEGER),
        ("/v1/offers?available_only=yes", BOOLEAN),
        ("/v1/offers?available_only=on", BOOLEAN),
        ("/v1/offers?include_suspect=1", BOOLEAN),
        ("/v1/offers?include_suspect=True", BOOLEAN),
        ("/v1/offers?min_vram_gib=4_0", NUMBER),
        ("/v1/offers?min_vram_gib=inf", NUMBER),
        ("/v1/offers?min_vram_gib=%2040", "must not begin or end with whitespace"),
        ("/v1/offers?gpu_count=1_0", GPUS),
        ("/v1/benchmarks?limit=1_0", INTEGER),
        ("/v1/benchmarks?offset=%2B1", INTEGER),
        # flat workload, filter and option parameters (pydantic's lax mode took all of these)
        (RANK + "micro_batch_size=1_024", INTEGER),
        (RANK + "micro_batch_size=8.0", INTEGER),
        (RANK + "gradient_checkpointing=yes", BOOLEAN),
        (RANK + "drop_oom=on", BOOLEAN),
        (RANK + "available_only=0", BOOLEAN),
        (RANK + "epochs=1_0", NUMBER),
        (RANK + "limit=0x10", INTEGER),
        (RANK + "gpu_count=1_0", GPUS),
        (RANK + "max_total_hours=1e_3", NUMBER),
        ("/v1/offers/1?preset=resnet50-imagenet&packed=on", BOOLEAN),
        ("/v1/offers/1?preset=resnet50-imagenet&lora_rank=1_6", INTEGER),
    ],
)
def test_lax_values_are_400_naming_the_parameter(client: Any, path: str, reason: str) -> None:
    r = client.get(path)
    assert r.status_code == 400, r.text
    name = path.rsplit("&", 1)[-1].split("?")[-1].split("=")[0]
    assert r.json()["extra"] == [{"key": name, "message": reason}]


def test_every_bad_value_is_named_at_once(client: Any) -> None:
    r = client.get(RANK + "drop_oom=yes&micro_batch_size=1_0&epochs=2")
    assert r.status_code == 400
    assert r.json()["extra"] == [
        {"key": "micro_batch_size", "message": INTEGER},
        {"key": "drop_oom", "message": BOOLEAN},
    ]
    r = client.get("/v1/offers?limit=1e2&include_suspect=yes&offset=3")
    assert {e["key"] for e in r.json()["extra"]} == {"limit", "include_suspect"}


def test_values_written_as_documented_are_taken(client: Any) -> None:
    r = client.get("/v1/offers?limit=3&offset=0&available_only=false&min_vram_gib=40.5")
    assert r.status_code == 200, r.text
    page = r.json()
    assert (page["limit"], len(page["items"])) == (3, 3)
    assert all(o["vram_gib_per_gpu"] >= 40.5 for o in page["items"])
    r = client.get("/v1/offers?limit=2&min_vram_gib=4e1&gpu_count=8")
    assert r.status_code == 200, r.text
    assert all(o["gpu_count"] == 8 and o["vram_gib_per_gpu"] >= 40 for o in r.json()["items"])
    r = client.get(RANK + "micro_batch_size=128&epochs=2.5&drop_oom=true&limit=2")
    assert r.status_code == 200, r.text
    ranked = r.json()
    assert len(ranked["results"]) == 2
    assert (ranked["workload"]["micro_batch_size"], ranked["workload"]["epochs"]) == (128, 2.5)


def test_a_well_written_value_out_of_bounds_is_still_a_bounds_error(client: Any) -> None:
    r = client.get(RANK + "micro_batch_size=-3")
    assert r.status_code == 400
    assert r.json()["extra"] == [
        {"key": "micro_batch_size", "message": "Input should be greater than 0"}
    ]


def test_web_listing_pages_follow_the_same_rule(client: Any) -> None:
    r = client.get("/gpus", params={"limit": "1_0", "format": "json"})
    assert r.status_code == 400
    r = client.get("/gpus", params={"limit": "+10", "format": "json"})
    assert r.status_code == 400
    assert client.get("/gpus", params={"limit": "10", "format": "json"}).status_code == 200


@pytest.mark.parametrize(
    ("text", "kind", "ok"),
    [
        ("0", int, True),
        ("-12", int, True),
        ("007", int, True),
        ("1_000", int, False),
        ("+1", int, False),
        ("1e3", int, False),
        ("", int, False),
        ("1.5", float, True),
        ("-.5", float, True),
        ("2.", float, True),
        ("2e-3", float, True),
        ("1E+9", float, True),
        ("nan", float, False),
        ("1,5", float, False),
        ("e3", float, False),
        ("true", bool, True),
        ("false", bool, True),
        ("TRUE", bool, False),
        ("1", bool, False),
        ("off", bool, False),
    ],
)
def test_query_text_rule(text: str, kind: type, ok: bool) -> None:
    assert (query_text_error(text, kind) is None) == ok


def test_the_price_history_takes_no_parameters(client: Any) -> None:
    # it answered 200 to ?bogus=1 and ?limit=-5 (newcomer), where every other endpoint
    # names an unknown parameter
    assert client.get("/v1/offers/1/prices").status_code == 200
    for query in ("bogus=1", "limit=-5"):
        r = client.get(f"/v1/offers/1/prices?{query}")
        assert r.status_code == 400, r.text
        assert r.json()["extra"][0]["key"] == query.split("=")[0]
        assert "unknown parameter" in r.json()["extra"][0]["message"]
