"""The one redaction rule (scrapers/redact.py): what it masks, and that it leaves the rest."""

from __future__ import annotations

import logging
from urllib.parse import quote, quote_plus

import pytest

from scrapers.redact import MASK, RedactingFilter, redact

KEY = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"GET https://api.example/v1/x?api_key={KEY}&limit=5: HTTP 401",
            f"GET https://api.example/v1/x?api_key={MASK}&limit=5: HTTP 401",
        ),
        (f"Authorization: Bearer {KEY}\nnext", f"Authorization: {MASK}\nnext"),
        (f'{{"Authorization": "Bearer {KEY}"}}', f'{{"Authorization": "{MASK}"}}'),
        ("{'authorization': 'Basic dXNlcjpwYXNz'}", f"{{'authorization': '{MASK}'}}"),
        ('{"access_token": "abc.def.ghi", "n": 1}', f'{{"access_token": "{MASK}", "n": 1}}'),
        ("https://bob:hunter2@mirror.example/x", f"https://{MASK}@mirror.example/x"),
        (
            "X-Amz-Signature=abcdef0123&X-Amz-Credential=AKIA/x",
            f"X-Amz-Signature={MASK}&X-Amz-Credential={MASK}",
        ),
        (f"token {KEY} rejected", f"token {MASK} rejected"),
        (f"invalid key {KEY}", f"invalid key {MASK}"),  # the configured value itself
    ],
)
def test_redact_masks_credentials(text: str, expected: str) -> None:
    assert redact(text, [KEY]) == expected
    assert redact(redact(text, [KEY])) == expected  # stable when applied again (read side)


@pytest.mark.parametrize(
    "text",
    [
        "GET https://cloud.example/v2/plans?per_page=500&cursor=abc: HTTP 500 after 2 attempts",
        "vast m41001-1x: offer_key=m41001-1x price 0.31 USD/h",
        "unexpected payload shape: offers.0.key: Field required (1 error(s))",
        "timed out after 4 attempts (ReadTimeout)",
        "POST https://api.example/v1/oauth2/token: HTTP 401: invalid client",
    ],
)
def test_redact_leaves_ordinary_text(text: str) -> None:
    assert redact(text, ["abc"]) == text  # 3-character "secrets" are not masked literally


def test_url_encoded_secret_values_are_masked() -> None:
    key = "ab+cd/ef=gh12"
    assert (
        redact(f"next={quote(key, safe='')} q={quote_plus(key)}", [key]) == f"next={MASK} q={MASK}"
    )


def test_log_filter_redacts_arguments_and_tracebacks() -> None:
    record = logging.LogRecord(
        "x", logging.ERROR, __file__, 1, "failed: %s", (f"?key={KEY}",), None
    )
    try:
        raise RuntimeError(f"Authorization: Bearer {KEY}")
    except RuntimeError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    RedactingFilter([KEY]).filter(record)
    text = logging.Formatter().format(record)
    assert KEY not in text and "failed: ?key=[REDACTED]" in text and "RuntimeError" in text
