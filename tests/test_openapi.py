"""The served OpenAPI document describes every operation, parameter and field (issue 11).

:func:`undocumented` walks the document as served at ``/schema/openapi.json``: every
component schema and every inline request/response schema, their properties at any depth
(objects in arrays, in ``anyOf``/``oneOf``/``allOf`` and in ``additionalProperties``), every
path and query parameter, and every operation (a written summary and a description). The
first tests feed it small hand-made documents, so a walker that missed something would fail
here rather than pass vacuously on the real one.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.interface.query import OFFER_PARAMS, RANK_PARAMS
from app.model.types import INTERCONNECT_LABELS

pytestmark = pytest.mark.db

METHODS = ("get", "post", "put", "patch", "delete")


def _schema_gaps(schema: Any, where: str, out: list[str]) -> None:
    """Append ``where.prop`` for each property, at any depth, without a description."""
    if not isinstance(schema, dict):
        return
    for name, prop in (schema.get("properties") or {}).items():
        if not (isinstance(prop, dict) and prop.get("description")):
            out.append(f"{where}.{name}")
        _schema_gaps(prop, f"{where}.{name}", out)
    for key in ("items", "additionalProperties"):
        _schema_gaps(schema.get(key), f"{where}[]", out)
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key) or []:
            _schema_gaps(option, where, out)


def undocumented(doc: dict[str, Any]) -> list[str]:
    """Everything in an OpenAPI document that a reader would find undescribed.

    Returns entries like ``schema OfferOut.gpu``, ``GET /v1/offers query gpu``,
    ``GET /v1/rank: no summary``; empty when everything is described. A summary must be
    written (contain a space): Litestar's default is the handler's name in CamelCase.
    """
    out: list[str] = []
    for name, schema in (doc.get("components", {}).get("schemas") or {}).items():
        _schema_gaps(schema, f"schema {name}", out)
    for path, item in doc.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            where = f"{method.upper()} {path}"
            if " " not in (op.get("summary") or "").strip():
                out.append(f"{where}: no summary")
            if not (op.get("description") or "").strip():
                out.append(f"{where}: no description")
            for p in [*(item.get("parameters") or []), *(op.get("parameters") or [])]:
                if not p.get("description"):
                    out.append(f"{where} {p.get('in')} {p.get('name')}")
            bodies = [("body", op.get("requestBody") or {})]
            bodies += [(code, r) for code, r in (op.get("responses") or {}).items()]
            for label, body in bodies:
                for media in (body.get("content") or {}).values():
                    _schema_gaps(media.get("schema"), f"{where} {label}", out)
    return out


def test_walker_finds_nested_fields_parameters_and_operations() -> None:
    doc = {
        "components": {
            "schemas": {
                "A": {
                    "properties": {
                        "ok": {"type": "integer", "description": "fine"},
                        "bare": {"type": "integer"},
                        "rows": {
                            "description": "a list",
                            "type": "array",
                            "items": {"properties": {"deep": {"type": "string"}}},
                        },
                        "either": {
                            "description": "one of",
                            "anyOf": [{"properties": {"inner": {}}}, {"type": "null"}],
                        },
                    }
                }
            }
        },
        "paths": {
            "/x/{id}": {
                "parameters": [{"name": "id", "in": "path"}],
                "get": {
                    "summary": "GetX",
                    "description": "",
                    "parameters": [
                        {"name": "q", "in": "query"},
                        {"name": "r", "in": "query", "description": "said"},
                    ],
                    "responses": {
                        "400": {
                            "content": {
                                "application/json": {
                                    "schema": {"properties": {"detail": {"type": "string"}}}
                                }
                            }
                        }
                    },
                },
                "post": {
                    "summary": "Make an x",
                    "description": "Makes one.",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"properties": {"name": {"description": "its name"}}}
                            }
                        }
                    },
                    "responses": {},
                },
            }
        },
    }
    assert undocumented(doc) == [
        "schema A.bare",
        "schema A.rows[].deep",
        "schema A.either.inner",
        "GET /x/{id}: no summary",
        "GET /x/{id}: no description",
        "GET /x/{id} path id",
        "GET /x/{id} query q",
        "GET /x/{id} 400.detail",
        "POST /x/{id} path id",  # a path-level parameter belongs to every operation
    ]


def test_walker_passes_a_described_document() -> None:
    doc = {
        "components": {"schemas": {"A": {"properties": {"a": {"description": "GiB"}}}}},
        "paths": {"/a": {"get": {"summary": "Get a", "description": "The a.", "responses": {}}}},
    }
    assert undocumented(doc) == []


def test_served_document_describes_every_operation_parameter_and_field(client: Any) -> None:
    doc = client.get("/schema/openapi.json").json()
    gaps = undocumented(doc)
    assert gaps == [], "undescribed in /schema/openapi.json:\n" + "\n".join(gaps)
    # the walk saw the whole API, not an empty document
    ops = [(m, p) for p, item in doc["paths"].items() for m in METHODS if m in item]
    assert len(ops) >= 13 and ("get", "/v1/rank") in ops
    fields = doc["components"]["schemas"]
    assert {"WorkloadIn", "OfferFilters", "HardwareIn", "ErrorOut", "MemoryFixOut"} <= set(fields)
    assert {"OfferDetailsOut", "PriceHistoryOut", "PricePointOut", "RefreshRunOut"} <= set(fields)


def test_every_error_answer_is_the_described_error_model(client: Any) -> None:
    doc = client.get("/schema/openapi.json").json()
    for path, item in doc["paths"].items():
        for method in METHODS:
            for code, answer in (item.get(method) or {}).get("responses", {}).items():
                if code.startswith("4"):
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (
                        method,
                        path,
                        code,
                    )


def test_rank_query_parameters_are_listed_typed_and_described(client: Any) -> None:
    doc = client.get("/schema/openapi.json").json()
    params = {p["name"]: p for p in doc["paths"]["/v1/rank"]["get"]["parameters"]}
    assert list(params) == list(RANK_PARAMS)
    assert all(p["in"] == "query" and not p["required"] for p in params.values())
    assert params["micro_batch_size"]["schema"]["type"] == "integer"
    assert params["precision"]["schema"]["enum"] == [
        "fp32",
        "tf32",
        "fp16_amp",
        "bf16_amp",
        "bf16",
        "fp8",
    ]
    assert params["sort"]["schema"]["default"] == "cost_per_epoch"
    assert "-cost_per_epoch" in params["order"]["schema"]["enum"]
    # counts take 7B / 25.6M in the flat form, so they are text there
    assert [s["type"] for s in params["params"]["schema"]["anyOf"]] == ["integer", "string"]
    assert "7B" in params["params"]["description"]
    assert "GiB" in params["min_vram_gib"]["description"]
    # the offer page's JSON twin takes the workload the same way
    offer = doc["paths"]["/v1/offers/{offer_id}"]["get"]["parameters"]
    assert [p["name"] for p in offer] == ["offer_id", *OFFER_PARAMS]


def test_one_interconnect_enum_in_offers_and_estimates(client: Any) -> None:
    schemas = client.get("/schema/openapi.json").json()["components"]["schemas"]
    for name in ("OfferOut", "HardwareIn"):
        enum = schemas[name]["properties"]["interconnect"]["enum"]
        assert [v for v in enum if v is not None] == list(INTERCONNECT_LABELS), name
    assert list(INTERCONNECT_LABELS) == ["nvlink", "nvswitch", "pcie"]


@pytest.mark.parametrize(
    ("path", "schema"),
    [
        ("/v1/gpus", "GpuOut"),
        ("/v1/benchmarks?limit=50", "BenchmarkOut"),
        ("/v1/workloads", "WorkloadPresetOut"),
        ("/v1/offers?limit=50", "OfferOut"),
    ],
)
def test_listings_return_only_documented_fields(client: Any, path: str, schema: str) -> None:
    # these handlers build plain dicts; every key they send must be a described property
    doc = client.get("/schema/openapi.json").json()
    props = doc["components"]["schemas"][schema]["properties"]
    answer = client.get(path).json()
    rows = answer["items"] if isinstance(answer, dict) else answer
    assert rows
    sent = {key for row in rows for key in row}
    assert sorted(sent - set(props)) == []
    required = set(doc["components"]["schemas"][schema].get("required", []))
    assert required <= sent
