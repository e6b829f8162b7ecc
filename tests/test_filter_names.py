"""Provider and region filters take the names people write; junk is a 400 naming the field
and the known values, like an unknown GPU (newcomer finding 8)."""

from __future__ import annotations

from typing import Any

import pytest

from app.services.offers import FilterError, resolve_provider, resolve_regions

pytestmark = pytest.mark.db

PROVIDERS = [
    ("vast", "Vast.ai"),
    ("verda", "Verda (formerly DataCrunch)"),
    ("gpushare", "恒源云 (gpushare.com)"),
]


@pytest.mark.parametrize(
    ("written", "slug"),
    [
        ("Vast.ai", "vast"),
        ("vast.ai", "vast"),
        ("VAST", "vast"),
        (" vast ", "vast"),
        ("DataCrunch", "verda"),
        ("恒源云", "gpushare"),
        ("gpushare.com", "gpushare"),
    ],
)
def test_provider_names_as_written(written: str, slug: str) -> None:
    assert resolve_provider(written, PROVIDERS) == slug


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(FilterError) as e:
        resolve_provider("AutoDL", PROVIDERS)
    assert e.value.field == "provider"
    assert "'AutoDL'" in e.value.reason and "gpushare, vast, verda" in e.value.reason


def test_regions() -> None:
    labels = ["us-east-1", "Texas, US, NA", "华北"]
    assert resolve_regions("US-EAST", labels) == ["us-east-1"]
    assert resolve_regions("China", labels) == ["华北"]
    assert resolve_regions("Germany", labels) == []  # a country with no offers: no error
    with pytest.raises(FilterError) as e:
        resolve_regions("nowhere", labels)
    assert e.value.field == "region" and "Texas, US, NA; us-east-1; 华北" in e.value.reason


def test_rank_and_offers_take_the_providers_name(client: Any) -> None:
    body = {"workload": {"preset": "llama3-8b-lora"}, "limit": 500}
    by_slug = client.post("/v1/rank", json={**body, "filters": {"provider": "vast"}}).json()
    by_name = client.post("/v1/rank", json={**body, "filters": {"provider": "Vast.ai"}}).json()
    assert by_slug["total_offers"] > 0 and by_name["total_offers"] == by_slug["total_offers"]
    assert {x["offer"]["provider"] for x in by_name["results"]} == {"vast"}
    listed = client.get("/v1/offers", params={"provider": "Vast.ai", "limit": 1000}).json()
    assert listed["total"] > 0
    assert (
        listed["total"]
        == client.get("/v1/offers", params={"provider": "vast", "limit": 1000}).json()["total"]
    )


@pytest.mark.parametrize(
    ("method", "path", "kw", "field"),
    [
        (
            "post",
            "/v1/rank",
            {"json": {"workload": {"preset": "llama3-8b-lora"}, "filters": {"provider": "AutoDL"}}},
            "provider",
        ),
        (
            "post",
            "/v1/rank",
            {"json": {"workload": {"preset": "llama3-8b-lora"}, "filters": {"region": "nowhere"}}},
            "region",
        ),
        ("get", "/v1/offers", {"params": {"provider": "nosuch"}}, "provider"),
        ("get", "/v1/offers", {"params": {"region": "nowhere"}}, "region"),
    ],
)
def test_junk_provider_or_region_is_a_400(
    client: Any, method: str, path: str, kw: dict[str, Any], field: str
) -> None:
    r = getattr(client, method)(path, **kw)
    assert r.status_code == 400, r.text
    text = r.text
    assert field in text
    if field == "provider":
        assert "vast" in text and "lambda" in text  # the known slugs are listed
    else:
        assert "us-east-1" in text  # the known labels are listed
