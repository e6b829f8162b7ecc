"""The answer card says where its offer ranks when the table under it does not show it
(newcomer finding 2: "Cheapest that fits" at $0.167 above a table starting at $0.204)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.html_tree import parse

pytestmark = pytest.mark.db


def test_a_pick_ranked_below_the_table_says_its_rank_and_why(client: Any) -> None:
    params = {"preset": "llama3-8b-lora", "seq_len": "4k"}
    r = client.get("/", params=params)
    assert r.status_code == 200, r.text[:2000]
    doc = parse(r.text)
    data = client.get("/", params={**params, "format": "json"}).json()
    shown = {x["offer"]["id"] for x in data["results"]}
    rows = {x["offer"]["id"]: x for x in [*data["results"], *data["frontier"]]}
    cheapest = rows[data["answer"]["cheapest_offer_id"]]
    # the cheapest runnable price is an undated AWS spot price, ranked after the fresh
    # prices of its GPU and count, below the 50 rows of the table
    assert cheapest["offer"]["id"] not in shown and cheapest["rank"] > len(data["results"]) == 50
    assert cheapest["offer"]["price_age"] == "undated"
    first = data["results"][0]["estimate"]["cost_per_epoch"]
    assert cheapest["estimate"]["cost_per_epoch"] < first
    card = next(
        a
        for a in doc.find_all("article", cls="pick-card")
        if a.attrs["data-offer-id"] == str(cheapest["offer"]["id"])
    )
    note = card.find("p", cls="pick-rank")
    total = data["total_offers"]
    assert f"Ranked #{cheapest['rank']} of {total}, below the 50 rows of the table" in note.text
    assert "its price is undated" in note.text
    assert f"limit={cheapest['rank']}" in note.find("a").attrs["href"]
    # a pick shown in the table gets no such line
    for a in doc.find_all("article", cls="pick-card"):
        if int(a.attrs["data-offer-id"]) in shown:
            assert not a.find_all("p", cls="pick-rank")
    assert "an old or undated price ranks after the fresh ones" in doc.find("p", id="summary").text
