"""What every page shares: its language, its error list, the freshness banner, the request's
session, reference data and settings (:class:`PageEnv`), and the base controller that renders
every error as an HTML page (:class:`PageController`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from litestar import Controller, Request, Response
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException, ValidationException
from litestar.response import Template
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_500_INTERNAL_SERVER_ERROR
from sqlalchemy.orm import Session

from app.interface.deps import DEPENDENCIES
from app.interface.query import flat_field
from app.services.estimates import HardwareError
from app.services.freshness import ProviderFreshness, provider_freshness
from app.services.offers import FilterError
from app.services.providers import provider_coverage
from app.services.reference import ReferenceData
from app.services.snapshot import per_version
from app.services.workloads import WorkloadError
from app.settings import Settings
from app.web.forms import all_form_fields
from app.web.i18n import LANG_NAMES, N_, accept_language, parse_lang, translations

#: Labels of fields for error messages ("Micro-batch per GPU (micro_batch_size): …").
FIELD_LABELS = {f.name: f.label for f in all_form_fields()} | {
    "preset": N_("Preset"),
    "order": N_("Row order"),
    "q": N_("Search"),
    "ids": N_("Benchmark ids"),
    "lang": N_("Language"),
    "pin": N_("Pinned offers"),
    "base": N_("Preset the form showed"),
}
NVLINK_LABELS = {"nvlink": "NVLink", "nvswitch": "NVSwitch", "sxm": "SXM", "pcie": "PCIe"}
#: Parameters of the pages themselves (not of the API): the language, the ranking page's
#: pinned rows and the preset whose values its form showed.
PAGE_PARAMS = ("lang", "pin", "base")


def banner(entries: list[ProviderFreshness], stale_after_hours: float) -> dict[str, Any]:
    """The freshness banner: per-provider lines plus a one-line summary."""
    refreshed = [e for e in entries if e.last_ok_at is not None]
    seed_only = [e for e in entries if e.last_ok_at is None]
    seen = sorted(e.seen_on for e in seed_only if e.seen_on is not None)
    last_ok = [e.last_ok_at for e in refreshed if e.last_ok_at is not None]
    return {
        "entries": entries,
        "stale": [e for e in entries if e.stale],
        "refreshed": refreshed,
        "seed_only": seed_only,
        "seed_oldest": seen[0] if seen else None,
        "seed_newest": seen[-1] if seen else None,
        "seed_undated": sum(1 for e in seed_only if e.seen_on is None),
        "latest_ok": max(last_ok) if last_ok else None,
        "stale_after_hours": stale_after_hours,
    }


@dataclass(frozen=True, slots=True)
class PageEnv:
    """What a page reads: the request's database session, the reference data (catalog,
    benchmarks, presets, rates) and the settings."""

    session: Session
    ref: ReferenceData
    settings: Settings

    def banner(self) -> dict[str, Any]:
        """The freshness banner, made once per catalog version (and minute: ages move)."""

        def make() -> dict[str, Any]:
            hours = self.settings.stale_after_hours
            out = banner(provider_freshness(self.session, hours), hours)
            coverage = provider_coverage(self.session, hours)
            out.update(
                price_ages=coverage.price_ages, coverage={c.slug: c for c in coverage.providers}
            )
            return out

        return per_version(self.ref, "banner", self.settings.stale_after_hours, make)


def provide_page_env(
    session: NamedDependency[Session],
    ref: NamedDependency[ReferenceData],
    settings: NamedDependency[Settings],
) -> PageEnv:
    """The ``env`` dependency of every page handler."""
    return PageEnv(session, ref, settings)


def with_unknown(keys: tuple[str, ...], form: Mapping[str, str]) -> tuple[str, ...]:
    """``keys`` plus any unknown parameters given, so the JSON twin gets the same request."""
    return (*keys, *(k for k in form if k not in keys and k not in PAGE_PARAMS))


def error_list(
    errors: list[tuple[str, str]], lang: str, labels: Mapping[str, str] = FIELD_LABELS
) -> list[dict[str, str]]:
    """Errors for the page: each field's label in the page's language (an unknown parameter
    is named as given)."""
    _ = translations(lang).gettext
    return [
        {"field": k, "label": _(labels[k]) if k in labels else k, "message": m} for k, m in errors
    ]


def page_status(errors: list[tuple[str, str]]) -> int:
    """A page with errors is a 400 (the form shown again, naming them), else a 200."""
    return HTTP_400_BAD_REQUEST if errors else 200


def raw_query(request: Request) -> dict[str, str]:
    """The query parameters as given (the last value of a repeated one)."""
    return dict(request.query_params.items())


def given(raw: Mapping[str, str]) -> dict[str, str]:
    """The non-empty parameters, stripped: what the form shows again."""
    return {k: v.strip() for k, v in raw.items() if isinstance(v, str) and v.strip()}


def gpu_url(name: str) -> str:
    """The page of one catalog GPU (``/gpus/H100%20SXM%2080GB``)."""
    return "/gpus/" + quote(name, safe="")


@dataclass(frozen=True, slots=True)
class PageLanguage:
    """The page's language: ``lang`` (``en``/``zh-CN``); ``param`` the ``lang`` the URL gave
    (which every link then keeps), ``None`` when it came from ``Accept-Language``; ``error``
    for a ``lang`` value no page speaks."""

    lang: str
    param: str | None
    error: str | None = None

    def context(self, request: Request) -> dict[str, Any]:
        """What every template needs for its language and the language switch."""
        query = [(k, v) for k, v in request.query_params.items() if k != "lang"]
        here = request.url.path + (f"?{urlencode(query)}" if query else "")
        return {
            "lang": self.lang,
            "lang_param": self.param,
            "html_lang": self.lang,
            "page_url": here,
            "lang_names": LANG_NAMES,
        }


def page_language(request: Request) -> PageLanguage:
    """``?lang=`` (kept by the page's links), else the browser's ``Accept-Language``."""
    given = request.query_params.get("lang")
    browser = accept_language(request.headers.get("accept-language"))
    if not given:
        return PageLanguage(browser, None)
    lang = parse_lang(given)
    if lang is None:
        return PageLanguage(browser, None, f"must be one of {', '.join(LANG_NAMES)}")
    return PageLanguage(lang, lang)


def _html_error(request: Request, exc: Exception) -> Response[Any]:
    """Errors on pages render as HTML (never a traceback)."""
    language = page_language(request)
    _ = translations(language.lang).gettext
    if isinstance(exc, WorkloadError | FilterError | HardwareError):
        status = HTTP_400_BAD_REQUEST
        message = _("Invalid {field}: {reason}").format(
            field=flat_field(exc.field), reason=exc.reason
        )
    elif isinstance(exc, HTTPException):
        status, message = exc.status_code, str(exc.detail)
        extra = exc.extra if isinstance(exc, ValidationException) else None
        if isinstance(extra, list) and extra:
            keys = ", ".join(str(e.get("key")) for e in extra if isinstance(e, dict))
            message = f"{message} ({keys})" if keys else message
    else:
        status = HTTP_500_INTERNAL_SERVER_ERROR
    if status >= 500:
        request.logger.exception("error on page %s", request.url.path)
        message = _("Something went wrong on our side; the error was logged.")
    return Template(
        "error.html",
        context={
            "title": _("Error {status}").format(status=status),
            "status": status,
            "message": message,
            "json_url": None,
            "banner": None,
            **language.context(request),
        },
        status_code=status,
    )


class PageController(Controller):
    """The base of the team's page controllers: left out of the OpenAPI schema, given the
    ``env`` dependency (:class:`PageEnv`), every error rendered as an HTML page."""

    include_in_schema = False
    dependencies = {  # noqa: RUF012 - Litestar reads this class attribute
        **DEPENDENCIES,
        "env": Provide(provide_page_env, sync_to_thread=False),
    }
    exception_handlers = dict.fromkeys(
        (HTTPException, ValidationException, WorkloadError, FilterError, HardwareError, Exception),
        _html_error,
    )
