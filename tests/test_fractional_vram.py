"""A fractional GPU's VRAM is one figure: the offers' ``vram_gib_per_gpu`` and the
``min_vram_gib`` filter see the same share of the card.

Seed row: Azure ``Standard_NV12ads_A10_v5`` is a third of an A10 (24 GB), no VRAM listed,
so 24 × 0.333333 ≈ 8 GB.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.db

KEY = "Standard_NV12ads_A10_v5"


def _azure(client: Any, **params: Any) -> list[dict[str, Any]]:
    r = client.get("/v1/offers", params={"provider": "azure", "limit": 1000, **params})
    assert r.status_code == 200, r.text
    return [o for o in r.json()["items"] if o["offer_key"] == KEY]


def test_fractional_gpu_vram_is_shown_as_its_share(client: Any) -> None:
    (offer,) = _azure(client)
    assert offer["gpu_count"] == pytest.approx(1 / 3, abs=1e-5)
    assert offer["vram_gib_per_gpu"] == pytest.approx(24 / 3, abs=1e-3)


def test_min_vram_filter_uses_the_share_too(client: Any) -> None:
    assert _azure(client, min_vram_gib=7.9)
    assert _azure(client, min_vram_gib=10) == []


# --- fractional GPUs met by the scrapers, through a refresh (ingest) into /v1/offers ---------

#: (provider, offer key) → (GPU share, VRAM the slice really has in GiB), from the recorded
#: fixtures: Vultr's 4 GB slice of an 80 GB A100, Azure's NV6ads (a sixth of a 24 GB A10),
#: AWS g6f.large / g6f.4xlarge (3 and 12 GiB of a 24 GB L4).
SLICES = {
    ("vultr", "vcg-a100-1c-6g-4vram"): (0.05, 4.0),
    ("azure", "Standard_NV6ads_A10_v5"): (round(1 / 6, 4), 4.0),
    ("aws", "g6f.large"): (0.125, 3.0),
    ("aws", "g6f.4xlarge"): (0.5, 12.0),
}

#: the card each provider's slices are cut from (Vultr: an A100 80GB, 4 GiB = 1/20 of it;
#: Azure NVadsA10 v5: an A10; AWS g6f: an L4)
CARD = {
    "vultr": lambda gpu: gpu.startswith("A100") and "80GB" in gpu,
    "azure": lambda gpu: gpu == "A10",
    "aws": lambda gpu: gpu == "L4",
}


@pytest.fixture(scope="module")
def refreshed() -> Any:
    from tests.conftest import seeded_database
    from tests.fake_providers import FakeProviders
    from tests.refresh_helpers import T0, refresh

    with seeded_database() as url:
        report = refresh(url, FakeProviders(), at=T0)
        assert report.ok, report
        yield url


def _live_offers(url: str, **params: Any) -> dict[tuple[str, str], dict[str, Any]]:
    from litestar.testing import TestClient

    from app.asgi import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings(database_url=url))) as c:
        r = c.get("/v1/offers", params={"limit": 1000, **params})
        assert r.status_code == 200, r.text
        return {
            (o["provider"], o["offer_key"]): o
            for o in r.json()["items"]
            if o["billing"] == "on_demand"
        }


def test_every_scraped_slice_lands_as_a_share_with_the_vram_it_has(refreshed: str) -> None:
    got = _live_offers(refreshed)
    for key, (share, vram) in SLICES.items():
        offer = got[key]
        assert offer["gpu_count"] == pytest.approx(share, abs=1e-4), key
        assert offer["vram_gib_per_gpu"] == pytest.approx(vram, abs=0.01), key
        # matched to the catalog card, and no VRAM mismatch is claimed for a slice
        assert offer["gpu"] is not None and "differs" not in (offer["gpu_note"] or ""), key
        assert CARD[key[0]](offer["gpu"]), (key, offer["gpu"])
    # whole cards of the same providers keep their full VRAM
    assert got[("vultr", "vcg-a100-12c-120g-80vram")]["gpu_count"] == 1
    assert got[("vultr", "vcg-a100-12c-120g-80vram")]["vram_gib_per_gpu"] == 80


def test_min_vram_filter_sees_the_slices_share(refreshed: str) -> None:
    got = _live_offers(refreshed, min_vram_gib=3.5)
    assert ("vultr", "vcg-a100-1c-6g-4vram") in got and ("aws", "g6f.4xlarge") in got
    assert ("aws", "g6f.large") not in got  # 3 GiB
