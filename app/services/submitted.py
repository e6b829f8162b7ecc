"""Submitted measurements as evidence no single submitter can bend.

A measurement sent with ``gpucost bench`` (``POST /v1/benchmarks``) never enters the pooled
model: the published benchmarks alone fit it, set its software levels and give every answer
(the *published* answer). Accepted submitted runs then move the answer of their own
configuration only (benchmark label, method, GPU model, GPU count, precision), by
:func:`combine`:

* each submitter is **one observation**, however many runs it sent: the median of its runs'
  ratios to the published answer at each run's micro-batch; the published answer is one
  observation too (:data:`PUBLISHED_WEIGHT`); the served answer is their geometric mean;
* without corroboration the served answer stays within ``±MAX_UNCORROBORATED_MOVE`` of the
  published one (and a submission that would take it further is ``held`` at the door:
  :mod:`app.services.submissions`); corroborated (a second submitter whose observation
  agrees within that share, or a maintainer's approval) it may move up to the plausibility
  band (:data:`HOLD_RATIO`) and never beyond;
* no other configuration, GPU or workload moves: nothing else reads submitted runs.

Revoking a submitter (``gpucost submissions revoke``) removes its runs, so every answer is the
published one again, exactly (the published model never saw them).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from app.fields import same_named
from app.model.types import (
    Evidence,
    Precision,
    Situation,
    ThroughputEstimate,
    Workload,
)

#: A submission more than this factor above or below the published answer for its workload on
#: its GPU × count is held for review (issue 14: "more than 2× off"); no submitted evidence,
#: corroborated or not, takes an answer past it.
HOLD_RATIO = 2.0

#: The most one uncorroborated submitter may move a served answer, as a share of the
#: published answer (0.10: ±10 %). Below the narrowest range any published answer carries
#: (a measured one: 10th-90th percentile of actual ÷ predicted 0.868-1.145 in served-path
#: cross-validation, ``range_factors["measured"]`` of app/model/calibration.json), so one
#: submitter alone never moves an answer out of the range it already stated. Two submitters
#: agree when their observations are within this share of each other.
MAX_UNCORROBORATED_MOVE = 0.10

#: Weight of the published answer among the observations (each submitter weighs 1).
PUBLISHED_WEIGHT = 1.0

#: ``source`` of every submitted row
SUBMITTED = "submitted"

#: ``corroborated_by`` prefix of a maintainer's approval (``gpucost submissions approve``)
MAINTAINER = "maintainer:"

ConfigKey = tuple[str, str, str, int, str]


@dataclass(frozen=True, slots=True)
class SubmittedRun:
    """An accepted submitted row, as the overlay uses it: ``throughput_total`` is in the
    preset's published unit per second for the whole GPU set (samples/s × units per
    sample)."""

    id: int
    submitter: str
    workload: str
    method: str
    gpu: str
    gpu_count: int
    precision: Precision
    batch_size_per_gpu: int
    throughput_total: float
    corroborated_by: str | None = None
    source_ref: str = ""

    @property
    def key(self) -> ConfigKey:
        """The configuration whose answer the run may move."""
        return config_key(self.workload, self.method, self.gpu, self.gpu_count, self.precision)


def config_key(
    workload: str, method: str, gpu: str, gpu_count: float, precision: Precision | str
) -> ConfigKey:
    """(benchmark label, method, GPU model, GPU count, precision) of an answer or a run."""
    return (workload, method, gpu, int(gpu_count), Precision(precision).value)


def workload_key(w: Workload, gpu: str, gpu_count: float, precision: Precision) -> ConfigKey | None:
    """The configuration key of an answer for ``w`` (``None`` when submitted runs never apply:
    a workload that departs from its preset, or one without a benchmark label, or a fraction
    of a GPU)."""
    if not w.matches_preset or not w.benchmark_workloads or gpu_count != int(gpu_count):
        return None
    method = w.benchmark_method or w.method.value
    return config_key(w.benchmark_workloads[0], method, gpu, gpu_count, precision)


def agree(a: float, b: float) -> bool:
    """Two observations (ratios to the published answer) within
    :data:`MAX_UNCORROBORATED_MOVE` of each other."""
    return max(a, b) / min(a, b) <= 1.0 + MAX_UNCORROBORATED_MOVE


@dataclass(frozen=True, slots=True)
class Combined:
    """The served answer ÷ the published one (``factor``, bounded), before the bound
    (``unclamped``), whether the evidence is corroborated, and each submitter's observation
    (the median ratio of its runs to the published answer)."""

    factor: float
    unclamped: float
    corroborated: bool
    observations: dict[str, float]


def combine(
    ratios: Mapping[str, Iterable[float]], corroborations: Mapping[str, str | None]
) -> Combined:
    """Combine submitters' runs with the published answer (module docstring).

    ``ratios``: per submitter, its runs' ratios to the published answer (> 0);
    ``corroborations``: per submitter, who corroborated its runs (another submitter's identity
    or ``maintainer:<name>``; ``None``: nobody). A corroboration by a submitter that has no
    run here any more (revoked) does not count.
    """
    obs = {s: statistics.median(list(r)) for s, r in ratios.items() if r}
    logs = [math.log(r) for r in obs.values()]
    unclamped = math.exp(sum(logs) / (PUBLISHED_WEIGHT + len(logs))) if logs else 1.0
    named = [
        by
        for s, by in corroborations.items()
        if by and s in obs and (by.startswith(MAINTAINER) or (by in obs and by != s))
    ]
    pairs = [(a, b) for a in obs for b in obs if a < b and agree(obs[a], obs[b])]
    corroborated = bool(named or pairs)
    if corroborated:
        low, high = 1.0 / HOLD_RATIO, HOLD_RATIO
    else:
        low, high = 1.0 - MAX_UNCORROBORATED_MOVE, 1.0 + MAX_UNCORROBORATED_MOVE
    return Combined(
        factor=min(max(unclamped, low), high),
        unclamped=unclamped,
        corroborated=corroborated,
        observations=obs,
    )


def combine_runs(
    runs: Iterable[SubmittedRun], published_at: Callable[[int], float]
) -> Combined | None:
    """:func:`combine` for ``runs`` of one configuration; ``published_at(micro_batch)`` is the
    published answer there, in the runs' unit (``None`` without runs)."""
    ratios: dict[str, list[float]] = {}
    corroborations: dict[str, str | None] = {}
    for run in runs:
        published = published_at(run.batch_size_per_gpu)
        if published <= 0 or run.throughput_total <= 0:
            continue
        ratios.setdefault(run.submitter, []).append(run.throughput_total / published)
        if run.corroborated_by:
            corroborations[run.submitter] = run.corroborated_by
    return combine(ratios, corroborations) if ratios else None


def moved(
    tp: ThroughputEstimate,
    combined: Combined,
    runs: Iterable[SubmittedRun],
    units_per_sample: float | None,
) -> ThroughputEstimate:
    """``tp`` (the published answer) moved by ``combined``: samples/s and its range times
    ``factor``, situation ``submitted``, the runs first in the evidence, and a note giving the
    published and served figures."""
    units = units_per_sample or 1.0
    runs = list(runs)
    evidence = tuple(
        same_named(
            Evidence,
            r,
            benchmark_id=r.id,
            precision=r.precision.value,
            samples_per_s=r.throughput_total / units,
            source="submitted",
        )
        for r in runs
    )
    f = combined.factor
    who = ", ".join(f"{s} ×{r:.3g}" for s, r in sorted(combined.observations.items()))
    bound = (
        f"corroborated: bounded at {1 / HOLD_RATIO:g}–{HOLD_RATIO:g}× the published answer"
        if combined.corroborated
        else f"not corroborated: bounded at ±{MAX_UNCORROBORATED_MOVE:.0%} of the published "
        "answer until a second submitter or a maintainer corroborates"
    )
    note = (
        f"published answer {tp.samples_per_s:.4g} samples/s "
        f"({tp.situation.value if tp.situation else tp.basis.value}); "
        f"served {tp.samples_per_s * f:.4g} samples/s (×{f:.3g}): moved by {len(runs)} "
        f"submitted run(s) from {len(combined.observations)} submitter(s) ({who}), each "
        f"submitter one observation and the published answer one; {bound}"
    )
    return replace(
        tp,
        samples_per_s=tp.samples_per_s * f,
        samples_per_s_low=tp.samples_per_s_low * f,
        samples_per_s_high=tp.samples_per_s_high * f,
        situation=Situation.SUBMITTED,
        basis=Situation.SUBMITTED.basis,
        evidence=(*evidence, *tp.evidence),
        notes=(*tp.notes, note),
    )
