"""Submitted measurements (``POST /v1/benchmarks``): token identity, rate limit, hold check,
store, and the maintainer's approvals and revocations, each written to the audit trail.

A submitted row is stored like a published one (``source`` ``submitted``) plus the machine it
ran on, who sent it and when. It never enters the model (:mod:`app.services.submitted`); it
moves its own configuration's answer only when ``accepted``. It is stored ``held`` instead when
it is more than :data:`HOLD_RATIO` off the *published* answer (the model without any submitted
row), on a GPU the catalog does not know (a CPU run), or when alone it would move the served
answer more than :data:`app.services.submitted.MAX_UNCORROBORATED_MOVE` and no second
submitter agrees (it is accepted, with the held rows it agrees with, when one does; or when a
maintainer approves it: ``gpucost submissions approve``). A revoked submitter's token is
refused and its rows are ``revoked`` (``gpucost submissions revoke``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import SecretStr
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.bench import TEST_PRESETS
from app.db.models import (
    GpuModel,
    RevokedSubmitter,
    SubmissionEvent,
    ThroughputBenchmark,
    as_utc,
)
from app.model.types import Precision
from app.services.estimates import (
    ConfigEstimates,
    HardwareError,
    config_estimates,
    hardware_from_input,
)
from app.services.reference import Preset, ReferenceData, submitted_run
from app.services.submitted import (
    HOLD_RATIO,
    MAINTAINER,
    MAX_UNCORROBORATED_MOVE,
    SUBMITTED,
    Combined,
    SubmittedRun,
    agree,
    combine_runs,
)
from app.services.workloads import WorkloadError, resolve_workload


class SubmissionError(ValueError):
    """A submission that cannot be stored; ``field`` names the offending field, ``status``
    is the HTTP status it maps to (400 bad field, 409 run id taken by another submitter)."""

    def __init__(self, field: str, reason: str, status: int = 400):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
        self.status = status


def parse_tokens(secret: SecretStr) -> dict[str, str]:
    """``GPUCOST_API_TOKENS`` → {token: identity}.

    Comma-separated ``name=token`` entries; a bare ``token`` gets the identity
    ``token-<first 8 hex digits of its SHA-256>`` (identifies it without revealing it).
    """
    out: dict[str, str] = {}
    for entry in secret.get_secret_value().split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, sep, token = entry.partition("=")
        if not sep:
            token = name
            name = "token-" + hashlib.sha256(token.encode()).hexdigest()[:8]
        if token.strip():
            out[token.strip()] = name.strip()
    return out


def identify(authorization: str | None, tokens: dict[str, str]) -> str | None:
    """The identity of a ``Bearer`` token, or ``None`` (missing, malformed or unknown).

    Every configured token is compared, in constant time (:func:`hmac.compare_digest`), so the
    answer's timing does not tell how much of a guess matched or which token it was near.
    """
    if not authorization:
        return None
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    offered = given.strip().encode()
    found = None
    for token, name in tokens.items():
        if hmac.compare_digest(offered, token.encode()) and found is None:
            found = name
    return found


class RateLimiter:
    """At most ``per_minute`` calls per key in any sliding 60 s window (in-process)."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float | None:
        """Record a call; ``None`` when allowed, else the seconds until one is."""
        now = self._clock()
        with self._lock:
            calls = self._calls.setdefault(key, deque())
            while calls and now - calls[0] >= 60.0:
                calls.popleft()
            if len(calls) >= self.per_minute:
                return 60.0 - (now - calls[0])
            calls.append(now)
            return None


@dataclass(frozen=True, slots=True)
class Hold:
    """The hold check's verdict: ``status`` and, when held, why; ``estimate`` the published
    answer it compared against (samples/s for the GPU set), ``before``/``after`` the served
    answer of the configuration without and with the row (``after`` as if accepted), and the
    ids of held rows of other submitters this row corroborates."""

    status: str
    reason: str | None
    estimate_samples_per_s: float | None
    before: float | None = None
    after: float | None = None
    corroborates: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """A submission's configuration, resolved: the answers' estimates and its catalog GPU."""

    configs: ConfigEstimates
    hardware: Any
    preset: str
    micro_batch_size: int

    @property
    def units(self) -> float:
        """Published units per sample (tokens per sequence for token-counted presets)."""
        return self.configs.w.units_per_sample or 1.0

    def published(self) -> float:
        """The published answer (samples/s of the GPU set)."""
        hw = self.hardware
        return self.configs.published(hw.gpu, hw.gpu_count, hw.interconnect).samples_per_s

    def combined(self, runs: list[SubmittedRun]) -> Combined | None:
        """:func:`app.services.submitted.combine_runs` of ``runs`` for this configuration."""
        hw = self.hardware
        tp = self.configs.published(hw.gpu, hw.gpu_count, hw.interconnect)
        return combine_runs(
            runs,
            lambda b: self.configs.published_at(b, hw.gpu, hw.gpu_count, hw.interconnect, tp),
        )

    def ratio(self, row: ThroughputBenchmark) -> float:
        """A stored row's ratio to the published answer at its own micro-batch."""
        hw = self.hardware
        tp = self.configs.published(hw.gpu, hw.gpu_count, hw.interconnect)
        batch = row.batch_size_per_gpu or self.micro_batch_size
        published = self.configs.published_at(batch, hw.gpu, hw.gpu_count, hw.interconnect, tp)
        return row.throughput_total / published if published > 0 else float("inf")

    def served(self, runs: list[SubmittedRun]) -> float:
        """The served answer (samples/s) with exactly ``runs`` accepted."""
        combined = self.combined(runs)
        return self.published() * (combined.factor if combined else 1.0)

    def accepted_runs(self) -> list[SubmittedRun]:
        """The accepted runs of this configuration in the reference data (at the precision
        the GPU runs the workload at, as :meth:`ConfigEstimates.throughput` matches them)."""
        hw = self.hardware
        tp = self.configs.published(hw.gpu, hw.gpu_count, hw.interconnect)
        return list(self.configs.submitted_runs(hw.gpu, hw.gpu_count, tp.precision))


def resolve_config(
    ref: ReferenceData,
    preset: str,
    canonical: str,
    gpu_count: int,
    interconnect: str | None,
    precision: str,
    micro_batch_size: int,
) -> Config:
    """The answers of a submission's configuration.

    Raises:
        WorkloadError, HardwareError: nothing to estimate it with.
    """
    w, reference, _ = resolve_workload(
        {"preset": preset, "micro_batch_size": micro_batch_size, "precision": precision}, ref
    )
    hw = hardware_from_input(
        {"gpu": canonical, "gpu_count": gpu_count, "interconnect": interconnect}, ref
    )
    return Config(config_estimates(w, reference, ref), hw, preset, micro_batch_size)


def hold_check(
    ref: ReferenceData,
    preset: str,
    gpu: str | None,
    gpu_count: int,
    interconnect: str | None,
    precision: str,
    micro_batch_size: int,
    samples_per_s: float,
    *,
    submitter: str = "",
    held: list[ThroughputBenchmark] | None = None,
) -> Hold:
    """Judge a submission (module docstring): against the published answer
    (:meth:`ConfigEstimates.published`, the model without any submitted row), more than
    :data:`HOLD_RATIO` off either way, or nothing to compare with, holds it; then, as if
    accepted, it must not move the served answer of its configuration more than
    :data:`MAX_UNCORROBORATED_MOVE` unless another submitter's accepted run, or one of the
    ``held`` rows of that configuration (other submitters'), agrees with it: those held rows
    are then accepted with it (``corroborates``).

    The GPU is named as a user types it (:meth:`ReferenceData.identify_gpu`): a name several
    catalog models share ("A100", "NVIDIA GeForce RTX 3080": 10 or 12 GB) holds the run.
    """
    identity = ref.identify_gpu(gpu) if gpu else None
    if identity is not None and identity.status == "ambiguous":
        return Hold(
            "held",
            f"GPU {gpu!r} is ambiguous: could be {' or '.join(identity.candidates)}; "
            "not credited to one of them",
            None,
        )
    canonical = identity.match.canonical_name if identity and identity.match else None
    if canonical is None:
        what = f"GPU {gpu!r}" if gpu else "a run without a GPU"
        return Hold("held", f"{what} matches no catalog GPU: nothing to check it against", None)
    try:
        cfg = resolve_config(
            ref, preset, canonical, gpu_count, interconnect, precision, micro_batch_size
        )
    except (WorkloadError, HardwareError) as exc:
        return Hold("held", f"no current estimate to check it against ({exc})", None)
    expected = cfg.published()
    ratio = samples_per_s / expected if expected > 0 else float("inf")
    if ratio > HOLD_RATIO or ratio < 1 / HOLD_RATIO:
        return Hold(
            "held",
            f"{samples_per_s:.4g} samples/s is {ratio:.2f}× the published estimate "
            f"{expected:.4g} samples/s for {gpu_count}× {canonical} (outside "
            f"1/{HOLD_RATIO:g}–{HOLD_RATIO:g}×; the estimate leaves every submitted run out)",
            expected,
        )
    accepted = cfg.accepted_runs()
    before = cfg.served(accepted)
    w = cfg.configs.w
    mine = SubmittedRun(
        id=0,
        submitter=submitter,
        workload=w.benchmark_workloads[0] if w.benchmark_workloads else preset,
        method=w.benchmark_method or w.method.value,
        gpu=canonical,
        gpu_count=gpu_count,
        precision=Precision(precision),
        batch_size_per_gpu=micro_batch_size,
        throughput_total=samples_per_s * cfg.units,
    )
    # held rows of other submitters, within the band, that this run agrees with
    agreeing = [
        r
        for r in held or []
        if r.submitted_by
        and r.submitted_by != submitter
        and r.batch_size_per_gpu
        and 1 / HOLD_RATIO <= (theirs := cfg.ratio(r)) <= HOLD_RATIO
        and agree(theirs, ratio)
    ]
    runs = [*accepted, mine, *(submitted_run(r, canonical) for r in agreeing)]
    combined = cfg.combined(runs)
    after = expected * (combined.factor if combined else 1.0)
    alone = (combined.unclamped if combined else 1.0) - 1.0
    if combined is not None and not combined.corroborated and abs(alone) > MAX_UNCORROBORATED_MOVE:
        return Hold(
            "held",
            f"would move the answer for {gpu_count}× {canonical} {alone:+.0%} from the "
            f"published {expected:.4g} samples/s (more than ±{MAX_UNCORROBORATED_MOVE:.0%} "
            "without corroboration): held until another submitter's run agrees or a "
            "maintainer approves it",
            expected,
            before=before,
            after=before,
        )
    return Hold(
        "accepted",
        None,
        expected,
        before=before,
        after=after,
        corroborates=tuple(r.id for r in agreeing),
    )


def benchmark_row(b: ThroughputBenchmark, ref: ReferenceData) -> dict[str, Any]:
    """A stored measurement as ``GET /v1/benchmarks`` lists it."""
    item = {c.name: getattr(b, c.name) for c in ThroughputBenchmark.__table__.columns}
    item["gpu"] = ref.gpu_names_by_id.get(b.gpu_model_id) if b.gpu_model_id else None
    item["throughput_per_gpu"] = b.throughput_total / b.gpu_count
    item["submitted"] = b.source == SUBMITTED
    return item


def _test_preset(slug: str) -> Preset | None:
    """A :data:`app.bench.TEST_PRESETS` preset (accepted, always held: never a real workload)."""
    fields = TEST_PRESETS.get(slug)
    if fields is None:
        return None
    return Preset(
        slug=slug,
        name=fields["name"],
        fields=fields,
        benchmark_workloads=(),
        benchmark_method=None,
        units_per_sample=None,
        throughput_unit="samples/s",
        source="app/bench.py TEST_PRESETS",
        seen_on=None,
        notes=None,
    )


def submit_benchmark(
    session: Session,
    ref: ReferenceData,
    sub: dict[str, Any],
    submitter: str,
    now: dt.datetime,
) -> tuple[dict[str, Any], bool]:
    """Store a submission (``BenchmarkSubmission`` values); returns (row, created).

    Idempotent on ``run_id``: a second call with a run id this submitter already used returns
    the stored row unchanged (``created`` false; the first write wins).

    The row's ``workload`` is the preset's first benchmark label (so it joins the published
    measurements the estimator matches) or, for a preset with none, the preset slug;
    ``throughput_total`` is in the preset's published unit (samples/s × units per sample).

    Raises:
        SubmissionError: unknown preset (``preset``); the run id was used by another
            submitter (``run_id``, 409).
    """
    existing = session.scalar(
        select(ThroughputBenchmark).where(ThroughputBenchmark.run_id == sub["run_id"])
    )
    if existing is not None:
        if existing.submitted_by != submitter:
            raise SubmissionError("run_id", "already used by another submitter", status=409)
        return benchmark_row(existing, ref), False
    preset = ref.presets.get(sub["preset"]) or _test_preset(sub["preset"])
    if preset is None:
        raise SubmissionError("preset", f"unknown preset {sub['preset']!r}")
    units = preset.units_per_sample or 1.0
    samples = float(sub["samples_per_s"])
    canonical = ref.resolve_gpu(sub["gpu"]) if sub.get("gpu") else None
    workload = preset.benchmark_workloads[0] if preset.benchmark_workloads else preset.slug
    method = preset.benchmark_method or str(preset.fields.get("method") or "full")
    held = (
        held_rows(session, workload, method, canonical, sub["gpu_count"], sub["precision"])
        if canonical
        else []
    )
    if preset.slug in TEST_PRESETS:
        hold = Hold("held", f"{preset.slug} is a test preset of gpucost bench", None)
    else:
        hold = hold_check(
            ref,
            preset.slug,
            sub.get("gpu"),
            sub["gpu_count"],
            sub.get("interconnect"),
            sub["precision"],
            sub["micro_batch_size"],
            samples,
            submitter=submitter,
            held=held,
        )
    env = dict(sub.get("environment") or {})
    row = ThroughputBenchmark(
        seed_key=None,
        gpu_model_id=ref.gpu_ids_by_name[canonical] if canonical else None,
        gpu_label=(sub.get("gpu") or "CPU only")[:100],
        gpu_count=sub["gpu_count"],
        interconnect=sub.get("interconnect"),
        workload=workload,
        task=f"gpucost bench {preset.slug} ({preset.name})",
        method=method,
        precision=sub["precision"],
        precision_label=sub["precision"],
        batch_size_per_gpu=sub["micro_batch_size"],
        seq_len=sub.get("seq_len"),
        throughput=samples * units,
        throughput_scope="total",
        throughput_total=samples * units,
        throughput_unit=preset.throughput_unit or "samples/s",
        peak_memory_gib=sub.get("peak_memory_gib"),
        framework=str(sub.get("framework") or "PyTorch")[:200],
        framework_version=(sub.get("framework_version") or None) and sub["framework_version"][:64],
        suspect=False,
        source=SUBMITTED,
        source_ref=f"gpucost bench run {sub['run_id']} submitted by {submitter}",
        seen_on=now.date(),
        notes=hold.reason,
        status=hold.status,
        hold_reason=hold.reason,
        run_id=sub["run_id"],
        environment=env,
        submitted_by=submitter,
        submitted_at=now,
    )
    session.add(row)
    config = {
        "preset": preset.slug,
        "workload": workload,
        "method": method,
        "gpu": canonical,
        "gpu_count": sub["gpu_count"],
        "precision": sub["precision"],
        "micro_batch_size": sub["micro_batch_size"],
    }
    try:
        session.flush()
        corroborated = [r for r in held if r.id in hold.corroborates]
        if corroborated:
            row.corroborated_by = corroborated[0].submitted_by
            row.corroborated_at = now
        for other in corroborated:
            other.status, other.hold_reason = "accepted", None
            other.corroborated_by, other.corroborated_at = submitter, now
            record_event(
                session, now, "corroborated", submitter, other, config,
                hold.before, hold.after, f"{submitter}'s run {row.run_id} agrees with it",
            )  # fmt: skip
        record_event(
            session,
            now,
            "submitted" if hold.status == "accepted" else "held",
            submitter,
            row,
            config,
            hold.before,
            hold.after if hold.status == "accepted" else hold.before,
            hold.reason,
        )
        session.commit()
    except IntegrityError:
        # the same run id committed by a concurrent request: answer with that row
        session.rollback()
        return submit_benchmark(session, ref, sub, submitter, now)
    return benchmark_row(row, ref), True


def held_rows(
    session: Session, workload: str, method: str, gpu: str | None, count: int, precision: str
) -> list[ThroughputBenchmark]:
    """The held submitted rows of one configuration (candidates for corroboration)."""
    return list(
        session.scalars(
            select(ThroughputBenchmark)
            .join(GpuModel, GpuModel.id == ThroughputBenchmark.gpu_model_id)
            .where(
                ThroughputBenchmark.source == SUBMITTED,
                ThroughputBenchmark.status == "held",
                ThroughputBenchmark.workload == workload,
                ThroughputBenchmark.method == method,
                GpuModel.canonical_name == gpu,
                ThroughputBenchmark.gpu_count == count,
                ThroughputBenchmark.precision == precision,
            )
            .order_by(ThroughputBenchmark.id)
        )
    )


def record_event(
    session: Session,
    at: dt.datetime,
    action: str,
    actor: str,
    row: ThroughputBenchmark,
    configuration: dict[str, Any],
    before: float | None,
    after: float | None,
    detail: str | None,
) -> None:
    """Append one entry to the audit trail (:class:`app.db.models.SubmissionEvent`)."""
    session.add(
        SubmissionEvent(
            at=at,
            action=action,
            actor=actor,
            submitter=row.submitted_by or "",
            benchmark_id=row.id,
            configuration=configuration,
            answer_before=before,
            answer_after=after,
            unit="samples/s",
            detail=detail,
        )
    )


def is_revoked(session: Session, identity: str) -> bool:
    """Whether a maintainer revoked this submitter (its token is refused)."""
    return (
        session.scalar(select(RevokedSubmitter.id).where(RevokedSubmitter.identity == identity))
        is not None
    )


class ReviewError(ValueError):
    """A maintainer command that cannot be carried out (unknown run id or submitter, a row
    not held, a submitter already revoked)."""


def _config_of(ref: ReferenceData, row: ThroughputBenchmark) -> Config | None:
    """The configuration of a stored submitted row (``None``: no catalog GPU, or a test
    preset)."""
    slug = row.task.removeprefix("gpucost bench ").split(" ", 1)[0]
    gpu = ref.gpu_names_by_id.get(row.gpu_model_id) if row.gpu_model_id else None
    if gpu is None or slug not in ref.presets or not row.batch_size_per_gpu:
        return None
    try:
        return resolve_config(
            ref,
            slug,
            gpu,
            row.gpu_count,
            row.interconnect,
            row.precision,
            row.batch_size_per_gpu,
        )
    except (WorkloadError, HardwareError):
        return None


def _configuration(cfg: Config | None, row: ThroughputBenchmark, ref: ReferenceData) -> dict:
    return {
        "preset": cfg.preset if cfg else None,
        "workload": row.workload,
        "method": row.method,
        "gpu": ref.gpu_names_by_id.get(row.gpu_model_id) if row.gpu_model_id else None,
        "gpu_count": row.gpu_count,
        "precision": row.precision,
        "micro_batch_size": row.batch_size_per_gpu,
    }


def approve(
    session: Session, ref: ReferenceData, run_id: str, maintainer: str, now: dt.datetime
) -> dict[str, Any]:
    """A maintainer corroborates a held submitted row: it is ``accepted`` with
    ``corroborated_by`` ``maintainer:<name>`` (it may then move its answer up to the band,
    :data:`HOLD_RATIO`). Recorded in the audit trail with the answer before and after. Runs in
    the caller's transaction.

    Raises:
        ReviewError: no such run, or it is not held.
    """
    row = session.scalar(select(ThroughputBenchmark).where(ThroughputBenchmark.run_id == run_id))
    if row is None or row.source != SUBMITTED:
        raise ReviewError(f"no submitted run {run_id!r}")
    if row.status != "held":
        raise ReviewError(f"run {run_id!r} is {row.status}, not held")
    cfg = _config_of(ref, row)
    actor = MAINTAINER + maintainer
    before = after = None
    if cfg is not None:
        accepted = cfg.accepted_runs()
        before = cfg.served(accepted)
        canonical = ref.gpu_names_by_id[row.gpu_model_id]  # type: ignore[index]
        approved = replace(submitted_run(row, canonical), corroborated_by=actor)
        after = cfg.served([*accepted, approved])
    row.status, row.hold_reason = "accepted", None
    row.corroborated_by, row.corroborated_at = actor, now
    record_event(
        session, now, "approved", actor, row, _configuration(cfg, row, ref), before, after,
        f"approved by maintainer {maintainer}",
    )  # fmt: skip
    return benchmark_row(row, ref)


@dataclass(frozen=True, slots=True)
class Revocation:
    """What ``gpucost submissions revoke`` did: rows revoked, other submitters' rows held
    again (they were corroborated by the revoked one only), and per configuration the served
    answer before and after (samples/s)."""

    identity: str
    rows_revoked: int
    rows_reheld: int
    answers: list[tuple[dict[str, Any], float | None, float | None]]


def revoke(
    session: Session,
    ref: ReferenceData,
    identity: str,
    maintainer: str,
    reason: str | None,
    now: dt.datetime,
) -> Revocation:
    """Revoke a submitter (an API token's identity) and every row it submitted, in the
    caller's transaction: the identity is stored as revoked (its token is refused from then
    on), its rows become ``revoked`` (kept for the audit trail, never used), other submitters'
    rows that only it corroborated are ``held`` again, and each change is in the audit trail
    with the served answer of its configuration before and after.

    Raises:
        ReviewError: the identity submitted nothing, or is already revoked.
    """
    if is_revoked(session, identity):
        raise ReviewError(f"{identity!r} is already revoked")
    rows = list(
        session.scalars(
            select(ThroughputBenchmark)
            .where(
                ThroughputBenchmark.source == SUBMITTED,
                ThroughputBenchmark.submitted_by == identity,
            )
            .order_by(ThroughputBenchmark.id)
        )
    )
    if not rows:
        raise ReviewError(f"{identity!r} submitted nothing")
    reheld = list(
        session.scalars(
            select(ThroughputBenchmark).where(
                ThroughputBenchmark.source == SUBMITTED,
                ThroughputBenchmark.status == "accepted",
                ThroughputBenchmark.corroborated_by == identity,
                ThroughputBenchmark.submitted_by != identity,
            )
        )
    )
    gone = {r.id for r in (*rows, *reheld)}
    actor = MAINTAINER + maintainer
    why = f"submitter {identity!r} revoked by maintainer {maintainer}" + (
        f": {reason}" if reason else ""
    )
    answers: dict[tuple[Any, ...], tuple[dict[str, Any], float | None, float | None]] = {}
    for row in (*rows, *reheld):
        cfg = _config_of(ref, row)
        config = _configuration(cfg, row, ref)
        key = tuple(sorted(config.items(), key=lambda kv: kv[0]))
        if key not in answers:
            before = after = None
            if cfg is not None:
                accepted = cfg.accepted_runs()
                before = cfg.served(accepted)
                after = cfg.served([r for r in accepted if r.id not in gone])
            answers[key] = (config, before, after)
        config, before, after = answers[key]
        if row.submitted_by == identity:
            row.status, row.hold_reason = "revoked", why
            record_event(session, now, "revoked", actor, row, config, before, after, why)
        else:
            row.status = "held"
            row.hold_reason = (
                f"corroborated only by {identity!r}, since revoked: held until corroborated again"
            )
            row.corroborated_by = row.corroborated_at = None
            record_event(session, now, "reheld", actor, row, config, before, after, why)
    session.add(
        RevokedSubmitter(
            identity=identity,
            revoked_at=now,
            revoked_by=maintainer,
            reason=reason,
            rows_revoked=len(rows),
        )
    )
    session.flush()
    return Revocation(identity, len(rows), len(reheld), list(answers.values()))


def list_events(
    session: Session, *, submitter: str | None = None, limit: int = 100, offset: int = 0
) -> tuple[list[dict[str, Any]], int]:
    """The audit trail, newest first (optionally one submitter's), and how many entries."""
    stmt = select(SubmissionEvent)
    if submitter:
        stmt = stmt.where(SubmissionEvent.submitter == submitter)
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    page = stmt.order_by(SubmissionEvent.id.desc()).limit(limit).offset(offset)
    out = []
    for e in session.scalars(page):
        item = {c.name: getattr(e, c.name) for c in SubmissionEvent.__table__.columns}
        item["at"] = as_utc(e.at).isoformat()
        out.append(item)
    return out, total
