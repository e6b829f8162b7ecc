"""What the browser tests share: finding the system Chromium, axe-core, the sideways-overflow
check and the screenshots of ``docs/``.

Drives the system ``chromium`` binary through Playwright (no browser download). The browser
tests are skipped, with the reason in the test summary, only where no Chromium binary exists
(CI sets ``GPUCOST_REQUIRE_BROWSER=1`` so that there a missing browser is a failure). axe-core
comes from the npm registry (``npm install --prefix .ci/node axe-core@4``, as ``.ci/run``
does), never from a CDN; without it the accessibility test skips, except in CI. With
``GPUCOST_SCREENSHOT=1`` the tests also write the screenshots of ``docs/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.settings import PROJECT_ROOT


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
MARKS = [
    pytest.mark.db,
    pytest.mark.skipif(CHROMIUM is None and not REQUIRED, reason=NO_CHROMIUM),
]

#: axe-core's browser build, installed from the npm registry by .ci/run
AXE = Path(
    os.environ.get("GPUCOST_AXE", PROJECT_ROOT / ".ci/node/node_modules/axe-core/axe.min.js")
)

#: Each element's visible part (its box cut by every ancestor that clips) that lies outside
#: the window, and the page's scroll width: a page overflows sideways when either is wider
#: than the window.
OVERFLOW_JS = """() => {
  const w = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || (r.right <= w + 1 && r.left >= -1)) continue;
    let left = r.left, right = r.right;
    for (let a = el.parentElement; a && right > left; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX !== 'visible' || s.clip !== 'auto') {
        const b = a.getBoundingClientRect();
        left = Math.max(left, b.left); right = Math.min(right, b.right);
      }
    }
    if (right > left && (right > w + 1 || left < -1)) {
      out.push(`${el.tagName}.${el.className} ${Math.round(left)}..${Math.round(right)}`);
    }
  }
  return {scroll: document.documentElement.scrollWidth, width: w, over: out.slice(0, 10)};
}"""


def fits(page: Any, width: int) -> None:
    """The page shows no sideways scroll at ``width``."""
    fit = page.evaluate(OVERFLOW_JS)
    assert fit["scroll"] <= width and not fit["over"], (page.url, fit)


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not AXE.is_file():
        if REQUIRED:
            pytest.fail(f"GPUCOST_REQUIRE_BROWSER=1 but no axe-core at {AXE}")
        pytest.skip(f"axe-core not installed ({AXE}): npm install --prefix .ci/node axe-core@4")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations'], runOnly: {
            type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa',
                                  'best-practice']}})).violations
          .filter(v => v.impact === 'serious' || v.impact === 'critical')
          .map(v => ({id: v.id, impact: v.impact,
                      nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' +
                                                     (n.failureSummary || '').slice(0, 200))}))"""
    )
    return found


def screenshot(page: Any, name: str, selector: str | None = None, full: bool = False) -> None:
    """With ``GPUCOST_SCREENSHOT`` set, write ``docs/screenshot-<name>.png``: the window (from
    ``selector`` down when given), or the whole page."""
    if not os.environ.get("GPUCOST_SCREENSHOT"):
        return
    page.mouse.move(0, 0)
    if selector:
        page.evaluate(f"document.querySelector('{selector}').scrollIntoView()")
        page.evaluate("window.scrollBy(0, -8)")
    else:
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(PROJECT_ROOT / "docs" / f"screenshot-{name}.png"), full_page=full)
