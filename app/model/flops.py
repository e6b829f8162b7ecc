"""FLOPs counts: what a transformer multiplies per token, training FLOPs per sample, and the
peak they are measured against; pure functions of the workload's fields.

``matmul_params`` is the ``N`` of the ``6N`` training FLOPs per token (PaLM appendix B);
``matmul_width`` the matmul width those parameters make per layer (Kaplan et al. 2020,
arXiv:2001.08361, §2.1: ``N ≈ 12·L·h²``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from app.model.memory import transformer_tokens
from app.model.memory_states import lora_trainable_params
from app.model.types import (
    Architecture,
    CheckpointGranularity,
    GpuSpec,
    Method,
    Precision,
    Workload,
)


def peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Dense peak TFLOPS the training math runs at for ``precision``.

    Mixed precision uses the FP32-accumulate tensor rate (half rate on GeForce);
    ``tf32`` the TF32 tensor rate (fp32 where the GPU has none); ``fp8`` the FP8
    FP32-accumulate rate (bf16 where the GPU has no FP8). Falls back to FP32 vector TFLOPS
    on GPUs without tensor cores.
    """
    fp32 = gpu.fp32_tflops or 1.0
    if precision == Precision.FP32:
        return fp32
    if precision == Precision.TF32:
        return gpu.tf32_tflops or fp32
    half = gpu.fp16_fp32acc_tflops or gpu.bf16_tflops or gpu.fp16_tflops
    if precision == Precision.FP16_AMP:
        return half or fp32
    bf16 = gpu.bf16_tflops or (half if gpu.architecture not in ("Volta", "Turing") else None)
    if precision in (Precision.BF16_AMP, Precision.BF16):
        return bf16 or half or fp32
    return gpu.fp8_fp32acc_tflops or gpu.fp8_tflops or bf16 or half or fp32


def matmul_params(w: Workload) -> int:
    """Parameters a transformer multiplies every token by (``N`` of the FLOPs count).

    ``params`` less ``lookup_params`` when the workload gives it: the tables a token only
    looks up (an untied embedding, an adaptive softmax's tail clusters). Without it, an
    encoder (``transformer_encoder``) loses its token-embedding table (``vocab_size ×
    hidden_size``): the embedding is a lookup (a gather, no matmul FLOPs), and an encoder
    fine-tuned for a task (BERT on SQuAD) has no vocabulary projection either; Kaplan et al.
    2020 (arXiv:2001.08361, §2.1) count non-embedding parameters for the same reason.
    BERT-base: 109,483,778 − 30,522 × 768 = 86,042,882. A decoder keeps every parameter: its
    output head multiplies each token by a vocabulary × hidden matrix (tied to the embedding
    or not), which the other fields cannot tell from the lookup table of an untied model.
    Transformer-XL base (DLE, div_val 1, tied): 191,950,298 − (267,735 − 19,997) × 512 =
    65,108,442, the head cluster's 19,997 words staying in (every token's softmax head).
    Unchanged when the table would not fit inside ``params``.

    A diffusion transformer multiplies each token by one block's attention and MLP weights
    per layer (:func:`dit_token_params`), not by the rest of ``params``: its adaLN
    modulation runs once per sample on the conditioning vector, and an MMDiT block's second
    stream (SD3) multiplies only the other modality's tokens.
    """
    n = w.params or 0
    if w.architecture == Architecture.DIFFUSION_TRANSFORMER and w.lookup_params is None:
        per_token = dit_token_params(w)
        if per_token is not None and per_token < n:
            return per_token
    if w.lookup_params is not None:
        return n - w.lookup_params if w.lookup_params < n else n
    if w.architecture == Architecture.TRANSFORMER_ENCODER and w.vocab_size and w.hidden_size:
        table = w.vocab_size * w.hidden_size
        if table < n:
            return n - table
    return n


def _block_dims(w: Workload) -> tuple[int, int, int, int] | None:
    """``(layers, hidden, kv_dim, ffn)`` of a transformer block: ``kv_dim = hidden ×
    kv_heads / heads`` (grouped-query attention), ``ffn`` 4 × hidden when not given; ``None``
    without ``layers`` and ``hidden_size``."""
    h, layers = w.hidden_size, w.layers
    if not h or not layers:
        return None
    heads = w.heads or 1
    return layers, h, h * (w.kv_heads or heads) // heads, w.ffn_hidden_size or 4 * h


def dit_token_params(w: Workload) -> int | None:
    """Weights every token of a diffusion transformer is multiplied by, from its shape:
    per layer q and o ``2·h²``, k and v ``2·h·kv_heads·(h / heads)`` and a two-matrix MLP
    ``2·h·ffn`` (``ffn`` 4·h unless given): ``12·L·h²`` at the usual shape. ``None``
    without ``layers`` and ``hidden_size``.

    DiT-XL/2 (Peebles & Xie arXiv:2212.09748, Table 4: L 28, h 1,152, 256 tokens at 256 px,
    118.6 "Gflops" counted as multiply-accumulates, fvcore's convention): 28 × 12 × 1,152²
    = 445,906,944 per token, × 256 = 114.2 G plus attention 2·L·s²·h = 4.2 G and the
    per-sample adaLN 28 × 6·h² = 0.2 G make its 118.6 G. SD3's MMDiT (Esser et al.
    arXiv:2403.03206 §2.2): each token passes its own modality's stream, the same 12·h² per
    layer; Flux's 19 double + 38 single blocks (black-forest-labs/flux ``model.py``,
    h 3,072): 57 layers of 12·h², 6.45 G per token of its 11.9 B parameters.
    """
    dims = _block_dims(w)
    if dims is None:
        return None
    layers, h, kv_dim, ffn = dims
    return layers * (2 * h * h + 2 * h * kv_dim + 2 * h * ffn)


def matmul_width(w: Workload) -> float | None:
    """The width of a transformer's matmuls as its multiplied parameters make them:
    ``√(N / 12L)`` (N = :func:`matmul_params`; a layer of width h with a 4h MLP holds
    ``12·h²``, Kaplan et al. 2020, §2.1), ``hidden_size`` without ``layers``; ``None`` for
    other families or without either. It follows the parameters, not ``hidden_size``: a
    width raised without the parameters to fill it makes no wider matmul. Seeded presets:
    BERT-base 773 (hidden 768), Transformer-XL base 582 (512) and large 1,115 (1,024),
    MPT-7B 4,177 (4,096), Llama 3 8B 4,573 (4,096: grouped KV heads and a 3.5h gated MLP).
    """
    if not w.architecture.is_transformer:
        return None
    n = matmul_params(w)
    if w.layers and n > 0:
        return math.sqrt(n / (12 * w.layers))
    return float(w.hidden_size) if w.hidden_size else None


def flops_peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Peak the FLOPs model measures utilisation against.

    As :func:`peak_tflops`, except fp32 counts at the TF32 rate where the GPU has one:
    cuDNN runs fp32 convolutions as TF32 by default on Ampere and newer, and published
    "fp32" training often is TF32 (benchmarks.md §1).
    """
    if precision == Precision.FP32:
        return peak_tflops(gpu, Precision.TF32)
    return peak_tflops(gpu, precision)


def selective_recompute_params(w: Workload) -> int | None:
    """Weights op-level selective checkpointing multiplies each token by a second time:
    torchtitan's policy (``selective_ac_option = "op"``, pytorch/torchtitan
    ``torchtitan/distributed/activation_checkpoint.py``, earlier ``parallelize_llama.py``:
    "save output of all ops in save list, except every second mm", its mm count starting
    afresh in each block) recomputes the even-numbered of a Llama block's seven matmuls in
    order (q, k, v, o, w1, w3, w2): k ``h·kv_dim``, o ``h²`` and w3 ``h·ffn`` per layer; the
    attention kernel's output is saved, so no attention FLOPs are recomputed (the saved
    copies are :func:`app.model.memory_activations.selective_saved_copies`). Llama 2 70B
    (L 80, h 8,192, kv_dim 1,024, ffn 28,672): 80 × 310,378,496 = 24.8 G, 36 % of its
    68.98 G. ``None`` without ``layers`` and ``hidden_size``."""
    dims = _block_dims(w)
    if dims is None:
        return None
    layers, h, kv_dim, ffn = dims
    return layers * (h * kv_dim + h * h + h * ffn)


@dataclass(frozen=True, slots=True)
class RunRecompute:
    """The activation checkpointing a measured run used, as its source states it: a rate
    measured with recompute is counted at the FLOPs its GPU executed
    (:func:`training_flops_per_sample` of :meth:`of`), whatever the preset's own set-up."""

    on: bool
    granularity: CheckpointGranularity = CheckpointGranularity.FULL

    def of(self, w: Workload) -> Workload:
        """``w`` with this checkpointing."""
        return replace(w, gradient_checkpointing=self.on, checkpoint_granularity=self.granularity)


def transformer_flops(w: Workload) -> tuple[float, float]:
    """``(matmul, attention)`` training FLOPs per sample of a transformer with ``params``
    (:func:`training_flops_per_sample`): ``(k·N + 6·A)·s`` (A = :func:`adapter_params`;
    + ``2·(N + A)·s`` with full checkpointing,
    + ``2·R·s`` with selective, R = :func:`selective_recompute_params`) and ``12·L·h·s²``
    (+ ``4·L·h·s²`` with full checkpointing)."""
    s = transformer_tokens(w)
    attention = (w.layers or 0) * (w.hidden_size or 0) * s
    k = 4.0 if w.method in (Method.LORA, Method.QLORA) else 6.0
    n, adapters = matmul_params(w), adapter_params(w)
    matmul, attn = k * n + 6.0 * adapters, 12.0 * attention
    if w.gradient_checkpointing:
        selective = (
            selective_recompute_params(w)
            if w.checkpoint_granularity == CheckpointGranularity.SELECTIVE
            else None
        )
        if selective is not None:
            matmul += 2 * min(selective, n)
        else:
            matmul += 2 * (n + adapters)
            attn += 4 * attention
    return matmul * s, attn * s


#: Rank below which a LoRA adapter's matmuls are bandwidth-bound on the GPU of the measured
#: LoRA-vs-full pair (:data:`app.model.throughput.flops_model.ADAPTER_RATE`, an A100 80GB):
#: per token an adapted ``d_in → d_out`` linear's adapter does ``6·r·(d_in + d_out)`` FLOPs and
#: moves about ``6·(d_in + d_out)`` bytes of 16-bit activations (``x`` in, ``B·A·x`` out,
#: forward and the two backward products), an intensity of ``r`` FLOPs per byte, against the
#: GPU's ridge of 312 TFLOP/s dense bf16 over 2,039 GB/s = 153 FLOPs per byte
#: (seed_data/gpus.csv, A100 SXM4 80GB).
ADAPTER_RIDGE_RANK = 153


def adapter_params(w: Workload) -> float:
    """LoRA/QLoRA adapter parameters whose FLOPs add time beyond the measured LoRA rate (0 for
    other methods): ``A·max(0, r − R)/r`` with ``A = r × Σ(d_in + d_out)`` over the adapted
    linears, the modules and rank the memory model counts
    (:func:`app.model.memory_states.lora_trainable_params`: a decoder's seven linears, rank 8
    when none is given), and ``R`` = :data:`ADAPTER_RIDGE_RANK`. An adapter costs ``6·r·(d_in
    + d_out)`` FLOPs per token in training (LoRA, arXiv:2106.09685: the forward ``x·A·B`` is
    ``2·r·(d_in + d_out)``; the backward, input and adapter-weight gradients, twice that), but
    below the ridge rank its time is the activation traffic, the same at every rank, which
    the LoRA-vs-full pair (rank 64) already holds; above it each further rank costs its
    FLOPs at the matmul rate. Llama 3.1 8B: ``Σ(d_in + d_out)`` = 32 × 81,920 = 2,621,440;
    rank 8 or 64: 0; rank 1,024: 871 × 2,621,440 = 2,283,274,240 (``6·`` that = 13.7 GFLOPs
    per token, 43 % of ``4N``)."""
    if w.method not in (Method.LORA, Method.QLORA):
        return 0.0
    rank = w.lora_rank or 8
    return lora_trainable_params(w) * max(0, rank - ADAPTER_RIDGE_RANK) / rank


def training_flops_per_sample(w: Workload) -> float | None:
    """Training FLOPs per sample (forward + backward), ``None`` when unknown.

    Transformers: per token ``k·N + 12·L·h·s`` (PaLM appendix B: 6N plus attention), with
    N = :func:`matmul_params`, k = 6 for full training, 4 for LoRA/QLoRA (no weight
    gradients of the frozen base, §4.1) plus ``6·A`` for the adapters above the ridge rank
    (:func:`adapter_params`), plus one extra forward (2N + 4·L·h·s, + 2A) with full
    activation checkpointing, its recomputed matmuls only with selective
    (:func:`selective_recompute_params`). Other families: ``3 × forward GFLOPs`` (+1 forward with
    checkpointing). Without a published forward cost a non-transformer has no FLOPs estimate
    (``6 × params`` would undercount convolutions, which reuse each weight at every pixel,
    by two orders of magnitude).
    """
    if w.architecture.is_transformer and w.params:
        return sum(transformer_flops(w))
    if w.forward_gflops_per_sample:
        passes = 4.0 if w.gradient_checkpointing else 3.0
        return passes * w.forward_gflops_per_sample * 1e9
    return None
