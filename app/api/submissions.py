"""``POST /v1/benchmarks`` (:mod:`app.api.benchmarks`): a measurement from ``gpucost bench``,
stored with its provenance.

Answers ``201`` with the stored row when it is new, ``200`` with the row already stored when the
same submitter sends the same ``run_id`` again (nothing changes: the first write wins), ``401``
without a valid bearer token (nothing stored), ``400`` naming the field of a malformed body,
``409`` for a run id another submitter used, ``429`` (with ``Retry-After``) past the per-token
rate limit. ``GET /v1/submissions/events``: the audit trail of these rows.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from litestar import Request, Response, get
from litestar.di import NamedDependency
from litestar.exceptions import NotAuthorizedException, ValidationException
from litestar.params import QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_429_TOO_MANY_REQUESTS
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.orm import Session

from app.api.params import ResourceController, reject_unknown_query
from app.interface.deps import error_answer, error_responses
from app.interface.schemas import Page
from app.model.types import Precision
from app.services.reference import ReferenceData
from app.services.submissions import (
    RateLimiter,
    SubmissionError,
    identify,
    is_revoked,
    list_events,
    parse_tokens,
    submit_benchmark,
)
from app.settings import Settings

#: Largest environment object accepted, in characters of its JSON.
MAX_ENVIRONMENT_CHARS = 20_000


class BenchmarkSubmission(BaseModel):
    """One ``gpucost bench`` run.

    ``samples_per_s`` is for the whole GPU set (all ``gpu_count`` GPUs); ``tokens_per_s`` the
    same in tokens (``samples_per_s`` × ``seq_len``) for sequence models; memory in GiB per GPU
    (``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``, null on CPU). ``gpu`` is the
    name the driver reports (``torch.cuda.get_device_name``), null for a CPU-only run.
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(
        min_length=8, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$", description="client run id"
    )
    preset: str = Field(min_length=1, max_length=100, examples=["resnet50-imagenet"])
    gpu: str | None = Field(default=None, min_length=1, max_length=100)
    gpu_count: int = Field(ge=1, le=4096)
    interconnect: Literal["nvlink", "pcie"] | None = None
    precision: Precision
    micro_batch_size: int = Field(ge=1, le=1_000_000)
    seq_len: int | None = Field(default=None, ge=1, le=10_000_000)
    steps: int = Field(ge=1, le=1_000_000, description="timed optimizer steps")
    samples_per_s: float = Field(gt=0, le=1e12, allow_inf_nan=False)
    tokens_per_s: float | None = Field(default=None, gt=0, le=1e15, allow_inf_nan=False)
    peak_memory_gib: float | None = Field(default=None, ge=0, le=100_000, allow_inf_nan=False)
    reserved_memory_gib: float | None = Field(default=None, ge=0, le=100_000, allow_inf_nan=False)
    framework: str = Field(default="PyTorch", min_length=1, max_length=200)
    framework_version: str | None = Field(default=None, max_length=64)
    environment: dict[str, Any] = Field(default_factory=dict)

    @field_validator("environment")
    @classmethod
    def _small(cls, v: dict[str, Any]) -> dict[str, Any]:
        import json

        if len(json.dumps(v, default=str)) > MAX_ENVIRONMENT_CHARS:
            raise ValueError(f"larger than {MAX_ENVIRONMENT_CHARS} characters of JSON")
        return v


def _limiter(request: Request, settings: Settings) -> RateLimiter:
    state = request.app.state
    limiter = getattr(state, "submit_limiter", None)
    if limiter is None or limiter.per_minute != settings.submit_rate_per_minute:
        limiter = state.submit_limiter = RateLimiter(settings.submit_rate_per_minute)
    return limiter


def handle_submission(
    request: Request,
    data: dict[str, Any],
    session: Session,
    ref: ReferenceData,
    settings: Settings,
) -> Response[dict[str, Any]]:
    """The ``POST /v1/benchmarks`` handler's work (see the module docstring for the answers)."""
    # authenticate before reading the body's fields: a request without a valid token
    # learns nothing about what the body should hold
    submitter = identify(request.headers.get("authorization"), parse_tokens(settings.api_tokens))
    if submitter is None:
        raise NotAuthorizedException(
            detail="a valid bearer token is required (Authorization: Bearer <token>)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if is_revoked(session, submitter):
        raise NotAuthorizedException(
            detail="this token was revoked by a maintainer; its rows are no longer used",
            headers={"WWW-Authenticate": "Bearer"},
        )
    wait = _limiter(request, settings).acquire(submitter)
    if wait is not None:
        return error_answer(
            HTTP_429_TOO_MANY_REQUESTS,
            "too many submissions; retry later",
            headers={"Retry-After": str(max(1, int(wait + 0.999)))},
        )
    try:
        sub = BenchmarkSubmission.model_validate(data)
    except ValueError as exc:
        errors: list[Any] = getattr(exc, "errors", list)()
        raise ValidationException(
            detail="Invalid benchmark submission",
            extra=[
                {"key": ".".join(str(p) for p in e["loc"]) or "body", "message": e["msg"]}
                for e in errors
            ],
        ) from exc
    try:
        row, created = submit_benchmark(
            session, ref, sub.model_dump(mode="json"), submitter, dt.datetime.now(dt.UTC)
        )
    except SubmissionError as exc:
        if exc.status == 400:
            raise ValidationException(
                detail="Invalid benchmark submission",
                extra=[{"key": exc.field, "message": exc.reason}],
            ) from exc
        return error_answer(exc.status, str(exc), [{"key": exc.field, "message": exc.reason}])
    if created:
        request.app.state.reference.invalidate()
    return Response(row, status_code=HTTP_201_CREATED if created else HTTP_200_OK)


class SubmissionEventOut(BaseModel):
    """One entry of the submissions' audit trail (append-only)."""

    id: int = Field(description="entry id")
    at: str = Field(description="when (ISO 8601, UTC)")
    action: str = Field(
        description="submitted (accepted), held, corroborated (a held row accepted because "
        "another submitter's run agrees), approved (a maintainer corroborated a held row), "
        "revoked (the submitter's token and rows revoked) or reheld (held again: its only "
        "corroborator was revoked)"
    )
    actor: str = Field(description="who acted: a submitter identity or maintainer:<name>")
    submitter: str = Field(description="whose row it concerns")
    benchmark_id: int | None = Field(description="the row (GET /v1/benchmarks?ids=...)")
    configuration: dict[str, Any] = Field(
        description="the row's configuration: preset, workload, method, gpu, gpu_count, "
        "precision, micro_batch_size"
    )
    answer_before: float | None = Field(
        description="the served answer for that configuration before, in unit; null: none"
    )
    answer_after: float | None = Field(description="the served answer after, in unit")
    unit: str = Field(description="unit of the answers (samples/s of the whole GPU set)")
    detail: str | None = Field(description="why, in words")


class SubmissionEventPage(Page[SubmissionEventOut]):
    """A page of the audit trail, newest first."""


class SubmissionsController(ResourceController):
    """The audit trail of submitted measurements (the rows are under ``/v1/benchmarks``)."""

    path = "/v1/submissions"
    tags = ["benchmarks"]  # noqa: RUF012 - Litestar reads this class attribute

    @get(
        "/events",
        sync_to_thread=True,
        summary="Audit trail of submitted measurements",
        responses=error_responses(400),
    )
    def submission_events(
        self,
        request: Request[Any, Any, Any],
        session: NamedDependency[Session],
        submitter: Annotated[
            str | None, QueryParameter(max_length=100, description="only this submitter's rows")
        ] = None,
        limit: Annotated[
            int, QueryParameter(ge=1, le=1000, description="page size: most entries returned")
        ] = 100,
        offset: Annotated[
            int, QueryParameter(ge=0, le=1_000_000_000, description="entries skipped")
        ] = 0,
    ) -> SubmissionEventPage:
        """Who submitted, held, corroborated, approved or revoked which measurement, when, and
        what it moved: the served answer of the row's configuration before and after, newest
        first. Read-only and public (identities are the tokens' names, as every submitted row
        shows them); maintainers act with ``gpucost submissions approve|revoke``."""
        reject_unknown_query(request)
        items, total = list_events(session, submitter=submitter, limit=limit, offset=offset)
        return SubmissionEventPage(
            items=[SubmissionEventOut(**i) for i in items], total=total, limit=limit, offset=offset
        )
