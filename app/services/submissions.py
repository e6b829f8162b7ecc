"""Submitted measurements (``POST /v1/benchmarks``): token identity, rate limit, hold check, store.

A submitted row is stored like a published one (``source`` ``submitted``) plus the machine it
ran on, who sent it and when. It feeds the estimates only with ``status`` ``accepted``: a row
more than :data:`HOLD_RATIO` off the current estimate for that workload on that GPU, or on a
GPU the catalog does not know (a CPU run), is stored ``held`` for review instead.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.bench import TEST_PRESETS
from app.db.models import ThroughputBenchmark
from app.services.estimates import HardwareError, estimate_what_if, hardware_from_input
from app.services.reference import Preset, ReferenceData
from app.services.workloads import WorkloadError, resolve_workload

#: ``source`` of every submitted row.
SUBMITTED = "submitted"

#: A submission whose samples/s is more than this factor above or below the current estimate
#: for its workload on its GPU × count is held for review (issue 14: "more than 2× off").
HOLD_RATIO = 2.0


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
    """The hold check's verdict: ``status`` and, when held, why; ``estimate`` is the current
    estimate it compared against (samples/s for the GPU set), when there was one."""

    status: str
    reason: str | None
    estimate_samples_per_s: float | None


def hold_check(
    ref: ReferenceData,
    preset: str,
    gpu: str | None,
    gpu_count: int,
    interconnect: str | None,
    precision: str,
    micro_batch_size: int,
    samples_per_s: float,
) -> Hold:
    """Compare a submission with the current estimate (:func:`estimate_what_if`, the path the
    API runs); more than :data:`HOLD_RATIO` off either way, or nothing to compare with, holds it.
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
        w, reference, _ = resolve_workload(
            {"preset": preset, "micro_batch_size": micro_batch_size, "precision": precision}, ref
        )
        hw = hardware_from_input(
            {"gpu": canonical, "gpu_count": gpu_count, "interconnect": interconnect}, ref
        )
        est = estimate_what_if(w, reference, hw, ref, price_per_hour=None, currency="USD")
    except (WorkloadError, HardwareError) as exc:
        return Hold("held", f"no current estimate to check it against ({exc})", None)
    expected = est.samples_per_s
    ratio = samples_per_s / expected if expected > 0 else float("inf")
    if ratio > HOLD_RATIO or ratio < 1 / HOLD_RATIO:
        return Hold(
            "held",
            f"{samples_per_s:.4g} samples/s is {ratio:.2f}× the current estimate "
            f"{expected:.4g} samples/s for {gpu_count}× {canonical} (outside "
            f"1/{HOLD_RATIO:g}–{HOLD_RATIO:g}×)",
            expected,
        )
    return Hold("accepted", None, expected)


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
        )
    canonical = ref.resolve_gpu(sub["gpu"]) if sub.get("gpu") else None
    env = dict(sub.get("environment") or {})
    row = ThroughputBenchmark(
        seed_key=None,
        gpu_model_id=ref.gpu_ids_by_name[canonical] if canonical else None,
        gpu_label=(sub.get("gpu") or "CPU only")[:100],
        gpu_count=sub["gpu_count"],
        interconnect=sub.get("interconnect"),
        workload=preset.benchmark_workloads[0] if preset.benchmark_workloads else preset.slug,
        task=f"gpucost bench {preset.slug} ({preset.name})",
        method=preset.benchmark_method or str(preset.fields.get("method") or "full"),
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
    try:
        session.commit()
    except IntegrityError:
        # the same run id committed by a concurrent request: answer with that row
        session.rollback()
        return submit_benchmark(session, ref, sub, submitter, now)
    return benchmark_row(row, ref), True
