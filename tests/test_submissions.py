"""``POST /v1/benchmarks`` on PostgreSQL: tokens, validation, idempotency, rate limit, holds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.estimate.types import BenchmarkPoint, Precision
from app.services.reference import merge_submitted
from app.services.submissions import RateLimiter, identify, parse_tokens
from app.settings import Settings
from tests.conftest import seeded_database

pytestmark = pytest.mark.db

TOKENS = "alice=tok-alice-0123456789,bob=tok-bob-0123456789"
ALICE = {"Authorization": "Bearer tok-alice-0123456789"}
BOB = {"Authorization": "Bearer tok-bob-0123456789"}


@pytest.fixture(scope="module")
def sub_url() -> Iterator[str]:
    """A seeded database of this module's own (the tests write submitted rows)."""
    with seeded_database() as url:
        yield url


@pytest.fixture(scope="module")
def api(sub_url: str) -> Iterator[Any]:
    from litestar.testing import TestClient

    from app.asgi import create_app

    settings = Settings(database_url=sub_url, api_tokens=SecretStr(TOKENS))
    with TestClient(create_app(settings)) as c:
        yield c


def body(run_id: str, samples_per_s: float, **over: Any) -> dict[str, Any]:
    """ResNet-50 at fp16 AMP, micro-batch 448, on one RTX 3090 (Lambda measured 905 images/s)."""
    return {
        "run_id": run_id,
        "preset": "resnet50-imagenet",
        "gpu": "NVIDIA GeForce RTX 3090",
        "gpu_count": 1,
        "precision": "fp16_amp",
        "micro_batch_size": 448,
        "steps": 20,
        "samples_per_s": samples_per_s,
        "peak_memory_gib": 19.5,
        "reserved_memory_gib": 21.0,
        "framework": "PyTorch",
        "framework_version": "2.5.1",
        "environment": {"gpu_name": "NVIDIA GeForce RTX 3090", "driver": "550.54", "vcpus": 16},
        **over,
    }


def submitted(api: Any, **params: Any) -> list[dict[str, Any]]:
    r = api.get("/v1/benchmarks", params={"q": "submitted", **params})
    assert r.status_code == 200
    return [b for b in r.json()["items"] if b["submitted"]]


def test_without_or_with_a_wrong_token_it_is_401_and_nothing_is_stored(api: Any) -> None:
    before = len(submitted(api))
    for headers in ({}, {"Authorization": "Bearer nope-nope-nope"}, {"Authorization": "tok"}):
        r = api.post("/v1/benchmarks", json=body("run-no-token-1", 900), headers=headers)
        assert r.status_code == 401, r.text
        assert r.headers["www-authenticate"] == "Bearer"
    # a malformed body without a token is still 401 (nothing is said about the body)
    assert api.post("/v1/benchmarks", json={"x": 1}).status_code == 401
    assert len(submitted(api)) == before


def test_a_plausible_row_is_stored_accepted_with_provenance_and_is_idempotent(api: Any) -> None:
    r = api.post("/v1/benchmarks", json=body("run-3090-rn50-a", 880.0), headers=ALICE)
    assert r.status_code == 201, r.text
    row = r.json()
    assert (row["source"], row["status"], row["submitted_by"], row["submitted"]) == (
        "submitted",
        "accepted",
        "alice",
        True,
    )
    assert row["gpu"] == "GeForce RTX 3090" and row["workload"] == "ResNet-50 v1.5"
    assert row["throughput_total"] == 880.0 and row["throughput_unit"] == "images/s"
    assert row["environment"]["driver"] == "550.54" and row["submitted_at"]
    assert "tok-alice" not in r.text  # the identity is stored, never the token
    again = api.post("/v1/benchmarks", json=body("run-3090-rn50-a", 1.0), headers=ALICE)
    assert again.status_code == 200 and again.json()["id"] == row["id"]
    assert again.json()["throughput_total"] == 880.0  # the first write wins
    ids = [b["id"] for b in submitted(api) if b["run_id"] == "run-3090-rn50-a"]
    assert ids == [row["id"]]
    # another submitter may not take the same run id
    taken = api.post("/v1/benchmarks", json=body("run-3090-rn50-a", 880.0), headers=BOB)
    assert taken.status_code == 409 and taken.json()["extra"][0]["key"] == "run_id"


def test_the_accepted_row_is_evidence_marked_submitted(api: Any) -> None:
    r = api.post("/v1/benchmarks", json=body("run-3090-rn50-ev", 900.0), headers=BOB)
    assert r.status_code == 201 and r.json()["status"] == "accepted"
    est = api.post(
        "/v1/estimate",
        json={
            "workload": {"preset": "resnet50-imagenet", "micro_batch_size": 448},
            "hardware": {"gpu": "GeForce RTX 3090"},
        },
    )
    assert est.status_code == 200, est.text
    evidence = est.json()["estimate"]["evidence"]
    mine = [e for e in evidence if e["submitted"]]
    assert mine and all(e["source"] == "submitted" for e in mine)
    assert all(not e["submitted"] for e in evidence if e["source"] != "submitted")


def test_a_row_far_off_the_estimate_is_held_and_never_moves_it(api: Any) -> None:
    req = {
        "workload": {"preset": "resnet50-imagenet", "micro_batch_size": 448},
        "hardware": {"gpu": "GeForce RTX 3090", "gpu_count": 2, "interconnect": "pcie"},
    }
    before = api.post("/v1/estimate", json=req).json()["estimate"]
    # Lambda measured 1751 images/s on 2 RTX 3090s: 20000 is more than 10× that
    r = api.post(
        "/v1/benchmarks",
        json=body("run-3090x2-odd", 20_000.0, gpu_count=2, interconnect="pcie"),
        headers=ALICE,
    )
    assert r.status_code == 201, r.text
    row = r.json()
    assert row["status"] == "held" and "× the current estimate" in row["hold_reason"]
    held = api.get("/v1/benchmarks", params={"status": "held"}).json()["items"]
    assert row["id"] in [b["id"] for b in held] and all(b["status"] == "held" for b in held)
    accepted = api.get("/v1/benchmarks", params={"status": "accepted"}).json()["items"]
    assert row["id"] not in [b["id"] for b in accepted]
    after = api.post("/v1/estimate", json=req).json()["estimate"]
    assert after["samples_per_s"] == before["samples_per_s"]
    assert row["id"] not in [e["benchmark_id"] for e in after["evidence"]]


def test_a_cpu_run_is_stored_held(api: Any) -> None:
    r = api.post("/v1/benchmarks", json=body("run-cpu-only-1", 3.5, gpu=None), headers=ALICE)
    assert r.status_code == 201 and r.json()["status"] == "held"
    assert r.json()["gpu_label"] == "CPU only" and r.json()["gpu_model_id"] is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"samples_per_s": -1}, "samples_per_s"),
        ({"samples_per_s": "fast"}, "samples_per_s"),
        ({"precision": "fp12"}, "precision"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"run_id": "x"}, "run_id"),
        ({"preset": "no-such-preset"}, "preset"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_a_malformed_row_is_400_naming_the_field(api: Any, change: dict, field: str) -> None:
    r = api.post("/v1/benchmarks", json=body("run-bad-row-1", 900.0) | change, headers=ALICE)
    assert r.status_code == 400, r.text
    assert field in [e["key"] for e in r.json()["extra"]]


def test_submissions_are_rate_limited_per_token(sub_url: str) -> None:
    from litestar.testing import TestClient

    from app.asgi import create_app

    settings = Settings(
        database_url=sub_url, api_tokens=SecretStr(TOKENS), submit_rate_per_minute=2
    )
    with TestClient(create_app(settings)) as c:
        codes = [
            c.post("/v1/benchmarks", json={"run_id": "x"}, headers=ALICE).status_code
            for _ in range(3)
        ]
        assert codes == [400, 400, 429]
        r = c.post("/v1/benchmarks", json={"run_id": "x"}, headers=ALICE)
        assert 1 <= int(r.headers["retry-after"]) <= 60
        # another token has its own budget
        assert c.post("/v1/benchmarks", json={}, headers=BOB).status_code == 400


def test_tokens_and_identities() -> None:
    tokens = parse_tokens(SecretStr(" alice=a-token , b-token ,"))
    assert tokens["a-token"] == "alice"
    assert tokens["b-token"].startswith("token-") and "b-token" not in tokens["b-token"]
    assert identify("Bearer a-token", tokens) == "alice"
    assert identify("bearer a-token", tokens) == "alice"
    assert identify("Bearer a-toke", tokens) is None
    assert identify("Basic a-token", tokens) is None
    assert identify(None, tokens) is None
    assert identify("Bearer x", {}) is None


def test_rate_limiter_window() -> None:
    now = [0.0]
    lim = RateLimiter(2, clock=lambda: now[0])
    assert lim.acquire("a") is None and lim.acquire("a") is None
    assert lim.acquire("a") == pytest.approx(60.0)
    now[0] = 30.0
    assert lim.acquire("a") == pytest.approx(30.0)
    now[0] = 60.0
    assert lim.acquire("a") is None


def _point(i: int, total: float, source: str = "submitted") -> BenchmarkPoint:
    return BenchmarkPoint(
        id=i,
        gpu="GeForce RTX 3090",
        gpu_count=1,
        interconnect=None,
        workload="ResNet-50 v1.5",
        method="full",
        precision=Precision.FP16_AMP,
        batch_size_per_gpu=448,
        seq_len=None,
        throughput_total=total,
        throughput_unit="images/s",
        source=source,
    )


def test_submitted_points_of_one_configuration_weigh_as_their_median() -> None:
    merged = merge_submitted(
        [_point(1, 905, "lambda"), _point(7, 880), _point(5, 1500), _point(9, 900)]
    )
    assert [p.id for p in merged] == [1, 5]
    assert merged[0].throughput_total == 905
    assert merged[1].throughput_total == 900 and "median of 3" in merged[1].source_ref


def test_bench_on_cpu_then_submit_end_to_end(api: Any) -> None:
    """The tiny test preset on the CPU: positive, consistent numbers, memory null; sent to the
    test server it is stored (held: a test preset, no GPU) with its environment; without a
    token the server answers 401 and stores nothing."""
    pytest.importorskip("torch")
    from app.bench import run_bench, submit

    seen: list[int] = []
    r = run_bench("tiny-test-decoder", steps=3, warmup=1, progress=lambda d, t: seen.append(d))
    assert seen == [1, 2, 3, 4]
    assert r.device == "cpu" and r.gpu_count == 1 and r.micro_batch_size == 4
    assert r.samples_per_s > 0 and r.tokens_per_s == pytest.approx(r.samples_per_s * 32)
    spread = r.step_time_s
    assert 0 < spread["min"] <= spread["median"] <= spread["max"]
    # 3 steps of 4 samples: throughput is the samples over the timed steps' wall time
    assert 12 / r.samples_per_s >= 3 * spread["min"] * 0.99
    assert r.peak_memory_gib is None and r.reserved_memory_gib is None
    env = r.environment
    assert env["gpu_name"] is None and env["vcpus"] >= 1 and env["torch"]

    refused = submit(r, "http://testserver", None, client=api)
    assert refused.status_code == 401
    assert not [b for b in submitted(api) if b["run_id"] == r.run_id]
    sent = submit(r, "http://testserver", "tok-alice-0123456789", client=api)
    assert sent.status_code == 201, sent.text
    rows = [b for b in submitted(api) if b["run_id"] == r.run_id]
    assert len(rows) == 1 and rows[0]["status"] == "held"
    assert rows[0]["workload"] == "tiny-test-decoder" and rows[0]["submitted_by"] == "alice"
    assert rows[0]["environment"]["vcpus"] == env["vcpus"]
    assert rows[0]["environment"]["step_time_s"]["median"] == spread["median"]
    assert rows[0]["throughput_total"] == pytest.approx(r.samples_per_s)


def test_topology_gives_the_interconnect() -> None:
    from app.bench import interconnect_from_topology

    nv = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\t0-63\nGPU1\tNV12\t X \t0-63\n"
    pcie = "\tGPU0\tGPU1\nGPU0\t X \tPHB\nGPU1\tPHB\t X \n"
    assert interconnect_from_topology(nv, 2) == "nvlink"
    assert interconnect_from_topology(pcie, 2) == "pcie"
    assert interconnect_from_topology(nv, 1) is None
    assert interconnect_from_topology(None, 8) is None


def test_pages_show_submitted_rows_and_the_estimate_resting_on_one(api: Any) -> None:
    r = api.post("/v1/benchmarks", json=body("run-3090-rn50-page", 890.0), headers=ALICE)
    assert r.status_code in (200, 201) and r.json()["status"] == "accepted"
    page = api.get("/benchmarks", params={"ids": str(r.json()["id"])})
    assert page.status_code == 200
    assert "submitted" in page.text and "by alice" in page.text
    assert "550.54" in page.text  # the driver, from the environment
    offers = api.get("/v1/offers", params={"gpu": "GeForce RTX 3090", "gpu_count": 1}).json()
    offer_id = offers["items"][0]["id"]
    detail = api.get(
        f"/offers/{offer_id}", params={"preset": "resnet50-imagenet", "micro_batch_size": 448}
    )
    assert detail.status_code == 200
    assert "rests on a measurement submitted" in detail.text
    plain = api.get(f"/offers/{offer_id}", params={"preset": "bert-base-squad"})
    assert plain.status_code == 200 and "rests on a measurement submitted" not in plain.text


def test_a_run_on_a_gpu_name_several_models_share_is_held_and_credited_to_none(api: Any) -> None:
    # a bare "A100" is PCIe or SXM4, 40 or 80 GB: no provider's convention picks one
    r = api.post("/v1/benchmarks", json=body("run-bare-a100-1", 2300.0, gpu="A100"), headers=BOB)
    assert r.status_code == 201, r.text
    row = r.json()
    assert row["status"] == "held" and row["gpu_model_id"] is None and row["gpu"] is None
    assert row["hold_reason"] == (
        "GPU 'A100' is ambiguous: could be A100 SXM4 40GB or A100 SXM4 80GB or "
        "A100 PCIe 40GB or A100 PCIe 80GB; not credited to one of them"
    )
    # the name torch reports for the board names one model
    named = body("run-a100-sxm4-80-1", 2300.0, gpu="NVIDIA A100-SXM4-80GB")
    r = api.post("/v1/benchmarks", json=named, headers=BOB)
    assert r.status_code == 201 and r.json()["gpu"] == "A100 SXM4 80GB", r.text
