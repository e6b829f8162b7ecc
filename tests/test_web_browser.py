"""End to end in headless Chromium: pick a preset, rank, read the chart, open an offer.

Drives the system ``chromium`` binary through Playwright (no browser download). Skipped, with
the reason in the test summary, only where no Chromium binary exists (CI sets
``GPUCOST_REQUIRE_BROWSER=1`` so that there a missing browser is a failure). With
``GPUCOST_SCREENSHOT=docs/screenshot-rank.png`` the tests also write the README screenshot and
``docs/screenshot-rank-llm-{desktop,phone}.png``.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from playwright.sync_api import Page, sync_playwright

from app.asgi import create_app
from app.settings import PROJECT_ROOT, Settings


def find_chromium() -> str | None:
    """The Chromium binary: ``GPUCOST_CHROMIUM``, else the usual names on the PATH."""
    candidates = [
        os.environ.get("GPUCOST_CHROMIUM"),
        "/usr/bin/chromium",
        *(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
    ]
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


CHROMIUM = find_chromium()
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: CI sets this so that a missing browser fails the run instead of skipping the test.
REQUIRED = os.environ.get("GPUCOST_REQUIRE_BROWSER") == "1"
NO_CHROMIUM = (
    "no Chromium binary found (apt-get install -y chromium, or set "
    "GPUCOST_CHROMIUM=/path/to/chromium)"
)

pytestmark = [
    pytest.mark.db,
    pytest.mark.skipif(CHROMIUM is None and not REQUIRED, reason=NO_CHROMIUM),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def base_url(seeded_url: str) -> Iterator[str]:
    """The app served by uvicorn on a free local port (in a thread)."""
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(Settings(database_url=seeded_url)),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser_page(base_url: str) -> Iterator[tuple[Page, list[str]]]:
    """A Chromium page that may only talk to the test server; collects problems."""
    if CHROMIUM is None:
        pytest.fail(f"GPUCOST_REQUIRE_BROWSER=1 but {NO_CHROMIUM}")
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1800, "height": 1040})

        def only_local(route: object) -> None:
            url = route.request.url  # type: ignore[attr-defined]
            if url.startswith(base_url):
                route.continue_()  # type: ignore[attr-defined]
            else:
                problems.append(f"external request: {url}")
                route.abort()  # type: ignore[attr-defined]

        page.route("**/*", only_local)
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on(
            "console",
            lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None,
        )
        try:
            yield page, problems
        finally:
            browser.close()


def test_rank_page_preset_to_offer(base_url: str, browser_page: tuple[Page, list[str]]) -> None:
    page, problems = browser_page
    page.goto(f"{base_url}/")
    page.select_option("#f-preset", "resnet50-imagenet")
    # the preset's values show up as placeholders of the empty fields
    assert page.get_attribute("#f-micro_batch_size", "placeholder") == "256"
    page.click("#submit")
    page.wait_for_selector("#results-table tbody tr")
    # the form state is the URL, without the empty fields
    assert "preset=resnet50-imagenet" in page.url
    assert "micro_batch_size=" not in page.url and "sort=" not in page.url

    rows = page.locator("#results-table tbody tr")
    assert rows.count() == 50
    costs = rows.locator("td.cost").all_inner_texts()
    assert all(re.match(r"^[$¥][0-9]", c.strip()) for c in costs), costs[:5]
    row_ids = rows.evaluate_all("rs => rs.map(r => r.dataset.offerId)")

    # one point per offer: the table's rows plus the Pareto offers ranked below them,
    # exactly the offers of the JSON twin that have a cost
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

    # hovering a point names the offer (the last one drawn is on top of any it overlaps)
    top = page.locator("svg.scatter circle.pt").last
    top.hover(timeout=5000)
    label = page.inner_text("#chart-label")
    assert "per epoch" in label and label == top.locator("title").text_content()

    screenshot = os.environ.get("GPUCOST_SCREENSHOT")
    if screenshot:
        page.locator("#results").scroll_into_view_if_needed()
        page.mouse.move(0, 0)
        page.screenshot(path=str(PROJECT_ROOT / screenshot))

    # open the first offer from the table
    link = rows.first.locator("td.instance > a")
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


#: every element's right edge, less the viewport width (positive: wider than the screen)
OVERFLOW_JS = """() => {
  const w = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > w + 1 || r.left < -1)) {
      out.push(`${el.tagName}.${el.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return {scroll: document.documentElement.scrollWidth, width: w, over: out.slice(0, 10)};
}"""


#: tick labels of the chart that stick out of the chart's box
CLIPPED_TICKS_JS = """() => {
  const svg = document.querySelector('svg.scatter').getBoundingClientRect();
  return [...document.querySelectorAll('svg.scatter text.tick')].filter(t => {
    const r = t.getBoundingClientRect();
    return r.left < svg.left - 0.5 || r.right > svg.right + 0.5;
  }).map(t => t.textContent);
}"""


def _shot(page: Page, name: str) -> None:
    """With ``GPUCOST_SCREENSHOT`` set, also write ``docs/screenshot-<name>.png``."""
    if os.environ.get("GPUCOST_SCREENSHOT"):
        page.evaluate("document.getElementById('results').scrollIntoView()")
        page.mouse.move(0, 0)
        page.screenshot(path=str(PROJECT_ROOT / "docs" / f"screenshot-{name}.png"))


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
        fit = page.evaluate(OVERFLOW_JS)
        assert fit["scroll"] <= width and not fit["over"], fit
        # an LLM ranking counts tokens, and says so where the figures are read
        first = page.locator("#results-table tbody tr").first
        cell = first.locator("td.c-samples_per_s")
        assert cell.is_visible()
        if name == "desktop":
            head = page.locator("#results-table th.c-samples_per_s")
            assert head.inner_text().strip().startswith("Tokens/s")
            # every decision column is on screen without scrolling sideways
            for key in (
                "gpu",
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
            page.locator("#results").scroll_into_view_if_needed()
        else:
            # a card per offer: the cell carries its label and the unit
            assert "tokens/s" in cell.inner_text()
            label = cell.evaluate("el => getComputedStyle(el, '::before').content")
            assert "tokens/s" in label
            # the chart's tick labels stay readable (at least 7 px on screen)
            tick = page.locator("svg.scatter text.tick").first.bounding_box()
            assert tick and tick["height"] >= 7, tick
            # and none is cut off at the chart's edges (the last x label used to be)
            clipped = page.evaluate(CLIPPED_TICKS_JS)
            assert not clipped, clipped
            page.locator("#results-table").scroll_into_view_if_needed()
        cols = ("c-price_per_hour", "c-epoch_hours", "c-cost_per_epoch", "c-memory")
        for c in cols:
            assert first.locator(f"td.{c}").is_visible(), c
        assert "GiB" in first.locator("td.c-memory").inner_text()
        assert re.search(r"(\d+ min|\d h|\d d)", first.locator("td.c-epoch_hours").inner_text())
        _shot(page, f"rank-llm-{name}")
    finally:
        page.set_viewport_size({"width": 1800, "height": 1040})
    assert not problems, problems


def test_empty_form_says_what_to_pick(base_url: str, browser_page: tuple[Page, list[str]]) -> None:
    page, problems = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    try:
        page.goto(f"{base_url}/")
        page.click("#submit")
        box = page.locator("#pick-workload")
        box.wait_for(state="visible", timeout=5000)
        assert "preset" in box.inner_text()
        # one of the suggested presets ranks at once
        page.locator("#results a.try-preset").first.click()
        page.wait_for_selector("#results-table tbody tr")
    finally:
        page.set_viewport_size({"width": 1800, "height": 1040})
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


def test_api_viewer_renders_offline(base_url: str, browser_page: tuple[Page, list[str]]) -> None:
    page, problems = browser_page
    page.goto(f"{base_url}/")
    page.click("header.top nav a[href='/schema/swagger']")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20000)
    assert page.locator(".swagger-ui .opblock").count() >= 10
    assert not problems, problems


def _fits(page: Page, width: int) -> None:
    fit = page.evaluate(OVERFLOW_JS)
    assert fit["scroll"] <= width and not fit["over"], fit


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
        _fits(page, width)
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
        _fits(page, width)
        _page_shot(page, f"gpus-{name}", "h1")
        # the next page continues the order
        page.locator("nav.pager a[rel=next]").click()
        page.wait_for_url("**offset=50")
        assert f"Showing 51–{n} of {n}" in page.inner_text("#count")
        rest = [_number(v) for v in _column(page, "gpus-table", "c-vram_gib")]
        assert len(rest) == n - 50 and max(rest) <= min(vram)
        _fits(page, width)
        # a filter from the form keeps the sort
        page.fill("#f-family", "A100")
        page.click("#filters button[type=submit]")
        page.wait_for_selector("#count")
        a100 = sum(1 for g in catalog if g["canonical_name"].startswith("A100 "))
        assert f"Showing 1–{a100} of {a100}" in page.inner_text("#count")
        assert "sort=vram_gib" in page.url and "offset" not in page.url
    finally:
        page.set_viewport_size({"width": 1800, "height": 1040})
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
        _fits(page, width)
        where = (
            "#benchmarks-table th.c-throughput_per_gpu a" if name == "desktop" else ".sort-links a"
        )
        page.locator(where).filter(has_text="Per GPU").first.click()
        page.wait_for_url("**sort=throughput_per_gpu&order=desc")
        first = [_number(v) for v in _column(page, "benchmarks-table", "c-throughput_per_gpu")]
        assert len(first) == 50 and first == sorted(first, reverse=True)
        _fits(page, width)
        _page_shot(page, f"benchmarks-{name}", "h1")
        page.locator("nav.pager a[rel=next]").click()
        page.wait_for_url("**offset=50")
        assert "Showing 51–100 of" in page.inner_text("#count")
        second = [_number(v) for v in _column(page, "benchmarks-table", "c-throughput_per_gpu")]
        assert second and max(second) <= min(first)
        _fits(page, width)
    finally:
        page.set_viewport_size({"width": 1800, "height": 1040})
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
        _fits(page, width)
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
        page.set_viewport_size({"width": 1800, "height": 1040})
    assert not problems, problems
