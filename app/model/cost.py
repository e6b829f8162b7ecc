"""Time and money per epoch, currency conversion, and the composed estimate.

The host-side rules (data loader, disk, host bridge, checkpoints) are in :mod:`app.model.host`
and the run warnings in :mod:`app.model.run_warnings`; both re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.model.epoch_cost import RunCosts, ServedRates, run_costs, served_rates
from app.model.epoch_cost import epoch_hours as epoch_hours  # re-exported
from app.model.host import HDD_MAX_RANDOM_READS_PER_S as HDD_MAX_RANDOM_READS_PER_S
from app.model.host import HOST_BRIDGE_MEASURED_SPEEDUPS as HOST_BRIDGE_MEASURED_SPEEDUPS
from app.model.host import checkpoint_gb as checkpoint_gb
from app.model.host import data_loader_rate as data_loader_rate
from app.model.host import disk_needed_gb as disk_needed_gb
from app.model.host import disk_read_rate as disk_read_rate
from app.model.host import host_bridge_efficiency as host_bridge_efficiency
from app.model.memory import transformer_tokens
from app.model.run_warnings import COMM_HEAVY_EFFICIENCY as COMM_HEAVY_EFFICIENCY
from app.model.run_warnings import _gb as _gb
from app.model.run_warnings import hardware_warnings as hardware_warnings
from app.model.run_warnings import padded_warning, warn
from app.model.shape import shape_warnings
from app.model.types import (
    Architecture,
    Estimate,
    Hardware,
    MemoryEstimate,
    OomRisk,
    RunWarning,
    ThroughputEstimate,
    WarningCode,
    Workload,
)
from app.model.vocabulary import Situation


class UnknownCurrencyError(ValueError):
    """No exchange rate connects the two currencies."""


#: The currency cross rates go through when no stored rate links two currencies directly:
#: every stored rate has USD on one side (seed_data/currency_rates.csv).
PIVOT_CURRENCY = "USD"


def conversion_path(
    source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> tuple[tuple[str, str, bool], ...]:
    """The stored rates that convert ``source`` to ``target``, in order: ``(base, quote,
    inverse)`` per step, ``inverse`` when the step divides by the rate (empty when the two
    are the same).

    ``rates[(base, quote)]`` = units of ``quote`` per one ``base`` (1 USD = 7.0197 CNY is
    ``rates[("USD", "CNY")] = 7.0197``). A stored pair converts in one step (times the rate, or
    divided by it for the inverse pair); otherwise through :data:`PIVOT_CURRENCY`, one such step
    each side (EUR → CNY: × EUR→USD, then × USD→CNY).

    Raises:
        UnknownCurrencyError: no rate links the two currencies, directly or via the pivot.
    """
    if source == target:
        return ()
    if (source, target) in rates:
        return ((source, target, False),)
    if (target, source) in rates:
        return ((target, source, True),)
    if PIVOT_CURRENCY not in (source, target):
        try:
            return conversion_path(source, PIVOT_CURRENCY, rates) + conversion_path(
                PIVOT_CURRENCY, target, rates
            )
        except UnknownCurrencyError:
            pass
    raise UnknownCurrencyError(f"no exchange rate from {source} to {target}")


def conversion_steps(
    source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> tuple[tuple[str, float], ...]:
    """How to convert ``source`` to ``target``: a sequence of ``("*", rate)`` or
    ``("/", rate)`` applied left to right, along :func:`conversion_path`. The SQL price filter
    applies the same steps, so both give the same floats.

    Raises:
        UnknownCurrencyError: no rate links the two currencies, directly or via the pivot.
    """
    return tuple(
        ("/" if inverse else "*", rates[(base, quote)])
        for base, quote, inverse in conversion_path(source, target, rates)
    )


def convert(
    amount: float, source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> float:
    """Convert ``amount`` from ``source`` to ``target`` currency by
    :func:`conversion_steps` (a stored rate, its inverse, or a cross rate via USD).

    Raises:
        UnknownCurrencyError: no rate links the two currencies.
    """
    for op, rate in conversion_steps(source, target, rates):
        amount = amount * rate if op == "*" else amount / rate
    return amount


def price_per_gpu_hour(price_per_hour: float | None, gpu_count: float | None) -> float | None:
    """The price of one GPU for one hour: an instance's price per hour ÷ its GPU count, in the
    price's own currency (a slice's price ÷ its share: half a card at 1.00/h is 2.00 per
    GPU-hour). ``None`` without a price or a GPU count. The one rule behind every per-GPU-hour
    figure (API, catalog, pages)."""
    if price_per_hour is None or not gpu_count:
        return None
    return price_per_hour / gpu_count


def tokens_per_sample(w: Workload) -> int | None:
    """Tokens per sample for token-based workloads (transformers, seq2seq), else ``None``."""
    if w.architecture.is_transformer and not w.architecture.takes_images:
        return transformer_tokens(w)
    if w.architecture == Architecture.RNN_SEQ2SEQ and w.seq_len:
        return w.seq_len
    return None


@dataclass(frozen=True, slots=True)
class EpochPlan:
    """One epoch as the throughput counts it: ``samples`` sequences/images/…, ``tokens``
    (token workloads), and the definition in words."""

    samples: float
    tokens: float | None
    definition: str
    #: samples counted as full ``seq_len`` sequences without a real token count
    assumed_full_length: bool = False


def epoch_plan(w: Workload) -> EpochPlan:
    """What one epoch of ``w`` is.

    Token workloads with ``tokens_per_epoch``: packed (default) → ``tokens_per_epoch /
    seq_len`` sequences of ``seq_len`` tokens, so ``epoch_hours = tokens_per_epoch /
    tokens_per_s``; padded → ``samples_per_epoch`` sequences each padded to ``seq_len``.
    Token workloads without it: every sample counts as a full ``seq_len`` sequence, exact
    when ``packed`` says the data is pre-packed (true) or padded to ``seq_len`` (false), an
    upper bound flagged by ``assumed_full_length`` when unknown. Others: samples.
    """
    tps = tokens_per_sample(w)
    n = w.samples_per_epoch
    if tps and w.tokens_per_epoch:
        tokens = float(w.tokens_per_epoch)
        if w.packed is not False:
            seqs = tokens / tps
            return EpochPlan(
                samples=seqs,
                tokens=tokens,
                definition=f"{w.tokens_per_epoch:,} tokens packed into {seqs:,.0f} sequences "
                f"of {tps:,} tokens",
            )
        return EpochPlan(
            samples=float(n),
            tokens=float(n * tps),
            definition=f"{n:,} samples, each padded to {tps:,} tokens ({w.tokens_per_epoch:,} "
            f"real tokens, {w.tokens_per_epoch / (n * tps):.0%} of the {n * tps:,} computed)",
        )
    if tps and w.packed is False:
        return EpochPlan(
            samples=float(n),
            tokens=float(n * tps),
            definition=f"{n:,} samples, each padded to {tps:,} tokens ({n * tps:,} tokens "
            "computed)",
        )
    if tps:
        return EpochPlan(
            samples=float(n),
            tokens=float(n * tps),
            definition=f"{n:,} samples counted as full {tps:,}-token sequences "
            f"({n * tps:,} tokens)",
            assumed_full_length=w.packed is None,
        )
    return EpochPlan(samples=float(n), tokens=None, definition=f"{n:,} samples")


@dataclass(frozen=True, slots=True)
class SpotAssumptions:
    """How a spot run is interrupted, documented assumptions the user can change.

    ``interruptions_per_hour`` 0.05 (one every 20 hours), ``checkpoint_interval_hours`` 1.0
    (the work since the last checkpoint is lost per interruption), ``restart_hours`` 0.25
    (a new instance, image pull, data copy and checkpoint reload). These are assumptions, not
    measurements: providers publish interruption frequencies only as coarse bands (e.g. the AWS Spot
    Instance Advisor's "<5 %" … ">20 %" of instances interrupted per month).
    """

    interruptions_per_hour: float = 0.05
    checkpoint_interval_hours: float = 1.0
    restart_hours: float = 0.25


def spot_expected_hours(hours: float, a: SpotAssumptions) -> float:
    """Expected wall-clock hours of ``hours`` of work on an interruptible instance.

    Interruptions are a Poisson process at λ = ``interruptions_per_hour`` of wall-clock time
    (during restarts too); work since the last checkpoint is lost and each restart takes
    R = ``restart_hours``. A segment of τ = ``checkpoint_interval_hours`` of work then takes
    ``e^(λR) · (e^(λτ) − 1) / λ`` hours on average (Daly, "A higher order estimate of the
    optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22
    (2006) 303-312, eq. for the expected wall time with the checkpoint write time taken as
    part of the work); the run is ``hours // τ`` whole segments plus the remainder. Finite
    for every finite input (the first-order ``hours / (1 − λ(R + τ/2))`` diverges once
    λ(R + τ/2) ≥ 1); ``hours`` when λ = 0.
    """
    lam, tau, restart = a.interruptions_per_hour, a.checkpoint_interval_hours, a.restart_hours
    if math.isinf(hours):
        return math.inf
    if lam <= 0 or hours <= 0:
        return hours

    def segment(work: float) -> float:
        return math.exp(lam * restart) * math.expm1(lam * work) / lam

    whole, rest = divmod(hours, tau) if tau > 0 else (0.0, hours)
    try:
        return whole * segment(tau) + segment(rest)
    except OverflowError:
        return math.inf


def _instead_of(expected: float, plain: float, decimals: int, unit: str) -> str:
    """``expected`` against ``plain`` in a sentence: ``0.102 h instead of 0.100 h``, with
    ``decimals`` decimals or up to four more until the two read differently, or ``about the
    same 0.1 h`` when they still read the same."""
    for d in range(decimals, decimals + 5):
        new, old = f"{expected:,.{d}f}", f"{plain:,.{d}f}"
        if new != old:
            return f"{new}{unit} instead of {old}{unit}"
    return f"about the same {plain:,.{decimals}f}{unit}"


def _spot_warning(
    hours: float, expected: float, price: float | None, currency: str, a: SpotAssumptions
) -> RunWarning:
    extra = (
        f" and {_instead_of(expected * price, hours * price, 2, ' ' + currency)}"
        if (price is not None and math.isfinite(expected))
        else ""
    )
    return warn(
        WarningCode.SPOT_INTERRUPTIBLE,
        "spot offer: the provider can stop the instance at any time. With "
        f"{a.interruptions_per_hour:g} interruptions per hour, a checkpoint every "
        f"{a.checkpoint_interval_hours:g} h and {a.restart_hours:g} h per restart, the run "
        f"is expected to take {_instead_of(expected, hours, 1, ' h')}{extra}",
        total_hours=round(hours, 4),
        expected_total_hours=round(expected, 4),
        interruptions_per_hour=a.interruptions_per_hour,
        checkpoint_interval_hours=a.checkpoint_interval_hours,
        restart_hours=a.restart_hours,
    )


def _scaled(value: float | None, served: float, model: float) -> float | None:
    """A utilisation of the model's rate carried to the served rate (the data-loader cap)."""
    return value * served / model if value is not None and model > 0 else value


def _loader_rate(w: Workload, hw: Hardware, cpu_loader: float | None) -> float | None:
    """Samples/s the host can feed: the slower of the CPUs' rate (``cpu_loader``,
    :func:`data_loader_rate`) and a hard disk's random reads (:func:`disk_read_rate`);
    ``None`` when neither limits."""
    disk = disk_read_rate(w, hw)
    if disk is None:
        return cpu_loader
    return disk if cpu_loader is None else min(cpu_loader, disk)


def _run_figures(
    w: Workload,
    plan: EpochPlan,
    tp: ThroughputEstimate,
    loader: float | None,
    price_per_hour: float | None,
) -> tuple[ServedRates, RunCosts]:
    """The served rates and run costs of one answer, by the rule the ranking's columns use
    (:mod:`app.model.epoch_cost`; one-element columns, no price as NaN)."""
    rates = served_rates(
        np.array([tp.samples_per_s]),
        np.array([tp.samples_per_s_low]),
        np.array([tp.samples_per_s_high]),
        np.array([math.inf if loader is None else loader]),
    )
    price = np.array([math.nan if price_per_hour is None else price_per_hour])
    return rates, run_costs(plan.samples, w.epochs, rates, price)


def _first(column: np.ndarray) -> float:
    """The one figure of a one-element column."""
    return float(column[0])


def _priced(column: np.ndarray, price_per_hour: float | None) -> float | None:
    """A cost figure of a one-element column; ``None`` without a price."""
    return None if price_per_hour is None else _first(column)


def combine(
    w: Workload,
    hw: Hardware,
    tp: ThroughputEstimate,
    memory: MemoryEstimate,
    *,
    price_per_hour: float | None = None,
    currency: str = "USD",
    billing: str | None = None,
    spot: SpotAssumptions | None = None,
) -> Estimate:
    """Compose throughput and memory into the answer, applying the data-loader cap.

    ``price_per_hour`` is for the whole instance, already in ``currency``; ``billing``
    ``spot`` adds the interruption warning and the expected time and cost under ``spot``
    (default :class:`SpotAssumptions`).
    """
    cpu_loader = data_loader_rate(w, hw.vcpus)
    loader = _loader_rate(w, hw, cpu_loader)
    plan = epoch_plan(w)
    rates, run = _run_figures(w, plan, tp, loader, price_per_hour)
    samples, low, high = (_first(a) for a in (rates.samples_per_s, rates.low, rates.high))
    tokens = tokens_per_sample(w)
    warnings = shape_warnings(w) + hardware_warnings(w, hw, tp, cpu_loader, memory)
    if plan.assumed_full_length:
        warnings.append(padded_warning(w, tokens))
    figures = _hours_and_costs(run, price_per_hour)
    expected_hours, expected_cost, spot_warnings = _spot_figures(
        billing, spot, figures["total_hours"], price_per_hour, currency
    )
    return Estimate(
        samples_per_s=samples,
        samples_per_s_low=low,
        samples_per_s_high=high,
        tokens_per_s=samples * tokens if tokens else None,
        basis=tp.basis,
        situation=tp.situation.value if tp.situation else None,
        precision=tp.precision.value if tp.precision else None,
        **figures,
        currency=currency,
        memory=memory,
        epochs=w.epochs,
        multi_gpu_efficiency=tp.multi_gpu_efficiency,
        multi_gpu_basis=tp.multi_gpu_basis,
        multi_gpu=tp.multi_gpu,
        mfu=_scaled(tp.mfu, samples, tp.samples_per_s),
        hfu=_scaled(tp.hfu, samples, tp.samples_per_s),
        stack=tp.stack,
        data_loader_samples_per_s=loader,
        warnings=tuple(warnings + spot_warnings),
        evidence=tp.evidence,
        notes=w.input_notes + tp.notes + memory.notes + measured_run_note(w, tp, memory),
        epoch_definition=plan.definition,
        epoch_samples=plan.samples,
        epoch_tokens=plan.tokens,
        interruptible=billing == "spot",
        expected_total_hours=expected_hours,
        expected_total_cost=expected_cost,
    )


def measured_run_note(
    w: Workload, tp: ThroughputEstimate, memory: MemoryEstimate
) -> tuple[str, ...]:
    """A note when the memory verdict contradicts a measured run: the throughput answer is
    ``measured`` (1-GPU benchmark rows of this job on this GPU model at its precision,
    software level and micro-batch, :meth:`app.model.throughput.measured` ``_own_measurement``)
    so the configuration ran on the card, yet the memory model calls the risk ``high``. The
    verdict stays the model's; the note says the measurement disagrees and which way to read
    it (the measured run proves it fits as it was run)."""
    if tp.situation != Situation.MEASURED or memory.oom_risk != OomRisk.HIGH:
        return ()
    return (
        f"memory: runs of this configuration at micro-batch {w.micro_batch_size} were "
        f"measured on this GPU model (the rate above), so it fit there as it was run; the "
        f"predicted {memory.peak_memory_gib:.1f} GiB of {memory.usable_vram_gib:.1f} "
        "usable contradicts that measurement",
    )


#: The hour figures of an answer (:class:`~app.model.types.Estimate` and
#: :class:`~app.model.epoch_cost.RunCosts` name them alike), and its cost figures.
_HOURS = (
    "epoch_hours",
    "epoch_hours_low",
    "epoch_hours_high",
    "total_hours",
    "total_hours_low",
    "total_hours_high",
)
_COSTS = (
    "cost_per_epoch",
    "cost_per_epoch_low",
    "cost_per_epoch_high",
    "total_cost",
    "total_cost_low",
    "total_cost_high",
)


def _hours_and_costs(run: RunCosts, price_per_hour: float | None) -> dict[str, Any]:
    """The hours (h) and costs (in the price's currency; ``None`` without a price) of one
    answer, by :class:`~app.model.types.Estimate` field name, from one-element columns."""
    hours = {name: _first(getattr(run, name)) for name in _HOURS}
    return hours | {name: _priced(getattr(run, name), price_per_hour) for name in _COSTS}


def _spot_figures(
    billing: str | None,
    spot: SpotAssumptions | None,
    total_hours: float,
    price_per_hour: float | None,
    currency: str,
) -> tuple[float | None, float | None, list[RunWarning]]:
    """A spot offer's expected hours and cost of all epochs with interruptions and restarts
    under ``spot`` (default :class:`SpotAssumptions`) and its warning; nothing otherwise."""
    if billing != "spot":
        return None, None, []
    a = spot or SpotAssumptions()
    hours = spot_expected_hours(total_hours, a)
    cost = hours * price_per_hour if price_per_hour is not None else None
    return hours, cost, [_spot_warning(total_hours, hours, price_per_hour, currency, a)]
