"""The API, the CLI and the MCP tools give the same answer, and the same error, byte for byte.

Each request goes to ``POST /v1/rank`` (or ``/v1/estimate``) through the test client, to
``gpucost rank --json`` (local database and ``--server``), and to the MCP tool through the
SDK's in-process client (memory streams); the three bodies must be identical. Presets, a
custom shape and a Hugging Face config.json are covered.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner

from app.backends import HttpBackend, LocalBackend
from app.cli import main
from app.interface.schemas import EstimateRequest, RankRequest
from app.mcp_server import create_server
from app.operations import ESTIMATE, RANK
from app.settings import Settings, get_settings

pytestmark = pytest.mark.db

#: A Hugging Face config.json (Qwen2-0.5B's shape fields, as the model card's config lists them).
QWEN2_05B = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_attention_heads": 14,
    "num_hidden_layers": 24,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
}


@pytest.fixture(scope="module")
def local(seeded_url: str) -> Iterator[LocalBackend]:
    backend = LocalBackend(Settings(database_url=seeded_url), prepare=False)
    yield backend
    backend.close()


class Shared:
    """The module's local backend for every CLI run (its connections and reference data
    loaded once; ``close`` leaves it open). The first CLI run of the module opens its own
    (:func:`test_cli_opens_the_local_database_itself`)."""

    def __init__(self, backend: LocalBackend):
        self.backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def close(self) -> None:
        pass


@pytest.fixture
def cli(seeded_url: str, local: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``gpucost ARGS`` on the seeded database: (exit code, stdout bytes)."""
    import app.backends

    monkeypatch.setenv("GPUCOST_DATABASE_URL", seeded_url)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(app.backends, "LocalBackend", lambda settings: Shared(local))
    get_settings.cache_clear()

    def run(*args: str) -> tuple[int, bytes]:
        result = CliRunner().invoke(main, list(args))
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout_bytes

    yield run
    get_settings.cache_clear()


def mcp_call(backend: Any, tool: str, arguments: dict[str, Any]) -> tuple[bool, bytes]:
    """(isError, the text) of one MCP tool call through the SDK's in-process client."""
    from mcp import Client

    async def go() -> tuple[bool, bytes]:
        async with Client(create_server(backend), mode="legacy") as client:
            r = await client.call_tool(tool, arguments)
            return r.is_error, r.content[0].text.encode()  # type: ignore[union-attr]

    return anyio.run(go)


class AppTransport(httpx.BaseTransport):
    """The test client's transport (the app in this process, no socket) for another client."""

    def __init__(self, client: Any):
        self.inner = client._transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.inner.handle_request(request)  # type: ignore[no-any-return]


def _cfg(tmp_path: Path) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_05B), encoding="utf-8")
    return str(path)


#: (CLI arguments, the POST /v1/rank body they stand for); "{cfg}" is the config.json's path
#: and its fields join the body's workload.
RANK_CASES = [
    (["resnet50-imagenet", "--limit", "5"], {"workload": {"preset": "resnet50-imagenet"}}),
    (
        ["gpt2-124m-pretrain", "--gpu-count", "8", "--currency", "cny", "--limit", "3"],
        {"workload": {"preset": "gpt2-124m-pretrain"}, "filters": {"gpu_count": 8.0}},
    ),
    (
        ["llama3-8b-lora", "--set", "micro_batch_size=2", "--max-total-cost", "5"],
        {"workload": {"preset": "llama3-8b-lora", "micro_batch_size": 2}, "max_total_cost": 5.0},
    ),
    (  # a custom shape: a 3B decoder on the Llama 3 8B preset's job
        [
            "llama3-8b-full",
            "--set",
            "params=3.2B",
            "--set",
            "layers=28",
            "--set",
            "hidden_size=3072",
            "--set",
            "seq_len=2048",
            "--sort",
            "epoch_hours",
            "--limit",
            "4",
        ],
        {
            "workload": {
                "preset": "llama3-8b-full",
                "params": 3_200_000_000,
                "layers": 28,
                "hidden_size": 3072,
                "seq_len": 2048,
            },
            "sort": "epoch_hours",
        },
    ),
    (  # a Hugging Face config.json on the full fine-tune preset
        ["llama3-8b-full", "--hf-config", "{cfg}", "--set", "seq_len=1024", "--gpu", "H100"],
        {"workload": {"preset": "llama3-8b-full", "seq_len": 1024}, "filters": {"gpu": "H100"}},
    ),
]


@pytest.mark.parametrize(("args", "body"), RANK_CASES)
def test_rank_is_the_same_on_api_cli_and_mcp(
    args: list[str],
    body: dict[str, Any],
    client: Any,
    local: LocalBackend,
    cli: Any,
    tmp_path: Path,
) -> None:
    cfg = _cfg(tmp_path)
    args = [a.replace("{cfg}", cfg) for a in args]
    body = {**body, "currency": "CNY"} if "cny" in args else body
    if "--hf-config" in args:
        fields = client.post("/v1/workloads/from-hf-config", json=QWEN2_05B).json()["fields"]
        fields.pop("max_positions")
        body = {**body, "workload": {**fields, **body["workload"]}}
    if "--limit" in args:
        body = {**body, "limit": int(args[args.index("--limit") + 1])}
    else:
        body = {**body, "limit": 10}  # the CLI's default
    api = client.post("/v1/rank", json=body)
    assert api.status_code == 200, api.text
    code, out = cli("rank", *args, "--json")
    assert code == 0
    assert out == api.content + b"\n"
    error, text = mcp_call(local, "rank_offers", body)
    assert not error and text == api.content
    answer = api.json()
    assert answer["results"], "the request ranks at least one offer"
    for r in answer["results"]:  # checkable by hand: an epoch costs its hours at the price
        e = r["estimate"]
        assert e["cost_per_epoch"] == pytest.approx(r["price_per_hour"] * e["epoch_hours"])


def test_cli_against_a_server_gives_the_local_answer(client: Any, cli: Any, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import app.backends

    # --server URL through the test client's transport (the app in this process, no socket)
    monkeypatch.setattr(
        app.backends, "HttpBackend", functools.partial(HttpBackend, transport=AppTransport(client))
    )
    args = ("rank", "bert-large-squad", "--gpu", "A100", "--limit", "3", "--json")
    code, local_out = cli(*args)
    assert code == 0
    code, served = cli(*args, "--server", "http://testserver.local")
    assert code == 0 and served == local_out
    code, out = cli("rank", "nope", "--json", "--server", "http://testserver.local")
    assert code == 2 and json.loads(out)["extra"][0]["key"] == "workload.preset"


ESTIMATE_CASES = [
    (
        [
            "resnet50-imagenet",
            "--gpu",
            "A100 SXM4 80GB",
            "--gpu-count",
            "8",
            "--price-per-hour",
            "14.32",
        ],
        {
            "workload": {"preset": "resnet50-imagenet"},
            "hardware": {"gpu": "A100 SXM4 80GB", "gpu_count": 8.0},
            "price_per_hour": 14.32,
        },
    ),
    (
        [
            "llama3-8b-qlora",
            "--gpu",
            "RTX 4090",
            "--set",
            "seq_len=2048",
            "--set",
            "disk_gb=200",
            "--billing",
            "spot",
            "--price-per-hour",
            "0.4",
        ],
        {
            "workload": {"preset": "llama3-8b-qlora", "seq_len": 2048},
            "hardware": {"gpu": "RTX 4090", "disk_gb": 200.0},
            "billing": "spot",
            "price_per_hour": 0.4,
        },
    ),
    (  # a sequence length as people write it: 4k is 4096 tokens (k = 1024 there)
        ["llama3-8b-qlora", "--gpu", "H100 SXM", "--set", "seq_len=4k", "--price-per-hour", "2"],
        {
            "workload": {"preset": "llama3-8b-qlora", "seq_len": 4096},
            "hardware": {"gpu": "H100 SXM"},
            "price_per_hour": 2.0,
        },
    ),
]


@pytest.mark.parametrize(("args", "body"), ESTIMATE_CASES)
def test_estimate_is_the_same_on_api_cli_and_mcp(
    args: list[str], body: dict[str, Any], client: Any, local: LocalBackend, cli: Any
) -> None:
    api = client.post("/v1/estimate", json=body)
    assert api.status_code == 200, api.text
    code, out = cli("estimate", *args, "--json")
    assert code == 0 and out == api.content + b"\n"
    error, text = mcp_call(local, "estimate", body)
    assert not error and text == api.content
    e = api.json()["estimate"]
    assert e["cost_per_epoch"] == pytest.approx(body["price_per_hour"] * e["epoch_hours"])


#: Bad input: (CLI command and arguments, the tool, its arguments, the field the error names).
BAD_CASES = [
    (
        ["rank", "resnet50-imagenet", "--set", "micro_batch_size=0"],
        "rank_offers",
        {"workload": {"preset": "resnet50-imagenet", "micro_batch_size": 0}},
        "workload.micro_batch_size",
    ),
    (
        ["rank", "resnet50-imagenet", "--set", "seq_len=long"],
        "rank_offers",
        {"workload": {"preset": "resnet50-imagenet", "seq_len": "long"}},
        "workload.seq_len",
    ),
    (
        ["rank", "resnet50-imagenet", "--set", "colour=blue"],
        "rank_offers",
        {"workload": {"preset": "resnet50-imagenet", "colour": "blue"}},
        "workload.colour",
    ),
    (
        ["rank", "no-such-preset"],
        "rank_offers",
        {"workload": {"preset": "no-such-preset"}},
        "workload.preset",
    ),
    (
        ["rank", "resnet50-imagenet", "--currency", "XYZ"],
        "rank_offers",
        {"workload": {"preset": "resnet50-imagenet"}, "currency": "XYZ"},
        "currency",
    ),
    (
        ["estimate", "resnet50-imagenet", "--gpu", "A100"],
        "estimate",
        {"workload": {"preset": "resnet50-imagenet"}, "hardware": {"gpu": "A100"}},
        "hardware.gpu",
    ),
]


@pytest.mark.parametrize(("args", "tool", "body", "field"), BAD_CASES)
def test_bad_input_gets_the_same_error_everywhere(
    args: list[str],
    tool: str,
    body: dict[str, Any],
    field: str,
    client: Any,
    local: LocalBackend,
    cli: Any,
) -> None:
    if tool == "rank_offers" and "--limit" not in args:
        body = {**body, "limit": 10}
    path = "/v1/rank" if tool == "rank_offers" else "/v1/estimate"
    api = client.post(path, json=body)
    assert api.status_code == 400
    assert field in [e["key"] for e in api.json()["extra"]]
    code, out = cli(*args, "--json")
    assert code == 2 and out == api.content + b"\n"
    error, text = mcp_call(local, tool, body)
    assert error and text == api.content


def test_cli_opens_the_local_database_itself(seeded_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUCOST_DATABASE_URL", seeded_url)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["offers", "--provider", "guide-listing", "--json"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    page = json.loads(result.stdout)
    # the user guide's listing: ¥0.75/h for one RTX 3090 (seed_data/offers_manual.csv)
    assert [(o["gpu"], o["price_per_hour"], o["currency"]) for o in page["items"]] == [
        ("GeForce RTX 3090", 0.75, "CNY")
    ]


def test_cli_error_without_json_names_the_field_and_exits_2(cli: Any) -> None:
    result = CliRunner().invoke(main, ["rank", "resnet50-imagenet", "--set", "seq_len=-1"])
    assert result.exit_code == 2
    assert "workload.seq_len: Input should be greater than 0" in result.stderr


def test_mcp_tools_take_the_api_models_as_input_schemas(local: LocalBackend) -> None:
    from mcp import Client

    async def go() -> dict[str, Any]:
        async with Client(create_server(local), mode="legacy") as c:
            return {t.name: t.input_schema for t in (await c.list_tools()).tools}

    schemas = anyio.run(go)
    assert set(schemas) == {
        "rank_offers",
        "estimate",
        "resolve_gpu",
        "list_presets",
        "workload_from_hf_config",
    }
    assert schemas["rank_offers"] == RankRequest.model_json_schema()
    assert schemas["estimate"] == EstimateRequest.model_json_schema()


def test_mcp_presets_gpu_labels_and_config_are_the_api_answers(
    client: Any, local: LocalBackend
) -> None:
    error, text = mcp_call(local, "list_presets", {})
    assert not error and text == client.get("/v1/workloads").content
    presets = {p["preset"]: p for p in json.loads(text)}
    assert presets["resnet50-imagenet"]["micro_batch_size"] == 256
    error, text = mcp_call(local, "resolve_gpu", {"label": "3090-24G"})
    api = client.post("/v1/gpus/resolve", json={"label": "3090-24G"})
    assert not error and text == api.content
    assert api.json()["gpu"] == "GeForce RTX 3090"
    error, text = mcp_call(local, "workload_from_hf_config", QWEN2_05B)
    api = client.post("/v1/workloads/from-hf-config", json=QWEN2_05B)
    assert not error and text == api.content
    fields = api.json()["fields"]
    assert (fields["layers"], fields["hidden_size"], fields["heads"]) == (24, 896, 14)
    error, text = mcp_call(local, "workload_from_hf_config", {"model_type": "qwen2"})
    api = client.post("/v1/workloads/from-hf-config", json={"model_type": "qwen2"})
    assert error and api.status_code == 400 and text == api.content


def test_estimate_backends_agree(client: Any, local: LocalBackend) -> None:
    body = ESTIMATE_CASES[0][1]
    served = HttpBackend("http://testserver.local", transport=AppTransport(client))
    try:
        assert served.call(ESTIMATE, body).body == local.call(ESTIMATE, body).body
        assert served.call(RANK, {"workload": {}}).body == local.call(RANK, {"workload": {}}).body
    finally:
        served.close()


def test_a_sequence_length_written_4k_is_4096_on_every_surface(
    client: Any, local: LocalBackend
) -> None:
    # the API body, the MCP tool and the flat query take "4k" as 4096 tokens (k = 1024 in a
    # sequence length), the same answer byte for byte as the number itself
    hardware = {"gpu": "H100 SXM"}
    exact = {"workload": {"preset": "llama3-8b-qlora", "seq_len": 4096}, "hardware": hardware}
    written = {"workload": {"preset": "llama3-8b-qlora", "seq_len": "4k"}, "hardware": hardware}
    api = client.post("/v1/estimate", json=exact)
    assert api.status_code == 200, api.text
    assert api.json()["workload"]["seq_len"] == 4096
    assert client.post("/v1/estimate", json=written).content == api.content
    error, text = mcp_call(local, "estimate", written)
    assert not error and text == api.content
    error, text = mcp_call(local, "estimate", {**written, "workload": {"seq_len": "lots"}})
    assert error and b"seq_len" in text
