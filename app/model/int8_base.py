"""The time a LoRA step loses to a frozen base loaded in 8 bits (bitsandbytes LLM.int8).

A LoRA run whose base is loaded with ``load_in_8bit=True`` (``base_dtype`` int8) keeps the
base's linear layers as bitsandbytes ``Linear8bitLt``: each matmul quantises its input
row-wise, splits the outlier columns into a 16-bit matmul (mixed-precision decomposition)
and dequantises the int8 result. Dettmers et al. 2022 (arXiv:2208.07339, Appendix D.1,
Table 5) measured that path against a 16-bit matmul for the first feed-forward layer of
GPT-3-shaped models: 0.14× of fp16's speed at model dimension 768, 0.86× at 4,096, 1.22×
at 5,140, 1.81× at 12,288 (``seed_data/int8_matmul_speed.csv``, one row per column, with
source, date seen and units). The adapters stay 16-bit.

The cause, as modelled (:func:`int8_base_time`): the base's matmuls of a step (the forward,
the recomputed forward under activation checkpointing, and the backward's input-gradient
matmuls; a frozen base has no weight gradients) run at the measured ratio ``r`` for the
model's width, interpolated in log(width) between the table's columns; the rest of the step
(attention's score matmuls, the 16-bit LM head, adapters) is unchanged. With ``f`` the
base's share of the step's FLOPs (:func:`app.model.flops.transformer_flops`; time taken as
proportional to FLOPs), the step takes ``1 − f + f / r`` of the 16-bit base's time.

Limits, said in the answer's note:

* The table times one inference matmul, on a GPU the table does not name; a training step on
  another GPU is an extrapolation. bitsandbytes' backward (``MatMul8bitLt.backward`` in
  ``bitsandbytes/autograd/_functions.py``) quantises the output gradient and dequantises the
  int8 weight to 16 bits before a 16-bit matmul: no separate measurement of it was found, so
  it is taken at the same ratio.
* A measured speed-up (r > 1, model dimension above about 4,700) is never credited: the
  backward runs 16-bit matmuls after a dequantisation, and no training measurement shows a
  gain. An int8 base is therefore never faster than a 16-bit one.
* The backward rebuilds the 16-bit weight of every int8 layer once per micro-batch
  (:func:`int8_rate`): bitsandbytes 0.37.0 to 0.41.0 (the tags of
  bitsandbytes-foundation/bitsandbytes, ``bitsandbytes/autograd/_functions.py``
  ``MatMul8bitLt.backward``, branch ``elif state.CxB is not None``; ``Linear8bitLt.forward``
  keeps only the tiled ``CxB`` after the first pass, ``del self.state.CB``) compute
  ``undo_layout(state.CxB, state.tile_indices).to(ctx.dtype_A).mul_(state.SCB ...)`` before
  ``torch.matmul(grad_output, CB)``: :data:`DEQUANT_BYTES_PER_PARAM` bytes moved per int8
  parameter, a weight-sized memory-bound cost independent of the tokens in the micro-batch,
  taken at the GPU's datasheet memory bandwidth (the fastest it can run). It weighs most at
  small micro-batches (U-9's LLaMA-7B at 8 × 256 tokens on an RTX 3090: 78 ms against a step
  of 2.9 s; at 1 × 256 tokens, bitsandbytes#465's set-up, the same cost falls on 8 times
  fewer tokens: 95 ms at its RTX A5000's 768 GB/s). The backward's quantisation of the
  output gradient (``F.double_quant(grad_output)``, about 4 B per output element per
  token) is not counted.
* Users report bitsandbytes' int8 LoRA training slower than this kernel benchmark implies
  (bitsandbytes-foundation/bitsandbytes#465: "For int8 I have x2-x3 drop", a 7B LoRA on an
  RTX A5000, bitsandbytes 0.39): the answer is the fastest the int8 path allows.
* Outside the table's widths (768-12,288) the nearest column is used and the answer says the
  int8 base is outside the measured model; without a width (non-transformers), or for QLoRA
  with an int8 base (its fitted QLoRA slowdown already applies), no factor is applied and the
  answer says so.

Pure: stdlib only; the table is read once from the seed folder (as :mod:`app.model.comm`
reads ``link_bandwidth.csv``; :class:`app.data.rows.Int8SpeedRow` declares its columns).
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from app.model.flops import matmul_params, matmul_width, transformer_flops
from app.model.memory_dtypes import base_dtype
from app.model.memory_states import embedding_params
from app.model.types import Architecture, BaseDtype, Method, Workload
from app.resources import seed_dir

INT8_TABLE = "int8_matmul_speed.csv"

#: Where the table's figures come from (said in every answer the factor changes).
SOURCE = "Dettmers et al. 2022, arXiv:2208.07339 Table 5, LLM.int8() vector-wise + decomposition"


@lru_cache(maxsize=4)
def int8_speed_table(path: Path | None = None) -> tuple[tuple[float, float], ...]:
    """``(model dimension, int8 ÷ fp16 matmul speed)`` pairs of
    ``seed_data/int8_matmul_speed.csv``, by model dimension.

    Raises:
        FileNotFoundError: the table is missing.
    """
    with (path or seed_dir() / INT8_TABLE).open(encoding="utf-8", newline="") as fh:
        rows = [(float(r["model_dim"]), float(r["speed_vs_fp16"])) for r in csv.DictReader(fh)]
    return tuple(sorted(rows))


def int8_matmul_speed(width: float) -> tuple[float, bool]:
    """The measured LLM.int8() matmul speed relative to fp16 at model dimension ``width``
    (dimensionless; below 1 a slowdown), interpolated linearly in ``log(width)`` between the
    table's columns, and whether ``width`` lies within them (outside: the nearest column).

    Raises:
        ValueError: ``width`` is not positive.
    """
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    table = int8_speed_table()
    lo, hi = table[0], table[-1]
    if width <= lo[0]:
        return lo[1], width == lo[0]
    if width >= hi[0]:
        return hi[1], width == hi[0]
    for (d0, r0), (d1, r1) in itertools.pairwise(table):
        if d0 <= width <= d1:
            t = math.log(width / d0) / math.log(d1 / d0)
            return r0 + t * (r1 - r0), True
    raise AssertionError("unreachable: width lies between the table's ends")


#: Bytes moved per int8 base parameter when the backward rebuilds its 16-bit weight (module
#: docstring): ``undo_layout`` reads the tiled int8 weight and scatters it (1 B read + 1 B
#: written), its ``permute(...).contiguous()`` copies it (1 + 1), ``.to(float16)`` (1 B read
#: + 2 B written) and ``.mul_`` by the row scales (2 + 2): 11 B.
DEQUANT_BYTES_PER_PARAM = 11


@dataclass(frozen=True)
class Int8Time:
    """What an int8 base does to one training step.

    ``share``: fraction of the 16-bit base's step FLOPs in the base's int8 matmuls (0-1);
    ``speed``: their speed relative to fp16 as applied (≤ 1); ``factor``: step time relative
    to a 16-bit base (≥ 1; divide a rate by it); ``notes``: the sentences for the answer.
    """

    share: float
    speed: float
    factor: float
    notes: tuple[str, ...]


#: The answer when no measured ratio applies: estimated as a 16-bit base.
OUTSIDE = (
    "base dtype int8 (bitsandbytes LLM.int8): the int8 base is outside the measured model "
    "here ({why}); estimated as a 16-bit base, so this is too fast (bitsandbytes int8 LoRA "
    "runs are reported 2-3x slower than 16-bit, bitsandbytes#465)"
)


def _int8_params(w: Workload) -> float:
    """Parameters of the base held in int8: :func:`matmul_params` less a decoder's input
    embedding and LM head (:func:`app.model.memory_states.embedding_params`, ``2 × vocab_size
    × hidden_size``, the memory model's count of the same 16-bit tables): bitsandbytes
    replaces only ``nn.Linear`` layers, and transformers' integration keeps the output
    embedding in 16 bits (``get_keys_to_not_convert``)."""
    n = float(matmul_params(w))
    if w.architecture == Architecture.TRANSFORMER_DECODER:
        tables = float(embedding_params(w))
        if 0 < tables < n:
            return n - tables
    return n


def int8_base_time(w: Workload) -> Int8Time | None:
    """The int8 base's effect on a step of ``w``; ``None`` unless the frozen base is int8
    (:func:`app.model.memory_dtypes.base_dtype`) in a LoRA/QLoRA run.

    ``factor = 1 − f + f / r``: ``f`` the base's share of the step's FLOPs (forward, input
    gradients, and the recomputed forward with checkpointing: ``k·N_int8·s`` of
    :func:`transformer_flops`' ``k·N·s`` matmul FLOPs, over matmul + attention), ``r`` =
    ``min(1, int8_matmul_speed(width))`` with width = ``hidden_size`` (else
    :func:`matmul_width`). U-9's LLaMA-7B (h 4,096, s 256, checkpointing on): f = 0.968,
    r = 0.86, factor = 1.157.
    """
    if w.method not in (Method.LORA, Method.QLORA) or base_dtype(w) != BaseDtype.INT8:
        return None
    if w.method == Method.QLORA:
        why = "QLoRA's fitted slowdown (nf4 rows) already applies; int8 is not measured"
        return Int8Time(0.0, 1.0, 1.0, (OUTSIDE.format(why=why),))
    width = float(w.hidden_size) if w.hidden_size else matmul_width(w)
    if not w.architecture.is_transformer or not w.params or not width:
        why = "no transformer width to read the measured matmul speed at"
        return Int8Time(0.0, 1.0, 1.0, (OUTSIDE.format(why=why),))
    matmul, attention = transformer_flops(w)
    n = float(matmul_params(w))
    total = matmul + attention
    if total <= 0 or n <= 0:
        why = "no FLOPs count for this shape"
        return Int8Time(0.0, 1.0, 1.0, (OUTSIDE.format(why=why),))
    share = matmul * (_int8_params(w) / n) / total
    measured, inside = int8_matmul_speed(width)
    speed = min(1.0, measured)
    factor = 1.0 - share + share / speed
    passes = "forward, input gradients"
    if w.gradient_checkpointing:
        passes = "forward, recomputed forward, input gradients"
    text = (
        f"base dtype int8 (bitsandbytes LLM.int8): the frozen base's matmuls ({passes}; "
        f"{share:.0%} of the step's FLOPs) at x{speed:.2f} of fp16's speed, measured for a "
        f"model dimension of {width:.0f} ({SOURCE}); adapters 16-bit: step time x{factor:.2f}, "
        f"throughput x{1 / factor:.2f}"
    )
    if measured > 1.0:
        text += (
            f" (the measured int8 matmul speed-up, x{measured:.2f}, is not credited: the "
            "backward dequantises the base to 16 bits and no training run shows a gain)"
        )
    notes = [text]
    extrapolated = (
        "extrapolated: the ratio was measured on one inference matmul (GPU not stated) and "
        "is applied to a training step on this GPU; bitsandbytes int8 LoRA runs are reported "
        "slower still (2-3x vs 16-bit, bitsandbytes#465), so this is the fastest the int8 "
        "base allows"
    )
    if not inside:
        table = int8_speed_table()
        extrapolated = (
            f"the int8 base is outside the measured model: width {width:.0f} lies outside "
            f"the measured {table[0][0]:.0f}-{table[-1][0]:.0f}, the nearest column is "
            "used; " + extrapolated
        )
    notes.append(extrapolated)
    return Int8Time(share, speed, factor, tuple(notes))


def int8_dequant_seconds(w: Workload, bandwidth_gbs: float) -> float:
    """Seconds one micro-batch's backward spends rebuilding the int8 base's 16-bit weights:
    :data:`DEQUANT_BYTES_PER_PARAM` × the int8 parameters (:func:`_int8_params`) over
    ``bandwidth_gbs`` (GB/s, the datasheet memory bandwidth). LLaMA-7B (6,476,271,616 int8
    parameters: 6,738,415,616 less the 32,000 × 4,096 input embedding and LM head; its 65
    RMSNorm weights, 266,240, stay counted) on an RTX 3090 (936 GB/s):
    11 × 6.476e9 / 936e9 = 0.0761 s.

    Raises:
        ValueError: ``bandwidth_gbs`` is not positive.
    """
    if bandwidth_gbs <= 0:
        raise ValueError(f"bandwidth_gbs must be positive, got {bandwidth_gbs}")
    return DEQUANT_BYTES_PER_PARAM * _int8_params(w) / (bandwidth_gbs * 1e9)


def int8_rate(
    w: Workload, rate: float, bandwidth_gbs: float | None
) -> tuple[float, tuple[str, ...]]:
    """Per-GPU samples/s of ``w`` with its int8 base, from ``rate``, the samples/s with a
    16-bit base, and the sentences that say so; ``(rate, ())`` unless the base is int8
    (:func:`int8_base_time`).

    A micro-batch of ``b`` samples takes ``b / rate`` × the matmul factor of
    :func:`int8_base_time` plus :func:`int8_dequant_seconds` (only where the factor applies:
    a transformer width, and a memory bandwidth to take it at):
    ``rate' = b / (b / rate · factor + t_dequant)``. U-9's LLaMA-7B LoRA at micro-batch 8 on
    an RTX 3090: 8 / (8 / rate · 1.1544 + 0.0761).
    """
    t = int8_base_time(w)
    if t is None:
        return rate, ()
    if t.share <= 0 or rate <= 0 or not bandwidth_gbs:
        return rate / t.factor, t.notes
    batch = max(w.micro_batch_size, 1)
    step = batch / rate * t.factor
    dequant = int8_dequant_seconds(w, bandwidth_gbs)
    note = (
        f"the backward rebuilds the int8 base's 16-bit weights once per micro-batch "
        f"(bitsandbytes MatMul8bitLt.backward: {DEQUANT_BYTES_PER_PARAM} B moved per int8 "
        f"parameter, {dequant * 1e3:.0f} ms at the GPU's {bandwidth_gbs:.0f} GB/s): step "
        f"time x{(step + dequant) / step:.2f} more, weighing most at small micro-batches"
    )
    return batch / (step + dequant), (*t.notes, note)
