"""End to end in headless Chromium: pick a preset, rank, read the answer and the chart, open an
offer; the listing pages sort, page and fit a phone. Shared set-up: helpers.py and conftest.py
here (one server, one browser, one page for every browser test of this package). With
``GPUCOST_SCREENSHOT=1`` the tests also write the screenshots of ``docs/`` (the README's
``docs/screenshot-rank.png`` among them).
"""

from __future__ import annotations

import csv
import os
import re

import pytest
from playwright.sync_api import Page

from app.settings import PROJECT_ROOT
from tests.web_browser.helpers import MARKS, fits, screenshot

pytestmark = MARKS


def pick_preset(page: Page, slug: str) -> None:
    """Choose a preset in the picker (one click on its entry)."""
    page.click(f"label.pick:has(#preset-{slug})")


def test_rank_page_preset_to_offer(base_url: str, home: tuple[Page, list[str]]) -> None:
    page, problems = home
    pick_preset(page, "resnet50-imagenet")
    # the preset's values fill the fields as values (not faint placeholders)
    assert page.input_value("#f-micro_batch_size") == "256"
    assert page.input_value("#f-epochs") == "90"
    page.click("#submit")
    page.wait_for_selector("#results-table tbody tr")
    # the form state is the URL, without the fields left at the preset's values
    assert "preset=resnet50-imagenet" in page.url
    assert "micro_batch_size=" not in page.url and "sort=" not in page.url
    assert "base=" not in page.url and "epochs=" not in page.url
    # the form folded into a one-line recap, the answer first
    assert not page.locator("#rank-form").is_visible()
    assert page.locator("#answer .pick-card").first.is_visible()

    rows = page.locator("#results-table tbody tr")
    assert rows.count() == 50
    costs = rows.locator("td.cost").all_inner_texts()
    assert all(re.match(r"^(\$|CN¥)[0-9]", c.strip()) for c in costs), costs[:5]
    row_ids = rows.evaluate_all("rs => rs.map(r => r.dataset.offerId)")

    # one point per offer: the table's rows plus the Pareto offers ranked below them,
    # exactly the offers of the JSON twin that have a cost, each with its whiskers
    point_ids = page.locator("svg.scatter circle.pt").evaluate_all(
        "ps => ps.map(p => p.dataset.offerId)"
    )
    twin = page.request.get(base_url + (page.get_attribute("a.json-twin", "href") or "")).json()
    costed = [
        str(x["offer"]["id"])
        for x in [*twin["results"], *twin["frontier"]]
        if x["estimate"]["cost_per_epoch"] is not None
    ]
    assert sorted(point_ids) == sorted(costed)
    assert len(point_ids) == len(set(point_ids))
    assert [str(x["offer"]["id"]) for x in twin["results"]] == row_ids
    assert page.locator("svg.scatter polyline.frontier-line").count() == 1
    assert page.locator("svg.scatter line.whisker").count() == 2 * len(point_ids)

    # hovering a point names the offer (the last one drawn is on top of any it overlaps)
    page.locator("#chart").scroll_into_view_if_needed()
    top = page.locator("svg.scatter circle.pt").last
    top.hover(timeout=5000)
    label = page.inner_text("#chart-label")
    assert "—" in label and label == top.locator("title").text_content()
    screenshot(page, "rank-chart", "#chart")
    screenshot(page, "rank")

    # open the first offer from the table
    link = rows.first.locator("a.offer-link")
    name = link.inner_text()
    link.click()
    page.wait_for_selector("#memory")
    assert name in page.inner_text("h1")
    assert "/offers/" in page.url and "preset=resnet50-imagenet" in page.url
    assert page.locator("#memory .membar .seg").count() == 5
    assert page.locator("#throughput .evidence tbody tr").count() >= 1
    assert page.locator("#prices svg.timeline").count() == 1
    assert page.get_attribute("a.json-twin", "href", timeout=1000).startswith("/v1/offers/")
    assert not problems, problems


#: rows of the table wholly inside the window
VISIBLE_ROWS_JS = """() => [...document.querySelectorAll('#results-table tbody tr')]
  .filter(r => { const b = r.getBoundingClientRect();
                 return b.top >= 0 && b.bottom <= innerHeight; })
  .length"""


@pytest.mark.parametrize(("width", "height", "name"), [(1440, 900, "desktop"), (390, 844, "phone")])
def test_ranked_llm_results_fit_the_viewport(
    base_url: str,
    browser_page: tuple[Page, list[str]],
    width: int,
    height: int,
    name: str,
) -> None:
    page, problems = browser_page
    page.set_viewport_size({"width": width, "height": height})
    try:
        page.goto(f"{base_url}/?preset=llama3-8b-qlora&gpu_count=1")
        page.wait_for_selector("#results-table tbody tr")
        fits(page, width)
        # an LLM ranking counts tokens, and says so where the figures are read
        first = page.locator("#results-table tbody tr").first
        if name == "desktop":
            # the answer first, then about ten rows of the table in the first screen
            assert page.evaluate(VISIBLE_ROWS_JS) >= 9
            cell = first.locator("td.c-samples_per_s")
            assert cell.is_visible()
            head = page.locator("#results-table th.c-samples_per_s")
            assert head.inner_text().strip().startswith("Tokens/s")
            # every decision column and the hardware people scan are on screen
            for key in (
                "gpu",
                "vcpus",
                "ram",
                "disk",
                "max_cuda",
                "nvlink",
                "price_per_hour",
                "samples_per_s",
                "epoch_hours",
                "cost_per_epoch",
                "total_cost",
                "memory",
                "warnings",
            ):
                box = page.locator(f"#results-table th.c-{key}").bounding_box()
                assert box and box["x"] + box["width"] <= width, key
            # the header sticks to the top of the window when the table scrolls
            page.locator("#results-table tbody tr").nth(30).scroll_into_view_if_needed()
            top = page.locator("#results-table th.c-cost_per_epoch").bounding_box()
            assert top and abs(top["y"]) < 2, top
            page.evaluate("window.scrollTo(0, 0)")
        else:
            screenshot(page, f"rank-llm-{name}")
            # a compact card per offer; "more" folds out throughput, cost per epoch, specs
            assert not first.locator("td.c-samples_per_s").is_visible()
            first.locator("details.more > summary").click()
            more = first.locator("details.more").inner_text()
            assert "tokens/s" in more.lower() and "vCPU" in more
            label = first.locator("td.c-total_cost").evaluate(
                "el => getComputedStyle(el, '::before').content"
            )
            assert "Total" in label
            # the scatter's points are unreadable on a phone: the frontier as a list instead
            assert not page.locator("#chart").is_visible()
            assert page.locator("#front-list li").count() >= 1
            # tap targets of at least 24 px
            for sel in ("a.pin", "details.more > summary", "#edit > summary"):
                box = page.locator(sel).first.bounding_box()
                assert box and box["height"] >= 24 and box["width"] >= 24, (sel, box)
            fits(page, width)
        cols = ("c-price_per_hour", "c-epoch_hours", "c-total_cost", "c-memory")
        for c in cols:
            assert first.locator(f"td.{c}").is_visible(), c
        assert "GiB" in first.locator("td.c-memory").inner_text()
        assert re.search(r"(\d+ min|\d h|\d d)", first.locator("td.c-epoch_hours").inner_text())
        if name == "desktop":
            screenshot(page, f"rank-llm-{name}")
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert not problems, problems


@pytest.mark.parametrize("width", [1280, 1366, 1440])
def test_long_rankings_fit_a_laptop_window(
    base_url: str, browser_page: tuple[Page, list[str]], width: int
) -> None:
    """Every row of a long ranking (long GPU names, several warnings) fits a 1366 px window:
    the table was 1451 px wide there, the Warnings column cut off (newcomer finding 13)."""
    page, problems = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    try:
        for query in (
            "preset=llama3-8b-lora&seq_len=4k&limit=300",
            "preset=resnet50-imagenet&limit=300",
        ):
            page.goto(f"{base_url}/?{query}")
            page.wait_for_selector("#results-table tbody tr")
            fits(page, width)
            box = page.locator("#results-table th.c-warnings").bounding_box()
            assert box and box["x"] + box["width"] <= width, (query, box)
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert not problems, problems


def test_empty_form_says_what_to_pick(home: tuple[Page, list[str]]) -> None:
    page, problems = home
    page.click("#submit")
    box = page.locator("#pick-workload")
    box.wait_for(state="visible", timeout=5000)
    assert "preset" in box.inner_text()
    # one of the suggested presets ranks at once
    page.locator("#results a.try-preset").first.click()
    page.wait_for_selector("#results-table tbody tr")
    assert not problems, problems


def test_preset_search_filters_the_picker(home: tuple[Page, list[str]]) -> None:
    page, problems = home
    page.fill("#preset-search", "llama 3 8b qlora")
    shown = page.locator(".pick:visible .pick-name").all_inner_texts()
    assert shown == ["Llama 3.1 8B QLoRA fine-tune"], shown
    page.fill("#preset-search", "resnet")
    assert {"ResNet-50 v1.5", "ResNet-152"} <= set(
        page.locator(".pick:visible .pick-name").all_inner_texts()
    )
    page.fill("#preset-search", "no such model")
    assert page.locator(".pick-none").is_visible()
    assert not problems, problems


def test_config_json_fills_the_model_in_one_step(
    base_url: str, browser_page: tuple[Page, list[str]]
) -> None:
    page, problems = browser_page
    config = (
        '{"model_type": "llama", "hidden_act": "silu", "hidden_size": 4096, '
        '"intermediate_size": 14336, "max_position_embeddings": 8192, '
        '"num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, '
        '"tie_word_embeddings": false, "vocab_size": 128256}'
    )
    page.goto(f"{base_url}/")
    page.click("#hf-config-box summary")
    page.fill("#hf-config", config)
    page.click("#hf-fill")
    page.wait_for_function("document.getElementById('f-layers').value === '32'")
    assert page.input_value("#f-kv_heads") == "8"
    assert page.input_value("#f-ffn_hidden_size") == "14336"
    assert page.input_value("#f-params") == "8030261248"
    assert page.input_value("#f-architecture") == "transformer_decoder"
    assert "8192 tokens" in page.inner_text("#hf-result")
    assert not problems, problems
    # without the rest of a custom workload, every missing field is named in one answer (a 400)
    page.click("#submit")
    page.wait_for_selector("#errors")
    errors = page.inner_text("#errors")
    assert "samples_per_epoch" in errors and "seq_len" in errors, errors
    assert all("status of 400" in p for p in problems), problems
    problems.clear()
    # with them, the custom workload ranks, and its top offer's page opens (issue 30: a 500)
    page.fill("#f-seq_len", "2048")
    page.fill("#f-samples_per_epoch", "10000")
    page.click("#submit")
    page.wait_for_selector("#results-table tbody tr")
    page.locator("#results-table tbody tr").first.locator("a.offer-link").click()
    page.wait_for_selector("#memory")
    assert "All 1 epochs" in page.inner_text("#estimate")
    assert not problems, problems


def test_api_viewer_renders_offline(home: tuple[Page, list[str]]) -> None:
    page, problems = home
    page.click("header.top nav a[href='/schema/swagger']")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20000)
    assert page.locator(".swagger-ui .opblock").count() >= 10
    assert not problems, problems


def _page_shot(page: Page, name: str, selector: str, height: int | None = None) -> None:
    """With ``GPUCOST_SCREENSHOT`` set, also write ``docs/screenshot-<name>.png``: the window
    from ``selector`` down (``height`` px of the page from there, when given)."""
    if os.environ.get("GPUCOST_SCREENSHOT"):
        path = str(PROJECT_ROOT / "docs" / f"screenshot-{name}.png")
        page.mouse.move(0, 0)
        if height:
            top = page.evaluate(
                f"document.querySelector('{selector}').getBoundingClientRect().top + scrollY - 8"
            )
            width = page.viewport_size["width"] if page.viewport_size else 1440
            page.screenshot(
                path=path, full_page=True, clip={"x": 0, "y": top, "width": width, "height": height}
            )
            return
        page.evaluate(f"document.querySelector('{selector}').scrollIntoView()")
        page.evaluate("window.scrollBy(0, -8)")
        page.screenshot(path=path)


def _column(page: Page, table: str, cls: str) -> list[str]:
    return page.locator(f"#{table} tbody td.{cls}").all_inner_texts()


def _number(text: str) -> float:
    head = text.strip().split()[0].replace(",", "").lstrip("$")
    return float(head)


def _catalog() -> list[dict[str, str]]:
    """The seed catalog the test database holds (``seed_data/gpus.csv``)."""
    with (PROJECT_ROOT / "seed_data" / "gpus.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize(("width", "height", "name"), [(1440, 900, "desktop"), (390, 844, "phone")])
def test_catalog_sorts_pages_and_fits(
    base_url: str, browser_page: tuple[Page, list[str]], width: int, height: int, name: str
) -> None:
    page, problems = browser_page
    catalog = _catalog()
    n = len(catalog)
    assert 50 < n <= 100  # two pages of 50
    page.set_viewport_size({"width": width, "height": height})
    try:
        page.goto(f"{base_url}/gpus")
        page.wait_for_selector("#gpus-table tbody tr")
        fits(page, width)
        assert f"Showing 1–50 of {n}" in page.inner_text("#count")
        before = _column(page, "gpus-table", "c-vram_gib")
        # sort by VRAM: a header link on a desktop, the line of sort links on a phone
        where = "#gpus-table th.c-vram_gib a" if name == "desktop" else ".sort-links a"
        link = page.locator(where).filter(has_text="VRAM").first
        assert link.is_visible()
        link.click()
        page.wait_for_url("**/gpus?sort=vram_gib&order=desc")
        vram = [_number(v) for v in _column(page, "gpus-table", "c-vram_gib")]
        assert vram == sorted(vram, reverse=True) and vram != [_number(v) for v in before]
        # the page shows three significant figures (268.59 GiB as 269)
        assert vram[0] == pytest.approx(max(float(g["vram_gib"]) for g in catalog), rel=5e-3)
        fits(page, width)
        _page_shot(page, f"gpus-{name}", "h1")
        # the next page continues the order
        page.locator("nav.pager a[rel=next]").click()
        page.wait_for_url("**offset=50")
        assert f"Showing 51–{n} of {n}" in page.inner_text("#count")
        rest = [_number(v) for v in _column(page, "gpus-table", "c-vram_gib")]
        assert len(rest) == n - 50 and max(rest) <= min(vram)
        fits(page, width)
        # a filter from the form keeps the sort
        page.fill("#f-family", "A100")
        page.click("#filters button[type=submit]")
        page.wait_for_selector("#count")
        a100 = sum(1 for g in catalog if g["canonical_name"].startswith("A100 "))
        assert f"Showing 1–{a100} of {a100}" in page.inner_text("#count")
        assert "sort=vram_gib" in page.url and "offset" not in page.url
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert not problems, problems


@pytest.mark.parametrize(("width", "height", "name"), [(1440, 900, "desktop"), (390, 844, "phone")])
def test_benchmarks_sort_page_and_fit(
    base_url: str, browser_page: tuple[Page, list[str]], width: int, height: int, name: str
) -> None:
    page, problems = browser_page
    page.set_viewport_size({"width": width, "height": height})
    try:
        page.goto(f"{base_url}/benchmarks?workload=resnet50-imagenet")
        page.wait_for_selector("#benchmarks-table tbody tr")
        fits(page, width)
        where = (
            "#benchmarks-table th.c-throughput_per_gpu a" if name == "desktop" else ".sort-links a"
        )
        page.locator(where).filter(has_text="Per GPU").first.click()
        page.wait_for_url("**sort=throughput_per_gpu&order=desc")
        first = [_number(v) for v in _column(page, "benchmarks-table", "c-throughput_per_gpu")]
        assert len(first) == 50 and first == sorted(first, reverse=True)
        fits(page, width)
        _page_shot(page, f"benchmarks-{name}", "h1")
        page.locator("nav.pager a[rel=next]").click()
        page.wait_for_url("**offset=50")
        assert "Showing 51–100 of" in page.inner_text("#count")
        second = [_number(v) for v in _column(page, "benchmarks-table", "c-throughput_per_gpu")]
        assert second and max(second) <= min(first)
        fits(page, width)
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert not problems, problems


@pytest.mark.parametrize(("width", "height", "name"), [(1440, 900, "desktop"), (390, 844, "phone")])
def test_gpu_page_from_the_catalog(
    base_url: str, browser_page: tuple[Page, list[str]], width: int, height: int, name: str
) -> None:
    page, problems = browser_page
    page.set_viewport_size({"width": width, "height": height})
    try:
        page.goto(f"{base_url}/gpus?family=H100")
        page.locator("#gpus-table a", has_text="H100 SXM 80GB").click()
        page.wait_for_selector("#offers-table tbody tr")
        assert page.inner_text("h1") == "H100 SXM 80GB"
        fits(page, width)
        usd = [_number(v) for v in _column(page, "offers-table", "c-usd_per_gpu_hour") if "$" in v]
        assert usd and usd == sorted(usd)
        assert page.locator("#measurements-table tbody tr").count() == 50
        if name == "desktop":
            _page_shot(page, "gpu-desktop", "p.crumbs", height=1500)
        else:
            _page_shot(page, "gpu-phone", "#offers")
        page.locator("#offers-table tbody tr td.c-instance a").first.click()
        page.wait_for_selector("h1")
        assert "/offers/" in page.url
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})
    assert not problems, problems
