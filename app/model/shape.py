"""Consistency of a workload's shape fields: pure, data in, data out.

``shape_errors(w)`` lists what makes a transformer shape impossible (the attention and LoRA
arithmetic cannot be carried out); ``shape_params_range(w)`` is the parameter count its shape
implies; ``shape_warnings(w)`` warns when ``params`` is far outside that range (the throughput
and memory figures follow ``params``, so a count that does not belong to the shape makes them
describe another model).

Parameter range of a transformer (weights only, the accounting of :mod:`app.hf_config`, after
Megatron-LM's and Kaplan et al. 2020's counts): per layer the ``q`` and ``o`` projections
``2·h²``, ``k`` and ``v`` ``2·h·kv_heads·(h / heads)``, an MLP of 2 (plain) to 3 (gated:
SwiGLU/GeGLU) ``h × ffn`` matrices; plus the token embedding ``V·h``, once (tied) to twice
(an untied output head).
"""

from __future__ import annotations

from dataclasses import replace

from app.model.flops import matmul_params
from app.model.types import Architecture, Method, RunWarning, WarningCode, Workload

#: The transformer shape fields :func:`shape_params` counts parameters from: a change to any
#: of them moves a preset's parameter count (:func:`app.model.overrides.follow_shape`).
SHAPE_PARAM_FIELDS = ("layers", "hidden_size", "heads", "kv_heads", "ffn_hidden_size", "vocab_size")
#: ``params`` this many times outside the range the shape implies is warned about: wider
#: than the spread of what the range leaves out (biases, learned positions, type embeddings:
#: under 15 % for the seeded BERT/GPT-2 presets), narrow enough to catch a count of another
#: model (10³ on an 8B shape, an 8B count on a 125M shape)
PARAMS_TOLERANCE = 2.0
#: A diffusion transformer's layer holds at most 3 × its plain block (12·h²): SD3's MMDiT
#: block has two streams (image, text), each with attention and MLP (12·h²) and an adaLN
#: modulation ``Linear(h, 6·h)`` (6·h²), 36·h² a layer (Esser et al. arXiv:2403.03206 Fig. 2;
#: SD3-medium, 24 layers at h 1,536: 2.04 B against its published 2 B); DiT's single
#: stream holds 18·h² (Peebles & Xie arXiv:2212.09748 §3.2).
DIT_MOST_BLOCK_FACTOR = 3.0


def shape_errors(w: Workload) -> list[tuple[str, str]]:
    """``(field, reason)`` for every impossible combination of shape fields of ``w``.

    Transformers: ``hidden_size`` divisible by ``heads`` (whole head size), ``kv_heads`` at
    most ``heads`` and dividing it (grouped-query attention shares each key/value head among
    a whole number of query heads); LoRA/QLoRA: ``lora_rank`` at most ``hidden_size`` (a
    rank-r update of an h-wide matrix has r ≤ h); ``lookup_params`` fewer than ``params``
    (they are a part of it). Empty when the shape is possible.
    """
    out: list[tuple[str, str]] = []
    h, heads, kv = w.hidden_size, w.heads, w.kv_heads
    if w.architecture.is_transformer:
        if h and heads and h % heads:
            out.append(
                (
                    "heads",
                    f"hidden_size {h} is not divisible by {heads} heads (no whole head size)",
                )
            )
        if heads and kv and kv > heads:
            out.append(("kv_heads", f"{kv} key/value heads are more than the {heads} heads"))
        elif heads and kv and heads % kv:
            out.append(("kv_heads", f"the {heads} heads are not divisible by {kv} key/value heads"))
    if w.lookup_params is not None and w.params and w.lookup_params >= w.params:
        out.append(
            (
                "lookup_params",
                f"{w.lookup_params:,} lookup-only parameters are not fewer than the "
                f"{w.params:,} parameters of the model",
            )
        )
    elif (
        w.architecture == Architecture.TRANSFORMER_ENCODER
        and w.lookup_params is None
        and w.params
        and w.vocab_size
        and h
        and w.vocab_size * h >= w.params
    ):
        out.append(
            (
                "params",
                f"the {w.vocab_size:,} × {h} token-embedding table alone "
                f"({w.vocab_size * h:,}) is not fewer than the {w.params:,} parameters",
            )
        )
    if w.method in (Method.LORA, Method.QLORA) and w.lora_rank and h and w.lora_rank > h:
        out.append(("lora_rank", f"rank {w.lora_rank} is above hidden_size {h}"))
    return out


def shape_params(w: Workload, *, gated: bool, untied: bool) -> float | None:
    """Parameters the transformer shape of ``w`` implies (module docstring): ``layers`` blocks
    with a plain (2 matrices) or ``gated`` (3) MLP, plus the token embedding once, or twice
    when ``untied`` (an output head of its own). ``ffn_hidden_size`` defaults to ``4·h``,
    ``kv_heads`` to ``heads``, ``vocab_size`` to 0. ``None`` when ``w`` is not a transformer
    or lacks ``layers``, ``hidden_size`` or ``heads``. E.g. Llama 3 8B (32 × 4096, 32/8
    heads, MLP 14336, vocabulary 128256), gated and untied: 8,029,995,008 (its published
    8,030,261,248 less the 266,240 norm weights)."""
    if not w.architecture.is_transformer or not (w.layers and w.hidden_size and w.heads):
        return None
    h = float(w.hidden_size)
    ffn = float(w.ffn_hidden_size or 4 * w.hidden_size)
    kv = float(w.kv_heads or w.heads)
    attention = 2 * h * h + 2 * h * kv * (h / w.heads)
    embed = float(w.vocab_size or 0) * h
    return w.layers * (attention + (3 if gated else 2) * h * ffn) + (2 if untied else 1) * embed


def _blocks(w: Workload) -> tuple[float, float] | None:
    """(fewest, most) parameters of ``w``'s ``layers`` transformer blocks, without the
    embedding (plain vs gated MLP; see :func:`shape_params_range`)."""
    blocks = replace(w, vocab_size=0)
    plain = shape_params(blocks, gated=False, untied=False)
    gated = shape_params(blocks, gated=True, untied=False)
    return None if plain is None or gated is None else (plain, gated)


def shape_blocks_params(w: Workload) -> float | None:
    """Fewest parameters the ``layers`` transformer blocks of ``w`` hold (the lower bound of
    :func:`shape_params_range` without the embedding): every token is multiplied by them.
    ``None`` where :func:`shape_params_range` is."""
    blocks = _blocks(w)
    return None if blocks is None else blocks[0]


def too_few_multiplied(w: Workload) -> str | None:
    """Why ``w``'s multiplied parameters (:func:`app.model.flops.matmul_params`) cannot
    be its layers': fewer than ``1 / PARAMS_TOLERANCE`` of :func:`shape_blocks_params`.
    ``None`` when they can (or the shape is not known)."""
    blocks = shape_blocks_params(w)
    if blocks is None or not w.params:
        return None
    n = matmul_params(w)
    if n * PARAMS_TOLERANCE >= blocks:
        return None
    return (
        f"{n:,} multiplied parameters are fewer than 1/{PARAMS_TOLERANCE:g} of the "
        f"{blocks:,.0f} that {w.layers} layers of width {w.hidden_size} hold"
    )


def shape_params_range(w: Workload) -> tuple[float, float] | None:
    """(fewest, most) parameters the transformer shape of ``w`` implies (module docstring);
    ``None`` when ``w`` is not a transformer or lacks ``layers``, ``hidden_size`` or
    ``heads``. ``ffn_hidden_size`` defaults to ``4·h``, ``kv_heads`` to ``heads``,
    ``vocab_size`` to 0 (no embedding counted). A diffusion transformer: from its plain
    blocks (12·h² a layer, no adaLN) to ``DIT_MOST_BLOCK_FACTOR`` times them."""
    blocks = _blocks(w)
    if blocks is None:
        return None
    if w.architecture == Architecture.DIFFUSION_TRANSFORMER:
        return blocks[0], DIT_MOST_BLOCK_FACTOR * blocks[0]
    embed = float(w.vocab_size or 0) * float(w.hidden_size or 0)
    return blocks[0] + embed, blocks[1] + 2 * embed


def shape_warnings(w: Workload) -> list[RunWarning]:
    """A ``params_off_shape`` warning when ``params`` is more than :data:`PARAMS_TOLERANCE`
    times outside :func:`shape_params_range` (values: ``params``, ``shape_params_low``,
    ``shape_params_high``, counts)."""
    span = shape_params_range(w)
    if span is None or not w.params:
        return []
    low, high = span
    ffn = w.ffn_hidden_size or 4 * (w.hidden_size or 0)
    if low / PARAMS_TOLERANCE <= w.params <= high * PARAMS_TOLERANCE:
        return []
    return [
        RunWarning(
            code=WarningCode.PARAMS_OFF_SHAPE,
            message=(
                f"params {w.params:,} is far from the {low:,.0f}–{high:,.0f} parameters that "
                f"{w.layers} layers of width {w.hidden_size} (MLP {ffn}, "
                f"vocabulary {w.vocab_size or 0}) imply; throughput and memory follow params, "
                "so check it (a mixture of experts counts every expert)"
            ),
            values={
                "params": w.params,
                "shape_params_low": round(low),
                "shape_params_high": round(high),
            },
        )
    ]
