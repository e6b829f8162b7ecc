"""The software stack factor and the physical checks: the datasheet peak and the credible-MFU
bound an answer is held to.
"""

from __future__ import annotations

from app.model.flops import (
    flops_peak_tflops,
    training_flops_per_sample,
)
from app.model.stacks import (
    DEFAULT_STACK,
    SOURCE_STACK,
    STACK_CLASS,
    Stack,
    published_class,
    stack_factor,
)
from app.model.throughput.common import _OWN, CREDIBLE_SHARPNESS, SingleGpu
from app.model.throughput.flops_model import FlopsModel
from app.model.throughput.rates import credible_rate
from app.model.types import (
    GpuSpec,
    Precision,
    Situation,
    Workload,
)
from app.model.vocabulary import family


class PhysicalChecks(FlopsModel):
    """The situations plus the stack factor, the peak cap and the credible-MFU bound."""

    def measured_source(
        self, software: str | None, precision: Precision | None = None
    ) -> str | None:
        """The source of the rows the pooled estimate stands on (its level's); ``None``
        without a measured group that stands for ``precision`` (memoised: asked once per
        estimate)."""
        key = (software, precision)
        if key in self._stacks:
            return self._stacks[key]
        found = None
        if self.groups and (precision is None or self._usable(precision, software)):
            group = self._group_at(software)
            level = self.data.level_of(group, software, precision == Precision.FP8)
            found = level.source if level is not None else None
        self._stacks[key] = found
        return found

    def measured_stack(
        self, software: str | None, precision: Precision | None = None
    ) -> Stack | None:
        """The stack of the rows the pooled estimate stands on (the level's source,
        :data:`app.model.stacks.SOURCE_STACK`); ``None`` without a measured group that
        stands for ``precision`` or for a source no stack is known for."""
        return SOURCE_STACK.get(self.measured_source(software, precision) or "")

    def stack(self, software: str | None = None, precision: Precision | None = None) -> Stack:
        """The stack the answer assumes: the workload's, else the stack of the preset's own
        measured rows, else its recipe's, else :data:`app.model.stacks.DEFAULT_STACK`."""
        return (
            self.w.stack
            or self.measured_stack(software, precision)
            or self.w.recipe_stack
            or (self.reference.recipe_stack if self.reference is not None else None)
            or DEFAULT_STACK
        )

    def _with_stack(self, est: SingleGpu, software: str | None, precision: Precision) -> SingleGpu:
        """``est`` moved from the class of its rows to the asked stack's
        (:func:`app.model.stacks.stack_factor` with the calibration's fitted class
        efficiencies; a FLOPs-model estimate is a tuned rate: its donors are), with the
        sentence that says which stack is assumed."""
        rate, situation, evidence, notes = est
        asked = self.stack(software, precision)
        fam = family(self.w.architecture)
        eff = self.cal.stack_efficiency
        if situation == Situation.FLOPS_MODEL:
            measured: str | None = None
            factor = stack_factor(asked, None, fam, eff)
        else:
            measured = self.measured_source(software, precision)
            # rows of a source no stack is known for stand for the stack asked
            known = measured is not None and measured in SOURCE_STACK
            factor = stack_factor(asked, measured, fam, eff) if known else 1.0
        given = "asked" if self.w.stack else "default"
        text = f"stack: {asked.value} ({given}; {STACK_CLASS[asked]} class"
        if factor != 1.0:
            rows = published_class(measured)
            text += (
                f", ×{factor:.2f} of the {rows}-class rates the estimate stands on: the "
                f"classes' {fam} efficiencies fitted from the rows, docs/model.md#throughput)"
            )
        else:
            text += ", at the measured rows' rate)"
        return rate * factor, situation, evidence, (*notes, text)

    def _credible(
        self, w: Workload, gpu: GpuSpec, precision: Precision, est: SingleGpu
    ) -> SingleGpu:
        """``est`` held below :func:`credible_rate` ``B`` unless it is this GPU's own
        measurement of this very configuration (``measured``): no answer implies more MFU
        (or HFU) than the measured runs of its family, size and precision reach. The bound is
        smooth, ``r / (1 + (r/B)^k)^(1/k)`` with k = :data:`CREDIBLE_SHARPNESS`: below B
        always, rising with ``r`` (a bigger micro-batch stays faster, recompute slower), and
        within 0.03 % of ``r`` up to 0.7·B."""
        rate, situation, evidence, notes = est
        bound = credible_rate(w, gpu, precision, self.cal)
        if situation == Situation.MEASURED or bound is None or rate <= 0:
            return est
        k = CREDIBLE_SHARPNESS
        held = rate / (1.0 + (rate / bound[0]) ** k) ** (1.0 / k)
        if held > 0.99 * rate:
            return held, situation, evidence, notes
        note = f"{bound[1]}: ×{held / rate:.2f}"
        return held, situation, evidence, (*notes, note)

    def _within_peak(
        self, est: SingleGpu, base: Workload, gpu: GpuSpec, precision: Precision
    ) -> SingleGpu:
        """``est`` (a pooled estimate of ``base``) capped at the datasheet peak
        (:func:`flops_peak_tflops`) where it stands on no measurement on this GPU (sibling,
        extrapolated, precision switch): specs and suite factors can carry a rate past what
        the GPU can do (Llama 2 7B, measured at fp8 on H100s, came out at 1.3× an A100's
        bf16 peak). A measured rate stands as measured."""
        rate, situation, evidence, notes = est
        flops = training_flops_per_sample(base)
        peak = flops_peak_tflops(gpu, precision) * 1e12
        if situation in _OWN or not flops or rate * flops <= peak:
            return est
        note = (
            f"capped at the {peak / 1e12:.0f} TFLOP/s {precision.value} peak counted here "
            f"(the {situation.value} rate would imply MFU {rate * flops / peak:.2f})"
        )
        return peak / flops, situation, evidence, (*notes, note)
