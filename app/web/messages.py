"""Messages the pages translate from data rather than from a ``_()`` call in the source: the
labels of the form's choices that come from an enum's values (``adamw``, ``fsdp``) and the
catalog's market names. ``tests/test_web_i18n.py`` checks that the Chinese catalog has every
one of them, and every message ``pybabel extract`` finds (``docs/web.md``)."""

from __future__ import annotations

from app.web.forms import all_form_fields

#: The GPU catalog's ``market`` values (``seed_data/gpus.csv``).
MARKETS = ("consumer", "datacenter", "professional")


def dynamic_messages() -> set[str]:
    """Every message the pages show from data: form choice labels and catalog markets."""
    labels = {label for f in all_form_fields() for _, label in f.choices}
    return labels | set(MARKETS)
