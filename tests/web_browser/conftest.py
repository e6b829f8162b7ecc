"""The browser tests' server and browser: one of each for the whole package."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.settings import Settings
from benchmarks.serving import free_port


@pytest.fixture(scope="package")
def base_url(seeded_url: str) -> Iterator[str]:
    """The app served by uvicorn on a free local port (in a thread)."""
    import threading
    import time

    import uvicorn

    from app.asgi import create_app

    server = uvicorn.Server(
        uvicorn.Config(
            create_app(Settings(database_url=seeded_url)),
            host="127.0.0.1",
            port=free_port(),
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
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="package")
def browser_page(base_url: str) -> Iterator[tuple[object, list[str]]]:
    """One Chromium page for every browser test of this package, which may only talk to the
    test server; collects problems (page errors, console errors, outside requests). Closed
    when the package's tests end: Playwright's sync API holds an event loop while it runs."""
    from playwright.sync_api import sync_playwright

    from tests.web_browser.helpers import CHROMIUM, CHROMIUM_ARGS, NO_CHROMIUM

    if CHROMIUM is None:
        pytest.fail(f"GPUCOST_REQUIRE_BROWSER=1 but {NO_CHROMIUM}")
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})

        def only_local(route: Any) -> None:
            url = route.request.url
            if url.startswith(base_url):
                route.continue_()
            else:
                problems.append(f"external request: {url}")
                route.abort()

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


@pytest.fixture
def home(base_url: str, browser_page: tuple[Any, list[str]]) -> tuple[Any, list[str]]:
    """The browser page opened on the rank form (``/``), with its problems so far."""
    page, problems = browser_page
    page.goto(f"{base_url}/")
    return page, problems
