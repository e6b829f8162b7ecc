"""``POST /v1/estimate``: a workload on a what-if machine (no offer needed)."""

from __future__ import annotations

from litestar import post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from app.api.params import ResourceController
from app.interface.deps import error_responses
from app.interface.schemas import EstimateRequest, EstimateResponse
from app.operations import estimate_response
from app.services.reference import ReferenceData


class EstimateController(ResourceController):
    """Estimates for a machine described by its GPUs, not an offer."""

    path = "/v1/estimate"
    tags = ["estimate"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/",
        sync_to_thread=False,
        status_code=200,
        summary="Estimate a workload on a what-if machine",
        responses=error_responses(400),
    )
    def estimate(
        self, data: JSONBody[EstimateRequest], ref: NamedDependency[ReferenceData]
    ) -> EstimateResponse:
        """Estimate a workload on a what-if machine (no offer needed).

        Returns throughput (samples/s for all GPUs), epoch time, OOM risk from the per-GPU
        memory estimate, and the measurements used. With ``price_per_hour`` (in ``currency``)
        the cost per epoch too.
        """
        return estimate_response(data, ref)
