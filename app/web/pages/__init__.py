"""HTML pages. Each page parses the same flat parameters and makes the same service call as its
JSON twin (linked from the page), then renders the answer with a Jinja template.

``/``              ranking form, results table and cost/time chart   → ``GET /v1/rank``
                   (:mod:`app.web.pages.rank`)
``/offers/{id}``   one offer: estimate explained, price history      → ``GET /v1/offers/{id}``
                   (:mod:`app.web.pages.offer`)
``/gpus``          GPU catalog: filters, sortable columns, pages     → ``/gpus?format=json``
``/gpus/{name}``   one GPU: specs and sources, offers, measurements  → ``?format=json``
                   (:mod:`app.web.pages.gpus`)
``/benchmarks``    measured throughput: filters, sorting, pages      → ``/benchmarks?format=json``
                   (:mod:`app.web.pages.benchmarks`)

The listings (``/gpus``, ``/benchmarks``) take more than ``GET /v1/gpus`` and
``GET /v1/benchmarks`` do (``sort``/``order``, paging, more filters), so their JSON twin is the
page's own URL with ``format=json`` (rows, ``total``, ``limit``, ``offset``, ``sort``,
``order``): the same service call, the same rows as the page shows
(:mod:`app.web.pages.listings`).

Bad input never raises: the page shows the form again with a message naming the field
(status 400), while the JSON twin answers the same request with its 400
(:mod:`app.web.pages.common`: the language, the errors, the banner every page shares).
"""

from __future__ import annotations

from app.web.pages.benchmarks import BenchmarksPageController
from app.web.pages.gpus import GpusPageController
from app.web.pages.offer import OfferPageController
from app.web.pages.rank import RankPageController

#: One controller per page resource (each registered by :class:`app.web.plugin.WebPlugin`).
PAGE_CONTROLLERS = (
    RankPageController,
    OfferPageController,
    GpusPageController,
    BenchmarksPageController,
)

__all__ = ["PAGE_CONTROLLERS"]
