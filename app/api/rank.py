"""``/v1/rank``: offers ranked for a workload, from a JSON body (``POST``) or from flat query
parameters (``GET``, the JSON twin of the ranking page ``/``)."""

from __future__ import annotations

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from sqlalchemy.orm import Session

from app.api.params import RankQueryOperation, ResourceController, bad_params
from app.interface.deps import error_responses
from app.interface.query import ParamError, parse_rank_query
from app.interface.responses import rank_json
from app.interface.schemas import RankRequest, RankResponse
from app.services.offers import FilterError
from app.services.reference import ReferenceData
from app.services.workloads import WorkloadError
from app.settings import Settings


class RankController(ResourceController):
    """Offers ranked by cost per epoch (or time) for one workload."""

    path = "/v1/rank"
    tags = ["rank"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/",
        sync_to_thread=True,
        status_code=200,
        summary="Rank offers for a workload",
        responses=error_responses(400),
    )
    def rank_offers(
        self,
        data: JSONBody[RankRequest],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[RankResponse]:
        """Rank offers for a workload by cost per epoch (or time), OOM-risky offers last.

        Each result carries the offer, its price in ``currency`` and the estimate;
        ``pareto_optimal`` marks offers no other fitting offer beats on both cost per epoch and
        epoch time (no other bookable one, when any is bookable and ``bookable_fresh_first``).
        """
        return rank_json(data, session, ref, settings)

    @get(
        "/",
        sync_to_thread=True,
        summary="Rank offers for a workload (flat query parameters)",
        responses=error_responses(400),
        operation_class=RankQueryOperation,
    )
    def rank_offers_flat(
        self,
        request: Request,
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[RankResponse]:
        """``POST /v1/rank`` with flat query parameters: the JSON twin of the web page ``/``.

        Parameters are the body's field names, flat: every workload field (``preset``,
        ``params``, ``micro_batch_size``, ``seq_len``, ``precision`` …), every filter (``gpu``,
        ``gpu_count``, ``provider``, ``region``, ``billing``, ``max_price_per_hour`` …),
        ``currency``, ``sort``, ``limit``, ``drop_oom``, and ``order`` (re-order the returned
        rows by any table column, ``-`` prefix for descending). Example:
        ``/v1/rank?preset=resnet50-imagenet&gpu_count=1&currency=CNY``.
        """
        try:
            query = parse_rank_query(dict(request.query_params.items()))
            return rank_json(query.request, session, ref, settings, order=query.order)
        except (ParamError, WorkloadError, FilterError) as exc:
            raise bad_params(exc) from exc
