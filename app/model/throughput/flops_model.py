"""The ``flops_model`` situation: FLOPs per sample against the FLOP rate measured workloads of
the same family reach on the GPU, donors weighted by similarity.
"""

from __future__ import annotations

import math
from dataclasses import replace

from app.model.calibration import Calibration
from app.model.flops import (
    flops_peak_tflops,
    training_flops_per_sample,
)
from app.model.pooled import (
    DEFAULT_B0_WORK,
    family,
    matmul_rows_per_sample,
)
from app.model.throughput.common import CREDIBLE_SHARPNESS, SingleGpu, _measured_at
from app.model.throughput.measured import PooledSituations
from app.model.throughput.rates import (
    achieved_flops_prior,
    credible_rate,
    forward_intensity,
    width_weighted_flops,
)
from app.model.types import (
    SITUATION_TEXT,
    GpuSpec,
    Method,
    Precision,
    Situation,
    Workload,
)


def donor_weight(
    fam: str,
    entry: tuple[str, float, float, int | None],
    w: Workload,
    flops: float,
    donor: Workload | None = None,
) -> float:
    """Weight of a measured donor workload in the FLOPs model's mean FLOP rate for ``w``.

    ``1 / (0.25 + |ln(x_donor / x)|)``: a donor of the same ``x`` weighs 4, one ten times
    bigger or smaller 0.36. For a non-transformer whose donor and own forward intensity are
    both known (:func:`forward_intensity`), ``x`` is that intensity: by the roofline model
    the FLOP rate a net reaches depends on its FLOPs per byte moved, not on its size (VGG-16
    at 2,282 FLOPs per activation element runs 2.7× ResNet-50's rate at 736, EfficientNet-B0
    at 114 a fifth of it). Otherwise ``x`` is size: the parameter count for transformers
    (the matmul shapes grow with it) and the training FLOPs per sample for the other
    families, whose parameter count says little about their work (a convolution reuses each
    weight at every pixel: VGG-16 has 5.4 × ResNet-50's parameters but 3.8 × its FLOPs,
    AlexNet 2.4 × its parameters and 0.17 × its FLOPs). ``entry`` is the donor's
    :data:`FlopsTable` value, ``donor`` its preset workload, ``flops`` the training FLOPs
    per sample of ``w``; 1 when a size is unknown.
    """
    donor_x: float | None
    own_x: float | None
    if fam == "transformer":
        donor_x, own_x = entry[3], w.params
    else:
        donor_x = forward_intensity(donor) if donor is not None else None
        own_x = forward_intensity(w)
        if not donor_x or not own_x:
            donor_x, own_x = entry[2], flops
    if not donor_x or not own_x:
        return 1.0
    return 1.0 / (0.25 + abs(math.log(donor_x / own_x)))


def _held(
    units_per_s: float, donor: Workload, gpu: GpuSpec, precision: Precision, cal: Calibration
) -> float:
    """A donor's predicted rate (its published units/s) under the smooth credible bound of
    :meth:`ThroughputModel._credible`, at the donor's own shape."""
    units = donor.units_per_sample or 1.0
    bound = credible_rate(replace(donor, precision=precision), gpu, precision, cal)
    if bound is None or units_per_s <= 0:
        return units_per_s
    rate, k = units_per_s / units, CREDIBLE_SHARPNESS
    return float(rate / (1.0 + (rate / bound[0]) ** k) ** (1.0 / k) * units)


class FlopsModel(PooledSituations):
    """The pooled situations plus the FLOPs model for workloads never measured."""

    def flops_rate(self, w: Workload, gpu: GpuSpec, precision: Precision) -> SingleGpu:
        """Per-GPU samples/s from FLOPs per sample (``flops_model`` situation).

        The FLOP rate is the weighted geometric mean over the measured workloads of the same
        family (their pooled estimates on ``gpu`` × their FLOPs per unit), weighted by
        similarity (:func:`donor_weight`); transformers borrow from transformers with the
        same attention kernel (eager or SDPA) and of the same architecture (decoder, encoder,
        ViT) where there are any, each donor's rate counted in time-weighted FLOPs
        (:func:`width_weighted_flops`, so a wider donor's matmuls stand at its higher share
        of the peak, and the workload's own weighting turns the mean back into samples/s),
        its batch effect taken out and the workload's put in by one law in matmul rows
        (:meth:`_work_batch_term`, :meth:`_batch_factor`). A non-transformer with a forward
        intensity (:func:`forward_intensity`) borrows only from donors with one
        (where there are any), each donor's log FLOP rate moved by
        ``cal.intensity_slope[family] × ln(intensity / donor intensity)``: on the
        roofline a memory-bound kernel's FLOP rate is intensity × bandwidth (slope 1), a
        compute-bound one's the peak (slope 0), and a net mixes both
        (:func:`app.calibrate.validate.fit_intensity_slope`).
        """
        flops = training_flops_per_sample(w)
        fam = family(w.architecture)
        if not flops:
            return 0.0, Situation.FLOPS_MODEL, (), ("no FLOPs per sample for this workload",)
        logs, weights, labels = [], [], []
        own = set(w.benchmark_workloads)
        candidates = [
            (key, entry)
            for key, entry in sorted(self.flops_table.items())
            if entry[0] == fam and key[0] not in own
        ]
        if fam == "transformer":
            # an attention kernel like the workload's first (eager attention materialises
            # the score matrix and runs at a lower FLOP rate than SDPA/Flash kernels)
            same = [
                c
                for c in candidates
                if (d := self.data.workloads.get(c[0])) is not None and d.attention == w.attention
            ]
            # and of the same architecture (decoder, encoder, ViT) where there are any
            arch = [
                c
                for c in same
                if (d := self.data.workloads.get(c[0])) is not None
                and d.architecture == w.architecture
            ]
            candidates = arch or same or candidates
        own_i = forward_intensity(w) if fam != "transformer" else None
        own_weighted = (
            width_weighted_flops(w, self.cal) if fam == "transformer" else None
        ) or flops
        by_intensity = False
        slope = self.cal.intensity_slope.get(fam, 0.0)
        if own_i is not None:
            # only measured donors that can be placed on the intensity axis, where there
            # are any
            with_i = [
                c
                for c in candidates
                if (d := self.data.workloads.get(c[0])) is not None
                and forward_intensity(d) is not None
                and self.data.groups((c[0][0],), c[0][1])
            ]
            candidates = with_i or candidates
        for (label, method), entry in candidates:
            found = self.data.groups((label,), method)
            if not found:
                continue
            if not _measured_at(self.data.rows(found[0]), precision):
                # an fp8-only donor says nothing of a 16-bit rate (nor the reverse)
                continue
            level = self.data.reference_level(found[0], precision == Precision.FP8)
            if level is None:
                continue
            y, _ = self.data.predict(found[0], gpu, precision, None, level)
            donor = self.data.workloads.get((label, method))
            if donor is not None:
                # the donor's own rate held to what runs of its kind reach on this GPU (a
                # suite measured on H100s only extrapolates to an A100 at up to 1.6× its peak)
                y = math.log(_held(math.exp(y), donor, gpu, precision, self.cal))
            # the donor's saturated rate, by the same law _batch_factor re-applies
            y -= self._work_batch_term(found[0], donor)
            weight = donor_weight(fam, entry, w, flops, donor)
            donor_i = forward_intensity(donor) if donor is not None else None
            if own_i is not None and donor_i is not None:
                # roofline: the donor's rate moved along the fitted rate-vs-intensity slope
                y += slope * math.log(own_i / donor_i)
                by_intensity = True
            # the donor's rate (per published unit, FLOPs entry[1] each) in time-weighted
            # FLOP/s (width_weighted_flops: a wider network reaches a higher share of the
            # peak in its matmuls); a donor of unknown shape is taken at this workload's
            # weighting (no width shift)
            weighting = own_weighted / flops
            if fam == "transformer" and donor is not None:
                donor_flops = training_flops_per_sample(donor)
                donor_weighted = width_weighted_flops(donor, self.cal)
                if donor_flops and donor_weighted:
                    weighting = donor_weighted / donor_flops
            logs.append(y + math.log(entry[1] * weighting))
            weights.append(weight)
            labels.append(label)
        if not logs and precision == Precision.FP8:
            # no donor measured at fp8: its gain is unmeasured for this family, so the fp8
            # job stands at the 16-bit donors' rate (as a measured workload does:
            # stand_in_precision)
            rate, situation, evidence, notes = self.flops_rate(w, gpu, Precision.BF16_AMP)
            note = "no workload of its kind was measured at fp8: estimated at bf16_amp's rate"
            return rate, situation, evidence, (*notes, note)
        if logs:
            # time-weighted FLOP/s over the donors, back to this workload's FLOP/s
            rate_flops = (
                math.exp(sum(a * b for a, b in zip(logs, weights, strict=True)) / sum(weights))
                * flops
                / own_weighted
            )
            note = (
                f"{SITUATION_TEXT[Situation.FLOPS_MODEL]}: {rate_flops / 1e12:.1f} TFLOP/s "
                f"from {len(labels)} measured {fam} workload(s): {', '.join(labels)}"
            )
            if by_intensity and own_i is not None:
                note += (
                    f", weighted by similarity of arithmetic intensity ({own_i:.0f} forward "
                    "FLOPs per activation element here) and moved along the fitted slope of "
                    f"FLOP rate on intensity ({slope:.2f})"
                )
        else:
            rate_flops = achieved_flops_prior(gpu, fam, precision, self.cal)
            peak = flops_peak_tflops(gpu, precision) * 1e12
            note = (
                f"FLOPs model: no measured {fam} workload; fitted {fam} FLOP rate "
                f"{rate_flops / 1e12:.1f} TFLOP/s (MFU {rate_flops / peak:.2f})"
            )
        rate = rate_flops / flops * self._batch_factor(w)
        if w.method == Method.QLORA:
            rate /= self.cal.qlora_slowdown
        return rate, Situation.FLOPS_MODEL, (), (note,)

    def _work_batch_term(self, group: tuple[str, str], donor: Workload | None) -> float:
        """log(b / (b + b0)) of ``group``'s typical measured batch (the geometric mean of its
        range, as :meth:`app.model.pooled.PooledData.batch_term`) under the FLOPs model's
        law (:meth:`_batch_factor`: b0 in matmul rows); the group's own law without a preset
        workload."""
        rng = self.data.batch_range(group)
        if donor is None or not rng:
            return self.data.batch_term(group, None)
        fam = family(donor.architecture)
        b0 = self.data.b0_work.get(fam, DEFAULT_B0_WORK[fam]) / matmul_rows_per_sample(donor)
        typical = math.sqrt(rng[0] * rng[1])
        return math.log(typical / (typical + b0))

    def _batch_factor(self, w: Workload) -> float:
        """b / (b + b0) of the micro-batch law (:mod:`app.model.pooled`) for ``w``."""
        fam = family(w.architecture)
        b0 = self.data.b0_work.get(fam, DEFAULT_B0_WORK[fam]) / matmul_rows_per_sample(w)
        b = max(w.micro_batch_size, 1)
        return b / (b + b0)
