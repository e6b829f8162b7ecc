"""Estimate and rank services: resolve inputs, call the pure core, shape the answers."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar, cast

import numpy as np
from sqlalchemy.orm import Session

from app.gpu_names import LabelError, form_hint
from app.model.anchor import Anchor, anchored
from app.model.calibration import load_calibration
from app.model.comm import NO_FABRIC, Fabric, fabric_of
from app.model.compat import effective_precision
from app.model.cost import (
    SpotAssumptions,
    UnknownCurrencyError,
    combine,
    convert,
    data_loader_rate,
    epoch_plan,
    spot_expected_hours,
    tokens_per_sample,
)
from app.model.epoch_cost import run_costs, served_rates
from app.model.memory import vram_per_gpu_gib
from app.model.model import Measurements, Model
from app.model.offload import offload_rates, offload_slowed
from app.model.rank import Candidate, CandidateColumns, Ranked, rank_columns
from app.model.run_warnings import software_blocked
from app.model.throughput import ThroughputModel
from app.model.types import (
    Estimate,
    GpuSpec,
    Hardware,
    Interconnect,
    MemoryBreakdown,
    MemoryEstimate,
    OomRisk,
    Precision,
    ThroughputEstimate,
    Workload,
    interconnect_class,
)
from app.services.config_table import ConfigTable
from app.services.heap import freeze_long_lived
from app.services.offers import (
    FilterError,
    OfferRow,
    select_offers_by_id,
)
from app.services.reference import PUBLISHED_MODEL_KEY, ReferenceData
from app.services.runnable import host_cannot_run
from app.services.snapshot import offer_snapshot
from app.services.submitted import SubmittedRun, combine_runs, moved, workload_key
from app.services.workloads import WorkloadError

_K = TypeVar("_K")
_V = TypeVar("_V")


class HardwareError(ValueError):
    """Bad hardware input; ``field`` names it."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def offer_interconnect(label: str | None) -> Interconnect | None:
    """An offer's interconnect word as the core's link class
    (:func:`app.model.types.interconnect_class`: NVSwitch boards are NVLink)."""
    return interconnect_class(label)


def _telling_apart(candidates: tuple[str, ...], ref: ReferenceData, h: dict[str, Any]) -> str:
    """The fields, not given in ``h`` (``HardwareIn`` values), that would pick exactly one of
    an ambiguous name's ``candidates``: ``interconnect`` where the boards differ (``nvswitch``
    picks the SXM board, ``pcie`` the PCIe card; ``nvlink`` does not: PCIe cards take NVLink
    bridges, :func:`app.gpu_names.form_hint`), ``vram_gib`` where the memory sizes do, each
    alone if it settles it, else both together ("A100": two boards × two sizes); ``""`` when
    no such field would ("RTX 6000": two 48 GB cards of the same board)."""
    gpus = [ref.gpus[c] for c in candidates if c in ref.gpus]

    def settles(key: Callable[[GpuSpec], object]) -> bool:
        return len(gpus) > 1 and len({key(g) for g in gpus}) == len(gpus)

    board = "interconnect (nvswitch: the SXM board, pcie: the PCIe card)"
    board_open = form_hint(h.get("interconnect")) is None
    size_open = h.get("vram_gib") is None
    alone = [
        text
        for text, key, open_ in (
            (board, lambda g: g.form_factor, board_open),
            ("vram_gib", lambda g: g.vram_gib, size_open),
        )
        if open_ and settles(key)
    ]
    if alone:
        return f", or give {' or '.join(alone)}"
    if board_open and size_open and settles(lambda g: (g.form_factor, g.vram_gib)):
        return f", or give {board} and vram_gib"
    return ""


def hardware_from_input(h: dict[str, Any], ref: ReferenceData) -> Hardware:
    """Build core hardware from ``HardwareIn`` values.

    The GPU name is resolved by the label rule
    (:meth:`app.gpu_names.GpuNameNormaliser.resolve_label`, weighing the VRAM and
    interconnect given), without the providers' naming conventions (there is no provider): a
    name that leaves several catalog models open ("A100": PCIe or SXM4, 40 or 80 GB) is not
    guessed, and a VRAM the label states picks the variant that has it (``3080-20G``: a
    memory-modified 3080 with 20 GB) or is refused.

    Raises:
        HardwareError: the GPU name matches nothing in the catalog, is ambiguous (the reason
            lists the candidates) or states a VRAM no variant has.
    """
    name = h["gpu"]
    vram = h.get("vram_gib")
    if name in ref.gpus:
        canonical = name
    else:
        try:
            label = ref.normaliser.resolve_label(
                name,
                vram_gib=vram,
                form_hint=form_hint(h.get("interconnect")),
                gpu_count=h.get("gpu_count") or 1,
            )
        except LabelError as exc:
            reason = str(exc) + _telling_apart(exc.candidates, ref, h)
            raise HardwareError("hardware.gpu", reason) from None
        canonical, vram = label.canonical_name, vram or label.vram_gib
    return Hardware(
        gpu=ref.gpus[canonical],
        gpu_count=h.get("gpu_count") or 1,
        interconnect=interconnect_class(h.get("interconnect")),
        vcpus=h.get("vcpus"),
        ram_gib=h.get("ram_gib"),
        disk_gb=h.get("disk_gb"),
        max_cuda=h.get("max_cuda"),
        vram_gib_per_gpu=vram,
        disk_type=h.get("disk_type"),
        gpus_per_node=h.get("gpus_per_node"),
        network_gbps=h.get("network_gbps"),
    )


def anchor_from_input(a: dict[str, Any], w: Workload, ref: ReferenceData) -> Anchor:
    """The request's ``anchor`` (``AnchorIn`` values) as a core :class:`Anchor`, its rate in
    samples/s (tokens/s ÷ the workload's tokens per sample).

    Raises:
        HardwareError: naming ``anchor.gpu`` (unknown or ambiguous GPU) or
            ``anchor.tokens_per_s`` (a workload without tokens per sample).
    """
    try:
        hw = hardware_from_input(a, ref)
    except HardwareError as exc:
        raise HardwareError("anchor.gpu", exc.reason) from None
    rate = a.get("samples_per_s")
    if rate is None:
        tokens = tokens_per_sample(w)
        if not tokens:
            raise HardwareError(
                "anchor.tokens_per_s",
                "this workload has no tokens per sample (no seq_len): give samples_per_s",
            )
        rate = a["tokens_per_s"] / tokens
    return Anchor(hw.gpu, hw.gpu_count, float(rate), hw.interconnect)


def check_estimable(w: Workload, model: ThroughputModel) -> None:
    """Raise a field error when the workload's throughput cannot be estimated at all.

    Raises:
        WorkloadError: no measurement at a compatible precision and no FLOPs estimate.
    """
    if model.can_estimate():
        return
    if w.benchmark_workloads:
        raise WorkloadError(
            "workload.precision",
            f"no measurement of this workload at a precision compatible with "
            f"{w.precision.value} and no FLOPs per sample to estimate from "
            "(give forward_gflops_per_sample or another precision)",
        )
    raise WorkloadError(
        "workload.forward_gflops_per_sample", "needed to estimate throughput of this workload"
    )


def offer_hardware(offer: OfferRow, ref: ReferenceData) -> Hardware:
    """The machine an offer describes (its GPU must be in the catalog)."""
    gpu = ref.gpus[ref.gpu_names_by_id[offer.gpu_model_id]]  # type: ignore[index]
    return Hardware(
        gpu=gpu,
        gpu_count=offer.gpu_count,
        interconnect=offer_interconnect(offer.interconnect),
        vcpus=offer.vcpus,
        ram_gib=offer.ram_gib,
        disk_gb=offer.disk_gb,
        max_cuda=offer.max_cuda,
        vram_gib_per_gpu=offer.vram_gib_per_gpu,
        network_gbps=offer.network_gbps,
    )


def model_of(ref: ReferenceData) -> Model:
    """The estimator on ``ref``'s measurements with the served calibration
    (:class:`app.model.Model`), one per reference data (kept in ``ref.memo``)."""

    def make() -> Model:
        data = ref.without_offers()
        evidence = Measurements(data.points, data.gpus, data.flops_table, data.throughput_data)
        return Model(evidence, load_calibration())

    return ref.memo.get_or_make(PUBLISHED_MODEL_KEY, make)


def price_in(
    price: float | None, from_currency: str, currency: str, ref: ReferenceData
) -> float | None:
    """An offer's price converted to ``currency``.

    Raises:
        FilterError: no exchange rate between the two currencies.
    """
    if price is None or from_currency == currency:
        return price
    try:
        return convert(price, from_currency, currency, ref.rates)
    except UnknownCurrencyError as exc:
        raise FilterError("currency", str(exc)) from exc


class _Models:
    """Throughput models of ``w`` per precision a GPU really runs it at (issue 10: bf16 on a
    V100 runs at the fp32 rate, fp8 before Ada/Hopper at bf16; see
    :func:`app.model.compat.effective_precision`)."""

    def __init__(self, w: Workload, reference: Workload | None, ref: ReferenceData):
        self.w, self.reference, self.ref = w, reference, ref
        self._by_precision: dict[Precision, ThroughputModel] = {}

    def requested(self) -> ThroughputModel:
        return self.get(self.w.precision)

    def get(self, precision: Precision) -> ThroughputModel:
        model = self._by_precision.get(precision)
        if model is None:
            w = self.w if precision == self.w.precision else replace(self.w, precision=precision)
            model = self._by_precision[precision] = model_of(self.ref).throughput_model(
                w, reference=self.reference
            )
        return model

    def for_gpu(self, gpu: GpuSpec) -> ThroughputModel:
        run, _ = effective_precision(gpu, self.w.precision, self.w.architecture, self.w.method)
        model = self.get(run)
        return model if model.can_estimate() else self.requested()


class ConfigEstimates:
    """Throughput and memory estimates of one workload per hardware configuration, memoised.

    Throughput depends only on (GPU, GPU count, interconnect) and memory only on (VRAM per
    GPU, whole GPUs), so a ranking needs one of each per distinct configuration (hundreds for
    10,000 offers). The values are exactly what :meth:`ThroughputModel.estimate` and
    :func:`app.model.memory.estimate_memory` (the served functions, also run by the
    accuracy harness) return, computed once: :func:`config_estimates` keeps one instance per
    (workload, reference workload) on the reference data, so later requests for the same
    workload reuse them until the reference data reloads. At most :attr:`max_entries`
    throughput and as many memory estimates are kept (what-if hardware from requests is
    unbounded); past that they are computed and not stored.
    """

    #: configurations kept per kind (10,000 offers have ~815 throughput, ~93 memory ones)
    max_entries = 4096

    def __init__(self, w: Workload, reference: Workload | None, ref: ReferenceData):
        self.w = w
        self.ref = ref
        self.models = _Models(w, reference, ref)
        self._tp: dict[tuple[str, float, Interconnect | None, Fabric], ThroughputEstimate] = {}
        self._mem: dict[tuple[float, int, bool, str | None], MemoryEstimate] = {}
        self._risk: dict[tuple[float, int, str | None], OomRisk] = {}
        self._rates: dict[tuple[str, float, Interconnect | None, Fabric], tuple[float, ...]] = {}
        #: the workload's memory breakdowns by (whole GPUs, micro-batch), shared by every
        #: VRAM size (:func:`app.model.memory.estimate_memory`'s ``peaks``)
        self._peaks: dict[tuple[int, int], MemoryBreakdown] = {}
        self._model_of: dict[str, ThroughputModel] = {}

    def throughput(
        self,
        gpu: GpuSpec,
        gpu_count: float,
        interconnect: Interconnect | None,
        fabric: Fabric = NO_FABRIC,
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` as served: :meth:`published`, moved by the
        accepted submitted runs of this configuration, if any
        (:func:`app.services.submitted.combine`); ``fabric``: the GPUs and network per
        machine where stated."""
        tp = self.published(gpu, gpu_count, interconnect, fabric)
        runs = self.submitted_runs(gpu, gpu_count, tp.precision)
        if not runs:
            return tp
        combined = combine_runs(
            runs,
            lambda batch: self.published_at(batch, gpu, gpu_count, interconnect, tp, fabric),
        )
        if combined is None:
            return tp
        return moved(tp, combined, runs, self.w.units_per_sample)

    def submitted_runs(
        self, gpu: GpuSpec, gpu_count: float, precision: Precision | None
    ) -> tuple[SubmittedRun, ...]:
        """The accepted submitted runs whose configuration is this answer's."""
        if not self.ref.submitted:
            return ()
        key = workload_key(self.w, gpu.name, gpu_count, precision or self.w.precision)
        return self.ref.submitted.get(key, ()) if key is not None else ()

    def published_at(
        self,
        batch: int,
        gpu: GpuSpec,
        gpu_count: float,
        interconnect: Interconnect | None,
        here: ThroughputEstimate,
        fabric: Fabric = NO_FABRIC,
    ) -> float:
        """The published answer at micro-batch ``batch``, in the preset's published units per
        second (``here``: the published answer at this workload's own micro-batch)."""
        units = self.w.units_per_sample or 1.0
        if batch == self.w.micro_batch_size:
            return here.samples_per_s * units
        other = config_estimates(replace(self.w, micro_batch_size=batch), None, self.ref)
        return other.published(gpu, gpu_count, interconnect, fabric).samples_per_s * units

    def published(
        self,
        gpu: GpuSpec,
        gpu_count: float,
        interconnect: Interconnect | None,
        fabric: Fabric = NO_FABRIC,
    ) -> ThroughputEstimate:
        """Samples/s of ``gpu_count`` × ``gpu`` at the precision the GPU runs the workload
        at, from the published measurements alone, slowed by the PCIe traffic of CPU
        offloading (:func:`app.model.offload.offload_slowed`); memoised for catalog GPUs
        (a GPU spec not from the catalog is estimated afresh)."""
        key = (gpu.name, gpu_count, interconnect, fabric)
        tp = self._tp.get(key)
        if tp is None:
            catalog, model = self._model_for(gpu)
            tp = offload_slowed(
                self.w,
                gpu,
                gpu_count,
                model.estimate(gpu, gpu_count, interconnect, fabric=fabric),
            )
            if catalog:
                self._keep(self._tp, key, tp)
        return tp

    def _model_for(self, gpu: GpuSpec) -> tuple[bool, ThroughputModel]:
        """Whether ``gpu`` is the catalog's spec of its name, and the throughput model at the
        precision it runs the workload at (kept per catalog GPU)."""
        catalog = self.ref.gpus.get(gpu.name) is gpu
        model = self._model_of.get(gpu.name) if catalog else None
        if model is None:
            model = self.models.for_gpu(gpu)
            if catalog:
                self._model_of[gpu.name] = model
        return catalog, model

    def rates(
        self,
        gpu: GpuSpec,
        gpu_count: float,
        interconnect: Interconnect | None,
        fabric: Fabric = NO_FABRIC,
    ) -> tuple[float, ...]:
        """(samples/s, low, high) of :meth:`throughput` with the same arguments, without
        building the estimate (:meth:`ThroughputModel.rates`: the same steps; slowed by CPU
        offloading alike; where accepted submitted runs move this configuration, the full
        :meth:`throughput`); memoised for catalog GPUs."""
        key = (gpu.name, gpu_count, interconnect, fabric)
        hit = self._rates.get(key)
        if hit is None:
            catalog, model = self._model_for(gpu)
            total, low, high, prec = model.rates(gpu, gpu_count, interconnect, fabric=fabric)
            if self.submitted_runs(gpu, gpu_count, prec):
                tp = self.throughput(gpu, gpu_count, interconnect, fabric)
                hit = (tp.samples_per_s, tp.samples_per_s_low, tp.samples_per_s_high)
            else:
                hit = offload_rates(self.w, gpu, gpu_count, total, low, high)
            if catalog:
                self._keep(self._rates, key, hit)
        return hit

    def memory_risk(self, vram_gib: float, gpu_count: float, gpu: str | None = None) -> OomRisk:
        """The ``oom_risk`` of :meth:`memory` with the same arguments, without its micro-batch
        search (what ranking needs of every configuration); memoised likewise."""
        key = (vram_gib, max(math.floor(gpu_count), 1), gpu)
        risk = self._risk.get(key)
        if risk is None:
            risk = model_of(self.ref).memory_risk_at(
                self.w, vram_gib, gpu_count, gpu=gpu, peaks=self._shared_peaks()
            )
            self._keep(self._risk, key, risk)
        return risk

    def memory(
        self, vram_gib: float, gpu_count: float, *, with_fixes: bool, gpu: str | None = None
    ) -> MemoryEstimate:
        """Peak memory per GPU with ``vram_gib`` GiB per GPU of card ``gpu`` (its
        driver-reported share: :mod:`app.model.vram`; ``with_fixes``: the changes that
        would fit when the risk is high). Memoised per (VRAM, whole GPUs ≥ 1, card), the only
        way :func:`estimate_memory` uses the GPU count."""
        key = (vram_gib, max(math.floor(gpu_count), 1), with_fixes, gpu)
        mem = self._mem.get(key)
        if mem is None:
            mem = model_of(self.ref).memory_at(
                self.w,
                vram_gib,
                gpu_count,
                with_fixes=with_fixes,
                gpu=gpu,
                peaks=self._shared_peaks(),
            )
            self._keep(self._mem, key, mem)
        return mem

    def _shared_peaks(self) -> dict[tuple[int, int], MemoryBreakdown] | None:
        """The breakdowns :meth:`memory` and :meth:`memory_risk` share (``peaks``), or None
        once it holds 16 × :attr:`max_entries` of them (then none more are kept)."""
        return self._peaks if len(self._peaks) < self.max_entries * 16 else None

    def _keep(self, store: dict[_K, _V], key: _K, value: _V) -> None:
        """Keep ``value`` under ``key`` while ``store`` holds under :attr:`max_entries`."""
        if len(store) < self.max_entries:
            store[key] = value


def config_estimates(
    w: Workload, reference: Workload | None, ref: ReferenceData
) -> ConfigEstimates:
    """The :class:`ConfigEstimates` of ``w`` for ``ref``, shared by requests (kept in
    ``ref.memo``, least recently used workloads dropped first)."""
    return ref.memo.get_or_make(
        ("config_estimates", w, reference),
        lambda: ConfigEstimates(w, reference, ref.without_offers()),
    )


def estimate_what_if(
    w: Workload,
    reference: Workload | None,
    hw: Hardware,
    ref: ReferenceData,
    *,
    price_per_hour: float | None,
    currency: str,
    billing: str | None = None,
    spot: SpotAssumptions | None = None,
    anchor: Anchor | None = None,
) -> Estimate:
    """Estimate for a hardware configuration with no offer (``billing`` ``spot`` adds the
    interruption warning and expected cost; ``anchor``, a rate the user measured for this job,
    moves it by the measured ÷ estimated ratio on the anchor's machine:
    :func:`app.model.anchor.anchored`)."""
    vram = vram_per_gpu_gib(hw.gpu.vram_gib, hw.vram_gib_per_gpu, hw.gpu_count)
    configs = config_estimates(w, reference, ref)
    memory = configs.memory(vram, hw.gpu_count, with_fixes=True, gpu=hw.gpu.name)
    check_estimable(w, configs.models.requested())
    tp = configs.throughput(hw.gpu, hw.gpu_count, hw.interconnect, fabric_of(hw))
    if anchor is not None:
        at = configs.throughput(anchor.gpu, anchor.gpu_count, anchor.interconnect)
        tp = anchored(tp, at, anchor, hw.gpu, model_of(ref).calibration)
    return combine(
        w,
        hw,
        tp,
        memory,
        price_per_hour=price_per_hour,
        currency=currency,
        billing=billing,
        spot=spot,
    )


def _candidate(cols: CandidateColumns, i: int) -> Candidate:
    def opt(a: np.ndarray) -> float | None:
        return None if math.isinf(a[i]) else float(a[i])

    return Candidate(
        offer_id=int(cols.offer_id[i]),
        cost_per_epoch=opt(cols.cost_per_epoch),
        epoch_hours=float(cols.epoch_hours[i]),
        total_cost=opt(cols.total_cost),
        price_per_hour=opt(cols.price_per_hour),
        samples_per_s=float(cols.samples_per_s[i]),
        oom_high=bool(cols.oom_high[i]),
        cannot_run=cols.cannot_run is not None and bool(cols.cannot_run[i]),
    )


@dataclass(frozen=True, slots=True)
class RankedOffer:
    """A ranked offer with its full estimate and converted price."""

    rank: int
    pareto_optimal: bool
    offer: OfferRow
    price_per_hour: float | None
    estimate: Estimate


@dataclass(frozen=True, slots=True)
class Ranking:
    """The top offers, the Pareto-optimal offers ranked below them, and how many were ranked."""

    results: list[RankedOffer]
    frontier: list[RankedOffer]
    total: int
    #: matching offers whose GPU is not in the catalog (no estimate possible)
    unestimated: int = 0
    #: estimated offers left out by ``max_total_cost`` / ``max_total_hours``
    over_budget: int = 0
    #: the unestimated offers, each with the reason it cannot be estimated (listed, never dropped)
    unestimable: tuple[tuple[OfferRow, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits a ranked offer must meet, and the spot assumptions its expected cost uses.

    ``max_total_cost`` in the request's currency and ``max_total_hours`` wall-clock hours, both
    for all epochs; spot offers are judged by their expected time and cost (interruptions
    included, :func:`app.model.cost.spot_expected_hours`). ``exclude_spot`` drops them.
    ``at_high_end`` judges each offer at the slow end of its range (the low throughput, as
    ``epoch_hours_high`` and ``total_cost_high`` give it), so the budget holds if the run is as
    slow as the range allows.
    """

    max_total_cost: float | None = None
    max_total_hours: float | None = None
    exclude_spot: bool = False
    at_high_end: bool = False
    spot: SpotAssumptions = field(default_factory=SpotAssumptions)


def rank_offers(
    w: Workload,
    reference: Workload | None,
    session: Session,
    filters: dict[str, Any],
    ref: ReferenceData,
    *,
    currency: str,
    sort: str,
    limit: int,
    drop_oom: bool,
    budget: Budget | None = None,
    bookable_fresh_first: bool = True,
    now: dt.datetime | None = None,
) -> Ranking:
    """Estimate every matching offer, rank them, and build full estimates for the top ``limit``
    and for the Pareto-optimal offers ranked below it.

    With ``bookable_fresh_first`` offers that cannot be rented as listed (price indices,
    quoted examples) rank after every bookable one, and an old or undated price
    (:mod:`app.price_age`, at ``now``) after every fresh dated offer of the same GPU model
    and count (:func:`app.model.rank.rank_columns`).

    Throughput depends only on (GPU, count, interconnect) and memory on (VRAM, count), so each
    is computed once per distinct configuration and kept for later requests of the same
    workload (:func:`config_estimates`); the data-loader cap, the price and the epoch time
    are applied per offer as array operations (prices and hours in the same float arithmetic
    as the scalar rules, which run once per distinct value). Full offer rows and estimates
    are built only for the offers returned. Offers whose GPU is unknown to the catalog cannot
    be estimated and are left out.

    Raises:
        FilterError: bad filter, or no exchange rate for ``currency``.
        WorkloadError: the workload's throughput cannot be estimated (see
            :func:`check_estimable`).
    """
    budget = budget or Budget()
    snap = offer_snapshot(session, ref)
    rows = snap.matching(filters, ref, currency=currency, exclude_spot=budget.exclude_spot)
    est = config_estimates(w, reference, ref)
    check_estimable(w, est.models.requested())
    samples_per_epoch = epoch_plan(w).samples
    # One estimate per distinct hardware configuration (the snapshot's, of the matching
    # offers); per offer only array operations: the price, the data-loader cap and the epoch
    # time, then the ranking on columns.
    used, config_of_row = _codes(snap.config[rows], len(snap.configs))
    # per configuration of this snapshot: (samples/s, low, high) and the OOM risk, kept as
    # columns for later requests of the workload on the same version
    table = snap.cached("configs", (w, reference), partial(ConfigTable, len(snap.configs)))
    made = table.missing(used)
    if made:
        table.put(made, [_config_estimate(est, ref, snap.configs[i]) for i in made])
        _freeze_estimates()
    known = table.known(used)
    estimable = np.flatnonzero(known[config_of_row])
    ids_all = snap.columns["id"][rows]
    skipped = ids_all[~known[config_of_row]].tolist()
    config_of = config_of_row[estimable]
    offer_ids = ids_all[estimable]
    # prices in ``currency`` (a listed price times the rate of its currency; nan: no price)
    prices = snap.columns["price_per_hour"][rows[estimable]]
    names, codes = snap.codes("currency")
    currencies = codes[rows[estimable]]
    priced = ~np.isnan(prices)
    for k in np.flatnonzero(np.bincount(currencies[priced], minlength=len(names))).tolist():
        if names[k] != currency:
            rate = cast(float, price_in(1.0, names[k], currency, ref))
            prices[currencies == k] *= rate
    # samples/s: the configuration's, capped by the data loader of the offer's vCPUs (the
    # scalar rules of app.model.cost applied once per distinct value)
    config_rate, config_low, config_high = (table.rates[used, k] for k in range(3))
    # the distinct vCPU counts of the whole version (a sort of every row, kept per version)
    distinct_vcpus, vcpu_codes = snap.cached(
        "vcpu_codes", None, lambda: np.unique(snap.columns["vcpus"], return_inverse=True)
    )
    vcpu_of = vcpu_codes.reshape(-1)[rows[estimable]]
    loader = np.array(
        [
            math.inf if (r := data_loader_rate(w, None if math.isnan(v) else v)) is None else r
            for v in distinct_vcpus.tolist()
        ],
        dtype=np.float64,
    ).reshape(-1)
    # the data-loader cap, hours and cost by the one rule every answer's figures use
    # (app.model.epoch_cost; combine() gives the rows shown the same numbers)
    rates = served_rates(
        config_rate[config_of],
        config_low[config_of],
        config_high[config_of],
        loader[vcpu_of.reshape(-1)],
    )
    price_all = np.where(np.isnan(prices), math.inf, prices)  # inf where there is no price
    run = run_costs(samples_per_epoch, w.epochs, rates, price_all)
    keep = np.arange(len(estimable), dtype=np.intp)
    if budget.max_total_cost is not None or budget.max_total_hours is not None:
        spot = snap.equals("billing", "spot")[rows[estimable]]
        # all epochs; at the high end, at the slow end of each offer's range (total_hours_high)
        judged = run.total_hours_high if budget.at_high_end else run.total_hours
        keep = np.array(
            [
                i
                for i, (h, p, sp) in enumerate(
                    zip(judged.tolist(), prices.tolist(), spot.tolist(), strict=True)
                )
                if _within_budget(h, None if math.isnan(p) else p, sp, budget)
            ],
            dtype=np.intp,
        ).reshape(-1)
    over_budget = len(estimable) - len(keep)
    cfg = config_of[keep]
    cfg_oom = table.oom_high(used)
    # the GPU cannot run the job's software as asked (QLoRA's bitsandbytes on ROCm): ranked
    # after every runnable offer, never on the frontier (one answer per GPU model)
    config_gpus = [snap.configs[i][0] for i in used.tolist()]
    gpu_blocked = {
        gpu_id: software_blocked(w, ref.gpus[ref.gpu_names_by_id[gpu_id]])
        for gpu_id in set(config_gpus)
        if gpu_id is not None
    }
    cfg_blocked = np.array([gpu_blocked.get(g, False) for g in config_gpus], dtype=bool)
    cols = CandidateColumns(
        offer_id=offer_ids[keep],
        cost_per_epoch=run.cost_per_epoch[keep],
        epoch_hours=run.epoch_hours[keep],
        total_cost=run.total_cost[keep],
        price_per_hour=price_all[keep],
        samples_per_s=rates.samples_per_s[keep],
        oom_high=cfg_oom[cfg] if len(cfg) else np.zeros(0, dtype=bool),
        # ... or the offer's disk, host RAM or driver cannot (app.services.runnable)
        cannot_run=(cfg_blocked[cfg] if len(cfg) else np.zeros(0, dtype=bool))
        | host_cannot_run(w, snap, rows[estimable[keep]], ref),
        **(
            snap.price_trust(rows[estimable[keep]], now or dt.datetime.now(dt.UTC))
            if bookable_fresh_first
            else {}
        ),
    )
    top, below = rank_columns(cols, sort=sort, drop_oom=drop_oom, limit=limit)
    prepared = {}
    for i, _, _ in (*top, *below):
        j = int(keep[i])
        config = int(used[config_of[j]])
        hw, (vram, count, card) = _config_hardware(ref, snap.configs[config])
        # the full throughput estimate, whose figures are the rates ranked
        tp = est.throughput(*hw)
        risk = table.risk_of(config)
        # the full memory estimate (its largest micro-batch; the fixes where the risk is high)
        mem = est.memory(vram, count, with_fixes=risk == OomRisk.HIGH, gpu=card)
        price = None if math.isnan(prices[j]) else float(prices[j])
        prepared[int(offer_ids[j])] = (tp, mem, price)
    ranked = [Ranked(_candidate(cols, i), pareto, rank) for i, rank, pareto in top]
    extra = [Ranked(_candidate(cols, i), pareto, rank) for i, rank, pareto in below]
    full = snap.by_id([r.candidate.offer_id for r in (*ranked, *extra)] + skipped)

    def build(r: Any) -> RankedOffer:
        tp, mem, price = prepared[r.candidate.offer_id]
        offer = full[r.candidate.offer_id]
        est = combine(
            w,
            offer_hardware(offer, ref),
            tp,
            mem,
            price_per_hour=price,
            currency=currency,
            billing=offer.billing,
            spot=budget.spot,
        )
        return RankedOffer(
            rank=r.rank,
            pareto_optimal=r.pareto_optimal,
            offer=offer,
            price_per_hour=price,
            estimate=est,
        )

    return Ranking(
        results=[build(r) for r in ranked],
        frontier=[build(r) for r in extra],
        total=len(keep),
        unestimated=len(rows) - len(keep) - over_budget,
        over_budget=over_budget,
        unestimable=tuple(
            (
                full[i],
                full[i].gpu_note
                or f"GPU {full[i].gpu_name_raw!r} matches no catalog model: no specs or "
                "measurements to estimate from",
            )
            for i in skipped
        ),
    )


#: new workloads' estimates frozen between two full collections (:func:`_freeze_estimates`)
COLLECT_EVERY = 256
_freezes = itertools.count(1)


def _freeze_estimates() -> None:
    """Keep the estimates just made (they live as long as the memo) out of the cyclic garbage
    collector (``gc.freeze``): its full passes over them (10,000 offers, a new workload per
    request: 100-240 ms each, 4 per 40 workloads) held the GIL and stalled every thread, the
    event loop (``/healthz``) included. Freezing also keeps whatever cyclic garbage is alive
    at that moment (20 new-workload ranks with 20 failing requests between: 142 objects), so
    every :data:`COLLECT_EVERY`-th time everything is unfrozen and collected first."""
    freeze_long_lived(collect_first=next(_freezes) % COLLECT_EVERY == 0)


def _codes(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for ints in ``[0, size)`` without a sort:
    (the distinct values ascending, each value's index among them)."""
    used = np.flatnonzero(np.bincount(values, minlength=size))
    index = np.zeros(size, dtype=np.intp)
    index[used] = np.arange(len(used))
    return used, index[values]


def _config_hardware(
    ref: ReferenceData,
    config: tuple[int | None, float, str | None, float | None, float | None],
) -> tuple[tuple[GpuSpec, float, Interconnect | None, Fabric], tuple[float, float, str]]:
    """The (GPU, count, link, fabric) and the (VRAM per GPU, GPU count, card name) of one
    hardware configuration of a snapshot (GPU model id, count, interconnect label, listed
    VRAM, the stated network between machines in Gbit/s, used when the GPUs span several
    machines: :class:`app.model.comm.Fabric`) whose GPU is in the catalog."""
    gpu_id, count, interconnect, listed_vram, network_gbps = config
    gpu = ref.gpus[ref.gpu_names_by_id[cast(int, gpu_id)]]
    link = offer_interconnect(interconnect)
    fabric = NO_FABRIC if network_gbps is None else Fabric(None, network_gbps)
    vram = vram_per_gpu_gib(gpu.vram_gib, listed_vram, count)
    return (gpu, count, link, fabric), (vram, count, gpu.name)


def _config_estimate(
    est: ConfigEstimates,
    ref: ReferenceData,
    config: tuple[int | None, float, str | None, float | None, float | None],
) -> tuple[tuple[float, ...], OomRisk] | None:
    """The throughput's (samples/s, low, high) (:meth:`ConfigEstimates.rates`) and the OOM
    risk band (:meth:`ConfigEstimates.memory_risk`) of one hardware configuration
    (:func:`_config_hardware`): the full estimates (throughput; memory with its micro-batch
    search and fixes) are made only for the offers shown. ``None`` when the GPU is not in the
    catalog (no estimate: the offer is listed with a reason)."""
    if config[0] is None:
        return None
    hw, (vram, count, card) = _config_hardware(ref, config)
    return est.rates(*hw), est.memory_risk(vram, count, gpu=card)


def _within_budget(total_hours: float, price: float | None, spot: bool, budget: Budget) -> bool:
    """Whether an offer's whole run meets ``budget`` (spot: expected hours and cost)."""
    if budget.max_total_cost is None and budget.max_total_hours is None:
        return True
    hours = spot_expected_hours(total_hours, budget.spot) if spot else total_hours
    if budget.max_total_hours is not None and not hours <= budget.max_total_hours:
        return False
    return budget.max_total_cost is None or (
        price is not None and hours * price <= budget.max_total_cost
    )


@dataclass(frozen=True, slots=True)
class OfferEstimate:
    """One offer with its price in the asked currency and, when possible, its estimate."""

    offer: OfferRow
    price_per_hour: float | None
    estimate: Estimate | None


def estimate_offer(
    w: Workload | None,
    reference: Workload | None,
    session: Session,
    offer_id: int,
    ref: ReferenceData,
    *,
    currency: str,
    spot: SpotAssumptions | None = None,
) -> OfferEstimate | None:
    """Estimate ``w`` on one offer (``None`` when the offer does not exist).

    Gives the same numbers as :func:`rank_offers` for that offer. The estimate is ``None``
    without a workload or when the offer's GPU is not in the catalog.

    Raises:
        FilterError: no exchange rate for ``currency``.
    """
    # the offer of the version the estimate uses, when the reference data holds one
    rows = ref.offers.by_id([offer_id]) if ref.offers is not None else None
    offer = (rows if rows is not None else select_offers_by_id(session, [offer_id])).get(offer_id)
    if offer is None:
        return None
    price = price_in(offer.price_per_hour, offer.currency, currency, ref)
    if w is None or offer.gpu_model_id is None:
        return OfferEstimate(offer=offer, price_per_hour=price, estimate=None)
    est = estimate_what_if(
        w,
        reference,
        offer_hardware(offer, ref),
        ref,
        price_per_hour=price,
        currency=currency,
        billing=offer.billing,
        spot=spot,
    )
    return OfferEstimate(offer=offer, price_per_hour=price, estimate=est)
