"""The ``derived`` situation: a custom workload that departs from its preset."""

from __future__ import annotations

from app.model.calibration import Calibration
from app.model.flops import (
    flops_peak_tflops,
    training_flops_per_sample,
)
from app.model.throughput.common import SingleGpu
from app.model.throughput.rates import width_weighted_flops
from app.model.types import (
    SITUATION_TEXT,
    GpuSpec,
    Method,
    Precision,
    Situation,
    Workload,
)


def derived(
    base: SingleGpu,
    w: Workload,
    ref: Workload,
    reference: Workload,
    gpu: GpuSpec,
    prec: Precision,
    cal: Calibration,
) -> SingleGpu:
    """The ``derived`` situation: the preset's estimate ``base`` (of ``ref``, the preset at
    the asked precision) carried to the custom workload ``w`` by the ratio of their
    time-weighted training FLOPs per sample (:func:`width_weighted_flops`), never past the
    datasheet peak nor the preset's own FLOP rate where that is higher. Width efficiency and
    the QLoRA slowdown are ``cal``'s."""
    rate, situation, evidence, notes = base
    # FLOPs weighted by the time they take: a wider network reaches a higher share
    # of the peak in its matmuls (width_weighted_flops)
    ref_flops = width_weighted_flops(ref, cal)
    own_flops = width_weighted_flops(w, cal)
    if ref_flops and own_flops:
        ratio = ref_flops / own_flops
        if w.method == Method.QLORA and reference.method != Method.QLORA:
            ratio /= cal.qlora_slowdown
        text = (
            f"{SITUATION_TEXT[Situation.DERIVED]} (×{ratio:.3g}); the preset's "
            f"estimate is {situation.value}"
        )
    else:
        ratio = 1.0
        text = (
            "your changes to the preset could not be scaled (no FLOPs estimate for "
            f"this architecture): the preset's {situation.value} rate is used as is"
        )
    derived_rate = rate * ratio
    flops = training_flops_per_sample(w)
    base_flops = training_flops_per_sample(ref)
    # scaling ratios compound (a preset carried to another precision and GPU, then
    # to a bigger model): never more FLOP/s than the datasheet's, nor than the
    # preset's own estimate where that stands above it (a measurement), so the
    # answer moves smoothly away from the preset's
    bound = max(flops_peak_tflops(gpu, prec) * 1e12, rate * (base_flops or 0.0))
    if flops and derived_rate * flops > bound:
        text += (
            f"; capped at {bound / 1e12:.0f} TFLOP/s (the {prec.value} peak counted "
            "here, or the preset's own rate where it is higher)"
        )
        derived_rate = bound / flops
    return (derived_rate, Situation.DERIVED, evidence, (text, *notes))
