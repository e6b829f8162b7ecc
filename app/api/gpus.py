"""``/v1/gpus``: the GPU catalog, and a listing's GPU label matched to it."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, QueryParameter
from sqlalchemy.orm import Session

from app.api.params import ResourceController, documented, reject_unknown_query
from app.api.reference_schemas import GpuOut
from app.interface.deps import error_responses
from app.interface.schemas import MAX_TEXT
from app.operations import RESOLVE_GPU, Deps, GpuResolveRequest, GpuResolveResponse
from app.services.catalog import search_gpus
from app.services.reference import ReferenceData
from app.settings import Settings

GpuText = Annotated[
    str | None,
    QueryParameter(
        max_length=MAX_TEXT,
        description="case-insensitive text: a name, alias, vendor, architecture or "
        "market containing it, or a name it resolves to (A100-SXM4-80GB)",
    ),
]


class GpusController(ResourceController):
    """The GPU catalog (specs, aliases, sources) and label matching against it."""

    path = "/v1/gpus"
    tags = ["gpus"]  # noqa: RUF012 - Litestar reads this class attribute

    @get(
        "/",
        sync_to_thread=True,
        summary="List the GPU catalog",
        responses={200: documented(list[GpuOut], "The GPU models, by id"), **error_responses(400)},
    )
    def list_gpus(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        ref: NamedDependency[ReferenceData],
        q: GpuText = None,
    ) -> list[dict[str, Any]]:
        """The GPU catalog with specs, aliases and sources (dense TFLOPS; VRAM in GiB).

        ``q`` keeps GPUs whose name, alias, vendor, architecture or market contains it, or
        whose name it resolves to (``A100-SXM4-80GB``).
        """
        reject_unknown_query(request)
        return search_gpus(session, ref, q)

    @post(
        "/resolve",
        sync_to_thread=False,
        status_code=200,
        summary="Match a listing's GPU label to the catalog",
        responses=error_responses(400),
    )
    def resolve_gpu(
        self,
        data: JSONBody[GpuResolveRequest],
        ref: NamedDependency[ReferenceData],
        settings: NamedDependency[Settings],
    ) -> GpuResolveResponse:
        """The catalog GPU a label names as a provider lists it (``A100-80G-PCIe``,
        ``3090-24G``), matched as offers are at ingest: a ``match``, an ``ambiguous`` label
        with its ``candidates``, or ``none``."""
        return RESOLVE_GPU.run(data, Deps(None, ref, settings))
