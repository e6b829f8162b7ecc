"""An offer's stated network between machines (``network_gbps``) is what a multi-node estimate
uses, on the offer page and in the ranking alike; without one, the stated default, and the
answer says which (issue 26 item 3)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import select

from app.asgi import create_app
from app.db.models import GpuModel, InstanceOffer, Provider
from app.db.session import create_engine_from_url, create_session_factory
from app.settings import Settings
from tests.conftest import seeded_database

pytestmark = pytest.mark.db

GPU = "A100 SXM4 40GB"
#: 16 GPUs: two 8-GPU machines (app.model.comm.DEFAULT_GPUS_PER_NODE)
COUNT = 16
#: what AWS's price list states for p4d.24xlarge ("400 Gigabit", EFA)
STATED = 400.0
#: BERT-large fine-tuning: 335M parameters of gradients per step, little compute per sample
JOB = {"preset": "bert-large-squad"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Any, dict[str, int]]]:
    """The seed plus a provider listing the same 16 × A100 SXM4 40GB machine twice at one
    price: with the network stated (400 Gbit/s) and without."""
    with seeded_database() as url:
        engine = create_engine_from_url(url)
        ids = {}
        with create_session_factory(engine)() as s, s.begin():
            gpu_id = s.scalar(select(GpuModel.id).where(GpuModel.canonical_name == GPU))
            provider = Provider(slug="netcloud", name="Net Cloud", kind="cloud", source="test")
            s.add(provider)
            s.flush()
            for key, network in (("stated", STATED), ("unstated", None)):
                offer = InstanceOffer(
                    provider_id=provider.id,
                    offer_key=key,
                    instance_type=f"16x-a100-{key}",
                    region="us-east-1",
                    gpu_model_id=gpu_id,
                    gpu_name_raw="A100-SXM4-40GB",
                    gpu_count=COUNT,
                    vram_gib_per_gpu=40,
                    interconnect="nvswitch",
                    network_gbps=network,
                    billing="on_demand",
                    price_per_hour=Decimal("64"),
                    currency="USD",
                    available=True,
                    last_seen_at=dt.datetime.now(dt.UTC),
                    source="test listing",
                    price_kind="scraped",
                )
                s.add(offer)
                s.flush()
                ids[key] = offer.id
        engine.dispose()
        with TestClient(create_app(Settings(database_url=url))) as client:
            yield client, ids


def _estimate(client: Any, offer_id: int) -> dict[str, Any]:
    r = client.get(f"/v1/offers/{offer_id}", params=JOB)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_a_stated_network_is_used_and_said(cluster: tuple[Any, dict[str, int]]) -> None:
    client, ids = cluster
    stated, unstated = _estimate(client, ids["stated"]), _estimate(client, ids["unstated"])
    assert stated["offer"]["network_gbps"] == STATED and unstated["offer"]["network_gbps"] is None
    a, b = stated["estimate"]["multi_gpu"], unstated["estimate"]["multi_gpu"]
    assert a["nodes"] == b["nodes"] == 2 and a["gpus_per_node"] == 8
    assert (a["network_gbps"], a["network_stated"]) == (STATED, True)
    # the default: one 200 Gbit/s HDR NIC per Ampere SXM GPU, 8 per machine (DGX A100;
    # seed_data/link_bandwidth.csv default_node_gbps_sxm_ampere)
    assert (b["network_gbps"], b["network_stated"]) == (1600.0, False)
    # a quarter of the default network: the data-parallel gradients take longer between the
    # two machines, so the stated offer is slower and spends more of its step communicating
    assert stated["estimate"]["samples_per_s"] < unstated["estimate"]["samples_per_s"]
    assert a["comm_time_share"] > b["comm_time_share"]
    words = {
        k: next(w for w in e["estimate"]["warnings"] if w["code"] == "multi_node")
        for k, e in (("stated", stated), ("unstated", unstated))
    }
    assert "400 Gbit/s per machine (as stated)" in words["stated"]["message"]
    assert "1,600 Gbit/s per machine (assumed" in words["unstated"]["message"]
    assert words["stated"]["values"]["network_stated"] is True


def test_the_ranking_uses_the_offers_network_too(cluster: tuple[Any, dict[str, int]]) -> None:
    client, ids = cluster
    r = client.get("/v1/rank", params={**JOB, "provider": "netcloud"})
    assert r.status_code == 200, r.text
    rows = {x["offer"]["id"]: x for x in r.json()["results"]}
    for key, offer_id in ids.items():
        page = _estimate(client, offer_id)["estimate"]
        ranked = rows[offer_id]["estimate"]
        assert ranked["samples_per_s"] == page["samples_per_s"], key
        assert ranked["multi_gpu"] == page["multi_gpu"], key
    # same price, the unstated (default, faster) network ranks first by cost per epoch
    assert [x["offer"]["id"] for x in r.json()["results"]] == [ids["unstated"], ids["stated"]]


def test_the_offer_page_shows_the_stated_network(cluster: tuple[Any, dict[str, int]]) -> None:
    client, ids = cluster
    stated = client.get(f"/offers/{ids['stated']}", params=JOB)
    assert stated.status_code == 200
    assert "Network between machines" in stated.text
    assert "400 Gbit/s per machine, as the provider states it" in stated.text
    unstated = client.get(f"/offers/{ids['unstated']}", params=JOB)
    assert unstated.status_code == 200 and "Network between machines" not in unstated.text
    zh = client.get(f"/offers/{ids['stated']}", params={**JOB, "lang": "zh-CN"})
    assert "每台机器 400 Gbit/s（服务商标明）" in zh.text
