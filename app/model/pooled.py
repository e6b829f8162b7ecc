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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar, cast

from app.model.calibration import Calibration, load_calibration
from app.model.mfu import implausible_mfu_reason, row_utilisation
from app.model.multigpu import effective_interconnect, multi_gpu_comm
from app.model.pooled_fit import RIDGE as RIDGE
from app.model.pooled_fit import _fit_family, _linear, _overhead_batches
from app.model.pooled_rows import FamilyFit as FamilyFit
from app.model.pooled_rows import Group as Group
from app.model.pooled_rows import Level as Level
from app.model.pooled_rows import Obs as Obs
from app.model.pooled_rows import batch_work_per_sample as batch_work_per_sample
from app.model.pooled_rows import matmul_rows_per_sample as matmul_rows_per_sample
from app.model.pooled_rows import place_unstated_variants as place_unstated_variants
from app.model.pooled_rows import rate_class as rate_class
from app.model.pooled_rows import spec_features as spec_features
from app.model.pooled_rows import suite_of as suite_of
from app.model.pooled_rows import unstated_variant as unstated_variant
from app.model.stacks import published_class
from app.model.types import (
    BenchmarkPoint,
    GpuSpec,
    Interconnect,
    Precision,
    Workload,
)
from app.model.vocabulary import (
    Family,
    family,
    minor_version_number,
    precision_class,
)

#: Shrinkage of a GPU's own mean residual: n / (n + OWN_SHRINK) of it is applied.
OWN_SHRINK = 0.05
#: b0 of the micro-batch law when no cell of the family measured several batches (samples,
#: tokens for transformers): a neutral prior, used only without data.
DEFAULT_B0: dict[str, float] = {Family.TRANSFORMER: 1024.0, Family.CNN: 4.0, Family.OTHER: 4.0}
#: the transformers' prior in :func:`matmul_rows_per_sample` units (1,024 tokens at width
#: 1,024; no source, used only when no cell measured several batches); other families fall
#: back to :data:`DEFAULT_B0` in samples
DEFAULT_B0_WORK: dict[str, float] = {Family.TRANSFORMER: 1024.0 * 1024.0}


_T = TypeVar("_T")


#: a value no memoised query returns (``None`` is one they do)
_MISSING = object()

#: :meth:`PooledData.kept` empties the data's memo when it holds this many answers (each a
#: few hundred bytes; a ranking of one measured group keeps a few thousand)
KEPT_SIZE = 65536


def _memoise(method):  # type: ignore[no-untyped-def]
    """Memoise a :class:`PooledData` query on its arguments (GPU specs by name)."""
    name = method.__name__

    def wrapper(self, *args):  # type: ignore[no-untyped-def]
        key = (name, *[a.name if isinstance(a, GpuSpec) else a for a in args])
        cache = self._cache
        hit = cache.get(key, _MISSING)
        if hit is _MISSING:
            hit = cache[key] = method(self, *args)
        return hit

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
        #: b0 in batch_work_per_sample units (matmul rows; FLOPs for non-transformers), for
        #: carrying the law to another network
        self.b0_work = _overhead_batches(usable, self, work=True)

    def kept(self, key: tuple[object, ...], gpu: GpuSpec, make: Callable[[], _T]) -> _T:
        """``make()`` kept under ``key`` for this very ``gpu`` spec (another spec under the
        same name is computed afresh and replaces it): the parts of an estimate that depend
        on the data and the GPU but not on the workload's micro-batch, shared by every
        workload estimated from this data (a new micro-batch per request re-reads them)."""
        hit = cast(tuple[GpuSpec, _T] | None, self._cache.get(key))
        if hit is None or hit[0] is not gpu:
            hit = (gpu, make())
            if len(self._cache) >= KEPT_SIZE:
                self._cache.clear()  # what-if requests may ask for any count and network
            self._cache[key] = hit
        return hit[1]

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
                eta = multi_gpu_comm(
                    wp,
                    gpu,
                    p.gpu_count,
                    link,
                    per_gpu / units,
                    micro_batch=p.batch_size_per_gpu,
                    cal=self.cal,
                ).efficiency
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
        GPUs (ties: a tuned-class suite, :func:`app.model.stacks.published_class`, then the
        newest framework version); with ``fp8`` given, among the suites that
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
            newest[o.suite] = max(
                newest.get(o.suite, 0.0), minor_version_number(o.point.framework_version)
            )
            source[o.suite] = o.source
        if not gpus:
            return None
        # ties: a tuned suite (the class the stack factors are relative to), then the newest
        tuned = {s: published_class(source[s]) == "tuned" for s in gpus}
        best = max(gpus, key=lambda s: (len(gpus[s]), tuned[s], newest[s], s))
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
    @_memoise
    def batch_range(self, group: Group) -> tuple[float, float] | None:
        """Smallest and largest measured micro-batch per GPU of ``group``."""
        batches = [p.batch_size_per_gpu for p in self.rows(group) if p.batch_size_per_gpu]
        return (float(min(batches)), float(max(batches))) if batches else None

    def tokens_per_sample(self, group: Group) -> float:
        """Tokens per sample of a transformer group (its preset's, else its rows'), 1
        otherwise."""
        if self.family_of(group) != Family.TRANSFORMER:
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
        fam = self.family_of(group) or Family.OTHER
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
        linear = self.kept(
            ("linear", group, gpu.name, precision, level),
            gpu,
            lambda: _linear(fit, group, gpu, precision, level),
        )
        y = linear + self.batch_term(group, batch)
        if not own:
            return y, 0
        term, n = self.kept(
            ("own_term", group, gpu.name, precision, level.suite),
            gpu,
            lambda: self._own_term(fit, group, gpu, precision, level),
        )
        return (y if term is None else y + term), n

    def _own_term(
        self, fit: FamilyFit, group: Group, gpu: GpuSpec, precision: Precision, level: Level
    ) -> tuple[float | None, int]:
        """What :meth:`predict` adds for ``gpu``'s own rows (``None``: nothing) and how many of
        them are at this precision class."""
        res = fit.residual.get((group, gpu.name), [])
        here = [(pc, r) for pc, suite, r in res if suite == level.suite]
        pairs = here or [(pc, r) for pc, _, r in res]
        same = [r for pc, r in pairs if pc == rate_class(gpu, precision)]
        if same:
            n = len(same)
            return statistics.fmean(same) * n / (n + OWN_SHRINK), n
        # fp8 and 16-bit residuals never move each other (different kernels, separate gains)
        pairs = [(pc, r) for pc, r in pairs if "8" not in (pc, rate_class(gpu, precision))]
        if pairs:
            # measured at the other precision class only: half its residual, and the
            # estimate is not "measured" at this precision
            n = len(pairs)
            return 0.5 * statistics.fmean(r for _, r in pairs) * n / (n + OWN_SHRINK), 0
        return None, 0

    @_memoise
    def reach(self, group: Group) -> tuple[int, int]:
        """(suites, GPU models) ``group`` was measured on (every row)."""
        rows = self.rows(group)
        return len({p.source for p in rows}), len({p.gpu for p in rows})

    @_memoise
    def measured_classes(self, group: Group) -> frozenset[str]:
        """Precision classes (``32``: fp32/tf32, ``16``: 16-bit and fp8) ``group`` was
        measured at."""
        return frozenset(precision_class(p.precision) for p in self.rows(group))

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

    @_memoise
    def _rows_by_config(self, group: Group) -> dict[tuple[str, float | None], list[BenchmarkPoint]]:
        """:meth:`rows` of ``group`` by (GPU, GPU count) and by (GPU, ``None``): all counts,
        each list in :meth:`rows` order."""
        index: dict[tuple[str, float | None], list[BenchmarkPoint]] = {}
        for p in self.rows(group):
            index.setdefault((p.gpu, p.gpu_count), []).append(p)
            index.setdefault((p.gpu, None), []).append(p)
        return index

    def rows_on(
        self, group: Group, gpu: str, gpu_count: float | None = None
    ) -> list[BenchmarkPoint]:
        """The rows of :meth:`rows` measured on ``gpu_count`` × ``gpu`` (``None``: any count),
        in the same order (indexed once per group and shared by every workload estimated from
        this data: a ranking asks for hundreds of configurations, each new workload again)."""
        index: dict[tuple[str, float | None], list[BenchmarkPoint]] = self._rows_by_config(group)
        return index.get((gpu, gpu_count), [])

    def own_rows_at(
        self, group: Group, gpu: str, suite: str, precision: Precision, batch: float
    ) -> list[BenchmarkPoint]:
        """``gpu``'s own 1-GPU measurements of ``group`` at exactly this software level
        (``source@version``), precision and micro-batch per GPU: where there are any, their
        mean is the measurement of that configuration (the ``measured`` situation)."""
        return [
            p
            for p in self.rows_on(group, gpu, 1)
            if suite_of(p) == suite
            and p.precision == precision
            and p.batch_size_per_gpu is not None
            and float(p.batch_size_per_gpu) == batch
        ]
