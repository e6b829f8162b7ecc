"""``/benchmarks``: measured training throughput with sources: filtered, sorted, paged. JSON
twin: the same URL with ``format=json``."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.di import NamedDependency

from app.services.catalog import benchmark_choices, catalog_choices
from app.web.i18n import N_
from app.web.pages.common import PageController, PageEnv
from app.web.pages.listings import BENCHMARKS, listing_page, options


class BenchmarksPageController(PageController):
    """The measurements' listing page."""

    path = "/benchmarks"

    @get("/", sync_to_thread=True, name="benchmarks_page")
    def benchmarks_page(self, request: Request, env: NamedDependency[PageEnv]) -> Response[Any]:
        """Measured training throughput with sources: filtered by GPU (or family), workload,
        precision, GPU count, source or text; sorted by any column; paged. JSON twin: the same
        URL with ``format=json``."""
        choices = benchmark_choices(env.session)
        context = {
            "title": N_("Measured training throughput"),
            "choices": choices,
            "options": options(choices),
            "presets": list(env.ref.presets.values()),
            "gpu_names": sorted(env.ref.gpus),
            "families": catalog_choices(env.session)["family"],
        }
        return listing_page(request, env, BENCHMARKS, context)
