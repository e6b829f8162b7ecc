"""A Hugging Face ``config.json`` as ranking-form fields: pure, data in, data out.

``parse_hf_config(text)`` reads the architecture fields a transformer ``config.json`` carries
(the key names of the ``transformers`` configuration classes: ``num_hidden_layers``,
``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``,
``vocab_size``, ``max_position_embeddings``, and the GPT-2 style ``n_layer``/``n_embd``/
``n_head``/``n_inner``/``n_positions``) and returns them under the flat parameter names of
:mod:`app.interface.query` (``layers``, ``hidden_size``, ``heads``, ``kv_heads``,
``ffn_hidden_size``, ``vocab_size``), plus ``max_positions`` (the longest sequence the model
takes, tokens), ``architecture`` and an approximate ``params`` count.

Parameter count (weights only, biases left out, so within about 0.2 % for models with
biases): per layer ``q`` and ``o`` projections ``2·h²``, ``k`` and ``v`` ``2·h·kv_heads·d``
(``d`` = head size), the MLP ``3·h·ffn`` when gated (SwiGLU/GeGLU: LLaMA, Mistral, Qwen,
Gemma), else ``2·h·ffn``, two norms ``2·h``; plus the token embedding ``V·h``, an untied
output head ``V·h`` (``tie_word_embeddings`` false), learned positions ``P·h`` for GPT-2/BERT
style models and a final norm ``h``. This is the standard weight accounting of a transformer
block (as in Megatron-LM's and Kaplan et al. 2020's parameter counts).

Mixture of experts (``num_local_experts``: Mixtral; ``num_experts``: OLMoE, Qwen-MoE): every
layer holds ``E`` expert MLPs of ``moe_intermediate_size`` (else ``intermediate_size``) each,
plus a router ``h·E`` and, where given, a shared expert of ``shared_expert_intermediate_size``
(with its ``h`` gate); ``params`` counts all of them, since memory holds every expert
(Mixtral 8x7B: 46.7 B, the figure Mistral AI publishes). Each token runs through only
``num_experts_per_tok`` experts, which the throughput model does not represent; the notes say
so and give the active count. MoE layouts this reader cannot count layer by layer
(``n_routed_experts`` as in DeepSeek, ``decoder_sparse_step`` ≠ 1, ``mlp_only_layers``,
``first_k_dense_replace``) are refused naming the key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: config key aliases, first found wins (transformers' config classes)
KEYS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_kv_heads"),
    "ffn_hidden_size": ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "ffn_hidden_size"),
    "vocab_size": ("vocab_size",),
    "max_positions": ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len"),
}
ENCODERS = {"bert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "electra", "distilbert"}
GATED_MLP = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "olmo"}
LEARNED_POSITIONS = {"gpt2", "gpt_neo", "opt", "bert", "roberta", "xlm-roberta", "distilbert"}
#: expert-count keys of the MoE configs counted (module docstring), first found wins
EXPERT_KEYS = ("num_local_experts", "num_experts")
#: MoE layouts whose per-layer mix of dense and expert MLPs is not counted: refused
UNCOUNTED_MOE_KEYS = ("n_routed_experts", "first_k_dense_replace", "moe_layer_freq")
#: where each field is, for the messages
REQUIRED = ("layers", "hidden_size", "heads", "vocab_size")


class HFConfigError(ValueError):
    """The text is not a usable ``config.json``: ``missing`` names every absent required field
    (flat names), ``invalid`` every present but unusable one as (config key, reason) pairs."""

    def __init__(
        self,
        reason: str,
        missing: tuple[str, ...] = (),
        invalid: tuple[tuple[str, str], ...] = (),
    ):
        super().__init__(reason)
        self.reason = reason
        self.missing = missing
        self.invalid = invalid


@dataclass(frozen=True, slots=True)
class ParsedConfig:
    """Form fields (flat parameter names) read from a config, and what was assumed."""

    fields: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _read(
    cfg: dict[str, Any], name: str, limit: int | None, invalid: list[tuple[str, str]]
) -> tuple[str | None, int | None]:
    """The first config key of ``name`` that is present (not null) and its value as a positive
    integer; a value that is not one, or is above ``limit``, is added to ``invalid``."""
    for key in KEYS[name]:
        value = cfg.get(key)
        if value is None:
            continue
        whole = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and float(value).is_integer()
        )
        if not whole or value <= 0:
            invalid.append((key, f"must be a positive integer, got {json.dumps(value)}"))
            return key, None
        if limit is not None and value > limit:
            invalid.append((key, f"{value:g} is above the most a workload takes ({limit:g})"))
            return key, None
        return key, int(value)
    return None, None


def _moe_shape(
    cfg: dict[str, Any], ffn: int | None, invalid: list[tuple[str, str]]
) -> tuple[int, int, int, int]:
    """``(experts, experts per token, expert MLP width, shared-expert width)`` of a MoE
    config, all 0 for a dense one; a layout not counted or a bad value goes to ``invalid``."""
    for uncounted in UNCOUNTED_MOE_KEYS:
        if cfg.get(uncounted) is not None:
            invalid.append((uncounted, "this mixture-of-experts layout is not modelled"))
            return 0, 0, 0, 0
    key = next((k for k in EXPERT_KEYS if cfg.get(k) is not None), None)
    if key is None:
        return 0, 0, 0, 0
    experts = cfg[key]
    if not isinstance(experts, int) or isinstance(experts, bool) or experts < 1:
        invalid.append((key, f"must be a positive integer, got {json.dumps(experts)}"))
        return 0, 0, 0, 0
    if experts == 1:
        return 0, 0, 0, 0
    if cfg.get("decoder_sparse_step", 1) != 1 or cfg.get("mlp_only_layers"):
        bad = "decoder_sparse_step" if cfg.get("decoder_sparse_step", 1) != 1 else "mlp_only_layers"
        invalid.append((bad, "dense layers among the expert layers are not modelled"))
        return 0, 0, 0, 0
    active = cfg.get("num_experts_per_tok")
    if not isinstance(active, int) or isinstance(active, bool) or not 1 <= active <= experts:
        invalid.append(("num_experts_per_tok", f"must be an integer from 1 to {key} ({experts})"))
        return 0, 0, 0, 0
    width = cfg.get("moe_intermediate_size", ffn)
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        invalid.append(
            ("moe_intermediate_size", "a mixture of experts needs the experts' MLP width")
        )
        return 0, 0, 0, 0
    shared = cfg.get("shared_expert_intermediate_size") or 0
    if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
        invalid.append(("shared_expert_intermediate_size", "must be a non-negative integer"))
        return 0, 0, 0, 0
    return experts, active, width, shared


def parse_hf_config(text: str, limits: Mapping[str, int] | None = None) -> ParsedConfig:
    """Read a Hugging Face ``config.json`` (its text) into ranking-form fields.

    Args:
        text: the ``config.json`` text.
        limits: the largest value each flat field may take (``layers``, ``hidden_size``,
            ``params`` …: the API passes the bounds of its workload schema, so a config is held
            to the same bounds as a typed-in workload); a field not named is unbounded.

    Returns:
        ``ParsedConfig``: ``fields`` has ``architecture``, ``layers``, ``hidden_size``,
        ``heads``, ``kv_heads``, ``ffn_hidden_size``, ``vocab_size``, ``max_positions``
        (tokens) and ``params`` (count, approximate; see the module docstring); ``notes``
        says what was assumed (e.g. ``kv_heads`` = ``heads`` when absent).

    Raises:
        HFConfigError: not JSON, not an object, without layers / hidden size / heads /
            vocabulary (all missing ones named at once), or with a size that is not a positive
            integer, is above its limit, or does not fit the attention shape (hidden size not
            divisible by the heads without an explicit ``head_dim``, heads not divisible by
            the key/value heads), or a parameter count above ``limits["params"]`` (every
            problem named at once, under the config's own key).
    """
    try:
        cfg = json.loads(text)
    except ValueError as exc:
        raise HFConfigError(f"not JSON: {exc}") from None
    if not isinstance(cfg, dict):
        raise HFConfigError("not a JSON object")
    notes: list[str] = []
    if isinstance(cfg.get("text_config"), dict):  # multimodal: the language model's config
        cfg = {**cfg, **cfg["text_config"]}
        notes.append("read the language model's text_config")
    model_type = str(cfg.get("model_type") or "").lower()
    limits = limits or {}
    invalid: list[tuple[str, str]] = []
    keys: dict[str, str | None] = {}
    out: dict[str, Any] = {}
    for name in KEYS:
        keys[name], out[name] = _read(cfg, name, limits.get(name), invalid)
    missing = tuple(k for k in REQUIRED if keys[k] is None)
    h, layers, heads, vocab = out["hidden_size"], out["layers"], out["heads"], out["vocab_size"]
    explicit_head_dim = isinstance(cfg.get("head_dim"), int) and cfg["head_dim"] > 0
    if h and heads and not explicit_head_dim and h % heads:
        invalid.append(
            (
                str(keys["hidden_size"]),
                f"{h} is not divisible by the {heads} attention heads "
                f"({keys['heads']}) and no head_dim is given",
            )
        )
    if heads and out["kv_heads"] and heads % out["kv_heads"]:
        invalid.append(
            (
                str(keys["kv_heads"]),
                f"the {heads} attention heads are not divisible by {out['kv_heads']} "
                "key/value heads",
            )
        )
    experts, active, expert_ffn, shared_ffn = _moe_shape(cfg, out["ffn_hidden_size"], invalid)
    if missing or invalid:
        reasons = (["lacks " + ", ".join(missing)] if missing else []) + [
            f"{key}: {why}" for key, why in invalid
        ]
        raise HFConfigError("config.json " + "; ".join(reasons), missing, tuple(invalid))
    if cfg.get("multi_query") is True and out["kv_heads"] is None:
        out["kv_heads"] = 1
    if out["kv_heads"] is None:
        out["kv_heads"] = heads
        notes.append("no num_key_value_heads: full multi-head attention (kv_heads = heads)")
    if out["ffn_hidden_size"] is None:
        out["ffn_hidden_size"] = 4 * h
        notes.append("no intermediate size: 4 × hidden size (GPT-2 convention)")
    if model_type in ENCODERS:
        out["architecture"] = "transformer_encoder"
    elif model_type == "vit":
        out["architecture"] = "vit"
    else:
        out["architecture"] = "transformer_decoder"
    head_dim = cfg["head_dim"] if explicit_head_dim else h // heads
    gated = model_type in GATED_MLP or str(cfg.get("hidden_act", "")).lower() in (
        "silu",
        "swiglu",
    )
    mlp = 3 if gated else 2  # weight matrices per MLP
    attention = 2 * h * heads * head_dim + 2 * h * out["kv_heads"] * head_dim  # q, o; k, v
    if experts:
        ffn_layer = experts * mlp * h * expert_ffn + h * experts  # experts + router
        ffn_active = active * mlp * h * expert_ffn + h * experts
        if shared_ffn:
            ffn_layer += mlp * h * shared_ffn + h  # shared expert + its gate
            ffn_active += mlp * h * shared_ffn + h
    else:
        ffn_layer = ffn_active = mlp * h * out["ffn_hidden_size"]
    per_layer = attention + ffn_layer + 2 * h  # two norms
    outside = vocab * h + h  # embedding, final norm
    if cfg.get("tie_word_embeddings", True) is False:
        outside += vocab * h
    if model_type in LEARNED_POSITIONS and out["max_positions"]:
        outside += out["max_positions"] * h
    params = layers * per_layer + outside
    if "params" in limits and params > limits["params"]:
        raise HFConfigError(
            f"config.json: its shape gives {params:.3g} parameters, above the most a workload "
            f"takes ({limits['params']:.3g})",
            invalid=(("params", f"{params:.3g} parameters from the shape, above the bound"),),
        )
    out["params"] = params
    notes.append(f"params ≈ {params:,} from the shape ({'gated' if gated else 'plain'} MLP)")
    if experts:
        active_params = layers * (attention + ffn_active + 2 * h) + outside
        notes.append(
            f"mixture of experts: params counts all {experts} experts per layer (memory holds "
            f"every expert); each token runs through {active} of them (≈ {active_params:,} "
            "active parameters). Throughput is not modelled per active expert: the estimate "
            "treats the model as dense with all its parameters, so its tokens/s is low"
        )
    return ParsedConfig(fields={k: v for k, v in out.items() if v is not None}, notes=notes)
