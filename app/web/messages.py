"""Messages the pages translate from data rather than from a ``_()`` call in the source: the
labels of the form's choices that come from an enum's values (``adamw``, ``fsdp``), the
catalog's market names, and the words of price kinds, age tiers and price sources.
``tests/unit/test_web_i18n.py`` checks that the Chinese catalog has every one of them, and
every message ``pybabel extract`` finds (``docs/web.md``)."""

from __future__ import annotations

import functools
from typing import Any

from app.web.forms import all_form_fields
from app.web.i18n import translations

#: The GPU catalog's ``market`` values (``seed_data/gpus.csv``).
MARKETS = ("consumer", "datacenter", "professional")
#: Price kinds (spaces for underscores) and age tiers (app/price_age.py), and where a
#: provider's prices come from (app/services/providers.py), as the pages show them.
PRICE_WORDS = (
    "scraped",
    "hand kept",
    "price index",
    "quoted example",
    "catalog",
    "fresh",
    "aging",
    "old",
    "undated",
    "its API",
    "a public catalog",
    "seed data",
)


def dynamic_messages() -> set[str]:
    """Every message the pages show from data: form choice labels and catalog markets."""
    labels = {label for f in all_form_fields() for _, label in f.choices}
    return labels | set(MARKETS) | set(PRICE_WORDS)


@functools.cache
def form_texts(lang: str) -> dict[str, dict[str, Any]]:
    """The ranking form's words in ``lang``, once per language (a page shows some 300 of
    them): each field's ``label``, ``unit``, ``hint`` and ``choices`` ((value, label) pairs)."""
    _ = translations(lang).gettext
    return {
        f.name: {
            "label": _(f.label),
            "unit": _(f.unit) if f.unit else "",
            "hint": _(f.hint) if f.hint else "",
            "choices": tuple((value, _(label)) for value, label in f.choices),
        }
        for f in all_form_fields()
    }
