"""``GET /v1/offers/{id}/launch``: a SkyPilot or dstack file for an offer; a thin controller
over :mod:`app.operations`, the handlers the CLI and the MCP server call too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.di import NamedDependency
from litestar.enums import ParamType
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation, Parameter, Schema
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import PathParameter
from sqlalchemy.orm import Session

from app.api.params import ResourceController, rank_query_parameters
from app.interface.deps import MAX_ID, error_responses
from app.interface.query import OFFER_PARAMS
from app.interface.schemas import OFFER_ID_TEXT, ErrorOut
from app.launch import FORMATS
from app.operations import Deps, launch_file
from app.services.reference import ReferenceData
from app.settings import Settings

#: The budget's query parameters (numbers above 0), written in the launch file's comments.
_BUDGET_TEXTS = {
    "max_total_cost": "budget for all epochs, in currency (written in the file's comments)",
    "max_total_hours": "deadline: wall-clock hours, all epochs (in the file's comments)",
}


def _launch_parameters() -> list[Parameter]:
    number = Schema(type=OpenAPIType.NUMBER, exclusive_minimum=0)
    return [
        Parameter(
            name="format",
            param_in=ParamType.QUERY,
            required=True,
            schema=Schema(type=OpenAPIType.STRING, enum=list(FORMATS)),
            description="skypilot: a SkyPilot task YAML (sky launch); dstack: a dstack task "
            "configuration (dstack apply -f)",
        ),
        *(
            Parameter(
                name=name, param_in=ParamType.QUERY, required=False, schema=number, description=text
            )
            for name, text in _BUDGET_TEXTS.items()
        ),
        *rank_query_parameters(OFFER_PARAMS),
    ]


@dataclass
class LaunchQueryOperation(Operation):
    """The launch route reads its flat parameters itself; this lists them in the schema."""

    def __post_init__(self) -> None:
        self.parameters = [*(self.parameters or []), *_launch_parameters()]


class LaunchController(ResourceController):
    """Launch files for offers (SkyPilot, dstack)."""

    path = "/v1"
    tags = ["offers"]  # noqa: RUF012 - Litestar reads this class attribute

    @get(
        "/offers/{offer_id:int}/launch",
        sync_to_thread=True,
        summary="A SkyPilot or dstack launch file for an offer",
        operation_class=LaunchQueryOperation,
        responses={
            200: ResponseSpec(
                # the YAML document is a mapping (a SkyPilot task, a dstack configuration)
                data_container=dict[str, Any],
                media_type="application/yaml",
                description="The launch file (YAML), with the estimate and budget in comments",
                generate_examples=False,
            ),
            **error_responses(400, 404),
            422: ResponseSpec(
                data_container=ErrorOut,
                description="Neither this launcher supports the offer's provider (the message "
                "names the launcher that does, if any), nor can the file name its GPU",
                generate_examples=False,
            ),
        },
    )
    def launch(
        self,
        offer_id: Annotated[int, PathParameter(ge=1, le=MAX_ID, description=OFFER_ID_TEXT)],
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> Response[str]:
        """The offer's launch file: ``format=skypilot`` (task YAML for ``sky launch``) or
        ``format=dstack`` (a task for ``dstack apply -f``), asking that provider for the
        offer's instance type, region, GPU × count, spot or on-demand, and a disk at least as
        large as the workload needs; the estimate and budget are YAML comments.

        Parameters: the flat workload fields of ``GET /v1/rank`` (``preset``,
        ``micro_batch_size`` ...), ``currency``, ``max_total_cost``, ``max_total_hours``. A
        provider neither launcher supports is a 422 saying so.
        """
        params = dict(request.query_params.items())
        out = launch_file(offer_id, params, Deps(session, ref, settings))
        return Response(
            out.text,
            media_type=out.media_type,
            headers={"Content-Disposition": f'attachment; filename="{out.filename}"'},
        )
