"""The one redaction rule for provider error texts, URLs and logs (credentials never leave).

:func:`redact` is applied before a provider's error text or URL is logged, stored on a
refresh-run row, printed by ``gpucost refresh`` or shown by ``/v1/refresh-runs`` and the page
banner (the read side applies it again, pattern-only, for rows stored before it existed).

What it removes (each replaced by :data:`MASK`):

- the configured secret values themselves (``GPUCOST_SCRAPER_*_API_KEY``), also URL-encoded;
- ``Authorization`` / ``Proxy-Authorization`` / ``X-Api-Key``-style header values, and any
  ``Bearer``/``Basic``/``Token`` credential;
- credential-named parameters in query strings, form bodies, JSON and ``name: value`` text:
  ``api_key``, ``apikey``, ``key``, ``token``, ``access_token``, ``secret``, ``password``,
  ``signature``, AWS ``X-Amz-Signature``/``X-Amz-Credential``/``X-Amz-Security-Token`` …;
- the user-info part of URLs (``https://user:pass@host``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MASK = "[REDACTED]"

#: Parameter / field names whose values are credentials (case-insensitive, whole names).
_NAMES = (
    r"(?:x[-_])?api[-_]?key|apikey|api[-_]?token|access[-_]?key(?:[-_]id)?|secret[-_]?key|"
    r"key|token|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|auth|"
    r"client[-_]?secret|secret|password|passwd|pwd|signature|sig|session[-_]?token|"
    r"x[-_]amz[-_](?:signature|credential|security[-_]token)|private[-_]?key"
)
_HEADER = r"(?:proxy-)?authorization|x[-_]api[-_]key|api[-_]key|x[-_]auth[-_]token|cookie"

_NOT_MASKED = r"(?!\[REDACTED\])"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host → scheme://[REDACTED]@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@:]+:[^/\s@]*@"), rf"\1{MASK}@"),
    # "Authorization": "Bearer abc" / 'authorization': '...' (JSON or Python repr of headers)
    (
        re.compile(rf"""(?i)(["']?(?:{_HEADER})["']?\s*[:=]\s*)(["'])(?:(?!\2).)*\2"""),
        rf"\1\2{MASK}\2",
    ),
    # Authorization: Bearer abc (header text, up to the end of the line)
    (re.compile(rf"(?i)\b((?:{_HEADER})\s*:\s*+)(?:{_NOT_MASKED}[^\r\n,;}}\]])+"), rf"\1{MASK}"),
    # any remaining Bearer/Basic/Token credential
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    # "api_key": "abc" (JSON / repr)
    (
        re.compile(rf"""(?i)(["'](?:{_NAMES})["']\s*:\s*)(["'])(?:(?!\2).)*\2"""),
        rf"\1\2{MASK}\2",
    ),
    # api_key=abc (query string, form body, free text) and api_key: abc; not a URL's last path
    # segment followed by a colon ("POST …/oauth2/token: HTTP 401")
    (
        re.compile(
            rf"(?i)(?<![A-Za-z0-9_./-])((?:{_NAMES})\s*(?:=|:\s*+)){_NOT_MASKED}[^&\s\"',;}}\]]+"
        ),
        rf"\1{MASK}",
    ),
)

#: Configured values shorter than this are not masked literally (a 1-3 character "key" would
#: mask ordinary text); patterns still apply.
MIN_SECRET_CHARS = 4


def redact(text: str | None, secrets: Iterable[str | None] = ()) -> str | None:
    """``text`` with every credential replaced by :data:`MASK` (see the module docstring).

    Args:
        text: an error message, URL, log line or response snippet (``None`` passes through).
        secrets: literal secret values to mask wherever they appear (the configured API keys).
    """
    if not text:
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len)[::-1]:
        for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
            text = text.replace(form, MASK)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message (arguments merged) and its traceback.

    Installed on the ``httpx`` logger and the refresh loggers by
    :func:`install_log_redaction`, so request lines such as ``HTTP Request: GET
    https://host/x?api_key=…`` never reach a handler with the credential.
    """

    def __init__(self, secrets: Iterable[str | None] = ()):
        super().__init__()
        self.secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops it."""
        message = record.getMessage()
        clean = redact(message, self.secrets)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(formatted, self.secrets)
            record.exc_info = None
            record.msg = f"{record.msg}\n{record.exc_text}"
            record.exc_text = None
        return True


#: Loggers whose records may carry provider URLs or error texts.
REDACTED_LOGGERS = ("httpx", "httpcore", "scrapers", "app.services.refresh")


def install_log_redaction(secrets: Iterable[str | None] = ()) -> None:
    """Put one :class:`RedactingFilter` (with ``secrets``) on each of :data:`REDACTED_LOGGERS`.

    Idempotent: a filter installed earlier is replaced (so the newest keys apply).
    """
    secrets = tuple(secrets)
    for name in REDACTED_LOGGERS:
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, RedactingFilter)]:
            logger.removeFilter(old)
        logger.addFilter(RedactingFilter(secrets))
