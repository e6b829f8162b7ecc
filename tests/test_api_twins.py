"""GET twins of the web pages: flat query parameters give the same answers as the JSON bodies."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.db


def ids(results: list[dict[str, Any]]) -> list[int]:
    return [x["offer"]["id"] for x in results]


def test_get_rank_equals_post_rank(client: Any) -> None:
    flat = {
        "preset": "llama3-8b-lora",
        "micro_batch_size": "2",
        "seq_len": "1024",
        "billing": "spot",
        "max_price_per_hour": "100",
        "currency": "CNY",
        "sort": "epoch_hours",
        "limit": "20",
        "drop_oom": "true",
    }
    body = {
        "workload": {"preset": "llama3-8b-lora", "micro_batch_size": 2, "seq_len": 1024},
        "filters": {"billing": "spot", "max_price_per_hour": 100},
        "currency": "CNY",
        "sort": "epoch_hours",
        "limit": 20,
        "drop_oom": True,
    }
    got = client.get("/v1/rank", params=flat)
    assert got.status_code == 200, got.text
    posted = client.post("/v1/rank", json=body).json()
    assert got.json() == posted
    assert ids(posted["results"]) and posted["currency"] == "CNY"


def test_get_rank_human_parameter_counts(client: Any) -> None:
    a = client.get(
        "/v1/rank",
        params={
            "preset": "gpt2-124m-pretrain",
            "params": "124.37376M",
            "samples_per_epoch": "8,823,810",
            "limit": 5,
        },
    ).json()
    b = client.get(
        "/v1/rank",
        params={
            "preset": "gpt2-124m-pretrain",
            "params": "124373760",
            "samples_per_epoch": "8823810",
            "limit": 5,
        },
    ).json()
    assert a == b and a["workload"]["params"] == 124_373_760


def test_rank_frontier_completes_the_pareto_set(client: Any) -> None:
    everything = client.post(
        "/v1/rank", json={"workload": {"preset": "resnet50-imagenet"}, "limit": 1000}
    ).json()
    pareto_all = {x["offer"]["id"]: x["rank"] for x in everything["results"] if x["pareto_optimal"]}
    top = client.get("/v1/rank", params={"preset": "resnet50-imagenet", "limit": 3}).json()
    assert len(top["results"]) == 3
    shown = {
        x["offer"]["id"]: x["rank"]
        for x in [*top["results"], *top["frontier"]]
        if x["pareto_optimal"]
    }
    assert shown == pareto_all  # same offers, same ranks as in the full order
    assert top["frontier"], "the fastest Pareto offers rank below the 3 cheapest"
    assert all(x["rank"] > 3 for x in top["frontier"])


def test_get_rank_order_reorders_rows(client: Any) -> None:
    base = {"preset": "resnet50-imagenet", "limit": "30"}
    plain = client.get("/v1/rank", params=base).json()["results"]
    by_vcpus = client.get("/v1/rank", params={**base, "order": "-vcpus"}).json()
    assert by_vcpus["order"] == "-vcpus"
    rows = by_vcpus["results"]
    assert set(ids(rows)) == set(ids(plain))
    vcpus = [x["offer"]["vcpus"] for x in rows]
    known = [v for v in vcpus if v is not None]
    assert known == sorted(known, reverse=True)
    assert vcpus[: len(known)] == known  # unknown values last
    by_provider = client.get("/v1/rank", params={**base, "order": "provider"}).json()["results"]
    names = [x["offer"]["provider_name"].lower() for x in by_provider]
    assert names == sorted(names)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"preset": "nope"}, "preset"),
        ({"preset": "resnet50-imagenet", "micro_batch_size": "-4"}, "micro_batch_size"),
        ({"preset": "resnet50-imagenet", "micro_batch_size": "many"}, "micro_batch_size"),
        ({"preset": "resnet50-imagenet", "params": "lots"}, "params"),
        ({"preset": "resnet50-imagenet", "precision": "fp64"}, "precision"),
        ({"preset": "resnet50-imagenet", "gpu": "Z9000"}, "gpu"),
        ({"preset": "resnet50-imagenet", "gpu_count": "0"}, "gpu_count"),
        ({"preset": "resnet50-imagenet", "billing": "forever"}, "billing"),
        ({"preset": "resnet50-imagenet", "currency": "JPY"}, "currency"),
        ({"preset": "resnet50-imagenet", "sort": "cheapest"}, "sort"),
        ({"preset": "resnet50-imagenet", "order": "colour"}, "order"),
        ({"preset": "resnet50-imagenet", "limit": "0"}, "limit"),
        ({"preset": "resnet50-imagenet", "batch": "8"}, "batch"),
        ({"params": "1000"}, "architecture"),
        ({}, "architecture"),
    ],
)
def test_get_rank_bad_input_is_400_naming_the_parameter(
    client: Any, params: dict, key: str
) -> None:
    r = client.get("/v1/rank", params=params)
    assert r.status_code == 400, r.text
    assert key in {e["key"] for e in r.json()["extra"]}, r.json()
    assert "Traceback" not in r.text


def test_get_offer_matches_its_rank_row(client: Any) -> None:
    ranked = client.get(
        "/v1/rank", params={"preset": "bert-base-squad", "currency": "CNY", "limit": 5}
    ).json()["results"]
    row = ranked[3]
    r = client.get(
        f"/v1/offers/{row['offer']['id']}", params={"preset": "bert-base-squad", "currency": "CNY"}
    )
    assert r.status_code == 200, r.text
    detail = r.json()
    assert detail["offer"] == row["offer"]
    assert detail["price_per_hour"] == pytest.approx(row["price_per_hour"])
    e, want = detail["estimate"], row["estimate"]
    for k in (
        "samples_per_s",
        "epoch_hours",
        "cost_per_epoch",
        "total_cost",
        "peak_memory_gib",
        "oom_risk",
        "basis",
        "warnings",
    ):
        assert e[k] == want[k], k
    assert len(e["evidence"]) == e["evidence_total"] >= len(want["evidence"])
    assert detail["price_history"], "seeded offers have at least one observed price"
    assert detail["details"]["first_seen_at"]


def test_get_offer_without_workload_and_missing_offer(client: Any) -> None:
    offer = client.get("/v1/offers", params={"limit": 1}).json()["items"][0]
    r = client.get(f"/v1/offers/{offer['id']}")
    assert r.status_code == 200
    assert r.json()["estimate"] is None and r.json()["workload"] is None
    assert client.get("/v1/offers/99999999").status_code == 404
    bad = client.get(f"/v1/offers/{offer['id']}", params={"gpu": "A100"})
    assert bad.status_code == 400 and bad.json()["extra"][0]["key"] == "gpu"


def test_gpu_and_benchmark_search(client: Any) -> None:
    a100 = client.get("/v1/gpus", params={"q": "a100"}).json()
    assert a100 and all(
        "a100" in (g["canonical_name"] + " ".join(g["aliases"])).lower() for g in a100
    )
    alias = client.get("/v1/gpus", params={"q": "NVIDIA A100-SXM4-80GB"}).json()
    assert [g["canonical_name"] for g in alias] == ["A100 SXM4 80GB"]
    hits = client.get("/v1/benchmarks", params={"q": "squad", "limit": 5000}).json()
    assert hits["total"] > 0
    assert all(
        "squad" in (b["workload"] + b["task"] + b["source_ref"]).lower() for b in hits["items"]
    )
    one = hits["items"][0]["id"]
    assert [b["id"] for b in client.get("/v1/benchmarks", params={"ids": one}).json()["items"]] == [
        one
    ]


def test_a_malformed_offer_id_is_a_400_like_a_negative_one(client: Any) -> None:
    for path in ("/v1/offers/abc", "/v1/offers/-1", "/v1/offers/1.5", "/v1/offers/abc/prices"):
        r = client.get(path)
        assert r.status_code == 400, (path, r.status_code, r.text[:300])
        assert r.json()["extra"] == [
            {"message": "Expected `int` >= 1", "key": "offer_id", "source": "path"}
        ], path
    assert client.get("/v1/offers/999999").status_code == 404  # well formed, no such offer
    assert client.get("/v1/nothing-here").status_code == 404


def test_an_empty_post_body_is_a_400_saying_the_body_is_required(client: Any) -> None:
    for path in ("/v1/estimate", "/v1/rank", "/v1/workloads/from-hf-config"):
        r = client.post(path, content=b"", headers={"content-type": "application/json"})
        assert r.status_code == 400, (path, r.text)
        assert r.json()["extra"] == [
            {"key": "body", "message": "request body is required: a JSON object"}
        ], path


def test_offer_ids_out_of_range_are_400_not_database_errors(client: Any) -> None:
    for path in ("/v1/offers/99999999999999999999", "/v1/offers/0", "/offers/99999999999999999999"):
        r = client.get(path)
        assert r.status_code == 400, (path, r.status_code, r.text[:300])
        assert "Traceback" not in r.text


def test_aws_p5_and_gcp_a3_h100_offers_are_the_sxm_board(client: Any) -> None:
    for provider, instance in (("aws", "p5.4xlarge"), ("gcp", "a3-highgpu-1g")):
        items = client.get("/v1/offers", params={"provider": provider, "limit": 1000}).json()
        found = [o for o in items["items"] if o["instance_type"] == instance]
        assert found, instance
        assert {o["gpu"] for o in found} == {"H100 SXM 80GB"}, instance
    # and so they are ranked, not left unestimated as an ambiguous H100
    r = client.post(
        "/v1/rank",
        json={"workload": {"preset": "llama3-8b-lora"}, "filters": {"gpu": "H100"}, "limit": 200},
    )
    ranked = {x["offer"]["instance_type"] for x in r.json()["results"]}
    assert {"p5.4xlarge", "a3-highgpu-1g"} <= ranked
