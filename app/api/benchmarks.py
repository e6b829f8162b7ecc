"""``/v1/benchmarks``: measured training throughput, and measurements submitted by
``gpucost bench``."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, QueryParameter
from sqlalchemy.orm import Session

from app.api.params import ResourceController, documented, reject_unknown_query
from app.api.reference_schemas import BenchmarkPage
from app.api.submissions import handle_submission
from app.interface.deps import error_responses
from app.interface.schemas import MAX_TEXT
from app.services.catalog import BenchmarkFilters, Paging, search_benchmarks
from app.services.reference import ReferenceData
from app.settings import Settings

Gpu = Annotated[
    str | None,
    QueryParameter(
        max_length=MAX_TEXT,
        description="GPU name or alias, any case; a family name matches every model of the family",
    ),
]
Workload = Annotated[
    str | None,
    QueryParameter(
        max_length=MAX_TEXT,
        description="benchmark workload label (ResNet-50 v1.5) or a preset slug",
    ),
]
Text = Annotated[
    str | None,
    QueryParameter(
        max_length=MAX_TEXT,
        description="case-insensitive substring of the label, task, GPU as published, "
        "framework, precision or source",
    ),
]
Ids = Annotated[
    str | None,
    QueryParameter(
        pattern=r"^\d{1,12}(,\d{1,12}){0,499}$",
        description="comma-separated measurement ids (an estimate's evidence)",
    ),
]
Status = Annotated[
    str | None,
    QueryParameter(
        pattern=r"^(accepted|held|revoked)$",
        description="held: submitted rows held for review (never used); revoked: rows "
        "of a revoked submitter (never used); accepted: the rest",
    ),
]
Limit = Annotated[int, QueryParameter(ge=1, le=5000, description="page size: most rows returned")]
Offset = Annotated[int, QueryParameter(ge=0, le=1_000_000_000, description="rows skipped")]


class BenchmarksController(ResourceController):
    """Measured throughput: the published rows and those submitted with ``gpucost bench``."""

    path = "/v1/benchmarks"
    tags = ["benchmarks"]  # noqa: RUF012 - Litestar reads this class attribute

    @get(
        "/",
        sync_to_thread=True,
        summary="List measured throughput",
        responses={
            200: documented(BenchmarkPage, "A page of measurements"),
            **error_responses(400),
        },
    )
    def list_benchmarks(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        gpu: Gpu = None,
        workload: Workload = None,
        q: Text = None,
        ids: Ids = None,
        status: Status = None,
        limit: Limit = 500,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        """Measured training throughput, filtered by GPU (any alias) and workload label.

        ``workload`` matches the benchmark label (e.g. "ResNet-50 v1.5") or a preset slug,
        which selects the labels that preset stands for; ``q`` is a case-insensitive
        substring of the label, task, GPU as published, framework, precision or source;
        ``ids`` (comma-separated) fetches the measurements an estimate cites in its
        ``evidence``; ``status`` ``held`` lists the submitted rows held for review (more than
        2× off the published estimate, or moving an answer more than the uncorroborated bound:
        stored, never used), ``revoked`` those of a revoked submitter, ``accepted`` the rest.
        """
        reject_unknown_query(request)
        filters = BenchmarkFilters(
            gpu=gpu,
            workload=workload,
            q=q,
            ids=[int(i) for i in ids.split(",")] if ids else None,
            status=status,
        )
        items, total = search_benchmarks(session, ref, filters, Paging(limit=limit, offset=offset))
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    @post(
        "/",
        sync_to_thread=True,
        status_code=201,
        summary="Submit a measurement",
        responses={
            200: ResponseSpec(
                data_container=dict[str, Any],
                description="The row already stored for this `run_id` (same submitter)",
                generate_examples=False,
            ),
            **error_responses(400, 401, 409, 429),
        },
    )
    def submit_benchmark(
        self,
        request: Request,
        data: JSONBody[dict[str, Any]],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[dict[str, Any]]:
        """Store a measurement from ``gpucost bench`` (``Authorization: Bearer <token>``).

        Body: :class:`app.api.submissions.BenchmarkSubmission`. Stored with ``source``
        ``submitted``, the environment, the token's name and the time. It never enters the
        model: it moves only its own configuration's answer, each submitter counting as one
        observation, by at most ±10 % until a second submitter's run agrees or a maintainer
        approves it; a row more than 2× off the published estimate (the model without any
        submitted row), or one that alone would move the answer further, is ``held``
        (``GET /v1/benchmarks?status=held``); ``GET /v1/submissions/events`` is the audit
        trail. 201 new; 200 with the stored row when the same
        submitter sends the same ``run_id`` again; 401 without a valid token (nothing stored);
        400 naming the field; 409 run id of another submitter; 429 past the rate limit.
        """
        return handle_submission(request, data, session, ref, settings)
