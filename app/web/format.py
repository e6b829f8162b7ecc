"""Display formatting for the web pages (Jinja filters): money, durations, counts, links."""

from __future__ import annotations

import datetime as dt
import math
import re

from markupsafe import Markup, escape

from app.estimate.cost import price_per_gpu_hour
from app.price_age import age_text

CURRENCY_SYMBOLS = {"USD": "$", "CNY": "¥", "EUR": "€", "GBP": "£"}
DASH = "—"

_URL = re.compile(r"https?://[^\s<>\"'()]+[^\s<>\"'().,;:!?]")


def num(value: float | int | None, sig: int = 3) -> str:
    """A number with ``sig`` significant digits and thousands separators (``1,235``, ``0.0412``)."""
    if value is None:
        return DASH
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else DASH
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= sig - 1:
        return f"{round(value):,}"
    decimals = sig - 1 - magnitude
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def money(value: float | None, currency: str = "USD") -> str:
    """``$1,234``, ``$12.34``, ``¥0.75``, ``$0.0412``; unknown currencies get the code."""
    if value is None or not math.isfinite(value):
        return DASH
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 1 or value == 0:
        text = f"{value:,.2f}"
    else:
        text = num(value, 3)
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{symbol}{text}" if symbol else f"{text} {currency}"


def money_short(value: float, currency: str = "USD") -> str:
    """Compact money for axis ticks: ``$0.02``, ``$1``, ``$1,200``."""
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{symbol}{num(value, 3)}" if symbol else f"{num(value, 3)} {currency}"


def hours(value: float | None) -> str:
    """A duration given in hours: ``40 s``, ``23 min``, ``13.9 h``, ``14.6 d``."""
    if value is None:
        return DASH
    if not math.isfinite(value):
        return "∞"
    if value == 0:
        return "0"
    minutes = value * 60
    if minutes < 1:
        return f"{max(minutes * 60, 1):.0f} s"
    if minutes < 59.5:
        return f"{minutes:.0f} min"
    if value < 48:
        return f"{num(value, 3)} h"
    days = value / 24
    return f"{num(days, 3)} d" if days < 1000 else f"{days:,.0f} d"


def gpus(count: float) -> str:
    """GPU count without a trailing ``.0`` (fractions stay: ``0.5``)."""
    return f"{count:g}"


def when(value: str | dt.datetime | dt.date | None) -> str:
    """A timestamp (ISO string or datetime) as ``2026-11-28 03:00 UTC``; dates as is."""
    if value is None:
        return DASH
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            return value
        value = parsed
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        if (value.hour, value.minute, value.second) == (0, 0, 0):
            return value.date().isoformat()
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return value.isoformat()


def linkify(text: str | None) -> Markup:
    """Escape ``text`` and turn its http(s) URLs into links (other schemes stay text)."""
    if not text:
        return Markup(DASH)
    out = []
    last = 0
    for m in _URL.finditer(text):
        out.append(escape(text[last : m.start()]))
        url = m.group(0)
        short = url if len(url) <= 70 else url[:45] + "…" + url[-20:]
        out.append(
            Markup('<a href="{}" rel="noopener noreferrer nofollow">{}</a>').format(url, short)
        )
        last = m.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


#: ``owner/repo@commit:path (remark)``: how benchmark rows cite a file of a GitHub repository
_REPO_REF = re.compile(r"^([\w.-]+/[\w.-]+)@([0-9a-f]{7,40}):(\S+)(.*)$", re.DOTALL)


def source_link(ref: str | None) -> Markup:
    """A source reference with its link: ``owner/repo@commit:path (remark)`` links the file at
    that commit on GitHub (``https://github.com/owner/repo/blob/commit/path``), the remark
    after it stays text; anything else as :func:`linkify`."""
    m = _REPO_REF.match(ref or "")
    if not m:
        return linkify(ref)
    repo, commit, path, rest = m.groups()
    href = f"https://github.com/{repo}/blob/{commit}/{path}"
    anchor = Markup('<a href="{}" rel="noopener noreferrer nofollow" title="{}">{}</a>').format(
        href, f"{repo}@{commit}:{path}", f"{repo} · {path}"
    )
    return anchor + (Markup("<small>{}</small>").format(rest.strip()) if rest.strip() else "")


def short_sources(text: str | None) -> Markup:
    """A compact form of a ``;``-separated source list for table cells: each URL as a link
    named by its host (``techpowerup.com``), each other reference cut to its first 40
    characters; the full list is on the row's own page."""
    if not text:
        return Markup(DASH)
    parts = []
    for segment in (s.strip() for s in text.split(";")):
        if not segment:
            continue
        urls = _URL.findall(segment)
        if urls:
            for url in urls:
                host = re.sub(r"^https?://(www\.)?", "", url).split("/", 1)[0]
                parts.append(
                    Markup(
                        '<a href="{}" rel="noopener noreferrer nofollow" title="{}">{}</a>'
                    ).format(url, url, host)
                )
        else:
            short = segment if len(segment) <= 40 else segment[:39] + "…"
            parts.append(Markup('<span title="{}">{}</span>').format(segment, short))
    return Markup(" · ").join(parts)


def warning_code(warning: object) -> str:
    """A warning's stable code: its ``code`` attribute, or the part of ``"code: text"`` before
    the colon."""
    code = getattr(warning, "code", None)
    if code is not None:
        return str(code)
    return str(warning).split(":", 1)[0]


FILTERS = {
    "per_gpu_hour": price_per_gpu_hour,
    "num": num,
    "money": money,
    "money_short": money_short,
    "hours": hours,
    "gpus": gpus,
    "when": when,
    "linkify": linkify,
    "source_link": source_link,
    "short_sources": short_sources,
    "warning_code": warning_code,
    "price_age_text": age_text,
}
