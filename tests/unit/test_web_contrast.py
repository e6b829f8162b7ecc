"""The stylesheet's colours, in both schemes: text at least 4.5:1 against what it sits on,
borders of controls and badges at least 3:1 (WCAG 2.2 1.4.3 and 1.4.11), computed from the
custom properties of ``gpucost.css`` (axe-core checks the text it renders; this checks every
pair the stylesheet pairs, rendered or not)."""

from __future__ import annotations

import re

import pytest

from app.web.plugin import STATIC_DIR

CSS = (STATIC_DIR / "gpucost.css").read_text(encoding="utf-8")


def _block(css: str) -> dict[str, str]:
    found = re.findall(r"--([a-z0-9-]+):\s*#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b", css)
    return {k: "#" + (v if len(v) == 6 else "".join(c * 2 for c in v)) for k, v in found}


def schemes() -> dict[str, dict[str, str]]:
    light = _block(CSS[CSS.index(":root {") : CSS.index("}", CSS.index(":root {"))])
    start = CSS.index("@media (prefers-color-scheme: dark)")
    dark = {**light, **_block(CSS[start : CSS.index("}\n}", start)])}
    return {"light": light, "dark": dark}


def luminance(hex_colour: str) -> float:
    """WCAG 2.2 relative luminance of an sRGB colour."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


#: (foreground, background): text on its surface
TEXT = [
    ("fg", "bg"),
    ("fg", "card"),
    ("muted", "bg"),
    ("muted", "card"),
    ("muted", "bad-row"),
    ("muted", "accent-bg"),
    ("accent", "bg"),
    ("accent", "card"),
    ("accent", "accent-bg"),
    ("button-fg", "button"),
    ("good", "good-bg"),
    ("mid", "mid-bg"),
    ("bad", "bad-bg"),
    ("bad", "card"),
    ("gap", "gap-bg"),
    ("fg", "gap-bg"),
    ("fg", "bad-row"),
    ("fg", "bad-bg"),
    ("pin", "card"),
]
#: (border or mark, background): controls, badge outlines, chart marks
NON_TEXT = [
    ("control", "bg"),
    ("control", "card"),
    ("good", "card"),
    ("mid", "card"),
    ("bad", "card"),
    ("gap", "card"),
    ("accent", "card"),
    ("frontier", "card"),
    ("pt", "card"),
    ("button", "card"),
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_and_borders_contrast_in_both_schemes(scheme: str) -> None:
    colours = schemes()[scheme]
    low = [
        (fg, bg, round(contrast(colours[fg], colours[bg]), 2))
        for fg, bg in TEXT
        if contrast(colours[fg], colours[bg]) < 4.5
    ]
    low += [
        (fg, bg, round(contrast(colours[fg], colours[bg]), 2))
        for fg, bg in NON_TEXT
        if contrast(colours[fg], colours[bg]) < 3.0
    ]
    assert not low, f"{scheme}: {low}"


def test_the_dark_rank_button_reads() -> None:
    """Issue 30: the dark scheme's *Rank offers* button was white on light blue, 2.19:1."""
    dark = schemes()["dark"]
    assert contrast(dark["button-fg"], dark["button"]) >= 4.5
