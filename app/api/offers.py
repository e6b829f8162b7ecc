"""``/v1/offers``: instance offers, filtered and paged; one offer with its estimate; one
offer's price history. The launch file of an offer is :mod:`app.api.launch`.
"""

from __future__ import annotations

import typing
from dataclasses import asdict
from typing import Annotated, Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import PathParameter, QueryParameter
from pydantic import BaseModel, Field
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from app.api.params import (
    OfferQueryOperation,
    ResourceController,
    bad_model_params,
    bad_params,
    field_doc,
    query_param,
    reject_unknown_query,
)
from app.interface.deps import MAX_ID, error_responses
from app.interface.query import ParamError, parse_offer_query
from app.interface.responses import iso_times, offer_detail
from app.interface.schemas import (
    CURRENCY_PATTERN,
    CURRENCY_TEXT,
    MAX_PRICE,
    MAX_TEXT,
    OFFER_ID_TEXT,
    Billing,
    OfferDetailResponse,
    OfferFilters,
    OfferOut,
    OfferPage,
    PricePointOut,
    described_as,
)
from app.operations import Deps, offer_page
from app.services.offers import FilterError
from app.services.reference import ReferenceData
from app.services.refresh_runs import price_history
from app.services.workloads import WorkloadError
from app.settings import Settings


def _text(name: str) -> Any:
    """A text filter of :class:`OfferFilters`, described as the field is."""
    return QueryParameter(max_length=MAX_TEXT, description=field_doc(OfferFilters, name))


def _flag(name: str) -> Any:
    """A boolean filter of :class:`OfferFilters`, described as the field is."""
    return QueryParameter(description=field_doc(OfferFilters, name))


def _gpus(name: str) -> Any:
    """A GPU count filter (more than 0, at most 1024 GPUs)."""
    return query_param(gt=0, le=1024, description=field_doc(OfferFilters, name))


Gpu = Annotated[str | None, _text("gpu")]
MinVram = Annotated[
    float | None, query_param(ge=0, le=10**5, description=field_doc(OfferFilters, "min_vram_gib"))
]
GpuCount = Annotated[float | None, _gpus("gpu_count")]
MinGpuCount = Annotated[float | None, _gpus("min_gpu_count")]
ProviderSlug = Annotated[str | None, _text("provider")]
Region = Annotated[str | None, _text("region")]
#: Text, read by :class:`OfferFilters` as the body's ``billing`` is (any case, ``-`` for
#: ``_``: ``Spot``, ``on-demand``); the document still lists the four kinds. Declared as the
#: enum, Litestar refused ``Spot`` with "Invalid enum value 'Spot'", naming none of them.
BillingKind = Annotated[
    str | None,
    QueryParameter(
        description=field_doc(OfferFilters, "billing"),
        schema_extra={
            "one_of": None,
            "type": ["null", "string"],
            "enum": [*typing.get_args(Billing), None],
        },
    ),
]
MaxPrice = Annotated[
    float | None,
    query_param(
        gt=0, le=MAX_PRICE, description="highest price of the whole instance per hour, in currency"
    ),
]
Currency = Annotated[
    str,
    QueryParameter(
        pattern=CURRENCY_PATTERN,
        description=CURRENCY_TEXT + "; of max_price_per_hour (the answer's prices are "
        "as listed, each with its currency)",
    ),
]
AvailableOnly = Annotated[bool, _flag("available_only")]
IncludeSuspect = Annotated[bool, _flag("include_suspect")]
BookableOnly = Annotated[bool, _flag("bookable_only")]
Limit = Annotated[int, QueryParameter(ge=1, le=1000, description="page size: most offers returned")]
Offset = Annotated[
    int, QueryParameter(ge=0, le=1_000_000_000, description="offers skipped (ordered by id)")
]
OfferId = Annotated[int, PathParameter(ge=1, le=MAX_ID, description=OFFER_ID_TEXT)]


class PriceHistoryOut(BaseModel):
    """An offer's price history, oldest first, with its current price."""

    offer_id: int = described_as(OfferOut, "id")
    provider: str = described_as(OfferOut, "provider")
    offer_key: str = described_as(OfferOut, "offer_key")
    instance_type: str = described_as(OfferOut, "instance_type")
    region: str = described_as(OfferOut, "region")
    billing: str = described_as(OfferOut, "billing")
    gpu_name_raw: str = described_as(OfferOut, "gpu_name_raw")
    available: bool = described_as(OfferOut, "available")
    price_per_hour: float | None = Field(
        description="current price of the whole instance per hour, in currency, as listed"
    )
    currency: str = Field(description="ISO 4217 code of every price here")
    observations: list[PricePointOut] = Field(description="every observed price, oldest first")


class OffersController(ResourceController):
    """Instance offers: a filtered page; one offer with its estimate; its price history."""

    path = "/v1/offers"
    tags = ["offers"]  # noqa: RUF012 - Litestar reads this class attribute

    @get("/", sync_to_thread=True, summary="List offers", responses=error_responses(400))
    def list_offers(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
        gpu: Gpu = None,
        min_vram_gib: MinVram = None,
        gpu_count: GpuCount = None,
        min_gpu_count: MinGpuCount = None,
        provider: ProviderSlug = None,
        region: Region = None,
        billing: BillingKind = None,
        max_price_per_hour: MaxPrice = None,
        currency: Currency = "USD",
        available_only: AvailableOnly = True,
        include_suspect: IncludeSuspect = False,
        bookable_only: BookableOnly = False,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> OfferPage:
        """Instance offers, filtered and paginated (ordered by id).

        ``max_price_per_hour`` is in ``currency`` (offers in other currencies are converted
        with the stored exchange rates); prices in the answer are as listed. ``gpus_matched``
        names the catalog GPUs the ``gpu`` filter stands for.
        """
        reject_unknown_query(request)
        try:
            filters = OfferFilters(
                gpu=gpu,
                min_vram_gib=min_vram_gib,
                gpu_count=gpu_count,
                min_gpu_count=min_gpu_count,
                provider=provider,
                region=region,
                billing=typing.cast(Billing | None, billing),
                max_price_per_hour=max_price_per_hour,
                available_only=available_only,
                include_suspect=include_suspect,
                bookable_only=bookable_only,
            )
        except PydanticValidationError as exc:  # rules beyond the parameters' own bounds
            raise bad_model_params(exc) from None
        return offer_page(filters, currency.upper(), limit, offset, Deps(session, ref, settings))

    @get(
        "/{offer_id:int}",
        sync_to_thread=True,
        summary="One offer with its price history and estimate",
        responses=error_responses(400, 404),
        operation_class=OfferQueryOperation,
    )
    def get_offer(
        self,
        offer_id: OfferId,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> OfferDetailResponse:
        """One offer, its price history and, given workload parameters, its estimate.

        The JSON twin of the web page ``/offers/{id}``. Parameters: the flat workload fields
        of ``GET /v1/rank`` (``preset``, ``micro_batch_size`` …) and ``currency``; the
        estimate lists every measurement it used.
        """
        try:
            query = parse_offer_query(dict(request.query_params.items()))
            return offer_detail(offer_id, query, session, ref, settings)
        except (ParamError, WorkloadError, FilterError) as exc:
            raise bad_params(exc) from exc

    @get(
        "/{offer_id:int}/prices",
        sync_to_thread=True,
        summary="Price history of one offer",
        responses=error_responses(400, 404),
    )
    def offer_prices(
        self,
        request: Request[Any, Any, Any],
        offer_id: OfferId,
        session: NamedDependency[Session],
    ) -> PriceHistoryOut:
        """Price history of one offer (every observation, oldest first); 404 if no such offer;
        400 naming any query parameter given (it takes none).

        An observation is recorded when the price changed and at least daily while an offer is
        seen; unknown prices are not observed.
        """
        reject_unknown_query(request)
        history = price_history(session, offer_id)
        if history is None:
            raise NotFoundException(f"no offer with id {offer_id}")
        values = asdict(history)
        values["observations"] = [
            PricePointOut(**iso_times(p, "observed_at")) for p in values["observations"]
        ]
        return PriceHistoryOut(**values)
