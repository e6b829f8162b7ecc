"""Watches: saved with a token, checked after each refresh, posted to a webhook on the side.

The webhook is a local HTTP server that holds each post until the test releases it: the
refresh must have returned while a post is still held (it never waits on a webhook).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from litestar.testing import TestClient

from app.asgi import create_app
from app.settings import Settings
from tests.conftest import seeded_database
from tests.fake_providers import FakeProviders
from tests.refresh_helpers import T0, refresh
from tests.test_readme_cli import check_or_write

pytestmark = pytest.mark.db

TOKEN = {"Authorization": "Bearer s3cret-team-token"}
OTHER = {"Authorization": "Bearer other-token"}
#: ResNet-50 on ImageNet on Vast's H100 offers, within 1,000 USD for the 90 epochs
JOB = {
    "workload": {"preset": "resnet50-imagenet"},
    "filters": {"provider": "vast", "gpu": "H100"},
    "max_total_cost": 1000,
}


class Hook:
    """A webhook on 127.0.0.1 that records each body and answers only once released."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.answered = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.bodies.append(json.loads(body))
                hook.release.wait(60)  # released by the test once the refresh returned
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")
                hook.answered.set()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/services/T000/B000/XXXX"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


@pytest.fixture
def setup() -> Iterator[tuple[str, Any, Hook]]:
    with seeded_database() as url:
        hook = Hook()
        settings = Settings(
            database_url=url,
            api_tokens="team=s3cret-team-token,other=other-token",
            offer_stale_after_days=3650,
        )
        try:
            with TestClient(create_app(settings)) as client:
                yield url, client, hook
        finally:
            hook.close()


def test_a_watch_is_checked_after_each_refresh_and_posted_on_the_side(
    setup: tuple[str, Any, Hook],
) -> None:
    url, client, hook = setup
    body = {"name": "resnet on H100", "request": JOB, "webhook_url": hook.url}
    assert client.post("/v1/watches", json=body).status_code == 401
    assert (
        client.post("/v1/watches", json=body, headers={"Authorization": "Bearer x"}).status_code
        == 401
    )
    no_budget = {**body, "request": {"workload": {"preset": "resnet50-imagenet"}}}
    r = client.post("/v1/watches", json=no_budget, headers=TOKEN)
    assert r.status_code == 400 and r.json()["extra"][0]["key"] == "request"
    bad = {**body, "request": {**JOB, "workload": {"preset": "resnet50-imagenet", "seq_len": 0}}}
    r = client.post("/v1/watches", json=bad, headers=TOKEN)
    assert r.status_code == 400
    assert r.json()["extra"][0]["key"] == "request.workload.seq_len"

    r = client.post("/v1/watches", json={**body, "price_move_fraction": 0.02}, headers=TOKEN)
    assert r.status_code == 201, r.text
    watch = r.json()
    baseline = {m["offer_id"] for m in watch["matches"]}
    assert watch["owner"] == "team" and watch["events"] == []
    assert watch["webhook"] == "http://127.0.0.1"  # the path (Slack's secret) is not shown
    failing = client.post(
        "/v1/watches",
        json={**body, "name": "dead hook", "webhook_url": "http://127.0.0.1:9/hook"},
        headers=TOKEN,
    ).json()

    # the first refresh replaces the seeded Vast offers with the provider's answer
    report = refresh(url, FakeProviders(), at=T0)
    assert report.ok and report.webhooks is not None
    assert not hook.answered.is_set(), "the refresh returned while a post was held"
    hook.release.set()
    report.webhooks.join(20)

    after = client.get(f"/v1/watches/{watch['id']}", headers=TOKEN).json()
    new = [e for e in after["events"] if e["kind"] == "new"]
    active = {m["offer_id"] for m in after["matches"] if m["active"]}
    assert new and {e["offer_id"] for e in new} == active - baseline
    assert all(e["delivered_at"] and e["delivery_error"] is None for e in new)
    assert sorted(b["text"] for b in hook.bodies) == sorted(e["message"] for e in new)
    assert all("an offer now meets the job" in b["text"] for b in hook.bodies)
    h100x8 = next(e for e in new if "8x H100 SXM" in e["message"] and "on_demand" in e["message"])
    assert h100x8["new_price_per_hour"] == 15.2  # the fixture's on-demand 8x H100 (m52001)
    assert {"text": h100x8["message"]} in hook.bodies
    check_or_write("webhook", json.dumps({"text": h100x8["message"]}, ensure_ascii=False))
    for m in after["matches"]:
        if m["active"]:
            assert m["total_cost"] <= 1000
    dead = client.get(f"/v1/watches/{failing['id']}", headers=TOKEN).json()
    assert dead["events"] and all(
        e["delivered_at"] is None and "webhook post failed" in e["delivery_error"]
        for e in dead["events"]
    )

    # the second answer moves the 8x H100 from 15.2 to 14.8 USD/h (2.6 % >= 2 %)
    report = refresh(url, FakeProviders(version=2), at=T0.replace(hour=5))
    assert report.webhooks is not None
    report.webhooks.join(20)
    again = client.get(f"/v1/watches/{watch['id']}", headers=TOKEN).json()
    moved = [e for e in again["events"] if e["kind"] == "price"]
    assert [
        (e["old_price_per_hour"], e["new_price_per_hour"])
        for e in moved
        if e["offer_id"] == h100x8["offer_id"]
    ] == [(15.2, 14.8)]
    assert any("price moved 15.2 -> 14.8" in b["text"] for b in hook.bodies)

    assert client.get(f"/v1/watches/{watch['id']}", headers=OTHER).status_code == 404
    assert client.delete(f"/v1/watches/{watch['id']}", headers=OTHER).status_code == 404
    assert client.delete(f"/v1/watches/{watch['id']}", headers=TOKEN).status_code == 204
    assert client.get(f"/v1/watches/{watch['id']}", headers=TOKEN).status_code == 404
