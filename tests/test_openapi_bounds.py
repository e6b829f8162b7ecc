"""The served OpenAPI states every bound the validation enforces (issue 13).

Litestar drops a bound of 0 on an optional field (``gt=0`` / ``ge=0`` on ``float | None``), so
the document let clients send ``0`` or ``-1`` that the API then rejects (schemathesis'
``positive_data_acceptance`` found them). Here every body model's properties are compared
with pydantic's own JSON schema of the same model, and every query/path parameter with the
constraints declared on its handler.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel

from app.api import offers, refresh, submissions
from app.interface import schemas

pytestmark = pytest.mark.db

NUMERIC = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
TEXT = ("minLength", "maxLength", "pattern", "minItems", "maxItems")
#: handler constraint -> OpenAPI keyword
KWARGS = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
    "min_length": "minLength",
    "max_length": "maxLength",
    "pattern": "pattern",
}


def bounds(prop: dict[str, Any]) -> dict[str, Any]:
    """The bounds a property schema states, on itself or on its anyOf/oneOf members."""
    out: dict[str, Any] = {}
    for part in (prop, *prop.get("anyOf", ()), *prop.get("oneOf", ())):
        for k in (*NUMERIC, *TEXT):
            if k in part:
                if k in NUMERIC:
                    assert abs(part[k]) < 2**53, f"{k} {part[k]}: not exact as a double"
                out[k] = float(part[k]) if k in NUMERIC else part[k]
    return out


def models() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for module in (schemas, refresh, offers, submissions):
        for name, obj in vars(module).items():
            if isinstance(obj, type) and issubclass(obj, BaseModel) and obj is not BaseModel:
                found[name] = obj
    return found


@pytest.fixture(scope="module")
def openapi(client: Any) -> dict[str, Any]:
    r = client.get("/schema/openapi.json")
    assert r.status_code == 200
    doc: dict[str, Any] = r.json()
    return doc


def test_every_body_model_bound_is_in_the_openapi(openapi: dict[str, Any]) -> None:
    served = openapi["components"]["schemas"]
    by_name = models()
    compared = 0
    for name, component in served.items():
        model = by_name.get(name)
        if model is None or "properties" not in component:
            continue
        own = {
            # computed fields are in the serialisation schema only
            **model.model_json_schema(mode="serialization")["properties"],
            **model.model_json_schema(mode="validation")["properties"],
        }
        for field, prop in component["properties"].items():
            assert bounds(prop) == bounds(own[field]), f"{name}.{field}"
            compared += 1
    # the request models are served (and their zero bounds are the ones Litestar dropped)
    assert {"WorkloadIn", "RankRequest", "EstimateRequest", "OfferFilters"} <= set(served)
    assert bounds(served["WorkloadIn"]["properties"]["epochs"]) == {
        "exclusiveMinimum": 0.0,
        "maximum": 1e6,
    }
    assert compared > 100


def test_every_parameter_bound_is_in_the_openapi(client: Any, openapi: dict[str, Any]) -> None:
    app = client.app
    compared = 0
    for path, item in openapi["paths"].items():
        for method, op in item.items():
            params = [p for p in op.get("parameters", ()) if p["in"] in ("query", "path")]
            if not params:
                continue
            # every path parameter of the API is an id (offer_id, watch_id): {name:int}
            route = re.sub(r"\{(\w+)\}", r"{\1:int}", path)
            handler = app.route_handler_method_map[route][method.upper()]
            signature = handler.parsed_fn_signature.parameters
            for p in params:
                field = signature.get(p["name"])
                if field is None:  # GET /v1/rank lists the flat parameters it parses itself
                    continue
                kwarg = field.kwarg_definition
                want = {
                    key: float(v) if key in NUMERIC else v
                    for attr, key in KWARGS.items()
                    if (v := getattr(kwarg, attr, None)) is not None
                }
                assert bounds(p["schema"]) == want, f"{method.upper()} {path} {p['name']}"
                for attr in ("gt", "ge", "lt", "le"):
                    v = getattr(kwarg, attr, None)
                    # a bound a double cannot state exactly (or with neighbours it cannot
                    # tell apart) moves the limit for clients that read it as one
                    assert v is None or abs(v) < 2**53, f"{path} {p['name']} {attr}={v}"
                compared += 1
    offers = {p["name"]: p for p in openapi["paths"]["/v1/offers"]["get"]["parameters"]}
    assert bounds(offers["gpu_count"]["schema"]) == {"exclusiveMinimum": 0.0, "maximum": 1024.0}
    detail = openapi["paths"]["/v1/offers/{offer_id}"]["get"]["parameters"]
    assert bounds(detail[0]["schema"]) == {"minimum": 1.0, "maximum": 2.0**53 - 1}
    assert compared > 20


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("exclude_spot", 0),  # a boolean is true or false
        ("drop_oom", "true"),
        ("limit", "3"),  # an integer is a JSON integer
        ("limit", 3.0),
        ("max_total_cost", "10"),  # a number is a JSON number
        ("max_total_cost", False),
    ],
)
def test_a_body_value_of_another_type_is_a_400_naming_it(
    client: Any, field: str, value: Any
) -> None:
    body = {"workload": {"preset": "resnet50-imagenet"}, "limit": 3, field: value}
    r = client.post("/v1/rank", json=body)
    assert r.status_code == 400, r.text
    assert [e["key"] for e in r.json()["extra"]] == [field]


def test_enum_values_in_bodies_and_text_in_flat_parameters_are_accepted(client: Any) -> None:
    body = {
        "workload": {"preset": "resnet50-imagenet", "precision": "fp32", "sharding": "none"},
        "limit": 3,
        "max_total_cost": 1000,  # an integer is a number
        "currency": "cny",
    }
    r = client.post("/v1/rank", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["currency"] == "CNY"
    flat = {"preset": "resnet50-imagenet", "limit": "3", "drop_oom": "true", "sharding": ""}
    r = client.get("/v1/rank", params=flat)
    assert r.status_code == 200, r.text
    assert len(r.json()["results"]) == 3


def test_flat_parameters_say_an_empty_value_is_allowed(openapi: dict[str, Any]) -> None:
    for path in ("/v1/rank", "/v1/offers/{offer_id}"):
        flat = [p for p in openapi["paths"][path]["get"]["parameters"] if p["in"] == "query"]
        assert len(flat) > 20
        assert all(p.get("allowEmptyValue") is True for p in flat), path


def test_count_parameters_state_the_pattern_and_bounds_the_validation_applies(
    openapi: dict[str, Any],
) -> None:
    from app.interface.counts import COUNT_PATTERN, TOKENS_PATTERN
    from app.interface.query import COUNT_PARAMS

    own = schemas.WorkloadIn.model_json_schema()["properties"]
    assert {"params", "text_encoder_params", "vae_params", "seq_len"} <= set(COUNT_PARAMS)
    for path in ("/v1/rank", "/v1/offers/{offer_id}"):
        flat = {p["name"]: p for p in openapi["paths"][path]["get"]["parameters"]}
        for name in COUNT_PARAMS:
            schema = flat[name]["schema"]
            integer, text = schema["anyOf"]
            # a sequence length's own grammar (4k = 4096), every other count's 7B
            pattern = TOKENS_PATTERN if name == "seq_len" else COUNT_PATTERN
            assert integer["type"] == "integer" and text == {
                "type": "string",
                "pattern": pattern,
            }, f"{path} {name}"
            # the body's integer form has the same bounds (its text form the same pattern)
            own_integer, own_text, _ = own[name]["anyOf"]
            assert bounds(integer) == bounds(own_integer), f"{path} {name}"
            assert own_text == text, f"{path} {name}"
    # in words too: params is more than 0 and at most 1e14 (WorkloadIn.params)
    params = {p["name"]: p for p in openapi["paths"]["/v1/rank"]["get"]["parameters"]}["params"]
    assert bounds(params["schema"]["anyOf"][0]) == {"exclusiveMinimum": 0.0, "maximum": 1e14}
    assert params["description"].endswith("(more than 0, at most 1e+14)")
    seq_len = {p["name"]: p for p in openapi["paths"]["/v1/rank"]["get"]["parameters"]}["seq_len"]
    assert "4k = 4096" in seq_len["description"]
    assert seq_len["description"].endswith(
        "a length in tokens: 2048, 4k (= 4096), 32K (= 32768); k is 1024 here "
        "(more than 0, at most 1e+08)"
    )


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("7B", True),
        ("25.6M", True),
        ("8e9", True),
        ("1,281,167", True),
        ("1_281_167", True),
        ("1 281 167", True),
        (".5M", True),
        ("7 b", True),
        ("7BB", False),
        ("+7B", False),
        ("1,28", False),
        ("7  B", False),
        ("8e-9", False),
        ("seven", False),
        ("0x10", False),
    ],
)
def test_a_count_is_accepted_exactly_when_the_documented_pattern_matches(
    client: Any, openapi: dict[str, Any], text: str, ok: bool
) -> None:
    import re

    pattern = next(
        p["schema"]["anyOf"][1]["pattern"]
        for p in openapi["paths"]["/v1/rank"]["get"]["parameters"]
        if p["name"] == "vae_params"
    )
    assert bool(re.fullmatch(pattern, text)) is ok
    offer = client.get("/v1/offers", params={"limit": 1}).json()["items"][0]["id"]
    r = client.get(
        f"/v1/offers/{offer}", params={"preset": "resnet50-imagenet", "vae_params": text}
    )
    assert r.status_code == (200 if ok else 400), r.text
    if not ok:
        [error] = r.json()["extra"]
        assert error["key"] == "vae_params" and "a count: 7B" in error["message"]


def test_a_count_in_the_pattern_beyond_the_documented_bound_is_a_400(client: Any) -> None:
    # 2e13 matches the pattern; vae_params is at most 1e13 (the anyOf integer's maximum)
    offer = client.get("/v1/offers", params={"limit": 1}).json()["items"][0]["id"]
    # (0 is a VAE not on the GPU, latents cached: at least 0; params is more than 0)
    for name, text, status in (
        ("vae_params", "2e13", 400),
        ("vae_params", "10T", 200),
        ("vae_params", "9.5T", 200),
        ("vae_params", "0", 200),
        ("params", "0", 400),
    ):
        r = client.get(f"/v1/offers/{offer}", params={"preset": "resnet50-imagenet", name: text})
        assert r.status_code == status, (name, text, r.text)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("4k", 4096),
        ("8K", 8192),
        ("2048", 2048),
        ("32k", 32768),
        ("1.5k", 1536),
        ("4 k", 4096),
        ("131,072", 131072),
        ("4.1k", None),  # 4198.4 tokens: matches the pattern, refused as not whole
        ("4kk", None),
        ("7B", None),
        ("4e3", None),
        ("-4k", None),
        ("four", None),
    ],
)
def test_a_sequence_length_is_read_with_k_as_1024(
    client: Any, openapi: dict[str, Any], text: str, tokens: int | None
) -> None:
    import re

    pattern = next(
        p["schema"]["anyOf"][1]["pattern"]
        for p in openapi["paths"]["/v1/rank"]["get"]["parameters"]
        if p["name"] == "seq_len"
    )
    assert bool(re.fullmatch(pattern, text)) is (tokens is not None or text == "4.1k")
    offer = client.get("/v1/offers", params={"limit": 1}).json()["items"][0]["id"]
    r = client.get(f"/v1/offers/{offer}", params={"preset": "llama3-8b-lora", "seq_len": text})
    if tokens is None:
        assert r.status_code == 400, r.text
        assert any(e["key"] == "seq_len" for e in r.json()["extra"]), r.text
    else:
        assert r.status_code == 200, r.text
        assert r.json()["workload"]["seq_len"] == tokens
