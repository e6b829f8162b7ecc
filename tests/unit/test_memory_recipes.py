"""Memory model against how real recipes load and run (issue 24): an int8 (LLM.int8) frozen
base, apex amp O2's all-fp16 encoder, the words people write for the base dtype. Every
expected figure is worked by hand in the comments."""

from __future__ import annotations

import dataclasses

import pytest

from app.model.enums import BaseDtype
from app.model.memory import activation_bytes_per_sample, frozen_base_bytes
from app.model.stacks import Stack
from app.model.types import Architecture, Attention, Method, Precision, Workload
from tests.unit.helpers import BERT_SQUAD_SHAPE, LLAMA3_8B

#: BERT-base uncased fine-tuned on SQuAD at 384 tokens (seed_data/workloads.csv
#: bert-base-squad): 12 layers, hidden 768, 12 heads, FFN 3072, fp16 autocast, eager attention.
BERT_BASE = Workload(
    architecture=Architecture.TRANSFORMER_ENCODER,
    **BERT_SQUAD_SHAPE,
    ffn_hidden_size=3072,
    vocab_size=30522,
    precision=Precision.FP16_AMP,
    attention=Attention.EAGER,
    samples_per_epoch=87599,
)


def test_an_int8_base_is_one_byte_a_parameter_plus_its_row_scales() -> None:
    w = Workload(**LLAMA3_8B, method=Method.LORA, base_dtype=BaseDtype.INT8)
    # embeddings + untied LM head stay 16-bit: 2 x 128,256 x 4,096 = 1,050,673,152 params
    emb = 2 * 128256 * 4096
    quantised = 8_030_261_248 - emb  # 6,979,588,096
    # int8 weight (1 B) + one fp32 scale per row of 4,096 inputs (4 / 4,096 B a parameter):
    # 6,979,588,096 + 6,816,004 + 2 x 1,050,673,152 = 9,087,750,404 B (8.46 GiB)
    expected = quantised * (1 + 4 / 4096) + emb * 2
    assert frozen_base_bytes(w) == pytest.approx(expected)
    assert frozen_base_bytes(w) == pytest.approx(9_087_750_404, rel=1e-9)
    # below the 16-bit base (2 B a parameter), above the NF4 one
    bf16 = dataclasses.replace(w, base_dtype=BaseDtype.BF16)
    nf4 = dataclasses.replace(w, base_dtype=BaseDtype.NF4)
    assert frozen_base_bytes(nf4) < frozen_base_bytes(w) < frozen_base_bytes(bf16)
    assert frozen_base_bytes(bf16) == pytest.approx(2 * 8_030_261_248)


@pytest.mark.parametrize(
    "written",
    ["int8", "INT8", "8bit", "8-bit", "8 bit", "load_in_8bit", "LLM.int8", "bnb_int8"],
)
def test_the_int8_base_is_read_as_people_write_it(written: str) -> None:
    assert BaseDtype(written) == BaseDtype.INT8


def test_other_base_dtype_words_and_junk() -> None:
    assert BaseDtype("load_in_4bit") == BaseDtype.NF4
    assert BaseDtype("bfloat16") == BaseDtype.BF16
    assert BaseDtype("float16") == BaseDtype.FP16
    with pytest.raises(ValueError):
        BaseDtype("int7")


def test_apex_o2_keeps_the_encoder_stream_16_bit() -> None:
    # NVIDIA DLE's run_squad.py: apex amp O2 casts the model to fp16, so Korthikanti's count
    # holds as written: per layer s*h*(34 + 5*a*s/h) bytes per sample =
    # 17 copies x 2 B x 384 x 768 (10,027,008) + 12 heads x 384^2 x 5 B (8,847,360)
    dle = dataclasses.replace(BERT_BASE, stack=Stack.NVIDIA_DLE)
    per_layer = 17 * 2 * 384 * 768 + 12 * 384 * 384 * 5
    assert per_layer == 18_874_368
    assert activation_bytes_per_sample(dle) == pytest.approx(12 * per_layer)
    # a preset's recipe stack does the same when the request names none
    recipe = dataclasses.replace(BERT_BASE, recipe_stack=Stack.NVIDIA_DLE)
    assert activation_bytes_per_sample(recipe) == pytest.approx(12 * per_layer)
    # HF Trainer's --fp16 is native autocast over fp32 weights: fp32 LayerNorm inputs
    # (2 more copies) and a 7-byte score (fp32 softmax output, its fp16 copy, the mask):
    # 19 x 2 x 384 x 768 + 12 x 384^2 x 7 = 23,592,960 a layer, 1.25 x the apex O2 count
    hf = dataclasses.replace(BERT_BASE, stack=Stack.HF_TRAINER)
    assert activation_bytes_per_sample(hf) == pytest.approx(12 * 23_592_960)
    assert activation_bytes_per_sample(hf) / activation_bytes_per_sample(dle) == pytest.approx(1.25)
    # a stack named in the request wins over the recipe's
    asked = dataclasses.replace(recipe, stack=Stack.HF_TRAINER)
    assert activation_bytes_per_sample(asked) == pytest.approx(12 * 23_592_960)


def test_apex_o2_is_the_fp16_path_only() -> None:
    # apex amp O2 casts the model to fp16; bf16 autocast on the DLE stack is native autocast
    # over fp32 weights, so it keeps HF's count: 19 copies x 2 B x 384 x 768 (11,206,656)
    # + 12 heads x 384^2 x 7 B (12,386,304) = 23,592,960 a layer, 12 layers
    for stack in ("stack", "recipe_stack"):
        bf16 = dataclasses.replace(
            BERT_BASE, precision=Precision.BF16_AMP, **{stack: Stack.NVIDIA_DLE}
        )
        assert activation_bytes_per_sample(bf16) == pytest.approx(12 * 23_592_960)
    # fp16 autocast on the same stack is apex O2: 18,874,368 a layer (test above)
    fp16 = dataclasses.replace(BERT_BASE, stack=Stack.NVIDIA_DLE)
    assert activation_bytes_per_sample(fp16) == pytest.approx(12 * 18_874_368)


@pytest.mark.parametrize("precision", [Precision.FP32, Precision.BF16_AMP, Precision.BF16])
@pytest.mark.parametrize("micro_batch_size", [1, 2, 8])
@pytest.mark.parametrize("gpu_count", [1, 2])
def test_gradients_released_between_steps_never_raise_the_peak(
    precision: Precision, micro_batch_size: int, gpu_count: int
) -> None:
    from app.model.memory import peak_memory_bytes

    w = Workload(**{**LLAMA3_8B, "micro_batch_size": micro_batch_size}, precision=precision)
    freed = peak_memory_bytes(w, gpu_count, micro_batch_size)
    kept = peak_memory_bytes(
        dataclasses.replace(w, set_grads_to_none=False), gpu_count, micro_batch_size
    )
    assert freed.total_gib <= kept.total_gib
    # what leaves the peak is at most the gradients, and nothing on more than one GPU (DDP)
    assert kept.total_gib - freed.total_gib <= kept.gradients_gib * 1.10 + 1e-9
    if gpu_count > 1:
        assert freed.total_gib == kept.total_gib


def test_foreach_adamw_step_temporary_by_hand() -> None:
    from app.model.enums import Optimizer
    from app.model.memory import GIB, peak_memory_bytes
    from app.model.types import Sharding

    # Llama-3-8B pure bf16 full fine-tune, 1 GPU, micro-batch 1 x 2,048 with checkpointing:
    # the backward peak holds 2 (weights) + 4 (bf16 moments) B a parameter + at most the
    # gradients (2 B) and a few GiB of activations; foreach AdamW's step then holds the
    # weights, moments, every gradient and torch._foreach_sqrt(exp_avg_sqs): 2 B a parameter
    # more (pytorch/pytorch torch/optim/adam.py _multi_tensor_adam)
    p = 8_030_261_248
    w = Workload(**{**LLAMA3_8B, "micro_batch_size": 1}, precision=Precision.BF16)
    b = peak_memory_bytes(w, 1, 1)
    # the step's (2 + 2 + 4 + 2) B = 80,302,612,480 B = 74.79 GiB is the allocated peak
    assert b.allocated_gib * GIB == pytest.approx(10 * p)
    assert b.allocated_gib == pytest.approx(74.79, abs=0.01)
    # the breakdown: gradients alive at the backward peak + those freed = 2 B a parameter;
    # the step's excess over the backward peak sits in optimizer_gib (4 B a parameter + it)
    assert (b.gradients_gib + b.gradients_freed_gib) * GIB == pytest.approx(2 * p)
    assert b.optimizer_gib * GIB == pytest.approx(4 * p + b.optimizer_step_gib * GIB)
    assert b.optimizer_step_gib > 0
    # a fused optimizer (bitsandbytes 8-bit) has no such temporary; torchtune's fused AdamW
    # neither; sharded over 8 GPUs (ZeRO-1) the temporary is the shard's: 2 B x p / 8
    assert (
        peak_memory_bytes(
            dataclasses.replace(w, optimizer=Optimizer.ADAMW_8BIT), 1, 1
        ).optimizer_step_gib
        == 0
    )
    tune = dataclasses.replace(w, stack=Stack.TORCHTUNE)
    assert peak_memory_bytes(tune, 1, 1).optimizer_step_gib == 0
    assert peak_memory_bytes(tune, 1, 1).allocated_gib < b.allocated_gib
    from app.model.memory_states import optimizer_step_transient_bytes

    zero1 = dataclasses.replace(w, sharding=Sharding.ZERO1)
    assert optimizer_step_transient_bytes(zero1, 8) == pytest.approx(2 * p / 8)
    assert optimizer_step_transient_bytes(w, 1) == pytest.approx(2 * p)
    # fp32 moments: 4 B a parameter
    amp = dataclasses.replace(w, precision=Precision.BF16_AMP)
    assert optimizer_step_transient_bytes(amp, 1) == pytest.approx(4 * p)
