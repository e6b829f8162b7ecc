"""Hours and money of a run from its throughput: the one rule the ranking's columns and every
answer's figures (:func:`app.model.cost.combine`) are computed by.

Everything works on numpy arrays of offers (one element for one answer), in float64, so a
ranked offer's figures and the same offer's answer are the same arithmetic:

* the data-loader cap (:func:`served_rates`): a loader slower than the GPUs' rate is the
  rate, the range's top follows it and its bottom is held under it;
* one epoch takes ``samples per epoch ÷ samples/s ÷ 3600`` hours (∞ at a rate of 0), the
  range's fast end giving the low hours and its slow end the high;
* an epoch costs hours × the instance's price per hour; all epochs × ``epochs``.

Pure: numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Column = np.ndarray


def epoch_hours(samples_per_epoch: float, samples_per_s: float) -> float:
    """Hours for one epoch: samples per epoch ÷ samples/s ÷ 3600 (∞ if throughput is 0)."""
    if samples_per_s <= 0:
        return math.inf
    return samples_per_epoch / samples_per_s / 3600.0


def epoch_hours_column(samples_per_epoch: float, samples_per_s: Column) -> Column:
    """:func:`epoch_hours` of every element (float64): the same division, ∞ where the
    rate is not positive."""
    rate = np.asarray(samples_per_s, dtype=np.float64)
    stopped = rate <= 0
    hours = np.full(rate.shape, math.inf, dtype=np.float64)
    hours[~stopped] = samples_per_epoch / rate[~stopped] / 3600.0
    return hours


@dataclass(frozen=True, slots=True)
class ServedRates:
    """Samples/s served (after the data-loader cap) and the range around it, per offer."""

    samples_per_s: Column
    low: Column
    high: Column


def served_rates(samples: Column, low: Column, high: Column, loader: Column) -> ServedRates:
    """The GPUs' rate and range capped by the data loader (``loader`` samples/s, ∞ when
    unknown): where the loader is slower than the rate, the rate and the range's top are
    the loader's and the range's bottom is at most it; elsewhere they are unchanged."""
    samples, low, high, loader = (
        np.asarray(a, dtype=np.float64) for a in (samples, low, high, loader)
    )
    capped = loader < samples
    return ServedRates(
        samples_per_s=np.where(capped, loader, samples),
        low=np.where(capped, np.minimum(low, loader), low),
        high=np.where(capped, loader, high),
    )


@dataclass(frozen=True, slots=True)
class RunCosts:
    """Hours and cost per offer: one epoch at the served rate and at the range's ends (the
    fast end gives ``*_low`` hours and cost, the slow end ``*_high``), and all epochs.
    Costs are in the price's currency; NaN where the price is NaN (none), ∞ where it is ∞."""

    epoch_hours: Column
    epoch_hours_low: Column
    epoch_hours_high: Column
    cost_per_epoch: Column
    cost_per_epoch_low: Column
    cost_per_epoch_high: Column
    total_hours: Column
    total_hours_low: Column
    total_hours_high: Column
    total_cost: Column
    total_cost_low: Column
    total_cost_high: Column


def run_costs(
    samples_per_epoch: float, epochs: float, rates: ServedRates, price_per_hour: Column
) -> RunCosts:
    """The hours and cost of one epoch of ``samples_per_epoch`` samples and of ``epochs``
    epochs, at ``rates`` on instances of ``price_per_hour`` (whole instance)."""
    price = np.asarray(price_per_hour, dtype=np.float64)
    hours = epoch_hours_column(samples_per_epoch, rates.samples_per_s)
    hours_low = epoch_hours_column(samples_per_epoch, rates.high)
    hours_high = epoch_hours_column(samples_per_epoch, rates.low)
    with np.errstate(invalid="ignore"):  # ∞ hours × a free instance: NaN, as in Python floats
        cost, cost_low, cost_high = hours * price, hours_low * price, hours_high * price
    return RunCosts(
        epoch_hours=hours,
        epoch_hours_low=hours_low,
        epoch_hours_high=hours_high,
        cost_per_epoch=cost,
        cost_per_epoch_low=cost_low,
        cost_per_epoch_high=cost_high,
        total_hours=hours * epochs,
        total_hours_low=hours_low * epochs,
        total_hours_high=hours_high * epochs,
        total_cost=cost * epochs,
        total_cost_low=cost_low * epochs,
        total_cost_high=cost_high * epochs,
    )
