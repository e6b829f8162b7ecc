"""``/gpus``: the GPU catalog (filtered, sorted, paged) and ``/gpus/{name}``: one GPU, its specs
and sources, its offers and its measurements. JSON twins: the same URLs with ``format=json``."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import PathParameter
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER, HTTP_404_NOT_FOUND

from app.interface.deps import error_answer
from app.interface.query import ParamError
from app.interface.responses import offer_out
from app.interface.schemas import MAX_TEXT, OfferOut
from app.services.catalog import (
    BenchmarkFilters,
    Listing,
    Paging,
    benchmark_listing,
    catalog_choices,
    find_gpu,
    gpu_offers,
)
from app.services.snapshot import stale_providers
from app.web.forms import BILLING_LABELS
from app.web.i18n import N_
from app.web.listing import (
    GPU_PAGE_MEASUREMENTS,
    SPEC_ROWS,
    link,
    paging_params,
    parse_listing,
)
from app.web.pages.common import (
    NVLINK_LABELS,
    PageController,
    PageEnv,
    gpu_url,
    page_language,
    raw_query,
)
from app.web.pages.listings import CATALOG, json_listing, listing_json, listing_page, options


def gpu_json(
    gpu: dict[str, Any], offers: list[tuple[OfferOut, float | None]], measurements: Listing
) -> dict[str, Any]:
    """The JSON twin of one GPU's page: the catalog row, its offers (each with its price per
    GPU-hour in USD) and its measurements as the ``/benchmarks`` twin lists them."""
    return {
        "gpu": gpu,
        "offers": [
            {**o.model_dump(mode="json"), "price_per_gpu_hour_usd": usd} for o, usd in offers
        ],
        "benchmarks": listing_json(measurements),
    }


class GpusPageController(PageController):
    """The GPU catalog's listing page and the page of each GPU."""

    path = "/gpus"

    @get("/", sync_to_thread=True, name="gpus_page")
    def gpus_page(self, request: Request, env: NamedDependency[PageEnv]) -> Response[Any]:
        """The GPU catalog: filtered by family, vendor, architecture, memory or text; sorted
        by any column; paged. JSON twin: the same URL with ``format=json``."""
        choices = catalog_choices(env.session)
        context = {
            "title": N_("GPU catalog"),
            "choices": choices,
            "options": options(choices),
            "catalog_size": len(env.ref.gpus),
        }
        return listing_page(request, env, CATALOG, context)

    @get("/{key:str}", sync_to_thread=True, name="gpu_page")
    def gpu_page(
        self,
        key: Annotated[str, PathParameter(max_length=MAX_TEXT)],
        request: Request,
        env: NamedDependency[PageEnv],
    ) -> Response[Any]:
        """One GPU (by id, name or alias): its specs with units and sources, its offers
        (cheapest per GPU-hour first) and its measurements; a family name (``A100``) redirects
        to the catalog filtered by that family. JSON twin: the same URL with ``format=json``."""
        session, ref = env.session, env.ref
        language = page_language(request)
        raw = {k: v for k, v in raw_query(request).items() if k != "lang"}
        query = parse_listing(raw, paging_params(())[-1:])
        if language.error and not query.wants_json:
            query.errors.append(("lang", language.error))
        if query.errors:
            if query.wants_json or raw_query(request).get("format") == "json":
                return json_listing(None, query.errors)
            raise ValidationException(
                detail="Invalid query parameters", extra=ParamError(query.errors).as_extra()
            )
        family = ref.resolve_gpu_filter(key.strip())
        if len(family) > 1:
            # a family name (``A100``) stands for several models: the catalog lists them
            wanted = {"family": key.strip(), **({"format": "json"} if query.wants_json else {})}
            if language.param and not query.wants_json:
                wanted["lang"] = language.param
            return Redirect(link("/gpus", wanted), status_code=HTTP_303_SEE_OTHER)
        gpu = find_gpu(session, ref, key)
        if gpu is None:
            missing = f"No GPU {key!r} in the catalog (see /gpus)"
            if query.wants_json:
                return error_answer(HTTP_404_NOT_FOUND, missing)
            raise NotFoundException(detail=missing)
        name = gpu["canonical_name"]
        stale = stale_providers(session, ref, env.settings.stale_after_hours)
        offers = [(offer_out(row, ref, stale), usd) for row, usd in gpu_offers(session, ref, name)]
        measurements = benchmark_listing(
            session,
            ref,
            BenchmarkFilters(gpu=name),
            Paging(sort="workload", limit=GPU_PAGE_MEASUREMENTS),
        )
        if query.wants_json:
            return Response(gpu_json(gpu, offers, measurements))
        siblings = [n for n in ref.resolve_gpu_filter(gpu["family"]) if n != name]
        return Template(
            "gpu.html",
            context={
                "title": name,
                "g": gpu,
                "specs": [(label, gpu.get(k), unit, k) for k, label, unit in SPEC_ROWS],
                "offers": offers,
                "measurements": measurements,
                "family": siblings,
                "gpu_url": gpu_url,
                "nvlink_labels": NVLINK_LABELS,
                "json_url": link(gpu_url(name), {"format": "json"}),
                "banner": env.banner(),
                "billing_labels": BILLING_LABELS,
                **language.context(request),
            },
        )
