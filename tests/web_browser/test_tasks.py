"""Three tasks a team comes with, walked in the browser by clicking and typing from the empty
page, each answered in at most five actions; and every page type clean under axe-core and
without sideways scroll, at 1440 and 390 px, in both colour schemes and both languages.

The answer's figures are checked against the API's answer to the same request (the page's
JSON twin), formatted as the page formats them. Shared set-up: helpers.py and conftest.py here.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from app.web.format import hours, hours_range, money, money_range
from tests.web_browser.helpers import MARKS, axe_violations, fits, screenshot

pytestmark = MARKS


class Actions:
    """Counts what the user does: each click, choice or typed value is one action."""

    def __init__(self, page: Page) -> None:
        self.page, self.count = page, 0

    def click(self, selector: str) -> None:
        self.count += 1
        self.page.click(selector)

    def type(self, selector: str, text: str) -> None:
        self.count += 1
        self.page.fill(selector, text)

    def choose(self, selector: str, value: str) -> None:
        self.count += 1
        self.page.select_option(selector, value)


def twin(page: Page, base_url: str) -> dict[str, Any]:
    """The page's JSON twin: the API's answer to the same request."""
    href = page.get_attribute("a.json-twin", "href") or ""
    data: dict[str, Any] = page.request.get(base_url + href).json()
    return data


def card_figures(page: Page, role: str) -> dict[str, Any]:
    card = page.locator(f"#answer .pick-card[data-roles~={role}]")
    return {
        "offer_id": int(card.get_attribute("data-offer-id") or 0),
        "cost": card.locator(".fig-cost").inner_text(),
        "time": card.locator(".fig-time").inner_text(),
        "ranges": card.locator(".fig-range").all_inner_texts(),
    }


def expected_figures(e: dict[str, Any], currency: str) -> dict[str, Any]:
    return {
        "cost": money(e["total_cost"], currency),
        "time": hours(e["total_hours"]),
        "ranges": [
            money_range(e["total_cost_low"], e["total_cost_high"], currency),
            hours_range(e["total_hours_low"], e["total_hours_high"]),
        ],
    }


def test_cheapest_offer_that_fits_llama3_8b_qlora_3_epochs(
    base_url: str, home: tuple[Page, list[str]]
) -> None:
    page, problems = home
    act = Actions(page)
    act.type("#preset-search", "llama 3 8b qlora")
    act.click("label.pick:has(#preset-llama3-8b-qlora)")
    act.type("#f-epochs", "3")
    act.click("#submit")
    page.wait_for_selector("#answer")
    assert act.count <= 5
    assert page.url.split("?")[1].split("#")[0] == "preset=llama3-8b-qlora&epochs=3"
    data = twin(page, base_url)
    cheapest = {r["offer"]["id"]: r for r in [*data["results"], *data["frontier"]]}[
        data["answer"]["cheapest_offer_id"]
    ]
    shown = card_figures(page, "cheapest")
    assert shown["offer_id"] == cheapest["offer"]["id"]
    assert {k: v for k, v in shown.items() if k != "offer_id"} == expected_figures(
        cheapest["estimate"], "USD"
    )
    # nothing cheaper fits among the offers that can be rented as listed
    fits_rows = [
        r
        for r in [*data["results"], *data["frontier"]]
        if r["estimate"]["oom_risk"] != "high" and r["offer"]["bookable"]
    ]
    assert cheapest["estimate"]["total_cost"] == min(r["estimate"]["total_cost"] for r in fits_rows)
    assert cheapest["estimate"]["epochs"] == 3
    screenshot(page, "answer-llm")
    assert not problems, problems


def test_8xa100_against_8xh100_for_gpt2_124m(base_url: str, home: tuple[Page, list[str]]) -> None:
    page, problems = home
    act = Actions(page)
    act.click("label.pick:has(#preset-gpt2-124m-pretrain)")
    act.click(".chip[data-gpu='A100']")
    act.click(".chip[data-gpu='H100']")
    act.click(".chip[data-count='8']")
    act.click("#submit")
    page.wait_for_selector("#groups-table")
    assert act.count <= 5
    assert page.locator("#groups-table").is_visible()  # open: the comparison is the answer
    data = twin(page, base_url)
    rows = [*data["results"], *data["frontier"]]
    for tr in page.locator("#groups-table tbody tr").all():
        gpu, count = tr.get_attribute("data-gpu"), tr.get_attribute("data-count")
        assert (gpu or "").split()[0] in ("A100", "H100") and count == "8"
        mine = [r for r in rows if r["offer"]["gpu"] == gpu and r["estimate"]["oom_risk"] != "high"]
        cheapest = min(mine, key=lambda r: (r["estimate"]["total_cost"], r["rank"]))
        fastest = min(mine, key=lambda r: (r["estimate"]["total_hours"], r["rank"]))
        assert tr.locator("a.g-cost").inner_text() == money(
            cheapest["estimate"]["total_cost"], "USD"
        )
        assert tr.locator("a.g-time").inner_text() == hours(fastest["estimate"]["total_hours"])
    families = {
        (tr.get_attribute("data-gpu") or "").split()[0]
        for tr in page.locator("#groups-table tbody tr").all()
    }
    assert families == {"A100", "H100"}
    screenshot(page, "compare", "#groups")
    assert not problems, problems


def test_resnet50_on_imagenet_under_a_cny_budget(
    base_url: str, home: tuple[Page, list[str]]
) -> None:
    page, problems = home
    act = Actions(page)
    act.click("label.pick:has(#preset-resnet50-imagenet)")
    act.choose("#f-currency", "CNY")
    act.type("#f-max_total_cost", "30")
    act.click("#submit")
    page.wait_for_selector("#answer")
    assert act.count <= 5
    data = twin(page, base_url)
    assert data["currency"] == "CNY" and data["over_budget_offers"] > 0
    rows = {r["offer"]["id"]: r for r in [*data["results"], *data["frontier"]]}
    for role in ("cheapest", "fastest"):
        shown = card_figures(page, role)
        e = rows[shown["offer_id"]]["estimate"]
        assert {k: v for k, v in shown.items() if k != "offer_id"} == expected_figures(e, "CNY")
        assert e["total_cost"] <= 30
    assert card_figures(page, "cheapest")["offer_id"] == data["answer"]["cheapest_offer_id"]
    assert all(r["estimate"]["total_cost"] <= 30 for r in data["results"])
    # with a budget the chart shows the whole run against it
    assert "Total cost" in page.inner_text("#chart-title")
    assert page.locator("svg.scatter .rule").count() == 1
    assert not problems, problems


#: Every page type, and what to wait for (ten rows are enough: every row is alike).
PAGE_TYPES: list[tuple[str, str]] = [
    ("/", "#rank-form"),
    (
        "/?preset=gpt2-124m-pretrain&gpu=A100,H100&gpu_count=8&epochs=3&limit=10&pin={a},{b}",
        "#compare-table",
    ),
    ("/?preset=llama3-8b-full&sharding=none&gpu=RTX%204090", "#oom-banner"),
    ("/offers/{a}?preset=resnet50-imagenet", "#memory"),
    ("/gpus?limit=10", "#gpus-table"),
    ("/gpus/L4", "#offers-table"),
    ("/benchmarks?workload=resnet50-imagenet&limit=10", "#benchmarks-table"),
    ("/offers/99999999", "h1"),
]


@pytest.mark.parametrize(
    ("width", "scheme", "lang"), [(1440, "light", "en"), (390, "dark", "zh-CN")]
)
def test_every_page_type_passes_axe_and_fits(
    base_url: str, browser_page: tuple[Page, list[str]], width: int, scheme: str, lang: str
) -> None:
    page, problems = browser_page
    query = "preset=gpt2-124m-pretrain&gpu=A100,H100&gpu_count=8&limit=2"
    ids = page.request.get(f"{base_url}/v1/rank?{query}").json()
    a, b = (r["offer"]["id"] for r in ids["results"])
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
    found: dict[str, Any] = {}
    try:
        for path, ready in PAGE_TYPES:
            url = path.format(a=a, b=b)
            page.goto(f"{base_url}{url}{'&' if '?' in url else '?'}lang={lang}")
            page.wait_for_selector(ready, state="attached")
            fits(page, width)
            if violations := axe_violations(page):
                found[url] = violations
        if width == 390:
            page.goto(f"{base_url}/?preset=llama3-8b-qlora&epochs=3&lang=zh-CN")
            screenshot(page, "rank-zh-phone")
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.emulate_media(color_scheme="light")
    assert not found, found
    # the 404 page logs its status; nothing else may
    assert all("status of 404" in p for p in problems), problems
    problems.clear()
