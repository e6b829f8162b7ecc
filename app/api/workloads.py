"""``/v1/workloads``: the workload presets, and workload fields read from a Hugging Face
``config.json``."""

from __future__ import annotations

from typing import Any

from litestar import get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from app.api.params import ResourceController, documented
from app.api.reference_schemas import WorkloadPresetOut
from app.interface.deps import error_responses
from app.operations import hf_config_fields, list_presets
from app.services.reference import ReferenceData


class WorkloadsController(ResourceController):
    """Workload presets and Hugging Face configs read into workload fields."""

    path = "/v1/workloads"
    tags = ["workloads"]  # noqa: RUF012 - Litestar reads this class attribute

    @get(
        "/",
        sync_to_thread=False,
        summary="List workload presets",
        responses={200: documented(list[WorkloadPresetOut], "The presets, by slug")},
    )
    def list_workloads(self, ref: NamedDependency[ReferenceData]) -> list[dict[str, Any]]:
        """Workload presets: every field value, the benchmark labels they stand for, sources."""
        return list_presets(ref)

    @post(
        "/from-hf-config",
        sync_to_thread=False,
        status_code=200,
        summary="Workload fields from a Hugging Face config.json",
        responses=error_responses(400),
    )
    def workload_from_hf_config(self, data: JSONBody[dict[str, Any]]) -> dict[str, Any]:
        """Read a Hugging Face ``config.json`` (the request body, as is) into workload fields.

        Returns ``fields`` under the flat parameter names of ``GET /v1/rank`` (``layers``,
        ``hidden_size``, ``heads``, ``kv_heads``, ``ffn_hidden_size``, ``vocab_size``,
        ``architecture``, ``params`` as an approximate count) plus ``max_positions`` (tokens),
        and ``notes`` saying what was assumed. A config without layers, hidden size, heads or
        vocabulary gets a 400 naming every missing field; a size that is not a positive
        integer, exceeds the bounds of a typed-in workload or does not fit the attention shape
        gets a 400 naming the config key and the reason.
        """
        return hf_config_fields(data)
