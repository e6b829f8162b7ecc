"""One pooled throughput model per workload family, over every benchmark suite.

For one family (``transformer``, ``cnn``, ``other``) every single-GPU measurement of every
workload group (benchmark label × method) in every suite enters one ridge regression of the
log per-GPU throughput:

    log thr = a[group, source] + v[group, source@version]            software level
            + pc32 · (p + p[group])                                  fp32/tf32 vs 16-bit
            + (s + s[group]) · x(gpu, precision)                     GPU specs
            + e[arch] + e[group, arch]                               architecture generation
            + log(b / (b + b0))                                      micro-batch (fixed, below)

``x`` = (log 16-bit tensor peak at the precision's FP32-accumulate rate, log FP32 vector
peak, log TF32 peak, log memory bandwidth), the 16-bit term for 16-bit and fp8 rows, the two
32-bit terms for fp32/tf32 rows (cuDNN runs "fp32" convolutions as TF32 on Ampere+,
benchmarks.md §1). ``s`` and ``p`` are shared by the family, the ``[group]`` terms are
deviations pulled towards zero (ridge), so a workload measured on four GPUs borrows the
family's slopes while one measured on thirty gets its own. The software level has one free
term per suite (``source``) and a ridge-shrunk term per framework version inside it; suites
are tied together by the GPUs they have in common, so a GPU measured in one suite is
predicted at the level of another. The architecture terms are ridge-shrunk too: an
architecture without any measurement gets zero.

A GPU without 16-bit tensor cores or fast fp16 units (GeForce Pascal) runs mixed precision's
matmuls at its fp32 rate, so its 16-bit rows enter with the 32-bit terms (:func:`rate_class`).
A GPU measured only in multi-GPU runs (LLM pre-training tables) enters at its fewest GPU
count, divided by the multi-GPU efficiency of :mod:`app.model.multigpu` over the link the
served path assumes (listed, else NVLink for SXM boards).

The micro-batch term is the per-step-overhead law time(b) = t0 + b·t_sample, i.e. throughput
∝ b / (b + b0) with b0 = t0 / t_sample: b0 is the median over cells with several measured
batches (one GPU, suite, precision) of the value solving the two rates' ratio, in samples
for CNNs and other workloads and in tokens (b0 × sequence length) for transformers. It
saturates, so batches above the measured range gain almost nothing, and a micro-batch of 1
is slower than a full one.

A GPU's own measurements of the workload correct the model by their mean residual
(``measured_rescaled`` in :mod:`app.model.throughput`; where the GPU was measured at the
very software level, precision and micro-batch asked, the served rate is those measurements'
mean: ``measured``); a GPU without them is predicted from the specs, with the architecture terms
learnt from its siblings (``sibling`` when a GPU of the same architecture was measured,
``extrapolated`` otherwise). Everything is pure: data in, data out; fits are memoised per
instance.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.model.calibration import Calibration, load_calibration
from app.model.flops import matmul_width, peak_tflops
from app.model.memory import transformer_tokens
from app.model.mfu import implausible_mfu_reason, row_utilisation
from app.model.multigpu import effective_interconnect, multi_gpu_efficiency
from app.model.types import (
    TRANSFORMER_ARCHITECTURES,
    Architecture,
    BenchmarkPoint,
    GpuSpec,
    Interconnect,
    Precision,
    Workload,
)

#: Ridge strengths (penalty per unit² of log throughput; residual scale ≈ 0.1). Chosen as
#: weak priors: a deviation pinned by ten rows is barely shrunk, one pinned by one row is.
RIDGE = {
    "version": 2.0,
    "pc32_group": 0.5,
    "slope_group": 4.0,
    "arch": 1.0,
    "arch_group": 2.0,
    "free": 1e-6,
}
#: Shrinkage of a GPU's own mean residual: n / (n + OWN_SHRINK) of it is applied.
OWN_SHRINK = 0.05
#: b0 of the micro-batch law when no cell of the family measured several batches (samples,
#: tokens for transformers): a neutral prior, used only without data.
DEFAULT_B0 = {"transformer": 1024.0, "cnn": 4.0, "other": 4.0}
#: the same prior in :func:`matmul_rows_per_sample` units (1,024 tokens at width 1,024; no
#: source, used only when no cell measured several batches)
DEFAULT_B0_WORK = {"transformer": 1024.0 * 1024.0, "cnn": 4.0, "other": 4.0}


def matmul_rows_per_sample(w: Workload) -> float:
    """Matmul work per sample that fills a GPU, for carrying a micro-batch from one network
    to another: tokens × matmul width (:func:`app.model.flops.matmul_width`) for a
    transformer, 1 (samples) otherwise.

    A transformer's matmuls are (tokens × h) by (h × k); a GPU fills its output tiles by the
    product of the first two, so twice the width saturates it at half the tokens. A derived
    workload's micro-batch ``b`` is read as the reference's ``b × this / reference's this``
    on the reference's measured batch curve: Transformer-XL large (384 tokens, width 1,115)
    at micro-batch 4 as base (192 tokens, width 582) at 15.3."""
    if w.architecture not in TRANSFORMER_ARCHITECTURES:
        return 1.0
    tokens = float(max(transformer_tokens(w), 1))
    width = matmul_width(w)
    return tokens * width if width else tokens


Group = tuple[str, str]


def unstated_variant(
    label: str, catalog: Mapping[str, GpuSpec], peak_gib: float | None
) -> GpuSpec | None:
    """The GPU a source that does not state the board variant measured, when every variant
    it can be computes alike.

    ``label`` ``"A100 (variant not stated)"``: the catalog models named ``A100 …`` with at
    least the row's peak memory (60 GiB: the two 80GB boards). When they share the
    architecture and every tensor and vector peak (A100 SXM4 and PCIe 80GB: 312 bf16, 156
    TF32, 19.5 FP32 TFLOPS) the row measured that compute whatever the board; the spec is
    theirs with the geometric-mean memory bandwidth (1935 and 2039 GB/s) and the label as its
    name, so a measured row is never credited to one board it may not have run on. ``None``
    when the label names no such set (``V100 32GB``: no model is named ``V100 32GB …``) or
    the variants differ in compute.
    """
    if "variant not stated" not in label:
        return None
    stem = label.split("(")[0].strip()
    if not stem:
        return None
    found = [
        g
        for name, g in sorted(catalog.items())
        if name.startswith(stem + " ") and (peak_gib is None or g.vram_gib >= peak_gib)
    ]
    if not found:
        return None
    first = found[0]
    same = ("architecture", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
            "fp8_tflops", "fp16_fp32acc_tflops", "fp8_fp32acc_tflops")  # fmt: skip
    if any(getattr(g, f) != getattr(first, f) for g in found for f in same):
        return None
    bws = [g.memory_bandwidth_gbs for g in found if g.memory_bandwidth_gbs]
    bw = math.exp(statistics.fmean(math.log(b) for b in bws)) if bws else None
    return replace(
        first,
        name=label,
        memory_bandwidth_gbs=bw,
        vram_gib=min(g.vram_gib for g in found),
    )


def place_unstated_variants(
    points: Sequence[BenchmarkPoint], catalog: Mapping[str, GpuSpec]
) -> tuple[list[BenchmarkPoint], dict[str, GpuSpec]]:
    """``points`` with rows of an unstated board variant (blank ``gpu``) placed on the
    :func:`unstated_variant` spec where there is one, and those specs by name.

    One table of one source ran on one board: the largest peak memory of the label's rows
    in that table (same ``source_ref``) bounds the board's memory for all of them (torchtune's
    Llama 3.2 3B table peaks at 60.0 GiB in one row, so every row ran on an 80GB A100)."""
    peak: dict[tuple[str, str, str], float] = {}
    for p in points:
        if not p.gpu and p.gpu_label and p.peak_memory_gib:
            key = (p.gpu_label, p.source, p.source_ref)
            peak[key] = max(peak.get(key, 0.0), p.peak_memory_gib)
    out: list[BenchmarkPoint] = []
    specs: dict[str, GpuSpec] = {}
    for p in points:
        if not p.gpu and p.gpu_label:
            spec = unstated_variant(
                p.gpu_label, catalog, peak.get((p.gpu_label, p.source, p.source_ref))
            )
            if spec is not None:
                name = f"{spec.name} ≥ {spec.vram_gib:g} GB"
                specs[name] = replace(spec, name=name)
                p = replace(p, gpu=name)
        out.append(p)
    return out, specs


def family(arch: Architecture) -> str:
    """Throughput family: ``transformer``, ``cnn`` (incl. diffusion UNets) or ``other``."""
    if arch in TRANSFORMER_ARCHITECTURES:
        return "transformer"
    if arch in (Architecture.CNN, Architecture.DIFFUSION_UNET):
        return "cnn"
    return "other"


def pclass(p: Precision) -> str:
    """``32`` for fp32/tf32, ``16`` for 16-bit and fp8."""
    return "32" if p in (Precision.FP32, Precision.TF32) else "16"


def rate_class(gpu: GpuSpec, p: Precision) -> str:
    """The precision class ``gpu`` really runs ``p`` at: ``16`` only where its 16-bit math is
    faster than its FP32 vector rate. A GPU without 16-bit tensor cores or fast fp16 units
    (GeForce Pascal runs fp16 arithmetic at 1/64 of the fp32 rate, TechPowerUp; the catalog
    lists no 16-bit figure for it) runs mixed precision's matmuls in fp32, so its 16-bit
    rows enter the model as 32-bit rows. fp8 on a GPU with FP8 tensor cores is class ``8``
    (its own free term in the fit, and its residuals never move a 16-bit answer)."""
    if pclass(p) == "32":
        return "32"
    if peak_tflops(gpu, p) <= (gpu.fp32_tflops or 1.0) * 1.01:
        return "32"
    if p == Precision.FP8 and peak_tflops(gpu, p) > peak_tflops(gpu, Precision.BF16_AMP) * 1.01:
        # FP8 tensor cores: its own class, so fp8 rows never correct a 16-bit answer
        return "8"
    return "16"


def suite_of(p: BenchmarkPoint) -> str:
    """Software level of a measurement: ``source@framework version``."""
    return f"{p.source}@{p.framework_version or ''}"


def version_key(p: BenchmarkPoint) -> float:
    """Framework version as a sortable number (1.13 → 1.13, 2.3 → 2.03); 0 when unknown."""
    try:
        major, minor = (p.framework_version or "0.0").split(".")[:2]
        return float(major) + float(minor) / 100
    except ValueError:
        return 0.0


def spec_features(gpu: GpuSpec, precision: Precision) -> tuple[float, float, float, float]:
    """(log 16-bit peak, log FP32, log TF32, log bandwidth) as they enter for ``precision``."""
    fp32 = gpu.fp32_tflops or 1.0
    lbw = math.log(gpu.memory_bandwidth_gbs or 100.0)
    if rate_class(gpu, precision) == "32":
        return 0.0, math.log(fp32), math.log(gpu.tf32_tflops or fp32), lbw
    return math.log(peak_tflops(gpu, precision)), 0.0, 0.0, lbw


@dataclass(frozen=True, slots=True)
class Obs:
    """One single-GPU measurement as the regression sees it (``y``: log units/s per GPU)."""

    group: Group
    gpu: str
    arch: str
    source: str
    suite: str
    precision: Precision
    batch: float | None
    y: float
    point: BenchmarkPoint


@dataclass(frozen=True, slots=True)
class Level:
    """A software level to predict at: suite (``source@version``) and its source."""

    source: str
    suite: str


@dataclass
class FamilyFit:
    """Fitted coefficients of one family (see module docstring)."""

    index: dict[tuple[str, ...], int]
    coef: np.ndarray
    centre: np.ndarray
    obs: list[Obs]
    #: (group, GPU) → [(precision class, suite, log residual)] of the GPU's own rows
    residual: dict[tuple[Group, str], list[tuple[str, str, float]]]

    def term(self, *key: str) -> float:
        i = self.index.get(key)
        return float(self.coef[i]) if i is not None else 0.0


def _memoise(method):  # type: ignore[no-untyped-def]
    """Memoise a :class:`PooledData` query on its arguments (GPU specs by name)."""
    name = method.__name__

    def wrapper(self, *args):  # type: ignore[no-untyped-def]
        key = (name, *(a.name if isinstance(a, GpuSpec) else a for a in args))
        if key not in self._cache:
            self._cache[key] = method(self, *args)
        return self._cache[key]

    wrapper.__doc__ = method.__doc__
    wrapper.__name__ = name
    return wrapper


class PooledData:
    """The measurements, organised for the pooled model (built once per data set).

    Args:
        points: measured benchmarks (all workloads; suspect rows and unknown GPUs skipped).
        catalog: GPU specs by name.
        workloads: (benchmark label, method) → the preset workload standing for it (its
            architecture gives the family; its shape sizes the multi-GPU model that turns a
            GPU measured only in multi-GPU runs into a single-GPU rate).
    """

    def __init__(
        self,
        points: Sequence[BenchmarkPoint],
        catalog: Mapping[str, GpuSpec],
        workloads: Mapping[Group, Workload],
        families: Mapping[Group, str] | None = None,
        *,
        cal: Calibration | None = None,
    ):
        #: the calibration multi-GPU rows are placed with (default: the served one)
        self.cal = cal or load_calibration()
        self.workloads = workloads
        self.families = families or {}
        placed, unstated = place_unstated_variants(points, catalog)
        self.catalog = {**catalog, **unstated}
        catalog = self.catalog
        usable = [p for p in placed if not p.suspect and p.gpu in catalog]
        #: rows left out for an implausible implied MFU, with the reason
        self.held: list[tuple[BenchmarkPoint, str]] = []
        usable = [p for p in usable if self._plausible(p)]
        self.points = usable
        self.by_group: dict[Group, list[BenchmarkPoint]] = {}
        for p in usable:
            w = workloads.get((p.workload, p.method)) or workloads.get((p.workload, "full"))
            if w is not None and w.seq_len and p.seq_len and p.seq_len != w.seq_len:
                # another sequence length is another workload (attention, memory); its rows
                # describe the preset's variant, not the preset
                continue
            self.by_group.setdefault((p.workload, p.method), []).append(p)
        self.obs_by_family: dict[str, list[Obs]] = {}
        for g, rows in self.by_group.items():
            fam = self.family_of(g)
            if fam is None:
                continue
            w = workloads.get(g) or workloads.get((g[0], "full"))
            self.obs_by_family.setdefault(fam, []).extend(self._observations(g, rows, w))
        self._fits: dict[str, FamilyFit | None] = {}
        self._cache: dict[tuple[object, ...], object] = {}
        self.b0 = _overhead_batches(usable, self)
        #: b0 in matmul_rows_per_sample units, for carrying the law to another network
        self.b0_work = _overhead_batches(usable, self, work=True)

    def _plausible(self, p: BenchmarkPoint) -> bool:
        """Whether ``p``'s implied MFU is one a run of its family can reach
        (:func:`app.model.mfu.implausible_mfu_reason`); a row that cannot be is held in
        :attr:`held` with the reason, like a suspect row."""
        w = self.workloads.get((p.workload, p.method)) or self.workloads.get((p.workload, "full"))
        if w is None:
            return True
        found = row_utilisation(p, w, self.catalog[p.gpu])
        reason = implausible_mfu_reason(family(w.architecture), found[0]) if found else None
        if reason is None:
            return True
        self.held.append((p, reason))
        return False

    def family_of(self, group: Group) -> str | None:
        """The family of a measured group (``None`` when nothing says what it is)."""
        w = self.workloads.get(group) or self.workloads.get((group[0], "full"))
        if w is not None:
            return family(w.architecture)
        return self.families.get(group) or self.families.get((group[0], "full"))

    def _observations(self, g: Group, rows: list[BenchmarkPoint], w: Workload | None) -> list[Obs]:
        out = []
        single = {p.gpu for p in rows if p.gpu_count == 1}
        multi_only: dict[str, list[BenchmarkPoint]] = {}
        for p in rows:
            if p.gpu_count > 1 and p.gpu not in single:
                multi_only.setdefault(p.gpu, []).append(p)
        chosen = [p for p in rows if p.gpu_count == 1]
        for name, multi in multi_only.items():
            if w is None:
                break
            fewest = min(p.gpu_count for p in multi)
            for p in (x for x in multi if x.gpu_count == fewest):
                gpu = self.catalog[name]
                # the link as served: listed, else NVLink for SXM boards (which only come on
                # NVLink/NVSwitch baseboards), else PCIe
                link = effective_interconnect(
                    gpu, Interconnect(p.interconnect) if p.interconnect else None
                )
                per_gpu = p.throughput_total / p.gpu_count
                units = w.units_per_sample or 1.0
                wp = replace(w, precision=p.precision)
                eta = multi_gpu_efficiency(
                    wp,
                    gpu,
                    p.gpu_count,
                    link,
                    per_gpu / units,
                    micro_batch=p.batch_size_per_gpu,
                    cal=self.cal,
                )
                chosen.append(replace(p, gpu_count=1, throughput_total=per_gpu / eta))
        for p in chosen:
            if p.throughput_total <= 0:
                continue
            out.append(
                Obs(
                    group=g,
                    gpu=p.gpu,
                    arch=self.catalog[p.gpu].architecture,
                    source=p.source,
                    suite=suite_of(p),
                    precision=p.precision,
                    batch=float(p.batch_size_per_gpu) if p.batch_size_per_gpu else None,
                    y=math.log(p.throughput_total),
                    point=p,
                )
            )
        return out

    # -- fitting --------------------------------------------------------------------------
    def fit(self, fam: str) -> FamilyFit | None:
        """The family's fit (memoised); ``None`` without measurements."""
        if fam not in self._fits:
            obs = self.obs_by_family.get(fam, [])
            self._fits[fam] = _fit_family(obs, self.catalog, self) if obs else None
        return self._fits[fam]

    def groups(self, labels: Sequence[str], method: str) -> list[Group]:
        """Measured groups standing for ``labels`` with ``method`` (``full`` also takes
        ``pretrain``), most rows first."""
        methods = {method, "pretrain"} if method == "full" else {method}
        found = [(lb, m) for lb in labels for m in methods if (lb, m) in self.by_group]
        return sorted(found, key=lambda g: -len(self.by_group[g]))

    @_memoise
    def reference_level(self, group: Group, fp8: bool | None = None) -> Level | None:
        """The software level a ranking uses for ``group``: the suite that measured the most
        GPUs (ties: newest framework version); with ``fp8`` given, among the suites that
        measured at fp8 (``True``) or at another precision (``False``) where there are any,
        so a suite measured only at fp8 never sets the level of a 16-bit answer."""
        fam = self.family_of(group)
        fit = self.fit(fam) if fam else None
        if fit is None:
            return None
        gpus: dict[str, set[str]] = {}
        newest: dict[str, float] = {}
        source: dict[str, str] = {}
        mine = [o for o in fit.obs if o.group == group]
        if fp8 is not None:
            mine = [o for o in mine if (o.precision == Precision.FP8) == fp8] or mine
        for o in mine:
            gpus.setdefault(o.suite, set()).add(o.gpu)
            newest[o.suite] = max(newest.get(o.suite, 0.0), version_key(o.point))
            source[o.suite] = o.source
        if not gpus:
            return None
        best = max(gpus, key=lambda s: (len(gpus[s]), newest[s], s))
        return Level(source[best], best)

    @_memoise
    def level_of(self, group: Group, suite: str | None, fp8: bool | None = None) -> Level | None:
        """``suite`` as a level of ``group`` when the data has it; another version of the
        same source at that source's level (no version deviation); else the reference level
        (``fp8``: as :meth:`reference_level`)."""
        fam = self.family_of(group)
        fit = self.fit(fam) if fam else None
        if suite and fit is not None:
            for o in fit.obs:
                if o.group == group and o.suite == suite:
                    return Level(o.source, o.suite)
            source = suite.split("@")[0]
            for o in fit.obs:
                if o.group == group and o.source == source:
                    return Level(source, suite)
        level: Level | None = self.reference_level(group, fp8)
        return level

    @_memoise
    def batch_range(self, group: Group) -> tuple[float, float] | None:
        """Smallest and largest measured micro-batch per GPU of ``group``."""
        batches = [p.batch_size_per_gpu for p in self.rows(group) if p.batch_size_per_gpu]
        return (float(min(batches)), float(max(batches))) if batches else None

    def tokens_per_sample(self, group: Group) -> float:
        """Tokens per sample of a transformer group (its preset's, else its rows'), 1
        otherwise."""
        if self.family_of(group) != "transformer":
            return 1.0
        w = self.workloads.get(group) or self.workloads.get((group[0], "full"))
        if w is not None and w.seq_len:
            return float(w.seq_len)
        seqs = [p.seq_len for p in self.rows(group) if p.seq_len]
        return float(statistics.median(seqs)) if seqs else 1.0

    def batch_term(self, group: Group, batch: float | None) -> float:
        """log(b / (b + b0)) of the micro-batch law; ``None`` → the group's typical batch."""
        if not batch:
            rng = self.batch_range(group)
            if not rng:
                return 0.0
            batch = math.sqrt(rng[0] * rng[1])
        fam = self.family_of(group) or "other"
        b0 = self.b0.get(fam, DEFAULT_B0[fam]) / self.tokens_per_sample(group)
        return math.log(batch / (batch + b0))

    def predict(
        self,
        group: Group,
        gpu: GpuSpec,
        precision: Precision,
        batch: float | None,
        level: Level,
        *,
        own: bool = True,
    ) -> tuple[float, int]:
        """log units/s per GPU and how many of the GPU's own rows at this precision class
        corrected it (rows at the other class correct it by half, and count 0)."""
        fam = self.family_of(group)
        fit = self.fit(fam) if fam else None
        if fit is None:
            raise LookupError(group)
        y = _linear(fit, group, gpu, precision, level) + self.batch_term(group, batch)
        if not own:
            return y, 0
        res = fit.residual.get((group, gpu.name), [])
        here = [(pc, r) for pc, suite, r in res if suite == level.suite]
        pairs = here or [(pc, r) for pc, _, r in res]
        same = [r for pc, r in pairs if pc == rate_class(gpu, precision)]
        if same:
            n = len(same)
            return y + statistics.fmean(same) * n / (n + OWN_SHRINK), n
        # fp8 and 16-bit residuals never move each other (different kernels, separate gains)
        pairs = [(pc, r) for pc, r in pairs if "8" not in (pc, rate_class(gpu, precision))]
        if pairs:
            # measured at the other precision class only: half its residual, and the
            # estimate is not "measured" at this precision
            n = len(pairs)
            return y + 0.5 * statistics.fmean(r for _, r in pairs) * n / (n + OWN_SHRINK), 0
        return y, 0

    @_memoise
    def measured_classes(self, group: Group) -> frozenset[str]:
        """Precision classes (``32``: fp32/tf32, ``16``: 16-bit and fp8) ``group`` was
        measured at."""
        return frozenset(pclass(p.precision) for p in self.rows(group))

    @_memoise
    def has_sibling(self, group: Group, gpu: GpuSpec) -> bool:
        """A GPU of the same architecture (not ``gpu``) measured ``group``."""
        fam = self.family_of(group)
        fit = self.fit(fam) if fam else None
        return bool(fit) and any(
            o.group == group and o.arch == gpu.architecture and o.gpu != gpu.name
            for o in fit.obs  # type: ignore[union-attr]
        )

    def rows(self, group: Group) -> list[BenchmarkPoint]:
        """Every usable measurement of ``group`` (all GPU counts)."""
        return self.by_group.get(group, [])

    def own_rows_at(
        self, group: Group, gpu: str, suite: str, precision: Precision, batch: float
    ) -> list[BenchmarkPoint]:
        """``gpu``'s own 1-GPU measurements of ``group`` at exactly this software level
        (``source@version``), precision and micro-batch per GPU: where there are any, their
        mean is the measurement of that configuration (the ``measured`` situation)."""
        return [
            p
            for p in self.rows(group)
            if p.gpu == gpu
            and p.gpu_count == 1
            and suite_of(p) == suite
            and p.precision == precision
            and p.batch_size_per_gpu is not None
            and float(p.batch_size_per_gpu) == batch
        ]


def _overhead_batches(
    points: Sequence[BenchmarkPoint], data: PooledData, *, work: bool = False
) -> dict[str, float]:
    """Median b0 per family from cells measured at several micro-batches (see module): in
    tokens for transformers, or with ``work`` in :func:`matmul_rows_per_sample` units
    (tokens × hidden) of each cell's preset (a cell without a preset workload is left out)."""
    cells: dict[tuple[str, ...], dict[float, list[float]]] = {}
    groups: dict[tuple[str, ...], Group] = {}
    key: tuple[str, ...]
    for p in points:
        if p.gpu_count == 1 and p.batch_size_per_gpu and p.throughput_total > 0:
            key = (p.workload, p.method, p.gpu, suite_of(p), p.precision.value)
            groups[key] = (p.workload, p.method)
            cells.setdefault(key, {}).setdefault(float(p.batch_size_per_gpu), []).append(
                p.throughput_total
            )
    found: dict[str, list[float]] = {}
    for key, by_batch in cells.items():
        if len(by_batch) < 2:
            continue
        fam = data.family_of(groups[key])
        if fam is None:
            continue
        lo, hi = min(by_batch), max(by_batch)
        r1, r2 = statistics.fmean(by_batch[lo]), statistics.fmean(by_batch[hi])
        den = r1 / lo - r2 / hi
        if den <= 0 or r2 <= r1:
            continue
        per_sample = data.tokens_per_sample(groups[key])
        if work:
            g = groups[key]
            w = data.workloads.get(g) or data.workloads.get((g[0], "full"))
            if w is None:
                continue
            per_sample = matmul_rows_per_sample(w)
        found.setdefault(fam, []).append((r2 - r1) / den * per_sample)
    out = {fam: statistics.median(v) for fam, v in found.items()}
    # CNNs and other workloads share what either measured (both in samples)
    samples = [x for fam in ("cnn", "other") for x in found.get(fam, [])]
    for fam in ("cnn", "other"):
        if fam not in out and samples:
            out[fam] = statistics.median(samples)
    return out


def _columns(
    o_group: Group, arch: str, source: str, suite: str, pc32: bool, pc8: bool = False
) -> list[tuple[str, ...]]:
    g = "|".join(o_group)
    cols: list[tuple[str, ...]] = [("src", g, source), ("ver", g, suite)]
    if pc8:
        # fp8 rows: their own intercept and architecture terms, so what fp8 kernels reach on
        # an architecture (Blackwell's rows are fp8 only) never moves a 16-bit answer there
        return [*cols, ("pc8",), ("pc8g", g), ("arch8", arch), ("garch8", g, arch)]
    cols += [("arch", arch), ("garch", g, arch)]
    if pc32:
        cols += [("pc32",), ("pc32g", g)]
    return cols


def _slope_keys(g: str, j: int, pc8: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The family's and the group's slope columns of spec feature ``j`` (fp8 rows: their
    own, as :func:`_columns`)."""
    if pc8:
        return ("s8", str(j)), ("sg8", g, str(j))
    return ("s", str(j)), ("sg", g, str(j))


def _linear(
    fit: FamilyFit, group: Group, gpu: GpuSpec, precision: Precision, level: Level
) -> float:
    g = "|".join(group)
    cls = rate_class(gpu, precision)
    pc32 = cls == "32"
    y = 0.0
    for key in _columns(group, gpu.architecture, level.source, level.suite, pc32, cls == "8"):
        y += fit.term(*key)
    x = np.asarray(spec_features(gpu, precision)) - fit.centre * _mask(pc32)
    for j in range(4):
        family_key, group_key = _slope_keys(g, j, cls == "8")
        y += x[j] * (fit.term(*family_key) + fit.term(*group_key))
    return y


def _mask(pc32: bool) -> np.ndarray:
    return np.array([0.0, 1.0, 1.0, 1.0]) if pc32 else np.array([1.0, 0.0, 0.0, 1.0])


def _fit_family(obs: list[Obs], catalog: Mapping[str, GpuSpec], data: PooledData) -> FamilyFit:
    feats = np.array([spec_features(catalog[o.gpu], o.precision) for o in obs])
    centre = np.zeros(4)
    for j in range(4):
        vals = feats[feats[:, j] != 0.0, j]
        centre[j] = float(vals.mean()) if len(vals) else 0.0
    index: dict[tuple[str, ...], int] = {}
    penalty: list[float] = []

    def col(key: tuple[str, ...], lam: float) -> int:
        if key not in index:
            index[key] = len(index)
            penalty.append(lam)
        return index[key]

    lam_of = {
        "src": RIDGE["free"],
        "ver": RIDGE["version"],
        "arch": RIDGE["arch"],
        "garch": RIDGE["arch_group"],
        "pc32": RIDGE["free"],
        "pc32g": RIDGE["pc32_group"],
        "pc8": RIDGE["free"],
        "pc8g": RIDGE["pc32_group"],
        "arch8": RIDGE["arch"],
        "garch8": RIDGE["arch_group"],
    }
    entries: list[list[tuple[int, float]]] = []
    for o, f in zip(obs, feats, strict=True):
        cls = rate_class(catalog[o.gpu], o.precision)
        pc32 = cls == "32"
        cols = _columns(o.group, o.arch, o.source, o.suite, pc32, cls == "8")
        row = [(col(k, lam_of[k[0]]), 1.0) for k in cols]
        x = f - centre * _mask(pc32)
        g = "|".join(o.group)
        for j in range(4):
            if x[j] != 0.0:
                family_key, group_key = _slope_keys(g, j, cls == "8")
                row.append((col(family_key, RIDGE["free"]), x[j]))
                row.append((col(group_key, RIDGE["slope_group"]), x[j]))
        entries.append(row)
    n, k = len(obs), len(index)
    a = np.zeros((n, k))
    b = np.zeros(n)
    for i, (o, row) in enumerate(zip(obs, entries, strict=True)):
        for j, v in row:
            a[i, j] += v
        b[i] = o.y - data.batch_term(o.group, o.batch)
    # ridge normal equations: (AᵀA + diag(λ)) θ = Aᵀb
    coef = np.linalg.solve(a.T @ a + np.diag(np.asarray(penalty)), a.T @ b)
    fitted_y = a @ coef
    residual: dict[tuple[Group, str], list[tuple[str, str, float]]] = {}
    for o, yhat, target in zip(obs, fitted_y, b, strict=True):
        residual.setdefault((o.group, o.gpu), []).append(
            (rate_class(catalog[o.gpu], o.precision), o.suite, float(target - yhat))
        )
    return FamilyFit(index, coef, centre, obs, residual)
