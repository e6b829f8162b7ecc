"""HTTP API on the seeded PostgreSQL database: answers, filters and error handling."""

from __future__ import annotations

from typing import Any

import pytest

from app.interface.query import RANK_PARAMS

pytestmark = pytest.mark.db


def post(client: Any, path: str, body: Any) -> Any:
    return client.post(path, json=body)


def test_healthz(client: Any) -> None:
    r = client.get("/healthz")
    body = r.json()
    assert r.status_code == 200 and (body["status"], body["database"]) == ("ok", "ok")
    assert 0 <= body["latency_ms"] < 500


def test_healthz_is_503_when_the_database_is_gone() -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings
    from tests.conftest import ADMIN_URL

    url = ADMIN_URL.rsplit("/", 1)[0] + "/gpucost_no_such_database"
    with TestClient(create_app(Settings(database_url=url))) as c:
        r = c.get("/healthz")
    assert r.status_code == 503 and r.json()["database"] == "unreachable"
    assert r.json()["status"] == "degraded" and r.headers["retry-after"] == "5"


@pytest.mark.parametrize(
    "request_args",
    [
        ("GET", "/v1/offers", {"params": {"provider": "\x00"}}),
        ("GET", "/v1/offers", {"params": {"region": "x\x00"}}),
        ("GET", "/v1/benchmarks", {"params": {"workload": "\x00"}}),
        (
            "POST",
            "/v1/rank",
            {
                "json": {
                    "workload": {"preset": "resnet50-imagenet"},
                    "filters": {"provider": "\x00"},
                }
            },
        ),
    ],
)
def test_nul_bytes_are_400_not_500(client: Any, request_args: tuple) -> None:
    method, path, kwargs = request_args
    r = client.request(method, path, **kwargs)
    assert r.status_code == 400, r.text


def test_deeply_nested_body_is_400(client: Any) -> None:
    body = "[" * 5000 + "]" * 5000
    r = client.post("/v1/estimate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400


def test_rank_resnet50_returns_seeded_offers_with_costs(client: Any) -> None:
    # by cost alone (by default bookable offers and fresh prices come first:
    # tests/test_labels_and_prices.py)
    r = post(
        client,
        "/v1/rank",
        {"workload": {"preset": "resnet50-imagenet"}, "bookable_fresh_first": False},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    results = body["results"]
    assert len(results) == 50 and body["total_offers"] > 100
    for x in results:
        e = x["estimate"]
        assert e["cost_per_epoch"] is not None and e["epoch_hours"] > 0
        assert e["oom_risk"] in ("low", "medium", "high")
        assert x["offer"]["source"]
    fitting = [
        x["estimate"]["cost_per_epoch"] for x in results if x["estimate"]["oom_risk"] != "high"
    ]
    assert fitting == sorted(fitting)
    assert any(x["pareto_optimal"] for x in results)
    # the CNY listing from the user guide is converted at 7.0197 CNY/USD (its 70 GB disk
    # cannot hold ImageNet, so it ranks after the 50 runnable offers shown above)
    assert all(x["offer"]["provider"] != "guide-listing" for x in results)
    guide = post(
        client,
        "/v1/rank",
        {"workload": {"preset": "resnet50-imagenet"}, "filters": {"provider": "guide-listing"}},
    ).json()["results"]
    assert guide and guide[0]["price_per_hour"] == pytest.approx(0.75 / 7.0197)
    assert guide[0]["offer"]["currency"] == "CNY"


@pytest.mark.parametrize("written", ["resnet-50 v1.5", "RESNET-50 V1.5", "ResNet50-ImageNet"])
def test_benchmarks_workload_in_any_case(client: Any, written: str) -> None:
    # a label or preset slug in another case lists the same measurements (it listed none)
    exact = client.get("/v1/benchmarks", params={"gpu": "RTX 3090", "workload": "ResNet-50 v1.5"})
    other = client.get("/v1/benchmarks", params={"gpu": "RTX 3090", "workload": written})
    assert other.status_code == exact.status_code == 200
    assert other.json() == exact.json() and exact.json()["total"] > 0


def test_rank_measured_cost_matches_hand_calculation(client: Any) -> None:
    # Lambda v1 ResNet-50 fp16 on 1x RTX 3090: look the measurement up, then check the epoch
    # time and cost of the guide's ¥0.75/h 3090 listing by hand.
    bench = client.get(
        "/v1/benchmarks", params={"gpu": "RTX 3090", "workload": "ResNet-50 v1.5"}
    ).json()["items"]
    r = post(
        client,
        "/v1/rank",
        {"workload": {"preset": "resnet50-imagenet"}, "filters": {"provider": "guide-listing"}},
    )
    (x,) = r.json()["results"]
    e = x["estimate"]
    # measured at micro-batch 448, asked at 256: the measurement moved by the model
    assert (e["basis"], e["situation"]) == ("scaled", "measured_rescaled")
    used = e["evidence"][0]
    row = next(b for b in bench if b["id"] == used["benchmark_id"])
    assert row["gpu_count"] == 1 and row["precision"] == "fp16_amp"
    assert row["source"] == "lambda_pytorch_v1"  # the suite that measured the most GPUs
    # measured at micro-batch 448; the preset's 256 costs ~1 % (throughput ∝ b / (b + b0))
    assert e["samples_per_s"] == pytest.approx(row["throughput_total"], rel=0.03)
    assert e["samples_per_s"] < row["throughput_total"]
    moved = next(n for n in e["notes"] if n.startswith("measured on this GPU:"))
    assert f"{row['throughput_total']:.4g} samples/s per GPU" in moved
    assert "micro-batch 448" in moved and "micro-batch 256" in moved
    hours = 1_281_167 / e["samples_per_s"] / 3600
    assert e["epoch_hours"] == pytest.approx(hours)
    assert e["cost_per_epoch"] == pytest.approx(hours * 0.75 / 7.0197)
    assert e["total_cost"] == pytest.approx(hours * 0.75 / 7.0197 * 90)


def test_bert_fp16_mb320_a100_is_measured_443(client: Any) -> None:
    r = post(
        client,
        "/v1/estimate",
        {
            "workload": {
                "preset": "bert-base-squad",
                "precision": "fp16_amp",
                "micro_batch_size": 320,
            },
            "hardware": {"gpu": "A100 80GB SXM4", "gpu_count": 1},
        },
    )
    assert r.status_code == 200, r.text
    e = r.json()["estimate"]
    assert e["basis"] == "measured"
    assert e["samples_per_s"] == pytest.approx(443, rel=0.10)
    assert e["evidence"][0]["source"] == "lambda_pytorch_v1"


@pytest.mark.parametrize("gpu", ["RTX 4090", "NVIDIA GeForce RTX 3090", "A10", "L4"])
def test_llama3_8b_full_ooms_on_24gb_but_qlora_does_not(client: Any, gpu: str) -> None:
    def risk(preset: str) -> str:
        r = post(client, "/v1/estimate", {"workload": {"preset": preset}, "hardware": {"gpu": gpu}})
        assert r.status_code == 200, r.text
        return r.json()["estimate"]["oom_risk"]

    assert risk("llama3-8b-full") == "high"
    assert risk("llama3-8b-qlora") != "high"


@pytest.mark.parametrize(
    "alias", ["A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", "a100 sxm 80gb"]
)
def test_estimate_accepts_catalog_aliases(client: Any, alias: str) -> None:
    r = post(
        client,
        "/v1/estimate",
        {"workload": {"preset": "resnet50-imagenet"}, "hardware": {"gpu": alias}},
    )
    assert r.status_code == 200, r.text
    assert r.json()["hardware"]["gpu"] == "A100 SXM4 80GB"


def test_estimate_warnings_for_small_host(client: Any) -> None:
    r = post(
        client,
        "/v1/estimate",
        {
            "workload": {
                "preset": "resnet50-imagenet",
                "min_cuda": "12.4",
                "cpu_ms_per_sample": 10,
            },
            "hardware": {
                "gpu": "H100 SXM",
                "gpu_count": 8,
                "vcpus": 8,
                "ram_gib": 32,
                "disk_gb": 100,
                "max_cuda": "12.2",
            },
            "price_per_hour": 20,
        },
    )
    assert r.status_code == 200, r.text
    e = r.json()["estimate"]
    codes = {w["code"] for w in e["warnings"]}
    # 32 GiB of host RAM beside 640 GiB of GPU memory: advice (ResNet-50 itself needs little)
    assert {"disk_too_small", "ram_below_vram", "cuda_too_old", "data_loader_bound"} <= codes
    assert e["samples_per_s"] == pytest.approx(7 * 1000 / 10)
    assert e["cost_per_epoch"] == pytest.approx(e["epoch_hours"] * 20)


def test_multi_gpu_pcie_consumer_warns_for_communication_heavy_job(client: Any) -> None:
    r = post(
        client,
        "/v1/estimate",
        {
            # DDP all-reduce of 124M fp32 gradients (0.5 GB) over host-routed PCIe (no P2P on
            # GeForce) cannot hide behind a one-sample, no-accumulation step
            "workload": {
                "preset": "gpt2-124m-pretrain",
                "micro_batch_size": 1,
                "grad_accum_steps": 1,
            },
            "hardware": {"gpu": "RTX 4090", "gpu_count": 8, "interconnect": "pcie"},
        },
    )
    e = r.json()["estimate"]
    assert e["multi_gpu_efficiency"] < 0.85
    assert any(w["code"] == "pcie_host_bridge" for w in e["warnings"])


@pytest.mark.parametrize(
    ("body", "key"),
    [
        (
            {"workload": {"preset": "nope"}, "hardware": {"gpu": "A100 PCIe 80GB"}},
            "workload.preset",
        ),
        (
            {
                "workload": {"preset": "bert-base-squad", "micro_batch_size": 0},
                "hardware": {"gpu": "A100 PCIe 80GB"},
            },
            "workload.micro_batch_size",
        ),
        (
            {
                "workload": {"preset": "bert-base-squad", "micro_batch_size": -4},
                "hardware": {"gpu": "A100 PCIe 80GB"},
            },
            "workload.micro_batch_size",
        ),
        (
            {
                "workload": {"preset": "bert-base-squad", "micro_batch_size": "many"},
                "hardware": {"gpu": "A100 PCIe 80GB"},
            },
            "workload.micro_batch_size",
        ),
        (
            {
                "workload": {"preset": "bert-base-squad", "batch": 8},
                "hardware": {"gpu": "A100 PCIe 80GB"},
            },
            "workload.batch",
        ),
        ({"workload": {"preset": "bert-base-squad"}, "hardware": {"gpu": "Z9000"}}, "hardware.gpu"),
        (
            {
                "workload": {"preset": "bert-base-squad", "precision": "fp64"},
                "hardware": {"gpu": "A100 PCIe 80GB"},
            },
            "workload.precision",
        ),
        (
            {"workload": {"params": 1000}, "hardware": {"gpu": "A100 PCIe 80GB"}},
            "workload.architecture",
        ),
        (
            {
                "workload": {"preset": "bert-base-squad"},
                "hardware": {"gpu": "A100 PCIe 80GB", "gpu_count": 0},
            },
            "hardware.gpu_count",
        ),
        ({"workload": {"preset": "bert-base-squad"}}, "hardware"),
    ],
)
def test_bad_estimate_input_is_400_naming_the_field(client: Any, body: dict, key: str) -> None:
    r = post(client, "/v1/estimate", body)
    assert r.status_code == 400, r.text
    payload = r.json()
    assert key in {e["key"] for e in payload["extra"]}, payload
    assert "Traceback" not in r.text


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"workload": {"preset": "resnet50-imagenet"}, "sort": "cheapest"}, "sort"),
        ({"workload": {"preset": "resnet50-imagenet"}, "limit": 0}, "limit"),
        ({"workload": {"preset": "resnet50-imagenet"}, "currency": "JPY"}, "currency"),
        (
            {"workload": {"preset": "resnet50-imagenet"}, "filters": {"gpu": "Z9000"}},
            "filters.gpu",
        ),
        (
            {"workload": {"preset": "resnet50-imagenet"}, "filters": {"max_price": 3}},
            "filters.max_price",
        ),
    ],
)
def test_bad_rank_input_is_400(client: Any, body: dict, key: str) -> None:
    r = post(client, "/v1/rank", body)
    assert r.status_code == 400, r.text
    assert key in {e["key"] for e in r.json()["extra"]}


def test_a_bad_gpu_filter_is_named_where_it_was_sent_with_the_count_hint(client: Any) -> None:
    body = {"workload": {"preset": "llama3-8b-lora"}, "filters": {"gpu": "8x H100"}}
    r = post(client, "/v1/rank", body)
    assert r.status_code == 400
    [error] = r.json()["extra"]
    assert error["key"] == "filters.gpu"
    assert error["message"] == (
        "unknown GPU '8x H100': the count goes in gpu_count (8), the name alone in gpu ('H100')"
    )
    # the flat twin names it flat, as its parameter
    r = client.get("/v1/rank", params={"preset": "llama3-8b-lora", "gpu": "8x H100"})
    assert r.status_code == 400 and [e["key"] for e in r.json()["extra"]] == ["gpu"]
    # and 'H100' alone, as the hint says, is a filter that ranks (every H100)
    body["filters"] = {"gpu": "H100", "gpu_count": 8}
    assert post(client, "/v1/rank", body).status_code == 200


def test_a_field_sent_in_the_wrong_part_of_the_request_says_where_it_goes(client: Any) -> None:
    hw = {"gpu": "RTX 4090", "price_per_hour": 1.2}
    r = post(client, "/v1/estimate", {"workload": {"preset": "llama3-8b-lora"}, "hardware": hw})
    assert r.status_code == 400
    assert r.json()["extra"] == [
        {
            "message": "unknown field in hardware; price_per_hour goes at the top level of the "
            "request",
            "key": "hardware.price_per_hour",
        }
    ]
    # at the top level it is taken: 1.2 USD/h
    body = {"workload": {"preset": "llama3-8b-lora"}, "hardware": {"gpu": "RTX 4090"}}
    r = post(client, "/v1/estimate", {**body, "price_per_hour": 1.2})
    e = r.json()["estimate"]
    assert e["cost_per_epoch"] == pytest.approx(1.2 * e["epoch_hours"], rel=1e-6)
    # a hardware field inside the workload is sent to hardware
    r = post(
        client, "/v1/estimate", {**body, "workload": {"preset": "llama3-8b-lora", "gpu": "L4"}}
    )
    [error] = r.json()["extra"]
    assert error["message"] == "unknown field in workload; gpu goes in hardware (hardware.gpu)"


@pytest.mark.parametrize("raw", [b"not json", b"[]", b"null", b'{"workload": 5}', b"{"])
def test_malformed_bodies_are_4xx_never_500(client: Any, raw: bytes) -> None:
    for path in ("/v1/estimate", "/v1/rank"):
        r = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, (path, raw, r.status_code, r.text)
        assert "Traceback" not in r.text


def test_rank_filters_and_drop_oom(client: Any) -> None:
    r = post(
        client,
        "/v1/rank",
        {
            "workload": {"preset": "llama3-8b-lora"},
            "filters": {"billing": "spot", "max_price_per_hour": 100},
            "sort": "epoch_hours",
            "limit": 200,
            "drop_oom": True,
        },
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert results
    assert all(x["offer"]["billing"] == "spot" for x in results)
    assert all(x["price_per_hour"] <= 100 for x in results)
    assert all(x["estimate"]["oom_risk"] != "high" for x in results)
    hours = [x["estimate"]["epoch_hours"] for x in results]
    assert hours == sorted(hours)


def test_rank_puts_oom_offers_last(client: Any) -> None:
    r = post(client, "/v1/rank", {"workload": {"preset": "llama3-8b-full"}, "limit": 1000})
    risks = [x["estimate"]["oom_risk"] for x in r.json()["results"]]
    assert "high" in risks and risks != ["high"] * len(risks)
    first_high = risks.index("high")
    assert all(x == "high" for x in risks[first_high:])


def test_offers_filters_and_pagination(client: Any) -> None:
    all_offers = client.get("/v1/offers", params={"limit": 1000}).json()
    assert all_offers["total"] >= 40
    assert len({o["provider"] for o in all_offers["items"]}) >= 5
    page = client.get("/v1/offers", params={"limit": 5, "offset": 5}).json()
    assert [o["id"] for o in page["items"]] == [o["id"] for o in all_offers["items"][5:10]]
    h100 = client.get("/v1/offers", params={"gpu": "H100 SXM", "limit": 1000}).json()["items"]
    assert h100 and all(
        o["gpu"] == "H100 SXM 80GB"
        # "H100 SXM" is the family SXM 80 GB + SXM 96 GB: Vultr's 8x H100, either of them
        or (o["gpu"] is None and "ambiguous" in o["gpu_note"])
        for o in h100
    )
    cheap = client.get("/v1/offers", params={"max_price_per_hour": 1, "limit": 1000}).json()
    assert cheap["items"] and all(
        (o["price_per_hour"] if o["currency"] == "USD" else o["price_per_hour"] / 7.0197) <= 1
        for o in cheap["items"]
    )
    big = client.get("/v1/offers", params={"min_vram_gib": 80, "gpu_count": 8}).json()["items"]
    assert big and all(o["vram_gib_per_gpu"] >= 80 and o["gpu_count"] == 8 for o in big)
    runpod = client.get("/v1/offers", params={"provider": "runpod", "limit": 1000}).json()
    assert runpod["total"] > 0 and all(o["provider"] == "runpod" for o in runpod["items"])
    bad = client.get("/v1/offers", params={"limit": 0})
    assert bad.status_code == 400


def test_gpus_and_benchmarks(client: Any) -> None:
    gpus = client.get("/v1/gpus").json()
    # 81 rows of ../shared/data/gpu_specs.csv + the B300 of seed_data/gpus_manual.csv
    assert len(gpus) == 82 and all(g["source"] for g in gpus)
    b = client.get(
        "/v1/benchmarks", params={"gpu": "A100-SXM4-80GB", "workload": "BERT-base uncased"}
    ).json()
    assert b["total"] > 0
    assert all(
        x["gpu"] == "A100 SXM4 80GB" and x["workload"] == "BERT-base uncased" for x in b["items"]
    )
    assert any(x["throughput_total"] == 443 for x in b["items"])


def test_workloads_list_presets_with_benchmark_labels(client: Any) -> None:
    presets = {p["preset"]: p for p in client.get("/v1/workloads").json()}
    for slug in (
        "resnet50-imagenet",
        "vit-b16-imagenet",
        "bert-base-squad",
        "gpt2-124m-pretrain",
        "llama3-8b-lora",
        "llama3-8b-qlora",
        "llama3-8b-full",
        "sd15-unet-finetune",
    ):
        assert slug in presets
    assert presets["resnet50-imagenet"]["benchmark_workloads"] == ["ResNet-50 v1.5"]
    assert presets["resnet50-imagenet"]["params"] == 25_557_032
    labels = {lab for p in presets.values() for lab in p["benchmark_workloads"]}
    for label in (
        "SSD300 v1.1 (ResNet-50 backbone)",
        "Mask R-CNN (ResNet-50 FPN)",
        "GNMT v2",
        "Transformer-XL base",
        "Transformer-XL large",
        "Tacotron 2",
        "WaveGlow",
        "NCF (NeuMF)",
        "VGG-16",
        "Llama 3.1 8B",
        "Llama 3.1 70B",
        "Llama 3.2 3B",
    ):
        assert label in labels


def test_openapi_lists_enums(client: Any) -> None:
    schema = client.get("/schema/openapi.json").json()
    text = str(schema)
    for value in ("fp16_amp", "bf16_amp", "qlora", "flops_model", "transformer_decoder"):
        assert value in text
    assert "/v1/rank" in schema["paths"] and "/v1/estimate" in schema["paths"]


def test_estimate_evidence_is_fetchable_from_benchmarks(client: Any) -> None:
    r = post(
        client,
        "/v1/estimate",
        {"workload": {"preset": "resnet50-imagenet"}, "hardware": {"gpu": "RTX 4090 D"}},
    )
    e = r.json()["estimate"]
    assert e["basis"] == "scaled" and e["evidence_total"] >= 4
    ids = ",".join(str(x["benchmark_id"]) for x in e["evidence"])
    rows = client.get("/v1/benchmarks", params={"ids": ids}).json()["items"]
    assert {x["id"] for x in rows} == {x["benchmark_id"] for x in e["evidence"]}
    assert all(x["workload"] == "ResNet-50 v1.5" and x["source_ref"] for x in rows)
    assert e["samples_per_s_low"] < e["samples_per_s"] < e["samples_per_s_high"]


def test_custom_cnn_without_flops_is_a_400(client: Any) -> None:
    r = post(
        client,
        "/v1/estimate",
        {
            "workload": {"architecture": "cnn", "params": 11_000_000, "samples_per_epoch": 1000},
            "hardware": {"gpu": "A100 PCIe 80GB"},
        },
    )
    assert r.status_code == 400
    assert r.json()["extra"][0]["key"] == "workload.forward_gflops_per_sample"
    ok = post(
        client,
        "/v1/estimate",
        {
            "workload": {
                "architecture": "cnn",
                "params": 11_000_000,
                "samples_per_epoch": 1000,
                "forward_gflops_per_sample": 3.6,
                "image_size": 224,
            },
            "hardware": {"gpu": "A100 PCIe 80GB"},
        },
    )
    assert ok.status_code == 200 and ok.json()["estimate"]["basis"] == "flops_model"


def test_fp8_for_a_workload_measured_at_16_bit_only_answers_at_that_rate(client: Any) -> None:
    # Tacotron 2 has no FLOPs estimate and was measured at fp32/tf32/fp16_amp, never at fp8:
    # main refused fp8 with a 400; a TTS model's fp8 run is its 16-bit run
    # (fp8_transformer_only), at the rate measured there
    def answer(precision: str) -> dict[str, Any]:
        body = {
            "workload": {"preset": "tacotron2-ljspeech", "precision": precision},
            "hardware": {"gpu": "H100 SXM"},
        }
        r = post(client, "/v1/estimate", body)
        assert r.status_code == 200, r.text
        return dict(r.json()["estimate"])

    fp8, bf16 = answer("fp8"), answer("bf16_amp")
    assert fp8["precision"] == "bf16_amp"
    assert fp8["samples_per_s"] == pytest.approx(bf16["samples_per_s"], rel=1e-6)
    assert "fp8_transformer_only" in {w["code"] for w in fp8["warnings"]}
    r = post(client, "/v1/rank", {"workload": {"preset": "tacotron2-ljspeech", "precision": "fp8"}})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "query",
    [
        {"ids": "1," + "9" * 30},
        {"offset": 10**30},
        {"limit": 10**6},
        {"gpu": "x" * 5000},
    ],
)
def test_hostile_benchmark_queries_are_4xx_or_empty(client: Any, query: dict) -> None:
    r = client.get("/v1/benchmarks", params=query)
    assert r.status_code in (200, 400), r.text


@pytest.mark.parametrize("preset", ["vit-b16-imagenet", "gpt2-124m-pretrain"])
def test_flops_model_orders_gpus_like_their_specs(client: Any, preset: str) -> None:
    # regression: the FLOPs model once put an RTX 4090 ahead of an H100 because different
    # workload mixes were measured on each
    rates = []
    for gpu in ("H100 SXM", "A100 80GB SXM4", "RTX 4090", "RTX 3090", "T4"):
        r = post(client, "/v1/estimate", {"workload": {"preset": preset}, "hardware": {"gpu": gpu}})
        e = r.json()["estimate"]
        assert e["basis"] == "flops_model"
        rates.append(e["samples_per_s"])
    assert rates == sorted(rates, reverse=True)


def test_gpu_filter_by_family_covers_every_variant(client: Any) -> None:
    a100 = client.get("/v1/offers", params={"gpu": "A100", "limit": 1000}).json()["items"]
    assert {"A100 SXM4 80GB", "A100 PCIe 80GB", "A100 SXM4 40GB"} <= {o["gpu"] for o in a100}
    pcie = client.get("/v1/offers", params={"gpu": "A100 PCIe 80GB", "limit": 1000}).json()
    assert {o["gpu"] for o in pcie["items"]} == {"A100 PCIe 80GB"}
    # LIKE wildcards are literal: "%" is part of no region label, so it is a 400 naming them
    region = client.get("/v1/offers", params={"region": "%", "limit": 1000})
    assert region.status_code == 400 and "region" in region.text and "us-east-1" in region.text
    upper = client.get("/v1/offers", params={"provider": "RUNPOD"}).json()
    assert upper["total"] > 0


def test_torchtune_8b_single_device_fits_a_4090_and_fixes_are_listed(client: Any) -> None:
    # torchtune README: 18.9 GiB peak on 1x RTX 4090 (paged 8-bit AdamW, step in backward)
    r = post(
        client,
        "/v1/estimate",
        {
            "workload": {"preset": "llama31-8b-full-single-device"},
            "hardware": {"gpu": "RTX 4090"},
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["optimizer"] == "paged_adamw_8bit"
    assert body["workload"]["optimizer_in_backward"] is True
    e = body["estimate"]
    assert e["memory"]["allocated_gib"] == pytest.approx(18.9, rel=0.15)
    assert e["oom_risk"] != "high" and e["memory_fixes"] == []
    assert 0 < e["oom_probability"] < 0.5
    # the same model with AdamW under AMP does not fit, and the answer says what would
    r = post(
        client,
        "/v1/estimate",
        {
            "workload": {
                "preset": "llama31-8b-full-single-device",
                "precision": "bf16_amp",
                "optimizer": "adamw",
                "optimizer_in_backward": False,
            },
            "hardware": {"gpu": "RTX 4090"},
        },
    )
    e = r.json()["estimate"]
    assert e["oom_risk"] == "high" and e["oom_probability"] > 0.5
    fixes = e["memory_fixes"]
    assert fixes and all(f["oom_risk"] != "high" for f in fixes)
    assert all(f["peak_memory_gib"] < e["peak_memory_gib"] for f in fixes)
    assert any(f["changes"].get("method") == "qlora" for f in fixes)


def test_memory_fixes_never_turn_pre_training_into_fine_tuning(client: Any) -> None:
    # Llama 2 70B pre-training (NeMo) on 64 H100s: 454 GiB/GPU without TP/PP, high risk; only
    # QLoRA (adapters on a frozen NF4 base: another job) would fit, so nothing is proposed
    body = {
        "workload": {"preset": "llama2-70b-pretrain", "samples_per_epoch": 100000},
        "hardware": {"gpu": "H100 SXM", "gpu_count": 64},
    }
    e = post(client, "/v1/estimate", body).json()["estimate"]
    assert e["oom_risk"] == "high" and e["peak_memory_gib"] > 400
    assert e["memory_fixes"] == []
    # 13B pre-training on 64 H100s (108 GiB/GPU): a fix of how it runs stays
    body = {
        "workload": {"preset": "llama2-13b-pretrain", "samples_per_epoch": 100000},
        "hardware": {"gpu": "H100 SXM", "gpu_count": 64},
    }
    e = post(client, "/v1/estimate", body).json()["estimate"]
    assert e["oom_risk"] == "high"
    assert [f["changes"] for f in e["memory_fixes"]] == [{"gradient_checkpointing": "true"}]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("optimizer_in_backward", "sometimes"),
        ("checkpoint_granularity", "half"),
        ("double_quant", [1]),
        ("optimizer", "adam9000"),
    ],
)
def test_memory_setup_fields_are_validated(client: Any, field: str, value: object) -> None:
    r = post(
        client,
        "/v1/estimate",
        {"workload": {"preset": "llama3-8b-qlora", field: value}, "hardware": {"gpu": "L4"}},
    )
    assert r.status_code == 400
    assert field in r.text


def test_custom_workload_names_every_missing_field_at_once(client: Any) -> None:
    r = client.get("/v1/rank", params={"architecture": "transformer_decoder", "layers": "32"})
    assert r.status_code == 400
    keys = [e["key"] for e in r.json()["extra"]]
    assert keys == ["params", "samples_per_epoch", "hidden_size", "seq_len"], r.json()


def test_hf_config_endpoint_reads_the_shape(client: Any) -> None:
    gpt2 = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12}
    r = client.post("/v1/workloads/from-hf-config", json={**gpt2, "vocab_size": 50257})
    assert r.status_code == 200, r.text
    assert r.json()["fields"]["layers"] == 12 and r.json()["fields"]["ffn_hidden_size"] == 3072
    r = client.post("/v1/workloads/from-hf-config", json=gpt2)
    assert r.status_code == 400
    assert [e["key"] for e in r.json()["extra"]] == ["vocab_size"]


def test_hf_config_endpoint_counts_every_expert_of_a_mixtral(client: Any) -> None:
    mixtral = {
        "model_type": "mixtral",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 32000,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    }
    r = client.post("/v1/workloads/from-hf-config", json=mixtral)
    assert r.status_code == 200, r.text
    # 32 × (41,943,040 attention + 8 × 3·4096·14336 experts + 32,768 router + 8,192 norms)
    # + tied embedding 32000·4096 + final norm 4096 (tie_word_embeddings absent: tied)
    assert r.json()["fields"]["params"] == 46_440_644_608 + 131_072_000 + 4096
    assert any("each token runs through 2" in n for n in r.json()["notes"])


def test_openapi_describes_operations_rank_parameters_and_answers(client: Any) -> None:
    doc = client.get("/schema/openapi.json").json()
    ops = [
        (method, path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "responses" in op
    ]
    assert ops and [(m, p) for m, p, op in ops if not op.get("description")] == []
    params = {p["name"]: p for p in doc["paths"]["/v1/rank"]["get"]["parameters"]}
    assert set(RANK_PARAMS) <= set(params)
    assert all(p["description"] for p in params.values())
    # the answers a team reads: every field says what it is, with its unit
    schemas = doc["components"]["schemas"]
    answers = ("RankResponse", "RankedOfferOut", "OfferOut", "EstimateOut", "MemoryOut")
    undescribed = [
        f"{name}.{field}"
        for name in (*answers, "WarningOut", "EvidenceOut", "EstimateResponse", "OfferPage")
        for field, prop in schemas[name]["properties"].items()
        if not prop.get("description")
    ]
    assert undescribed == []
    assert "GiB" in schemas["MemoryOut"]["properties"]["usable_vram_gib"]["description"]


def test_api_viewer_is_served_offline(client: Any) -> None:
    html = client.get("/schema/swagger").text
    assert "/api-viewer-assets/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    js = client.get("/api-viewer-assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and len(js.content) > 100_000


def test_one_vocabulary_lowercase_currency_and_offer_interconnect(client: Any) -> None:
    r = client.get("/v1/rank", params={"preset": "resnet50-imagenet", "currency": "cny"})
    assert r.status_code == 200 and r.json()["currency"] == "CNY"
    body = {"workload": {"preset": "resnet50-imagenet"}}
    rates = {}
    for word, label in (("nvswitch", "nvswitch"), ("NVLink", "nvlink"), ("sxm", "nvlink")):
        hw = {"gpu": "H100 SXM", "gpu_count": 8, "interconnect": word}
        r = post(client, "/v1/estimate", {**body, "hardware": hw})
        assert r.status_code == 200, (word, r.text[:300])
        # the word offers use is echoed; NVSwitch is NVLink through a switch: same estimate
        assert r.json()["hardware"]["interconnect"] == label
        rates[word] = r.json()["estimate"]["samples_per_s"]
    assert rates["nvswitch"] == rates["NVLink"] == rates["sxm"]
    hw = {"gpu": "H100 SXM", "gpu_count": 8, "interconnect": "infiniband"}
    r = post(client, "/v1/estimate", {**body, "hardware": hw})
    assert r.status_code == 400 and "hardware.interconnect" in r.text, r.text[:300]


def test_the_flops_model_note_says_which_donors_were_measured_on_the_gpu(client: Any) -> None:
    # no benchmark row was taken on a T4: each donor's rate there is its own estimate (two
    # measured Llama 3.1 8B labels, named once with their count)
    assert client.get("/v1/benchmarks", params={"gpu": "T4"}).json()["total"] == 0
    body = {"workload": {"preset": "llama3-8b-lora"}, "hardware": {"gpu": "T4"}}
    e = post(client, "/v1/estimate", body).json()["estimate"]
    [note] = [n for n in e["notes"] if n.startswith("FLOPs model")]
    assert "from 3 measured transformer workload(s): Llama 3 8B, Llama 3.1 8B ×2; none of" in note
    assert "none of them was measured on this GPU" in note
    # the RTX 4090 has ResNet-50 v1.5 rows, the other CNN donors of SD 1.5's UNet none
    rows = client.get("/v1/benchmarks", params={"gpu": "RTX 4090", "limit": 500}).json()
    assert "ResNet-50 v1.5" in {x["workload"] for x in rows["items"]}
    body = {"workload": {"preset": "sd15-unet-finetune"}, "hardware": {"gpu": "RTX 4090"}}
    e = post(client, "/v1/estimate", body).json()["estimate"]
    [note] = [n for n in e["notes"] if n.startswith("FLOPs model")]
    assert "; measured on this GPU: ResNet-50 v1.5; the others' rates here are" in note
