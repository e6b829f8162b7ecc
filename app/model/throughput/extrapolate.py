"""The form an estimate takes on a GPU whose architecture no measurement of the workload covers
(the ``extrapolated`` situation), and its choice by inner leave-one-architecture-out.

The pooled model (:mod:`app.model.pooled`) gives an unmeasured architecture zero architecture
terms: the average of the measured ones, which interpolates between generations and does not
extrapolate to a new one (issue 23: without the per-group architecture terms
leave-one-architecture-out improved 14.5 % → 12.3 %; held-out B200 rows were off ~20 % where
the nearest measured GPU × the memory-bandwidth ratio was off 6 %). The candidate forms
(:data:`FORMS`), all but ``pooled`` anchored on the *nearest measured GPU* of another
architecture (:func:`nearest_measured`: least |Δ ln peak| + |Δ ln bandwidth| at the
precision's rate class; its pooled rate with its own rows' correction, at the same software
level and micro-batch):

* ``pooled``: the pooled model as is (zero architecture terms);
* ``sibling``: the anchor moved by the pooled model's fitted spec slopes (the anchor keeps its
  own architecture terms, as a sibling of the same generation would);
* ``ratio:f``: the anchor × (peak ratio)^f × (bandwidth ratio)^(1−f), peak the dense datasheet
  peak at the precision (:func:`app.model.flops.flops_peak_tflops`), f ∈ 0, ¼, ½, ¾, 1
  (``ratio:0`` is the bandwidth-ratio baseline of the issue);
* ``near:f``: ``ratio:f`` averaged in log rate over the :data:`NEAR` nearest measured GPUs
  of other architectures (:func:`nearest_k`), so one anchor's own noise (an odd row of one
  suite, a board's quirk) does not set the answer alone: with one anchor, its residual
  carries over whole.

:func:`choose_forms` picks one per family by leave-one-architecture-out *on the data it is
given* (a cross-validation fold's training rows, or all rows for the served calibration): every
observation of the fit is predicted by every form as if its architecture were unmeasured (its
architecture's terms and its GPU's own correction removed, anchors only on other
architectures); the form with the least median absolute log error wins, ``pooled`` unless
another is strictly better. The inner folds reuse the outer fit (the shared spec slopes are
not refitted without the inner architecture): an approximation that favours ``pooled``.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Iterable, Mapping

from app.model.flops import flops_peak_tflops
from app.model.pooled import FamilyFit, Group, Level, PooledData, rate_class
from app.model.types import GpuSpec, Precision

#: The candidate forms (module docstring), ``pooled`` first (it wins ties).
FORMS = (
    "pooled",
    "sibling",
    "ratio:0",
    "ratio:0.25",
    "ratio:0.5",
    "ratio:0.75",
    "ratio:1",
    "near:0",
    "near:0.25",
    "near:0.5",
    "near:0.75",
    "near:1",
)
#: Anchors the ``near`` forms average over (the nearest measured GPUs of other
#: architectures): fixed before any figure was measured, not tuned (docs/accuracy.md)
NEAR = 3


def arch_terms(fit: FamilyFit, group: Group, arch: str, cls: str) -> float:
    """The architecture terms the pooled model adds for ``arch`` in ``group`` at rate class
    ``cls`` (fp8 rows have their own: :func:`app.model.pooled_fit._columns`)."""
    g = "|".join(group)
    if cls == "8":
        return fit.term("arch8", arch) + fit.term("garch8", g, arch)
    return fit.term("arch", arch) + fit.term("garch", g, arch)


def _distance(a: GpuSpec, b: GpuSpec, precision: Precision, at_a: Precision) -> float:
    d = abs(math.log(flops_peak_tflops(a, at_a) / flops_peak_tflops(b, precision)))
    if a.memory_bandwidth_gbs and b.memory_bandwidth_gbs:
        d += abs(math.log(a.memory_bandwidth_gbs / b.memory_bandwidth_gbs))
    return d


def at_class(gpu: GpuSpec, precision: Precision, cls: str) -> Precision | None:
    """The precision ``gpu`` runs at rate class ``cls`` when asked ``precision``: itself where
    the classes agree, fp32 for the 32-bit class (a 16-bit request on a GPU without 16-bit
    units is carried from a tensor-core GPU's fp32 rate, not its mixed-precision one), else
    ``None``."""
    if rate_class(gpu, precision) == cls:
        return precision
    return Precision.FP32 if cls == "32" else None


def nearest_measured(
    data: PooledData, group: Group, gpu: GpuSpec, precision: Precision, skip_arch: str
) -> GpuSpec | None:
    """The nearest of :func:`nearest_k`, ``None`` without one."""
    found = nearest_k(data, group, gpu, precision, skip_arch)
    return found[0] if found else None


def nearest_k(
    data: PooledData, group: Group, gpu: GpuSpec, precision: Precision, skip_arch: str
) -> list[GpuSpec]:
    """The GPUs with own rows of ``group`` at the rate class ``gpu`` runs ``precision`` at
    (:func:`at_class`), of an architecture other than ``skip_arch``, nearest ``gpu`` in specs
    (module docstring) first (ties by name)."""
    fam = data.family_of(group)
    fit = data.fit(fam) if fam else None
    if fit is None:
        return []
    cls = rate_class(gpu, precision)
    found = []
    for (g, name), res in fit.residual.items():
        spec = data.catalog.get(name)
        if g != group or spec is None or spec.architecture == skip_arch:
            continue
        there = at_class(spec, precision, cls)
        if there is not None and any(pc == cls for pc, _, _ in res):
            found.append((_distance(spec, gpu, precision, there), name, spec))
    return [t[2] for t in sorted(found, key=lambda t: (t[0], t[1]))]


def _carried(
    data: PooledData,
    fit: FamilyFit,
    group: Group,
    gpu: GpuSpec,
    precision: Precision,
    batch: float | None,
    level: Level,
    ref: GpuSpec,
) -> tuple[float, float, float, float]:
    """(ln rate of anchor ``ref`` with its own rows' correction, the pooled model's spec
    slopes from ``ref`` to ``gpu``, ln peak ratio, ln bandwidth ratio) of ``group``."""
    cls = rate_class(gpu, precision)
    there = at_class(ref, precision, cls) or precision
    own_free = data.predict(group, gpu, precision, batch, level, own=False)[0]
    anchor = data.predict(group, ref, there, batch, level)[0]
    ref_free = data.predict(group, ref, there, batch, level, own=False)[0]
    slopes = own_free - arch_terms(fit, group, gpu.architecture, cls)
    slopes -= ref_free - arch_terms(fit, group, ref.architecture, cls)
    peak = math.log(flops_peak_tflops(gpu, precision) / flops_peak_tflops(ref, there))
    bw = peak
    if gpu.memory_bandwidth_gbs and ref.memory_bandwidth_gbs:
        bw = math.log(gpu.memory_bandwidth_gbs / ref.memory_bandwidth_gbs)
    return float(anchor), float(slopes), peak, bw


def form_log_rates(
    data: PooledData,
    group: Group,
    gpu: GpuSpec,
    precision: Precision,
    batch: float | None,
    level: Level,
) -> tuple[dict[str, float], GpuSpec] | None:
    """ln units/s per GPU of ``group`` on ``gpu`` by every form of :data:`FORMS` with
    ``gpu``'s architecture unmeasured in ``data``, and the anchor GPU (the ``pooled`` form is
    the pooled model without ``gpu``'s own correction; the ``near`` forms average the ratio
    form over the :data:`NEAR` nearest anchors); ``None`` without an anchor."""
    fam = data.family_of(group)
    fit = data.fit(fam) if fam else None
    if fit is None:
        return None
    refs = data.kept(  # kept: every workload of the group asks again (a new micro-batch)
        ("nearest_k", group, gpu.name, precision),
        gpu,
        lambda: nearest_k(data, group, gpu, precision, gpu.architecture)[:NEAR],
    )
    if not refs:
        return None
    carried = [_carried(data, fit, group, gpu, precision, batch, level, r) for r in refs]
    own_free = data.predict(group, gpu, precision, batch, level, own=False)[0]
    anchor, slopes = carried[0][:2]
    out = {"pooled": float(own_free), "sibling": anchor + slopes}
    for form in FORMS[2:]:
        kind, f = form.split(":")[0], float(form.split(":")[1])
        use = carried if kind == "near" else carried[:1]
        out[form] = statistics.fmean(a + f * p + (1 - f) * b for a, _, p, b in use)
    return out, refs[0]


def without_arch(data: PooledData, fam: str, arch: str) -> PooledData:
    """A view of ``data`` whose ``fam`` fit leaves out every observation on ``arch`` (the
    other families, the batch law and the row lists are shared): the inner fold of
    :func:`inner_errors`, refitted by the pooled model's own fit."""
    inner = copy.copy(data)
    inner.obs_by_family = {
        **data.obs_by_family,
        fam: [o for o in data.obs_by_family.get(fam, []) if o.arch != arch],
    }
    # fresh fits and memo: the view answers from its own fit (pooled.PooledData.fit)
    inner._fits = {}
    inner._cache = {}
    return inner


def inner_errors(data: PooledData, fam: str) -> dict[str, list[float]]:
    """Per form, the log errors of ``fam``'s observations, each architecture's predicted by
    the family refitted without it (:func:`without_arch`): leave-one-architecture-out inside
    ``data``. Observations without an anchor on another architecture are left out of every
    form."""
    out: dict[str, list[float]] = {form: [] for form in FORMS}
    obs = data.obs_by_family.get(fam, [])
    for arch in sorted({o.arch for o in obs}):
        inner = without_arch(data, fam, arch)
        if inner.fit(fam) is None:
            continue
        for o in (o for o in obs if o.arch == arch):
            gpu = data.catalog.get(o.gpu)
            if gpu is None:
                continue
            level = Level(o.source, o.suite)
            got = form_log_rates(inner, o.group, gpu, o.precision, o.batch, level)
            if got is None:
                continue
            for form, value in got[0].items():
                out[form].append(value - o.y)
    return out


def choose_forms(data: PooledData, families: Iterable[str] | None = None) -> dict[str, str]:
    """Family (default: every family of ``data``; others are ``pooled``) → the form
    (:data:`FORMS`) with the least median absolute inner error (:func:`inner_errors`);
    ``pooled`` unless another is strictly better, and for a family with fewer than 20 inner
    observations."""
    out = {}
    for fam in sorted(data.obs_by_family if families is None else families):
        errors = inner_errors(data, fam)
        if len(errors["pooled"]) < 20:
            out[fam] = "pooled"
            continue
        score = {form: statistics.median(abs(e) for e in errs) for form, errs in errors.items()}
        out[fam] = min(FORMS, key=lambda form: (score[form], FORMS.index(form)))
    return out


def extrapolated_rate(
    data: PooledData,
    group: Group,
    gpu: GpuSpec,
    precision: Precision,
    batch: float | None,
    level: Level,
    forms: Mapping[str, str],
    rate: float,
    units: float | None,
) -> tuple[float, str]:
    """Per-GPU samples/s of an ``extrapolated`` estimate by its family's chosen form
    (``forms``: the calibration's ``extrapolation_form``; ``units`` per sample) and the
    sentence that says so; the pooled ``rate`` and ``""`` where the form is ``pooled`` or
    no GPU of another architecture measured ``group``."""
    fam = data.family_of(group)
    form = forms.get(fam or "", "pooled")
    got = form_log_rates(data, group, gpu, precision, batch, level) if form != "pooled" else None
    if got is None:
        return rate, ""
    rates, ref = got
    note = (
        f"no {gpu.architecture} GPU measured this workload: the rate of the nearest measured "
        f"GPU, {ref.name}, carried over by the {form} form (the form of {fam} workloads with "
        "the least leave-one-architecture-out error, docs/model.md#throughput)"
    )
    return math.exp(rates[form]) / (units or 1.0), note
