"""The pages' languages: English and Simplified Chinese (zh-CN), in the terms our users use.

The language comes from ``?lang=`` (a switch the URL keeps: every link of the page carries it
on, :func:`keep_lang`) or else from the browser's ``Accept-Language``. Messages are gettext
catalogs (``app/web/locale/<locale>/LC_MESSAGES/messages.po``, read with Babel at start-up, no
compiled ``.mo`` to keep in step); templates translate with Jinja2's i18n extension
(``{% trans %}``, ``_()``), whose ``gettext`` reads the page's language from the template
context (so one environment serves both languages, thread-safely). Python-side labels are
marked with :func:`N_` so that ``pybabel extract`` finds them (``docs/web.md``).
"""

from __future__ import annotations

import functools
import gettext as gettext_module
import io
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from babel import Locale
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from jinja2 import Environment, pass_context
from jinja2.runtime import Context

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DEFAULT_LANG = "en"
#: The languages the pages speak: URL value → gettext catalog / Babel locale.
LANGS = {"en": "en", "zh-CN": "zh_Hans_CN"}
#: Catalog directory of each language (English is the source language: no catalog).
CATALOGS = {"zh-CN": "zh_CN"}
#: Names of the languages in themselves, for the switch.
LANG_NAMES = {"en": "English", "zh-CN": "中文"}
LANG_PARAM = "lang"


def N_(message: str) -> str:
    """Mark ``message`` for extraction; it is translated where it is shown."""
    return message


def parse_lang(text: str) -> str | None:
    """The page language a ``lang`` value or a language tag names (``zh``, ``zh-CN``,
    ``zh_Hans``, ``en-US``, any case), else ``None``."""
    tag = text.strip().replace("_", "-").lower()
    if tag == "zh" or tag.startswith("zh-"):
        return "zh-CN"
    if tag == "en" or tag.startswith("en-"):
        return "en"
    return None


def accept_language(header: str | None) -> str:
    """The best page language for an ``Accept-Language`` header (RFC 9110 §12.5.4: tags by
    weight ``q``, in order among equals); :data:`DEFAULT_LANG` when none is spoken here."""
    ranked = []
    for i, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        for p in params.split(";"):
            key, _, value = p.strip().partition("=")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if tag and q > 0:
            ranked.append((-q, i, tag))
    for _, _, tag in sorted(ranked):
        lang = parse_lang(tag)
        if lang is not None:
            return lang
    return DEFAULT_LANG


@functools.cache
def translations(lang: str) -> gettext_module.NullTranslations:
    """The gettext catalog of ``lang`` (English: the messages as written)."""
    folder = CATALOGS.get(lang)
    if folder is None:
        return gettext_module.NullTranslations()
    with (LOCALE_DIR / folder / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalog = read_po(f)
    buf = io.BytesIO()
    write_mo(buf, catalog, use_fuzzy=False)
    buf.seek(0)
    return gettext_module.GNUTranslations(buf)


@functools.cache
def babel_locale(lang: str) -> Locale:
    """The Babel locale numbers and currencies of ``lang`` are formatted in."""
    return Locale.parse(LANGS.get(lang, "en"))


def gettext_for(lang: str, message: str) -> str:
    """``message`` in ``lang``."""
    return translations(lang).gettext(message)


def context_lang(ctx: Context | Mapping[str, object]) -> str:
    """The page language a template context carries (``lang``), English when none."""
    lang = ctx.get("lang")
    return lang if isinstance(lang, str) and lang in LANGS else DEFAULT_LANG


@pass_context
def _gettext(ctx: Context, message: str) -> str:
    return translations(context_lang(ctx)).gettext(message)


@pass_context
def _ngettext(ctx: Context, singular: str, plural: str, n: int) -> str:
    return translations(context_lang(ctx)).ngettext(singular, plural, n)


@pass_context
def _pgettext(ctx: Context, context: str, message: str) -> str:
    return translations(context_lang(ctx)).pgettext(context, message)


@pass_context
def _npgettext(ctx: Context, context: str, singular: str, plural: str, n: int) -> str:
    return translations(context_lang(ctx)).npgettext(context, singular, plural, n)


def install(env: Environment) -> None:
    """Add the i18n extension to ``env``, translating by each template's ``lang``."""
    env.add_extension("jinja2.ext.i18n")
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_callables(  # type: ignore[attr-defined]
        _gettext, _ngettext, newstyle=True, pgettext=_pgettext, npgettext=_npgettext
    )
    env.filters["keep_lang"] = keep_lang_filter
    env.globals["lang_url"] = lang_url


def with_lang(href: str, lang: str | None) -> str:
    """``href`` (a path on this site) carrying ``lang=…``; unchanged when ``lang`` is
    ``None`` (the language came from the browser) and for other sites and fragments."""
    if lang is None or not href.startswith("/") or href.startswith("//"):
        return href
    parts = urlsplit(href)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != LANG_PARAM]
    query.append((LANG_PARAM, lang))
    return urlunsplit(parts._replace(query=urlencode(query)))


@pass_context
def keep_lang_filter(ctx: Context, href: str) -> str:
    """Template filter: a link of the page keeps the URL's ``lang`` (:func:`with_lang`)."""
    explicit = ctx.get("lang_param")
    return with_lang(href, explicit if isinstance(explicit, str) else None)


@pass_context
def lang_url(ctx: Context, lang: str) -> str:
    """The current page in ``lang`` (the language switch)."""
    current = ctx.get("page_url")
    return with_lang(current if isinstance(current, str) else "/", lang)
