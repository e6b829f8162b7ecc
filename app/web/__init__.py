"""The web pages (HTML over the same services as the JSON API); see :mod:`app.web.pages`."""

from app.web.plugin import WebPlugin

__all__ = ["WebPlugin"]
