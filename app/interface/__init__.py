"""What every surface shares: the JSON API (:mod:`app.api`), the web pages (:mod:`app.web`),
the CLI and the MCP server.

- :mod:`app.interface.schemas`: the request and response models (pydantic), the public
  contract the OpenAPI document describes;
- :mod:`app.interface.query`: flat query parameters (``GET /v1/rank``, ``/``) into requests;
- :mod:`app.interface.counts`: counts written as people write them (``7B``);
- :mod:`app.interface.field_names`: 400s that name the field;
- :mod:`app.interface.responses`: request dependencies and the answers' builders.

It imports no surface: neither :mod:`app.api` nor :mod:`app.web` (import contracts in
pyproject.toml), so the API and the pages share it without importing each other.
"""
