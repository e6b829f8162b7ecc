"""``gpucost mcp``: the API's answers as Model Context Protocol tools (the official ``mcp`` SDK).

Tools (each one an :class:`~app.operations.Operation`; its input schema is the request
model's JSON schema, its result the API's JSON answer as text, and, for an object, as
``structuredContent`` too):

- ``rank_offers``: ``POST /v1/rank`` (:class:`~app.interface.schemas.RankRequest`)
- ``estimate``: ``POST /v1/estimate`` (:class:`~app.interface.schemas.EstimateRequest`)
- ``resolve_gpu``: ``POST /v1/gpus/resolve`` (:class:`~app.operations.GpuResolveRequest`)
- ``list_presets``: ``GET /v1/workloads``
- ``workload_from_hf_config``: ``POST /v1/workloads/from-hf-config``

Bad input is a tool result with ``isError`` and the API's error answer as its text (the same
400 naming the same field). Transports: stdio (an assistant starts ``gpucost mcp``) and
streamable HTTP (``gpucost mcp --transport http``, at ``/mcp``). The answers come from the
local database or, with ``--server URL``, a running gpucost (:mod:`app.backends`).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from app.backends import Backend
from app.operations import OPERATIONS, Operation

#: Name the server gives itself.
SERVER_NAME = "gpucost"


def input_schema(op: Operation[Any, Any]) -> dict[str, Any]:
    """The tool's input schema: the request model's JSON schema (an empty object for an
    operation without input; any object for a ``config.json``)."""
    if op.request is None:
        return {"type": "object", "properties": {}, "additionalProperties": False}
    if op.name == "workload_from_hf_config":
        return {"type": "object", "description": "a Hugging Face config.json, as is"}
    return dict(op.request.model_json_schema())


def tools() -> list[types.Tool]:
    """Every operation as a tool."""
    return [
        types.Tool(name=op.name, description=op.description, input_schema=input_schema(op))
        for op in OPERATIONS.values()
    ]


def tool_result(status: int, body: bytes) -> types.CallToolResult:
    """An answer as a tool result: the JSON text; an error answer (4xx/5xx) with ``isError``."""
    import json

    text = body.decode()
    value = json.loads(text)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=value if isinstance(value, dict) else {"result": value},
        is_error=not 200 <= status < 300,
    )


def create_server(backend: Backend) -> Server[Any]:
    """An MCP server whose tools answer from ``backend`` (the handlers are blocking database
    work: each call runs on a worker thread)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        op = OPERATIONS.get(params.name)
        if op is None:
            return types.CallToolResult(
                content=[types.TextContent(text=f"unknown tool {params.name!r}")], is_error=True
            )
        arguments = params.arguments or {}
        answer = await anyio.to_thread.run_sync(backend.call, op, arguments)
        return tool_result(answer.status, answer.body)

    return Server(
        SERVER_NAME,
        version="0.1.0",
        instructions="gpucost answers where to rent GPUs for a training job: rank_offers ranks "
        "rentable offers by cost per epoch for a workload (a preset from list_presets plus any "
        "fields), estimate gives throughput, epoch time, memory and OOM risk on one machine.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve(backend: Backend, transport: str, host: str, port: int) -> None:
    """Serve the tools over ``transport`` (``stdio`` or ``http``: streamable HTTP at ``/mcp``
    on ``host:port``) until stopped."""
    mcp = create_server(backend)
    if transport == "stdio":
        anyio.run(_serve_stdio, mcp)
        return
    import uvicorn

    uvicorn.run(mcp.streamable_http_app(host=host), host=host, port=port, log_level="warning")
