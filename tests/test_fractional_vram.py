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
