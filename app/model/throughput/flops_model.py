"""The ``flops_model`` situation: FLOPs per sample against the FLOP rate measured workloads of
the same family reach on the GPU, donors weighted by similarity.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import NamedTuple

from app.model.calibration import Calibration
from app.model.flops import (
    flops_peak_tflops,
    matmul_params,
    training_flops_per_sample,
)
from app.model.pooled import DEFAULT_B0, DEFAULT_B0_WORK, batch_work_per_sample
from app.model.stacks import class_efficiency, published_class
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
from app.model.vocabulary import Family, family

#: Methods that train adapters on a frozen base (no weight-gradient GEMMs of the base).
ADAPTER_METHODS = frozenset({Method.LORA.value, Method.QLORA.value})


def _adapter_rate() -> float:
    """Hardware FLOP rate of a LoRA step relative to a full-training step of the same network,
    recipe and GPU: the one such pair in the data, torchtune's optimisation table
    (pytorch/torchtune@bd2a0fc7 README.md, seed_data/benchmarks.csv rows of source
    ``torchtune``: Llama 3.2 3B, one A100, batch 2, seq 4096, bf16, activation checkpointing on
    in both), "LoRA" 8,210 tokens/s against "+ Activation Offloading" 7,301 tokens/s (the
    last full-fine-tune row whose techniques a LoRA run shares; the 8-bit AdamW row after it
    changes only the optimizer). Counted as :func:`app.model.flops.transformer_flops` does,
    with the recompute: LoRA ``6N + 16·L·h·s`` and full ``8N + 16·L·h·s`` FLOPs per token
    (N 3,212,749,824, L 28, h 3,072, s 4,096): 8,210 × 24.91e9 / (7,301 × 31.34e9) = 0.894.
    The adapters' small matmuls, dropout and the frozen base's extra casts cost time the 4N
    count does not see, so a LoRA job reaches 0.89 of the FLOP rate a full one does."""
    n, layers, h, s = 3_212_749_824, 28, 3072, 4096
    attention = 16.0 * layers * h * s
    return 8210 * (6.0 * n + attention) / (7301 * (8.0 * n + attention))


#: :func:`_adapter_rate` (0.894)
ADAPTER_RATE = _adapter_rate()


def method_shift(own: Method, donor_method: str) -> float:
    """log factor moving a donor's FLOP rate from its method to ``own``'s: ``log``
    :data:`ADAPTER_RATE` from full training (``full``/``pretrain``) to LoRA/QLoRA, its negative
    the other way, 0 between methods of one kind."""
    mine = own.value in ADAPTER_METHODS
    theirs = donor_method in ADAPTER_METHODS
    if mine == theirs:
        return 0.0
    return math.log(ADAPTER_RATE) if mine else -math.log(ADAPTER_RATE)


#: The shape fields that fix a transformer's network: two workloads equal in all of them
#: (none unset) and in their multiplied parameters run the same matmuls per token.
NETWORK_FIELDS = (
    "architecture",
    "layers",
    "hidden_size",
    "heads",
    "kv_heads",
    "ffn_hidden_size",
    "vocab_size",
)

#: How far two counts of one network's multiplied parameters may differ (relative): what
#: embedding padding and tied or task heads move (nanoGPT's GPT-2 124M preset 124,373,760
#: against llm.c's 124,475,904: 0.08 %), not another output layer (Transformer-XL large with
#: its adaptive softmax, 285 M, against Lambda's full-softmax run of it, 520 M)
SAME_NETWORK_TOLERANCE = 0.01


def same_network(a: Workload, b: Workload) -> bool:
    """Whether ``a`` and ``b`` are one transformer network: every field of
    :data:`NETWORK_FIELDS` given and equal and their multiplied parameters
    (:func:`app.model.flops.matmul_params`) within :data:`SAME_NETWORK_TOLERANCE` (e.g.
    nanoGPT's and llm.c's GPT-2 124M presets: 12 layers, width 768, 12 heads, FFN 3,072,
    vocabulary 50,304). Sequence, micro-batch, method and precision may differ: the FLOPs
    model moves a donor's rate to those."""
    values = [(getattr(a, f), getattr(b, f)) for f in NETWORK_FIELDS]
    if not all(x is not None and x == y for x, y in values):
        return False
    na, nb = matmul_params(a), matmul_params(b)
    return na > 0 and nb > 0 and abs(na - nb) <= SAME_NETWORK_TOLERANCE * max(na, nb)


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
    if fam == Family.TRANSFORMER:
        donor_x, own_x = entry[3], w.params
    else:
        donor_x = forward_intensity(donor) if donor is not None else None
        own_x = forward_intensity(w)
        if not donor_x or not own_x:
            donor_x, own_x = entry[2], flops
    if not donor_x or not own_x:
        return 1.0
    return 1.0 / (0.25 + abs(math.log(donor_x / own_x)))


def _hfu_bound(
    donor: Workload, gpu: GpuSpec, precision: Precision, cal: Calibration
) -> float | None:
    """The per-GPU samples/s ``donor`` may reach on ``gpu`` at ``precision`` under the HFU
    bound of ``cal`` (:func:`credible_rate` ``hardware``), at the donor's own shape: the FLOPs
    model borrows the FLOP rate the GPU executes; the job's own MFU bound is applied to its
    answer. ``None`` without a FLOPs count."""
    bound = credible_rate(replace(donor, precision=precision), gpu, precision, cal, hardware=True)
    return None if bound is None else bound[0]


def _held_to(units_per_s: float, donor: Workload, bound: float | None) -> float:
    """``units_per_s`` of ``donor`` (its published units/s) held to ``bound`` (samples/s per
    GPU) by the smooth credible bound of :meth:`ThroughputModel._credible`."""
    units = donor.units_per_sample or 1.0
    if bound is None or units_per_s <= 0:
        return units_per_s
    rate, k = units_per_s / units, CREDIBLE_SHARPNESS
    return float(rate / (1.0 + (rate / bound) ** k) ** (1.0 / k) * units)


class _Own(NamedTuple):
    """The workload the FLOPs model estimates, as its donors are weighed against it."""

    w: Workload
    fam: str
    #: training FLOPs per sample
    flops: float
    #: forward FLOPs per activation element (non-transformers), else None
    own_i: float | None
    #: time-weighted training FLOPs per sample (:func:`width_weighted_flops`)
    own_weighted: float
    #: fitted slope of log FLOP rate on log intensity for the family
    slope: float


def _where_measured(labels: list[str], here: list[str]) -> str:
    """Which donors (``labels``) were measured on the GPU (``here``), for the note: a donor
    measured elsewhere only lends its own estimate on this GPU."""
    if not here:
        return (
            "; none of them was measured on this GPU: each one's rate here is its own "
            "estimate carried from other GPUs"
        )
    if len(here) == len(labels):
        return "; each measured on this GPU"
    return (
        f"; measured on this GPU: {', '.join(here)}; the others' rates here are their "
        "estimates carried from other GPUs"
    )


def _named(labels: list[str]) -> str:
    """Donor names for a note, each once, in order, with how many donors share it (two
    measured labels of one network, different tasks: ``Llama 3.1 8B ×2``)."""
    counts = Counter(labels)
    return ", ".join(f"{n} ×{counts[n]}" if counts[n] > 1 else n for n in counts)


def _donor_mean(
    own: _Own,
    logs: list[float],
    weights: list[float],
    labels: list[str],
    by_intensity: bool,
    here: list[str],
) -> tuple[float, str]:
    """The donors' weighted geometric-mean FLOP/s, back to ``own``'s FLOP/s, and its note
    (which donors, ``here`` those measured on this GPU)."""
    _w, fam, flops, own_i, own_weighted, slope = own
    # time-weighted FLOP/s over the donors, back to this workload's FLOP/s
    rate_flops = (
        math.exp(sum(a * b for a, b in zip(logs, weights, strict=True)) / sum(weights))
        * flops
        / own_weighted
    )
    note = (
        f"{SITUATION_TEXT[Situation.FLOPS_MODEL]}: {rate_flops / 1e12:.1f} TFLOP/s "
        f"from {len(labels)} measured {fam} workload(s): {_named(labels)}"
        f"{_where_measured(labels, here)}"
    )
    if by_intensity and own_i is not None:
        note += (
            f", weighted by similarity of arithmetic intensity ({own_i:.0f} forward "
            "FLOPs per activation element here) and moved along the fitted slope of "
            f"FLOP rate on intensity ({slope:.2f})"
        )
    return rate_flops, note


class FlopsModel(PooledSituations):
    """The pooled situations plus the FLOPs model for workloads never measured."""

    def _donor_rates(
        self, own: _Own, gpu: GpuSpec, precision: Precision
    ) -> tuple[list[float], list[float], list[tuple[str, str]], bool]:
        """Each usable donor's log FLOP rate on ``gpu`` (:meth:`_donor_log_rate`), its weight
        and ``(label, method)``, in :meth:`donors` order; and whether any was moved by forward
        intensity.
        Where a usable donor is this very network (:func:`same_network`: another preset's
        measured label of the same shape, e.g. llm.c's GPT-2 124M for nanoGPT's preset) only
        such donors are kept: their rate is this network's, not a neighbour's."""
        found: list[tuple[float, float, bool, tuple[str, str], bool]] = []
        for (label, method), entry in self.donors(own.w, own.fam, own.own_i):
            rated = self._donor_log_rate(own, label, method, entry, gpu, precision)
            if rated is None:
                continue
            donor = self.data.workloads.get((label, method))
            twin = donor is not None and same_network(donor, own.w)
            found.append((*rated, (label, method), twin))
        if any(f[4] for f in found):
            found = [f for f in found if f[4]]
        logs = [f[0] for f in found]
        weights = [f[1] for f in found]
        keys = [f[3] for f in found]
        return logs, weights, keys, any(f[2] for f in found)

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
        (:meth:`_work_batch_term`, :meth:`_batch_factor`) and its method carried to the
        workload's (:func:`method_shift`: a full-training donor stands for a LoRA job at
        :data:`ADAPTER_RATE` of its FLOP rate). A non-transformer with a forward
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
        own_i = forward_intensity(w) if fam != Family.TRANSFORMER else None
        own_weighted = (
            width_weighted_flops(w, self.cal) if fam == Family.TRANSFORMER else None
        ) or flops
        slope = self.cal.intensity_slope.get(fam, 0.0)
        own = _Own(w, fam, flops, own_i, own_weighted, slope)
        logs, weights, keys, by_intensity = self._donor_rates(own, gpu, precision)
        labels = [label for label, _ in keys]
        if precision == Precision.FP8 and (not logs or self._twin_unmeasured(own, labels)):
            # no donor measured at fp8 (or the same network, which decides at 16 bits, not
            # at fp8): its gain is unmeasured here, so the fp8 job stands at the 16-bit
            # donors' rate (as a measured workload does: stand_in_precision)
            rate, situation, evidence, notes = self.flops_rate(w, gpu, Precision.BF16_AMP)
            what = "this network was not" if logs else "no workload of its kind was"
            note = f"{what} measured at fp8: estimated at bf16_amp's rate"
            return rate, situation, evidence, (*notes, note)
        if logs:
            here = self._measured_on(keys, gpu)
            rate_flops, note = _donor_mean(own, logs, weights, labels, by_intensity, here)
        else:
            rate_flops = achieved_flops_prior(gpu, fam, precision, self.cal)
            peak = flops_peak_tflops(gpu, precision) * 1e12
            note = (
                f"FLOPs model: no measured {fam} workload; fitted {fam} FLOP rate "
                f"{rate_flops / 1e12:.1f} TFLOP/s (MFU {rate_flops / peak:.2f})"
            )
        rate = rate_flops / flops * self._batch_factor(w)
        if logs and w.method.value in ADAPTER_METHODS:
            note += (
                f"; full-training donors at ×{ADAPTER_RATE:.2f} for LoRA (torchtune's LoRA vs "
                "full fine-tune pair, same recipe and GPU)"
            )
        if w.method == Method.QLORA:
            rate /= self.cal.qlora_slowdown
        return rate, Situation.FLOPS_MODEL, (), (note,)

    def _measured_on(self, keys: list[tuple[str, str]], gpu: GpuSpec) -> list[str]:
        """The labels of the rated donors (``keys``, :meth:`_donor_rates`) with a measurement
        on ``gpu`` (any GPU count), each once."""
        out: list[str] = []
        for label, method in keys:
            found = self.data.groups((label,), method)
            if found and self.data.rows_on(found[0], gpu.name) and label not in out:
                out.append(label)
        return out

    def _twin_unmeasured(self, own: _Own, labels: list[str]) -> bool:
        """Whether a donor is this very network (:func:`same_network`) but none of the
        donors rated (``labels``) is: the network was measured, not at the asked precision."""
        twins = {
            label
            for (label, method), _ in self.donors(own.w, own.fam, own.own_i)
            if (d := self.data.workloads.get((label, method))) is not None
            and same_network(d, own.w)
        }
        return bool(twins) and not twins.intersection(labels)

    def donors(
        self, w: Workload, fam: str, own_i: float | None
    ) -> list[tuple[tuple[str, str], tuple[str, float, float, int | None]]]:
        """The FLOPs table's entries ``w`` may borrow a FLOP rate from: measured workloads of
        its family (not its own labels at its own method: its network measured in another
        method lends, moved by :func:`method_shift`, as it does to the same job without a
        preset; a LoRA preset of Llama 3.1 8B borrows its full-training rows' rate at
        :data:`ADAPTER_RATE`), for a transformer those of its attention kernel and
        architecture where there are any, for a workload with a forward intensity
        (``own_i``) those that have one where there are any."""
        own = {(label, w.benchmark_method or w.method.value) for label in w.benchmark_workloads}
        candidates = [
            (key, entry)
            for key, entry in sorted(self.flops_table.items())
            if entry[0] == fam and key not in own
        ]
        if fam == Family.TRANSFORMER:
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
        return candidates

    def _donor_bound(
        self, label: str, method: str, gpu: GpuSpec, precision: Precision
    ) -> float | None:
        """:func:`_hfu_bound` of the donor ``(label, method)``, kept on the data for this
        calibration (the entry holds ``self.cal``, so its ``id`` names no other while kept):
        every job the donor lends to asks the same bound again."""
        cal, donor = self.cal, self.data.workloads[(label, method)]
        return self.data.kept(
            ("donor_bound", label, method, precision, id(cal)),
            gpu,
            lambda: (cal, _hfu_bound(donor, gpu, precision, cal)),
        )[1]

    def _donor_log_rate(
        self,
        own: _Own,
        label: str,
        method: str,
        entry: tuple[str, float, float, int | None],
        gpu: GpuSpec,
        precision: Precision,
    ) -> tuple[float, float, bool] | None:
        """One donor's log time-weighted FLOP/s on ``gpu`` at ``precision`` (its pooled
        estimate held to the credible bound, saturated in batch, moved along the intensity
        slope), its weight (:func:`donor_weight`) and whether the intensity moved it;
        ``None`` when it has no measurement that stands for ``precision``."""
        w, fam, flops, own_i, own_weighted, slope = own
        found = self.data.groups((label,), method)
        if not found:
            return None
        if not _measured_at(self.data.rows(found[0]), precision):
            # an fp8-only donor says nothing of a 16-bit rate (nor the reverse)
            return None
        level = self.data.reference_level(found[0], precision == Precision.FP8)
        if level is None:
            return None
        y, _ = self.data.predict(found[0], gpu, precision, None, level)
        # the donor's tuned rate: its rows' stack class divided out (app/model/stacks.py)
        y -= math.log(
            class_efficiency(fam, published_class(level.source), self.cal.stack_efficiency)
        )
        donor = self.data.workloads.get((label, method))
        if donor is not None:
            # the donor's own rate held to what runs of its kind reach on this GPU (a
            # suite measured on H100s only extrapolates to an A100 at up to 1.6× its peak)
            y = math.log(
                _held_to(math.exp(y), donor, self._donor_bound(label, method, gpu, precision))
            )
        # the donor's saturated rate, by the same law _batch_factor re-applies
        y -= self._work_batch_term(found[0], donor)
        # a full-training donor's rate carried to an adapter job (or back)
        y += method_shift(w.method, method)
        weight = donor_weight(fam, entry, w, flops, donor)
        donor_i = forward_intensity(donor) if donor is not None else None
        moved = False
        if own_i is not None and donor_i is not None:
            # roofline: the donor's rate moved along the fitted rate-vs-intensity slope
            y += slope * math.log(own_i / donor_i)
            moved = True
        # the donor's rate (per published unit, FLOPs entry[1] each) in time-weighted
        # FLOP/s (width_weighted_flops: a wider network reaches a higher share of the
        # peak in its matmuls); a donor of unknown shape is taken at this workload's
        # weighting (no width shift)
        weighting = own_weighted / flops
        if fam == Family.TRANSFORMER and donor is not None:
            donor_flops = training_flops_per_sample(donor)
            donor_weighted = width_weighted_flops(donor, self.cal)
            if donor_flops and donor_weighted:
                weighting = donor_weighted / donor_flops
        return y + math.log(entry[1] * weighting), weight, moved

    def _b0_samples(self, w: Workload) -> float:
        """b0 of the FLOPs model's micro-batch law for ``w``, in samples: the family's
        ``b0_work`` (fitted in :func:`app.model.pooled.batch_work_per_sample` units, matmul rows
        for transformers and training FLOPs for other families) ÷ ``w``'s own work per sample
        in the same unit, so the law runs in matmul rows or FLOPs per step. Where the family
        has no such fit (no cell measured at several batches has a FLOPs count: the seed's
        CNN cells are SSD300's, which has none) the family's law in samples as it was fitted
        (``data.b0``, else :data:`app.model.pooled.DEFAULT_B0`): a b0 fitted per sample is
        used per sample, never divided by a FLOPs ratio it was not fitted in. Transformers
        without a fit: :data:`app.model.pooled.DEFAULT_B0_WORK` matmul rows."""
        fam = family(w.architecture)
        work = batch_work_per_sample(w)
        fitted = self.data.b0_work.get(fam)
        if work and fitted:
            return fitted / work
        if work and fam in DEFAULT_B0_WORK:
            return DEFAULT_B0_WORK[fam] / work
        return self.data.b0.get(fam, DEFAULT_B0[fam])

    def _work_batch_term(self, group: tuple[str, str], donor: Workload | None) -> float:
        """log(b / (b + b0)) of ``group``'s typical measured batch (the geometric mean of its
        range, as :meth:`app.model.pooled.PooledData.batch_term`) under the FLOPs model's
        law (:meth:`_batch_factor`: b0 in matmul rows); the group's own law without a preset
        workload."""
        rng = self.data.batch_range(group)
        if donor is None or not rng:
            return self.data.batch_term(group, None)
        b0 = self._b0_samples(donor)
        typical = math.sqrt(rng[0] * rng[1])
        return math.log(typical / (typical + b0))

    def _batch_factor(self, w: Workload) -> float:
        """b / (b + b0) of the micro-batch law (:mod:`app.model.pooled`) for ``w``."""
        b0 = self._b0_samples(w)
        b = max(w.micro_batch_size, 1)
        return b / (b + b0)
