"""Registers the web pages, their templates and static files on the app (one plugin)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from litestar.config.app import AppConfig
from litestar.datastructures import CacheControlHeader
from litestar.plugins import InitPluginProtocol
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from app.web import i18n
from app.web.format import FILTERS
from app.web.pages import PAGE_CONTROLLERS

HERE = Path(__file__).resolve().parent
TEMPLATE_DIR = HERE / "templates"
STATIC_DIR = HERE / "static"


def static_url(name: str) -> str:
    """``/static/<name>?v=<content hash>``: cacheable, and reloaded when the file changes."""
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:10]
    return f"/static/{name}?v={digest}"


def template_environment() -> Environment:
    """Jinja environment: autoescape on for every template, undefined names are errors,
    messages translated into the page's language (:mod:`app.web.i18n`)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    i18n.install(env)
    env.globals["static"] = {name: static_url(name) for name in ("gpucost.css", "gpucost.js")}
    return env


class WebPlugin(InitPluginProtocol):
    """Adds the page controllers, ``/static`` and the Jinja template config."""

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        """Litestar hook: extend the app's configuration."""
        app_config.route_handlers.extend(
            [
                *PAGE_CONTROLLERS,
                create_static_files_router(
                    path="/static",
                    directories=[STATIC_DIR],
                    name="static",
                    cache_control=CacheControlHeader(max_age=86400, public=True),
                    include_in_schema=False,
                ),
            ]
        )
        app_config.template_config = TemplateConfig(
            instance=JinjaTemplateEngine.from_environment(template_environment())
        )
        return app_config
