"""Model-FLOPs utilisation: what share of the datasheet peak an answer implies, and the
credible range measured runs reach (the bound every estimate is held to).

* **MFU** = model FLOPs per sample × samples/s per GPU ÷ the dense datasheet peak at the
  precision the GPU really runs (:func:`app.model.throughput.flops_peak_tflops`: the
  FP32-accumulate tensor rate for 16-bit, the FP8 rate for fp8, TF32 for fp32 where the GPU
  has it). Model FLOPs count no recompute (PaLM, Chowdhery et al. 2022, appendix B:
  ``6N + 12·L·h·s`` per token for full training, ``4N`` for LoRA/QLoRA, which compute no
  weight gradients of the frozen base).
* **HFU** (hardware-FLOPs utilisation) counts what the GPU executes: with activation
  checkpointing one more forward (``+2N + 4·L·h·s`` per token, §4.1 of estimation.md).

Precision classes are three here (:attr:`~app.model.vocabulary.Precision.mfu_class`): ``32``
(fp32/tf32), ``16`` (fp16/bf16) and ``8`` (fp8): an fp8 run's rate says nothing about a bf16
run's, and fp8 rows never raise a bf16 answer.

The credible ranges (the calibration's ``mfu_range``: per family, size and precision class, the 10th
percentile, median and highest MFU and HFU of the measured rows that pass
:func:`implausible_mfu_reason`; ``tools/fit_constants.py`` fits them, ``docs/mfu_table.md``
lists the rows behind each cell) bound what the model may say: no answer implies more than
its cell's highest measured MFU, nor more than its highest HFU.
"""

from __future__ import annotations

from dataclasses import replace

from app.model.calibration import Calibration, load_calibration
from app.model.flops import RunRecompute, flops_peak_tflops, training_flops_per_sample
from app.model.types import BenchmarkPoint, GpuSpec, Precision, Workload
from app.model.vocabulary import Family, mfu_class

#: Model-FLOPs utilisation above which a measured row is held as suspect, per family.
#: Transformer training: the best published large-scale runs report 0.55-0.65 (PaLM 0.46,
#: Megatron-LM 0.52-0.56, torchtitan docs/performance.md 0.50-0.61, llm.c ~0.60); above 0.75
#: a row counts FLOPs or tokens differently than its label says. Other families: the
#: datasheet peak itself (a row above it does fewer FLOPs than the direct count, e.g.
#: Winograd convolutions, or mislabels its precision).
IMPLAUSIBLE_MFU: dict[str, float] = {Family.TRANSFORMER: 0.75, Family.CNN: 1.0, Family.OTHER: 1.0}

#: Methods that train adapters on a frozen base: their rows also form an ``adapter`` cell.
ADAPTER_METHODS = frozenset({"lora", "qlora"})

#: Fewest distinct sources (publishers of the rows) an ``adapter`` cell's rows must come from:
#: :func:`app.calibrate.mfu_fit.fit_mfu_range` forms the cell only then, and without the cell
#: the size cell alone bounds a LoRA/QLoRA answer (:func:`credible_bound`). One source's
#: rows are one configuration measured a few times (the ">=20B|8|adapter" rows were three
#: Megatron-Bridge Llama 3 70B LoRA runs), not a range of what adapter training reaches: the
#: highest of them says how fast that suite ran, not how fast any LoRA job may run. Two is the
#: least that makes the highest a maximum over independent measurements (no published count
#: exists; this is the smallest that is not a single source).
MIN_ADAPTER_SOURCES = 2

#: Transformer size buckets (total parameters), upper bounds exclusive.
SIZE_BUCKETS = ((1e9, "<1B"), (2e10, "1B-20B"), (float("inf"), ">=20B"))


def size_bucket(fam: str, params: int | None) -> str:
    """Size bucket of a workload: by parameters for transformers (:data:`SIZE_BUCKETS`),
    ``all`` for other families (their parameter count says little about their work)."""
    if fam != Family.TRANSFORMER or not params:
        return "all"
    return next(name for bound, name in SIZE_BUCKETS if params < bound)


def range_key(fam: str, params: int | None, precision: Precision) -> str:
    """``family|size|class``: the key of :attr:`Calibration.mfu_range`."""
    return f"{fam}|{size_bucket(fam, params)}|{mfu_class(precision)}"


def adapter_key(fam: str, params: int | None, precision: Precision) -> str | None:
    """``family|size|class|adapter``: the cell of LoRA/QLoRA rows inside the size cell, for
    transformers; ``None`` for other families."""
    if fam != Family.TRANSFORMER:
        return None
    return range_key(fam, params, precision) + "|adapter"


def model_workload(w: Workload) -> Workload:
    """``w`` without activation checkpointing: its model FLOPs are its training FLOPs then."""
    return replace(w, gradient_checkpointing=False) if w.gradient_checkpointing else w


def credible_cell(
    fam: str, params: int | None, precision: Precision, cal: Calibration | None = None
) -> tuple[str, tuple[float, float, float, float, int]]:
    """(key, (p10, median, max MFU, max HFU, rows)) of the cell of ``cal``'s table
    (default: the served calibration) that bounds the job: its own ``family|size|class`` cell;
    the family's widest cell of the same class where the size bucket has no rows, else of any
    class; ``("datasheet peak", (0, 0, 1, 1, 0))`` without any. The key is the cell's own (a
    note names the cell whose rows bound the answer, docs/mfu_table.md)."""
    table = (cal or load_calibration()).mfu_range
    key = range_key(fam, params, precision)
    own = table.get(key)
    if own is not None:
        return key, own
    cls = mfu_class(precision)
    cells = {k: v for k, v in table.items() if not k.endswith("|adapter")}
    same = {k: v for k, v in cells.items() if k.split("|")[0] == fam and k.endswith("|" + cls)}
    same = same or {k: v for k, v in cells.items() if k.split("|")[0] == fam}
    if not same:
        return "datasheet peak", (0.0, 0.0, 1.0, 1.0, 0)
    best = max(same, key=lambda k: same[k][2])
    return best, same[best]


def credible_range(
    fam: str, params: int | None, precision: Precision, cal: Calibration | None = None
) -> tuple[float, float, float, float, int]:
    """(p10, median, max MFU, max HFU, rows) of :func:`credible_cell`."""
    return credible_cell(fam, params, precision, cal)[1]


def credible_bound(
    fam: str,
    params: int | None,
    precision: Precision,
    cal: Calibration | None = None,
    method: str | None = None,
) -> tuple[float, float, str]:
    """(highest credible MFU, HFU, the key of the cell that set them): the cell of
    :func:`credible_cell`, never above the family's :data:`IMPLAUSIBLE_MFU`; a LoRA/QLoRA
    ``method`` is also held to its size cell's ``adapter`` cell (:func:`adapter_key`), which
    exists only where its rows come from at least :data:`MIN_ADAPTER_SOURCES` sources (the
    measured adapter runs reach less MFU than full training: their 4N count leaves out the
    adapters' matmuls and the base's casts); the key then ends in ``|adapter`` when that cell
    is the lower."""
    table = (cal or load_calibration()).mfu_range
    key, cell = credible_cell(fam, params, precision, cal)
    limit = IMPLAUSIBLE_MFU.get(fam, 1.0)
    mfu, hfu = min(float(cell[2]), limit), min(max(float(cell[3]), float(cell[2])), 1.0)
    akey = adapter_key(fam, params, precision) if method in ADAPTER_METHODS else None
    own = table.get(akey) if akey else None
    if akey and own is not None:
        amfu, ahfu = float(own[2]), max(float(own[3]), float(own[2]))
        if amfu < mfu or ahfu < hfu:
            mfu, hfu, key = min(mfu, amfu), min(hfu, ahfu), akey
    return mfu, hfu, key


def credible_max(
    fam: str,
    params: int | None,
    precision: Precision,
    cal: Calibration | None = None,
    method: str | None = None,
) -> tuple[float, float]:
    """Highest credible (MFU, HFU) of :func:`credible_bound`."""
    mfu, hfu, _ = credible_bound(fam, params, precision, cal, method)
    return mfu, hfu


def implausible_mfu_reason(fam: str, mfu: float) -> str | None:
    """Why a measured row's implied MFU cannot be a rate of the labelled job, or ``None``."""
    limit = IMPLAUSIBLE_MFU.get(fam, 1.0)
    if mfu <= limit:
        return None
    what = f"{fam} training"
    return (
        f"implied MFU {mfu:.2f} above {limit:.2f}, more than any credible {what} reaches "
        "(app/model/mfu.py IMPLAUSIBLE_MFU): FLOPs, tokens or precision counted "
        "differently than labelled"
    )


def row_utilisation(
    p: BenchmarkPoint, w: Workload, gpu: GpuSpec, recompute: RunRecompute | None = None
) -> tuple[float, float] | None:
    """(MFU, HFU) per GPU of a measured row ``p`` of preset ``w`` on ``gpu``, as published
    (a multi-GPU row keeps its scaling loss). A row at another sequence length than the
    preset's counts at its own (its tokens/s ÷ its tokens per sample); ``recompute`` is the
    row's activation checkpointing where its source states it (else the preset's). ``None``
    without a FLOPs count, or for a row at another sequence length not counted in tokens."""
    units = w.units_per_sample or 1.0
    w = replace(w, precision=p.precision)
    if recompute is not None:
        w = recompute.of(w)
    if p.seq_len and w.seq_len and p.seq_len != w.seq_len:
        if not p.throughput_unit.startswith("tokens"):
            return None
        w, units = replace(w, seq_len=p.seq_len), float(p.seq_len)
    hardware = training_flops_per_sample(w)
    model = training_flops_per_sample(model_workload(w))
    if not hardware or not model or p.gpu_count < 1:
        return None
    per_gpu = p.throughput_total / units / p.gpu_count
    peak = flops_peak_tflops(gpu, p.precision) * 1e12
    return per_gpu * model / peak, per_gpu * hardware / peak
