"""Anchor on the user's own run: a rate measured for this very job on one machine moves the
estimate of every other machine by the same factor.

The model's error on a job is mostly the job's (its stack, data pipeline, kernels), not the
GPU's: cross-validation leaving one GPU out errs ±13-20 % (the calibration's ``range_factors``
``sibling``/``extrapolated``) where estimating a job never measured errs ±25-70 %
(``flops_model``). So with a measured rate ``r`` on machine A, machine B is estimated at
``estimate(B) × r / estimate(A)``, and its range is the cross-GPU one: ``measured`` for the
same GPU model, ``sibling`` for one of the same architecture, ``extrapolated`` otherwise. The
anchor is not stored (no token, no submission: ``gpucost bench --submit`` is for that).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.model.calibration import Calibration, load_calibration
from app.model.types import GpuSpec, Interconnect, Situation, ThroughputEstimate


@dataclass(frozen=True, slots=True)
class Anchor:
    """A rate the user measured: ``samples_per_s`` over all ``gpu_count`` × ``gpu`` linked by
    ``interconnect`` (``None``: as :meth:`app.model.throughput.ThroughputModel.estimate`
    reads it)."""

    gpu: GpuSpec
    gpu_count: float
    samples_per_s: float
    interconnect: Interconnect | None = None


def cross_gpu_situation(anchor: GpuSpec, target: GpuSpec) -> Situation:
    """Whose cross-validated range an anchored estimate carries: the same GPU model's
    (``measured``), the same architecture's (``sibling``) or another's (``extrapolated``)."""
    if anchor.name == target.name:
        return Situation.MEASURED
    if anchor.architecture and anchor.architecture == target.architecture:
        return Situation.SIBLING
    return Situation.EXTRAPOLATED


def anchored(
    target: ThroughputEstimate,
    at_anchor: ThroughputEstimate,
    anchor: Anchor,
    gpu: GpuSpec,
    cal: Calibration | None = None,
) -> ThroughputEstimate:
    """``target`` (the estimate on ``gpu``) moved by the anchor's measured ÷ estimated ratio
    (``at_anchor``: the model's estimate of the anchor machine), its range narrowed to the
    cross-GPU one (module docstring) and a note saying so. ``ValueError`` when the model
    has no estimate of the anchor machine (0 samples/s). The range factors are ``cal``'s
    (default: the served calibration)."""
    if at_anchor.samples_per_s <= 0:
        raise ValueError("no estimate of the anchor machine to compare the measured rate with")
    ratio = anchor.samples_per_s / at_anchor.samples_per_s
    value = target.samples_per_s * ratio
    situation = cross_gpu_situation(anchor.gpu, gpu)
    low, high = (cal or load_calibration()).range_factors[situation.value]
    note = (
        f"anchored on your run: {anchor.samples_per_s:.4g} samples/s measured on "
        f"{anchor.gpu_count:g} × {anchor.gpu.name}, where the model says "
        f"{at_anchor.samples_per_s:.4g}; every machine is moved by ×{ratio:.3g} and its range "
        f"narrowed to the {situation.value.replace('_', ' ')} error of going from one GPU "
        "to another (not stored)"
    )
    scale = ratio if target.mfu is not None else None
    return replace(
        target,
        samples_per_s=value,
        samples_per_s_low=value * low,
        samples_per_s_high=value * high,
        notes=(note, *target.notes),
        mfu=target.mfu * scale if scale and target.mfu is not None else target.mfu,
        hfu=target.hfu * scale if scale and target.hfu is not None else target.hfu,
    )
