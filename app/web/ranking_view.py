"""What the ranking page shows around the table: the answer, the comparisons (GPU × count,
pinned rows, spot next to on demand), the warnings' short labels, the chart, and the
alternatives when every offer runs out of memory.

Pure: every function reads the :class:`RankResponse` the page and its JSON twin share (and
the page's parameters), so each figure shown is one the twin carries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from app.interface.schemas import MemoryFixOut, RankedOfferOut, RankResponse, WarningOut
from app.model.run_warnings import CANNOT_RUN, cannot_run
from app.web import charts
from app.web.format import hours, money, money_short, num
from app.web.i18n import N_, translations

#: Most rows one comparison pins.
MAX_PINS = 4

#: Warning codes drawn in red: the run fails on this offer as asked (out of memory, a disk
#: too small for the data, RAM short of what loading needs, software that cannot run): the
#: model's one list, :data:`app.model.run_warnings.CANNOT_RUN`.
BLOCKERS = frozenset(code.value for code in CANNOT_RUN)
#: Warning codes that say a listing leaves a fact out (a neutral mark, not a fault).
DATA_GAPS = frozenset({"vcpus_unlisted", "ram_unlisted"})


def warning_level(code: str) -> str:
    """``blocker`` (red), ``gap`` (neutral: the listing leaves it out) or ``caution``."""
    if code in BLOCKERS:
        return "blocker"
    return "gap" if code in DATA_GAPS else "caution"


def _value(values: Mapping[str, object], key: str) -> float | None:
    v = values.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def warning_label(w: WarningOut, lang: str) -> str:
    """A warning in a few words with its key figure, for the row (the sentence is on the
    offer page): ``disk 70 < 158 GB``, ``vCPUs not listed``."""
    _ = translations(lang).gettext
    v = w.values

    def n(key: str) -> str:
        return num(_value(v, key), 3, lang)

    def scaling() -> str:
        """The predicted multi-GPU efficiency as a percentage (0 when not given)."""
        return num((_value(v, "predicted_efficiency") or 0) * 100, 2, lang)

    labels: dict[str, Callable[[], str]] = {
        "oom": lambda: _("OOM: {peak} of {usable} GiB").format(
            peak=n("peak_memory_gib"), usable=n("usable_vram_gib")
        ),
        "oom_possible": lambda: _("may OOM: {peak} of {usable} GiB").format(
            peak=n("peak_memory_gib"), usable=n("usable_vram_gib")
        ),
        "disk_too_small": lambda: _("disk {disk} < {needed} GB").format(
            disk=n("disk_gb"), needed=n("needed_gb")
        ),
        "ram_short": lambda: _("RAM {ram} < {needed} GiB").format(
            ram=n("ram_gib"), needed=n("needed_gib")
        ),
        "ram_below_vram": lambda: _("RAM {ram} < GPU memory {needed} GiB").format(
            ram=n("ram_gib"), needed=n("needed_gib")
        ),
        "cuda_too_old": lambda: _("CUDA {cuda} too old").format(cuda=v.get("max_cuda") or "?"),
        "driver_too_old_for_gpu": lambda: _("driver too old for the GPU"),
        "cuda_build_too_old_for_gpu": lambda: _("CUDA build too old for the GPU"),
        "cuda_build_too_new_for_gpu": lambda: _("CUDA build too new for the GPU"),
        "cuda_only_library": lambda: _("{library} needs CUDA").format(
            library=v.get("library") or "?"
        ),
        "compute_capability_too_low": lambda: _("compute capability too low"),
        "bf16_unsupported": lambda: _("no BF16 on this GPU"),
        "fp8_unsupported": lambda: _("no FP8 on this GPU"),
        "fp8_quantised_base": lambda: _("no FP8 path for a 4-bit base"),
        "tf32_unsupported": lambda: _("no TF32 on this GPU"),
        "no_nvlink": lambda: _("no NVLink: {eff} % scaling").format(eff=scaling()),
        "nvlink_unavailable": lambda: _("no NVLink on this GPU"),
        "fp8_transformer_only": lambda: _("FP8 in transformer layers only"),
        "fp8_gain_unmeasured": lambda: _("FP8 gain not measured"),
        "fp8_gain_extrapolated": lambda: _("FP8 gain extrapolated"),
        "pcie_host_bridge": lambda: _("PCIe host bridge: {eff} % scaling").format(eff=scaling()),
        "data_loader_bound": lambda: _("CPU-bound data loading"),
        "vcpus_unlisted": lambda: _("vCPUs not listed"),
        "ram_unlisted": lambda: _("RAM not listed: needs {needed} GiB").format(
            needed=n("needed_gib")
        ),
        "slow_disk": lambda: _("slow disk"),
        "epoch_tokens_padded": lambda: _("epoch counts padded tokens"),
        "spot_interruptible": lambda: _("spot: ~{hours} expected").format(
            hours=hours(_value(v, "expected_total_hours"), lang)
        ),
        "params_off_shape": lambda: _("params off the model shape"),
    }
    make = labels.get(w.code)
    return make() if make else w.code.replace("_", " ")


@dataclass(frozen=True, slots=True)
class Pick:
    """One offer of the answer: ``role`` (``cheapest``, ``fastest``, ``best_value``), its
    heading and the row; ``roles`` lists every role the same offer holds."""

    role: str
    heading: str
    row: RankedOfferOut
    roles: tuple[str, ...]


PICK_HEADINGS = {
    "cheapest": N_("Cheapest that fits"),
    "fastest": N_("Fastest"),
    "best_value": N_("Best value"),
}


def rows_by_id(result: RankResponse) -> dict[int, RankedOfferOut]:
    """Every ranked offer the answer carries (table rows and frontier), by offer id."""
    return {r.offer.id: r for r in [*result.results, *result.frontier]}


def answer(result: RankResponse) -> list[Pick]:
    """The answer card's offers (:attr:`RankResponse.answer`), one card per distinct offer."""
    rows = rows_by_id(result)
    ids = {
        "cheapest": result.answer.cheapest_offer_id,
        "fastest": result.answer.fastest_offer_id,
        "best_value": result.answer.best_value_offer_id,
    }
    picks: list[Pick] = []
    for role, offer_id in ids.items():
        if offer_id is None or offer_id not in rows:
            continue
        if any(p.row.offer.id == offer_id for p in picks):
            continue
        roles = tuple(r for r, i in ids.items() if i == offer_id)
        picks.append(Pick(role, PICK_HEADINGS[role], rows[offer_id], roles))
    return picks


def _cost(r: RankedOfferOut) -> float:
    c = r.estimate.total_cost
    return math.inf if c is None else c


@dataclass(frozen=True, slots=True)
class GpuGroup:
    """The shown offers of one GPU model × count: how many, the cheapest and the fastest
    that fit and can run the job (``None`` when none does), and the lowest predicted peak
    memory per GPU."""

    gpu: str
    count: float
    offers: int
    cheapest: RankedOfferOut | None
    fastest: RankedOfferOut | None
    peak_gib: float
    usable_gib: float
    #: when nothing runs: the :data:`BLOCKERS` codes of the members, each once, in the
    #: order of :data:`GROUP_REASONS` (empty when some offer runs)
    blocked_by: tuple[str, ...] = ()


#: Why no offer of a GPU × count can run the job, per blocking warning code, in a few words
#: for the compare table (codes of one reason share it; the order is the order shown).
GROUP_REASONS: dict[str, str] = {
    "oom": N_("predicted out of memory"),
    "ram_short": N_("host RAM too small"),
    "disk_too_small": N_("disk too small for the data"),
    "cuda_too_old": N_("driver too old"),
    "driver_too_old_for_gpu": N_("driver too old"),
    "cuda_build_too_old_for_gpu": N_("CUDA build does not support the GPU"),
    "cuda_build_too_new_for_gpu": N_("CUDA build does not support the GPU"),
    "cuda_only_library": N_("the job's software does not run on this GPU"),
    "compute_capability_too_low": N_("the job's software does not run on this GPU"),
}


def group_reason(g: GpuGroup, lang: str) -> str:
    """Why no offer of ``g`` runs, for the compare table: ``none fits: predicted out of
    memory`` when every one is out of GPU memory, else ``none can run: host RAM too small``
    (each distinct reason of :data:`GROUP_REASONS` once, joined)."""
    _ = translations(lang).gettext
    reasons = list(
        dict.fromkeys(_(GROUP_REASONS.get(c, c.replace("_", " "))) for c in g.blocked_by)
    )
    if g.blocked_by == ("oom",) or not reasons:
        return _("none fits: predicted out of memory")
    return _("none can run: {reasons}").format(reasons="; ".join(reasons))


def gpu_groups(rows: Sequence[RankedOfferOut]) -> list[GpuGroup]:
    """``rows`` grouped by GPU model × count, the group with the cheapest fitting run first
    (groups where nothing fits last)."""
    groups: dict[tuple[str, float], list[RankedOfferOut]] = {}
    for r in rows:
        key = (r.offer.gpu or r.offer.gpu_name_raw, r.offer.gpu_count)
        groups.setdefault(key, []).append(r)
    out = []
    for (gpu, count), members in groups.items():
        fits = [
            r
            for r in members
            if r.estimate.oom_risk != "high" and not cannot_run(w.code for w in r.estimate.warnings)
        ]
        least = min(members, key=lambda r: r.estimate.peak_memory_gib)
        out.append(
            GpuGroup(
                gpu=gpu,
                count=count,
                offers=len(members),
                cheapest=min(fits, key=lambda r: (_cost(r), r.rank)) if fits else None,
                fastest=min(fits, key=lambda r: (r.estimate.total_hours, r.rank)) if fits else None,
                peak_gib=least.estimate.peak_memory_gib,
                usable_gib=least.estimate.memory.usable_vram_gib,
                blocked_by=() if fits else _blockers(members),
            )
        )
    return sorted(out, key=lambda g: (g.cheapest is None, _cost(g.cheapest) if g.cheapest else 0))


def _blockers(members: Sequence[RankedOfferOut]) -> tuple[str, ...]:
    """The blocking codes of ``members`` (an OOM verdict counts as ``oom``), each once, in
    the order of :data:`GROUP_REASONS` (others after)."""
    codes = {w.code for r in members for w in r.estimate.warnings if w.code in BLOCKERS}
    if any(r.estimate.oom_risk == "high" for r in members):
        codes.add("oom")
    order = list(GROUP_REASONS)
    return tuple(sorted(codes, key=lambda c: (order.index(c) if c in order else len(order), c)))


def billing_siblings(rows: Sequence[RankedOfferOut]) -> dict[int, list[RankedOfferOut]]:
    """For each offer, the shown offers of the same instance (provider, instance type,
    region, GPU × count) under another billing: spot next to on demand."""
    by_instance: dict[tuple[object, ...], list[RankedOfferOut]] = {}
    for r in rows:
        o = r.offer
        key = (o.provider, o.instance_type, o.region, o.gpu or o.gpu_name_raw, o.gpu_count)
        by_instance.setdefault(key, []).append(r)
    out: dict[int, list[RankedOfferOut]] = {}
    for members in by_instance.values():
        for r in members:
            others = [m for m in members if m.offer.billing != r.offer.billing]
            if others:
                out[r.offer.id] = others
    return out


def parse_pins(text: str | None) -> tuple[list[int], str | None]:
    """``pin=12,40``: the pinned offer ids (at most :data:`MAX_PINS`, in order, no repeats)
    and an error message for a malformed value."""
    if not text:
        return [], None
    ids: list[int] = []
    for part in text.split(","):
        if not part.strip().isdigit():
            return [], "must be offer ids separated by commas, e.g. 12,40"
        i = int(part)
        if i not in ids:
            ids.append(i)
    if len(ids) > MAX_PINS:
        return [], f"pin at most {MAX_PINS} offers"
    return ids, None


def toggled(pins: Sequence[int], offer_id: int) -> str | None:
    """The ``pin`` value after pinning or unpinning ``offer_id`` (``None``: no pins left)."""
    out = [i for i in pins if i != offer_id]
    if offer_id not in pins:
        out.append(offer_id)
    return ",".join(str(i) for i in out) or None


@dataclass(frozen=True, slots=True)
class Alternative:
    """A change that would make the workload fit, its link and predicted peak memory."""

    label: str
    href: str
    peak_gib: float | None
    on: str = ""


#: Memory-fix labels of :func:`app.model.memory.fixes_for` without numbers in them.
FIX_LABELS = (
    N_("activation checkpointing"),
    N_("memory-efficient attention (SDPA/xformers)"),
    N_("chunked/fused cross-entropy"),
    N_("paged 8-bit AdamW"),
    N_("optimizer step in backward"),
    N_("pure bf16 + paged 8-bit AdamW + step in backward + checkpointing"),
    N_("LoRA"),
    N_("QLoRA"),
)


def all_oom(result: RankResponse) -> bool:
    """Every ranked offer is predicted to run out of memory."""
    return bool(result.results) and all(r.estimate.oom_risk == "high" for r in result.results)


def oom_alternatives(
    result: RankResponse, link: Callable[[dict[str, str]], str], lang: str
) -> list[Alternative]:
    """The memory fixes the shown offers carry (:attr:`EstimateOut.memory_fixes`), each once
    (from the best-ranked offer that lists it), as links that re-rank with the change."""
    seen: dict[str, Alternative] = {}
    _ = translations(lang).gettext
    for r in result.results:
        for fix in r.estimate.memory_fixes:
            if fix.label in seen:
                continue
            seen[fix.label] = Alternative(
                label=_(fix.label) if fix.label in FIX_LABELS else fix_label(fix, lang),
                href=link(dict(fix.changes)),
                peak_gib=fix.peak_memory_gib,
                on=f"{r.offer.gpu or r.offer.gpu_name_raw} × {r.offer.gpu_count:g}",
            )
    return list(seen.values())


def fix_label(fix: MemoryFixOut, lang: str) -> str:
    """A memory fix in words from its changes (``micro_batch_size 4 · grad_accum_steps 8``)
    when its own label carries numbers (English labels are kept as written)."""
    if lang == "en":
        return fix.label
    return " · ".join(f"{k} {v}" for k, v in fix.changes.items())


@dataclass
class ChartSpec:
    """Which chart the page draws: per epoch, or the whole run when epochs or a budget were
    given (with the budget and the deadline as lines)."""

    total: bool
    budget: float | None = None
    deadline_hours: float | None = None
    extra: dict[str, object] = field(default_factory=dict)


def chart_spec(params: Mapping[str, str]) -> ChartSpec:
    """Total-run chart when ``epochs``, ``max_total_cost`` or ``max_total_hours`` is given."""
    total = any(k in params for k in ("epochs", "max_total_cost", "max_total_hours"))
    budget = float(params["max_total_cost"]) if "max_total_cost" in params else None
    deadline = float(params["max_total_hours"]) if "max_total_hours" in params else None
    return ChartSpec(total=total, budget=budget, deadline_hours=deadline)


def rank_chart(
    result: RankResponse,
    spec: ChartSpec,
    href: Callable[[int], str],
    lang: str,
) -> charts.ChartLayout:
    """Cost against time for the table's offers plus the rest of the frontier, each with
    whiskers over its range: per epoch, or for all epochs (``spec.total``, with the budget
    and the deadline drawn)."""
    _ = translations(lang).gettext
    shown = {r.offer.id for r in result.results}
    currency = result.currency
    data = []
    for r in [*result.results, *result.frontier]:
        e = r.estimate
        if e.cost_per_epoch is None:
            continue
        classes = ["pt"]
        if r.pareto_optimal:
            classes.append("frontier")
        if e.oom_risk == "high":
            classes.append("oom")
        if r.offer.id not in shown:
            classes.append("extra")
        if spec.total:
            x, y = e.total_hours, e.total_cost or 0.0
            xr = (e.total_hours_low, e.total_hours_high)
            yr = (e.total_cost_low or y, e.total_cost_high or y)
        else:
            x, y = e.epoch_hours, e.cost_per_epoch
            xr = (e.epoch_hours_low, e.epoch_hours_high)
            yr = (e.cost_per_epoch_low or y, e.cost_per_epoch_high or y)
        o = r.offer
        label = _("#{rank} {provider} · {instance} · {gpu} × {count} — {cost}, {time}").format(
            rank=r.rank,
            provider=o.provider_name,
            instance=o.instance_type,
            gpu=o.gpu or o.gpu_name_raw,
            count=f"{o.gpu_count:g}",
            cost=money(y, currency, lang),
            time=hours(x, lang),
        ) + (_(" (predicted OOM)") if e.oom_risk == "high" else "")
        data.append(
            charts.Datum(
                key=o.id,
                x=x,
                y=y,
                label=label,
                href=href(o.id),
                classes=" ".join(classes),
                frontier=r.pareto_optimal,
                x_range=xr,
                y_range=yr,
            )
        )
    what = _("all epochs") if spec.total else _("one epoch")
    layout = charts.scatter(
        data,
        x_format=lambda v: hours(v, lang),
        y_format=lambda v: money_short(v, currency, lang),
        x_marks=charts.DURATION_MARKS_H,
        x_label=_("time, {what}").format(what=what),
        y_label=_("cost, {what} ({currency})").format(what=what, currency=currency),
        x_rule=(spec.deadline_hours, _("deadline")) if spec.total and spec.deadline_hours else None,
        y_rule=(spec.budget, _("budget")) if spec.total and spec.budget else None,
    )
    layout.extra.update(
        has_extra=any("extra" in p.classes for p in layout.points),
        has_oom=any("oom" in p.classes for p in layout.points),
        total=spec.total,
    )
    return layout
