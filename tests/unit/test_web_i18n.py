"""The Chinese catalog has every message the pages show, with the same placeholders."""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from app.web.i18n import CATALOGS, LOCALE_DIR
from app.web.messages import dynamic_messages

WEB = Path(__file__).resolve().parents[2] / "app" / "web"
#: as app/web/babel.cfg says (Babel's default keywords include N_ and pgettext)
METHODS = [
    ("**.py", "python"),
    ("**/templates/**.html", "jinja2"),
]
OPTIONS = {"**/templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "true"}}
PLACEHOLDER = re.compile(r"%\([a-z_]+\)s|\{[a-z_]+\}")


def extracted() -> set[str | tuple[str, ...]]:
    out: set[str | tuple[str, ...]] = set()
    for _file, _line, message, _comments, context in extract_from_dir(
        WEB, METHODS, options_map=OPTIONS
    ):
        if context:
            out.add((context, message if isinstance(message, str) else message[0]))
        else:
            out.add(message if isinstance(message, str) else message[0])
    return out


def catalog(lang: str) -> dict[str | tuple[str, ...], list[str]]:
    path = LOCALE_DIR / CATALOGS[lang] / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as f:
        po = read_po(f)
    out: dict[str | tuple[str, ...], list[str]] = {}
    for m in po:
        if not m.id or m.fuzzy:
            continue
        key = m.id if isinstance(m.id, str) else m.id[0]
        strings = [m.string] if isinstance(m.string, str) else list(m.string)
        out[(m.context, key) if m.context else key] = strings
    return out


def test_every_message_has_a_chinese_translation() -> None:
    have = catalog("zh-CN")
    wanted = extracted() | dynamic_messages()
    missing = sorted(str(m) for m in wanted if not any(have.get(m, [""])))
    assert not missing, f"no zh-CN translation (pybabel update, docs/web.md): {missing[:20]}"


def test_translations_keep_every_placeholder() -> None:
    for message, strings in catalog("zh-CN").items():
        source = message[1] if isinstance(message, tuple) else message
        for text in strings:
            assert sorted(PLACEHOLDER.findall(text)) == sorted(PLACEHOLDER.findall(source)), (
                source,
                text,
            )
            # newstyle gettext formats every string with %: a lone % would break the page
            assert "%" not in PLACEHOLDER.sub("", text).replace("%%", "") or "{" in source, text
