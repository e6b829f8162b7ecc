"""Display formatting for the web pages (Jinja filters): money, durations, counts, links.

Numbers and money are formatted for the page's language with Babel's CLDR data (grouping,
decimal and minus signs, currency symbols: ``$`` and ``CN¥`` in English, ``US$`` and ``¥`` in
Chinese), read once per language and currency; the number of digits shown is ours (three
significant figures). Every function takes the
page language as ``lang`` (``en`` or ``zh-CN``); the Jinja filters read it from the page.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from babel.numbers import (
    format_compact_decimal,
    format_currency,
    get_decimal_symbol,
    get_group_symbol,
    get_minus_sign_symbol,
)
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup, escape

from app.model.cost import price_per_gpu_hour
from app.price_age import age_text
from app.web.i18n import N_, babel_locale, context_lang, translations

DASH = "—"
#: Duration units by language (``hours``).
DURATION_UNITS = {
    "en": {"s": " s", "min": " min", "h": " h", "d": " d"},
    "zh-CN": {"s": " 秒", "min": " 分钟", "h": " 小时", "d": " 天"},
}

_URL = re.compile(r"https?://[^\s<>\"'()]+[^\s<>\"'().,;:!?]")


def _digits(value: float, sig: int) -> str:
    """``value`` rounded to ``sig`` significant digits (whole numbers to units), as plain
    digits without grouping and without trailing zeros (``0.0412``, ``1235``)."""
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= sig - 1:
        return str(round(value))
    text = f"{value:.{sig - 1 - magnitude}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@functools.cache
def _number_symbols(lang: str) -> tuple[str, str, str]:
    """The locale's decimal sign, group separator and minus sign (CLDR, through Babel)."""
    locale = babel_locale(lang)
    return get_decimal_symbol(locale), get_group_symbol(locale), get_minus_sign_symbol(locale)


@functools.cache
def _currency_affixes(currency: str, lang: str) -> tuple[str, str]:
    """What the locale writes before and after an amount of ``currency`` (``US$``, ``¥``),
    from Babel's own formatting of one unit (asked once per currency and language: Babel's
    format functions cost some 60 µs a call, and a ranking page formats two thousand
    amounts)."""
    sample = format_currency(
        Decimal(1), currency, format="¤#,##0", locale=babel_locale(lang), currency_digits=False
    )
    before, _, after = sample.partition("1")
    return before, after


def _localised_digits(text: str, lang: str) -> str:
    """Plain digits (``-1234.5``) grouped and signed as the locale writes them."""
    decimal, group, minus = _number_symbols(lang)
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("-").partition(".")
    out = f"{int(whole):,}".replace(",", group) + (decimal + fraction if fraction else "")
    return minus + out if negative else out


def num(value: float | int | None, sig: int = 3, lang: str = "en") -> str:
    """A number with ``sig`` significant digits and thousands separators (``1,235``, ``0.0412``)."""
    if value is None:
        return DASH
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else DASH
    if value == 0:
        return "0"
    return _localised_digits(_digits(value, sig), lang)


def money(value: float | None, currency: str = "USD", lang: str = "en") -> str:
    """``$1,234``, ``$12.34``, ``CN¥0.75`` (``¥0.75`` in Chinese), ``$0.0412``."""
    if value is None or not math.isfinite(value):
        return DASH
    if abs(value) >= 100:
        text = f"{value:.0f}"
    elif abs(value) >= 1 or value == 0:
        text = f"{value:.2f}"
    else:
        text = _digits(value, 3)
    return _currency(text, currency, lang)


def _currency(text: str, currency: str, lang: str) -> str:
    before, after = _currency_affixes(currency, lang)
    digits = _localised_digits(text, lang)
    minus = _number_symbols(lang)[2]
    if digits.startswith(minus):
        return f"{minus}{before}{digits[len(minus) :]}{after}"
    return f"{before}{digits}{after}"


def money_short(value: float, currency: str = "USD", lang: str = "en") -> str:
    """Compact money for axis ticks: ``$0.02``, ``$1``, ``$1,200``."""
    if value == 0:
        return _currency("0", currency, lang)
    return _currency(_digits(value, 3), currency, lang)


def hours(value: float | None, lang: str = "en") -> str:
    """A duration given in hours: ``40 s``, ``23 min``, ``13.9 h``, ``14.6 d`` (in Chinese
    ``23 分钟``, ``13.9 小时``)."""
    if value is None:
        return DASH
    if not math.isfinite(value):
        return "∞"
    if value == 0:
        return "0"
    unit = DURATION_UNITS.get(lang, DURATION_UNITS["en"])
    minutes = value * 60
    if minutes < 1:
        return f"{max(minutes * 60, 1):.0f}{unit['s']}"
    if minutes < 59.5:
        return f"{minutes:.0f}{unit['min']}"
    if value < 48:
        return f"{num(value, 3, lang)}{unit['h']}"
    days = value / 24
    return (
        f"{num(days, 3, lang)}{unit['d']}" if days < 1000 else f"{num(days, 12, lang)}{unit['d']}"
    )


def money_range(low: float | None, high: float | None, currency: str, lang: str = "en") -> str:
    """``$93–299``: a cost range, each end as :func:`money`, the currency symbol once when
    both ends carry it in front."""
    if low is None or high is None:
        return DASH
    lo, hi = money(low, currency, lang), money(high, currency, lang)
    symbol = lo.rstrip("0123456789.,")
    if symbol and hi.startswith(symbol):
        hi = hi[len(symbol) :]
    return f"{lo}–{hi}"


def hours_range(low: float | None, high: float | None, lang: str = "en") -> str:
    """``21–28 min``: a duration range, each end as :func:`hours`, the unit once when both
    ends have the same one (``59 min–1.32 h`` keeps both)."""
    if low is None or high is None:
        return DASH
    lo, hi = hours(low, lang), hours(high, lang)
    lo_num, _, lo_unit = lo.partition(" ")
    if lo_unit and hi.endswith(" " + lo_unit):
        return f"{lo_num}–{hi}"
    return f"{lo}–{hi}"


def compact(value: float | None, lang: str = "en") -> str:
    """A large count in few characters for the locale (``4.5M`` in English, ``450万`` in
    Chinese: CLDR's compact form, three significant figures); below 100,000 as :func:`num`."""
    if value is None or not math.isfinite(value) or abs(value) < 100_000:
        return num(value, 3, lang)
    locale = babel_locale(lang)
    whole = str(format_compact_decimal(value, fraction_digits=0, locale=locale))
    int_digits = sum(c.isdigit() for c in whole)
    decimals = max(0, 3 - int_digits)
    return str(format_compact_decimal(value, fraction_digits=decimals, locale=locale))


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


_AGE = re.compile(r"seen (\d+) ([dh]) ago")
#: the phrases of :func:`app.price_age.age_text`, for the catalog
AGE_MESSAGES = (N_("seen {n} d ago"), N_("seen {n} h ago"), N_("seen just now"), N_("undated"))


def price_age(age: float | None, lang: str = "en") -> str:
    """A price's age in words (:func:`app.price_age.age_text`: ``seen 23 d ago``), in the
    page's language (``23 天前记录``)."""
    text = age_text(age)
    if lang == "en":
        return text
    _ = translations(lang).gettext
    m = _AGE.fullmatch(text)
    if m is None:
        return _(text)
    message = AGE_MESSAGES[0] if m.group(2) == "d" else AGE_MESSAGES[1]
    return _(message).format(n=m.group(1))


def _localised(func: Callable[..., str]) -> Callable[..., str]:
    """A template filter of ``func`` in the page's language (``lang`` of the context)."""

    @pass_context
    def run(ctx: Context, value: Any, *args: Any) -> str:
        return func(value, *args, lang=context_lang(ctx))

    return run


FILTERS: dict[str, Callable[..., Any]] = {
    "per_gpu_hour": price_per_gpu_hour,
    "num": _localised(num),
    "money": _localised(money),
    "money_short": _localised(money_short),
    "money_range": _localised(money_range),
    "hours": _localised(hours),
    "hours_range": _localised(hours_range),
    "compact": _localised(compact),
    "gpus": gpus,
    "when": when,
    "linkify": linkify,
    "source_link": source_link,
    "short_sources": short_sources,
    "warning_code": warning_code,
    "price_age_text": _localised(lambda age, lang="en": price_age(age, lang)),
}
