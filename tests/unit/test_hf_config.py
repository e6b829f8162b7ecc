"""parse_hf_config: architecture fields and parameter counts from real config.json files."""

from __future__ import annotations

import json

import pytest

from app.hf_config import HFConfigError, parse_hf_config
from tests.unit.helpers import LLAMA3_8B_SHAPE

#: meta-llama/Meta-Llama-3-8B config.json (the fields that matter), as published on the Hub
LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}
#: openai-community/gpt2 config.json
GPT2 = {
    "activation_function": "gelu_new",
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_inner": None,
    "n_layer": 12,
    "n_positions": 1024,
    "vocab_size": 50257,
}


def test_llama3_8b_fields_and_exact_parameter_count() -> None:
    parsed = parse_hf_config(json.dumps(LLAMA3_8B))
    # the shape and Meta's published count for Llama 3 8B: 8,030,261,248 (norms included,
    # no biases)
    assert parsed.fields == {
        "architecture": "transformer_decoder",
        **LLAMA3_8B_SHAPE,
        "max_positions": 8192,
    }


def test_gpt2_names_defaults_and_count_within_biases() -> None:
    parsed = parse_hf_config(json.dumps(GPT2))
    f = parsed.fields
    assert (f["layers"], f["hidden_size"], f["heads"], f["vocab_size"]) == (12, 768, 12, 50257)
    assert f["kv_heads"] == 12 and f["ffn_hidden_size"] == 3072 and f["max_positions"] == 1024
    # 124,439,808 with biases (transformers' GPT2Model); biases are 102,144 of them
    assert f["params"] == 124_439_808 - 102_144
    assert any("kv_heads = heads" in n for n in parsed.notes)


def test_encoder_model_types_are_encoders() -> None:
    bert = {
        "model_type": "bert",
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 30522,
        "max_position_embeddings": 512,
    }
    assert parse_hf_config(json.dumps(bert)).fields["architecture"] == "transformer_encoder"


def test_every_missing_field_is_named_at_once() -> None:
    with pytest.raises(HFConfigError) as info:
        parse_hf_config(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    assert info.value.missing == ("layers", "heads", "vocab_size")


@pytest.mark.parametrize("text", ["", "{not json", "[1, 2]", '"llama"'])
def test_not_a_config(text: str) -> None:
    with pytest.raises(HFConfigError):
        parse_hf_config(text)


def _llama(**over: object) -> str:
    return json.dumps({**LLAMA3_8B, **over})


LIMITS = {"layers": 10_000, "hidden_size": 10**6, "params": 10**14}


@pytest.mark.parametrize(
    ("over", "key", "reason"),
    [
        ({"hidden_size": -1}, "hidden_size", "positive integer, got -1"),
        ({"hidden_size": 0}, "hidden_size", "positive integer, got 0"),
        ({"hidden_size": 4096.5}, "hidden_size", "positive integer, got 4096.5"),
        ({"hidden_size": "4096"}, "hidden_size", 'positive integer, got "4096"'),
        ({"num_hidden_layers": True}, "num_hidden_layers", "positive integer, got true"),
        # 4097 / 32 heads is no whole head size
        ({"hidden_size": 4097}, "hidden_size", "not divisible by the 32 attention heads"),
        # 32 heads cannot be grouped over 5 key/value heads
        ({"num_key_value_heads": 5}, "num_key_value_heads", "not divisible by 5"),
        ({"num_hidden_layers": 1e12}, "num_hidden_layers", "above the most a workload takes"),
    ],
)
def test_a_present_but_unusable_size_is_named_with_its_reason(
    over: dict, key: str, reason: str
) -> None:
    with pytest.raises(HFConfigError) as info:
        parse_hf_config(_llama(**over), LIMITS)
    assert info.value.missing == ()  # present, so not "missing"
    [(bad_key, why)] = info.value.invalid
    assert bad_key == key and reason in why


def test_an_explicit_head_dim_allows_a_width_the_heads_do_not_divide() -> None:
    # google/gemma-7b: hidden 3072, 16 heads of head_dim 256 (16 × 256 = 4096 ≠ 3072)
    parsed = parse_hf_config(_llama(hidden_size=3072, num_attention_heads=16, head_dim=256))
    assert parsed.fields["hidden_size"] == 3072


def test_a_shape_with_more_parameters_than_a_workload_takes_is_refused() -> None:
    # 10,000 layers of width 10^6: 10^4 × (2·10^12 q/o + ... ) ≫ 10^14 parameters
    with pytest.raises(HFConfigError) as info:
        parse_hf_config(
            _llama(hidden_size=10**6, num_hidden_layers=10_000, intermediate_size=None), LIMITS
        )
    assert [k for k, _ in info.value.invalid] == ["params"]


#: mistralai/Mixtral-8x7B-v0.1 config.json (the fields that matter), as published on the Hub
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}


def test_mixtral_counts_every_expert_and_notes_the_active_ones() -> None:
    parsed = parse_hf_config(json.dumps(MIXTRAL_8X7B))
    # per layer: q,o 2·4096² + k,v 2·4096·1024 = 41,943,040; 8 experts × 3·4096·14336
    # = 1,409,286,144; router 4096·8 = 32,768; norms 8,192 -> 1,451,270,144 × 32 layers
    # + embedding and untied head 2·32000·4096 + final norm 4096 = 46,702,792,704
    # (Mistral AI: "46.7B total parameters")
    assert parsed.fields["params"] == 46_702_792_704
    # active: 2 experts instead of 8 -> 394,305,536 × 32 + 262,148,096 ("12.9B active")
    [moe] = [n for n in parsed.notes if n.startswith("mixture of experts")]
    assert "12,879,925,248 active" in moe and "not modelled" in moe


def test_a_moe_layout_that_is_not_counted_is_refused_by_its_key() -> None:
    with pytest.raises(HFConfigError) as info:
        parse_hf_config(json.dumps({**MIXTRAL_8X7B, "decoder_sparse_step": 2}))
    assert [k for k, _ in info.value.invalid] == ["decoder_sparse_step"]
    with pytest.raises(HFConfigError) as info:
        parse_hf_config(json.dumps({**MIXTRAL_8X7B, "num_experts_per_tok": 9}))
    assert [k for k, _ in info.value.invalid] == ["num_experts_per_tok"]
