"""Memory model: formulas against hand-worked numbers (estimation.md §1-§5)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.model.calibration import load_calibration
from app.model.memory import (
    CUDA_CONTEXT_GIB,
    GIB,
    NF4_BYTES_PER_PARAM,
    SLACK,
    _copies_per_layer,
    activation_bytes_per_sample,
    estimate_memory,
    frozen_base_bytes,
    fused_copies_per_layer,
    implementation,
    logit_bytes_per_element,
    logits_bytes_per_sample,
    lora_trainable_params,
    max_fitting_utilization,
    memory_notes,
    memory_risk,
    oom_probability,
    oom_risk,
    selective_saved_copies,
    state_bytes,
    transformer_tokens,
)
from app.model.stacks import Stack
from app.model.types import (
    Architecture,
    Attention,
    BaseDtype,
    Implementation,
    Method,
    OomRisk,
    Optimizer,
    Precision,
    QuantBackend,
    Sharding,
    Workload,
)
from tests.unit.helpers import GPT2, LLAMA3_8B

ONE_B = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    params=1_000_000_000,
    layers=24,
    hidden_size=2048,
    seq_len=1024,
    samples_per_epoch=1,
)


@pytest.mark.parametrize(
    ("precision", "optimizer", "per_param"),
    [
        (Precision.FP32, Optimizer.ADAMW, 16),  # 4 weights + 4 grads + 8 Adam moments
        (Precision.BF16_AMP, Optimizer.ADAMW, 18),  # HF AMP: 6 + 4 + 8
        (Precision.BF16, Optimizer.ADAMW, 8),  # pure bf16: 2 + 2 + 4
        (Precision.FP16_AMP, Optimizer.ADAMW_8BIT, 12),  # 6 + 4 + 2
        (Precision.FP32, Optimizer.SGD_MOMENTUM, 12),  # 4 + 4 + 4
    ],
)
def test_state_bytes_per_param(precision: Precision, optimizer: Optimizer, per_param: int) -> None:
    w = dataclasses.replace(ONE_B, precision=precision, optimizer=optimizer)
    s = state_bytes(w, gpu_count=1)
    assert s.weights + s.gradients + s.optimizer == pytest.approx(per_param * 1e9)


def test_zero_stages_divide_states_by_data_parallel_degree() -> None:
    # ZeRO paper (mixed precision, K = 12): stage 1 2+2+12/8, stage 2 2+(2+12)/8,
    # stage 3 (2+2+12)/8 bytes per parameter on 8 GPUs.
    expected = {Sharding.ZERO1: 4 + 12 / 8, Sharding.ZERO2: 2 + 14 / 8, Sharding.ZERO3: 16 / 8}
    for stage, per_param in expected.items():
        w = dataclasses.replace(ONE_B, sharding=stage)
        s = state_bytes(w, gpu_count=8)
        assert s.weights + s.gradients + s.optimizer == pytest.approx(per_param * 1e9), stage


def _llama3_8b_adapters(method: Method, **fields: Any) -> Workload:
    """Llama 3 8B with rank-8 ``method`` adapters in pure bf16, ``fields`` added."""
    return Workload(**LLAMA3_8B, precision=Precision.BF16, method=method, lora_rank=8, **fields)


def test_qlora_base_is_nf4_except_embeddings() -> None:
    w = _llama3_8b_adapters(Method.QLORA, stack=Stack.TORCHTUNE)
    emb = 2 * 128256 * 4096  # untied input embedding + LM head stay bf16 (torchtune)
    pt = lora_trainable_params(w)
    overhead = 1 + load_calibration().memory.qlora_overhead
    expected_base = (8_030_261_248 - emb) * NF4_BYTES_PER_PARAM * overhead + emb * 2
    # pure bf16: the adapters are bf16 too (torchtune, LitGPT bf16-true)
    assert state_bytes(w, 1).weights == pytest.approx(expected_base + pt * 2)
    # rank 8 on q,k,v,o,gate,up,down of 32 layers: 8*(8192+5120+5120+8192+18432*2+18432)*32
    assert pt == 8 * 32 * (8192 + 5120 + 5120 + 8192 + 18432 + 18432 + 18432)


def test_peft_kbit_preparation_keeps_embeddings_and_lm_head_fp32_under_fp16() -> None:
    # HF Trainer + PEFT (the default stack) under fp16 autocast:
    # prepare_model_for_kbit_training casts the embeddings and LM head to fp32 and nothing casts
    # them back: 4 B per embedding parameter, fp32 logits, an fp32 residual stream
    fp16 = Workload(
        **LLAMA3_8B,
        precision=Precision.FP16_AMP,
        method=Method.QLORA,
        lora_rank=8,
    )
    tune = dataclasses.replace(fp16, stack=Stack.TORCHTUNE)
    emb = 2 * 128256 * 4096
    assert state_bytes(fp16, 1).weights - state_bytes(tune, 1).weights == pytest.approx(emb * 2)
    unfused = load_calibration().memory.unfused_logit_bytes
    assert logit_bytes_per_element(fp16) == pytest.approx(2 * unfused)
    assert logit_bytes_per_element(tune) == pytest.approx(unfused)
    # the checkpointed layer inputs: 32 layers x 2048 tokens x 4096 at 4 B instead of 2
    stored = 32 * 2048 * 4096 * 2
    gap = activation_bytes_per_sample(fp16) - activation_bytes_per_sample(tune)
    assert gap == pytest.approx(stored + (2 * unfused - unfused) * 2048 * 128256)
    # bf16 (TRL's peft_module_casting_to_bf16, qlora.py --bf16) casts them back, as axolotl does
    # with flash attention; sharded QLoRA never upcasts; a 16-bit LoRA base is never cast
    for same in (
        dataclasses.replace(fp16, precision=Precision.BF16_AMP),
        dataclasses.replace(fp16, precision=Precision.BF16),
        dataclasses.replace(fp16, stack=Stack.AXOLOTL, attention=Attention.SDPA),
        dataclasses.replace(fp16, sharding=Sharding.FSDP),
        dataclasses.replace(fp16, method=Method.LORA),
    ):
        assert logit_bytes_per_element(same) == pytest.approx(unfused), same
    eager_axolotl = dataclasses.replace(fp16, stack=Stack.AXOLOTL, attention=Attention.EAGER)
    assert logit_bytes_per_element(eager_axolotl) == pytest.approx(2 * unfused)


def test_gpt2_activation_bytes_hand_worked() -> None:
    # pure bf16: L * 17 copies * 2 B * s * h + loss-side bytes per logit * s * V (Korthikanti
    # 34 sbh bytes per layer; logit bytes fitted, tools/fit_memory.py)
    logit = load_calibration().memory.unfused_logit_bytes
    pure = dataclasses.replace(GPT2, precision=Precision.BF16)
    expected = 12 * 17 * 2 * 1024 * 768 + logit * 1024 * 50304
    assert activation_bytes_per_sample(pure) == pytest.approx(expected)
    # unsharded autocast (GPT2 is bf16_amp): the two LayerNorm inputs stay fp32, 19 copies
    amp = 12 * 19 * 2 * 1024 * 768 + logit * 1024 * 50304
    assert activation_bytes_per_sample(GPT2) == pytest.approx(amp)
    # FSDP MixedPrecision casts the weights to bf16: a 16-bit stream again
    fsdp = dataclasses.replace(GPT2, sharding=Sharding.FSDP)
    assert activation_bytes_per_sample(fsdp) == pytest.approx(expected)


def test_checkpointing_stores_layer_inputs_plus_one_layer() -> None:
    w = dataclasses.replace(GPT2, gradient_checkpointing=True)
    # fp32 layer inputs (autocast stream) + max(one layer's 19 copies, logits):
    # c*s*V ≈ 250-300 MB > 29.9 MB
    logit = load_calibration().memory.unfused_logit_bytes
    expected = 12 * 4 * 1024 * 768 + max(19 * 2 * 1024 * 768, logit * 1024 * 50304)
    assert activation_bytes_per_sample(w) == pytest.approx(expected)


def test_eager_attention_adds_score_matrices() -> None:
    eager = dataclasses.replace(GPT2, attention=Attention.EAGER)
    extra = activation_bytes_per_sample(eager) - activation_bytes_per_sample(GPT2)
    # autocast: fp32 softmax output (4 B) + its bf16 copy (2 B) + dropout mask (1 B) per score
    assert extra == pytest.approx(12 * 12 * 1024 * 1024 * 7)
    pure = dataclasses.replace(eager, precision=Precision.BF16)
    extra_pure = activation_bytes_per_sample(pure) - activation_bytes_per_sample(
        dataclasses.replace(GPT2, precision=Precision.BF16)
    )
    assert extra_pure == pytest.approx(12 * 12 * 1024 * 1024 * 5)  # a*s^2*(2*2+1) per layer


def _vit_bf16(params: int, layers: int, hidden: int, heads: int, **fields: Any) -> Workload:
    """A ViT at 224 px in pure bf16 of this shape, with ``fields`` added."""
    return Workload(
        architecture=Architecture.VIT,
        params=params,
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        image_size=224,
        precision=Precision.BF16,
        samples_per_epoch=1,
        **fields,
    )


def test_vit_mlp_is_not_gated_whatever_its_width() -> None:
    # ViT-g/14 (timm: embed 1408, depth 40, 16 heads, mlp_ratio 48/11 -> 6144), 257 tokens,
    # pure bf16: 9 + 2 * 6144 / 1408 = 17.727 copies per layer (not the SwiGLU 28)
    vit_g = _vit_bf16(1_012_610_000, 40, 1408, 16, ffn_hidden_size=6144, patch_size=14)
    copies = 9 + 2 * 6144 / 1408
    assert activation_bytes_per_sample(vit_g) == pytest.approx(40 * copies * 2 * 257 * 1408)


def test_without_dropout_a_layer_keeps_no_masks() -> None:
    # ViT-B/16 at 224 (197 tokens), pure bf16, SDPA: 17 copies with Korthikanti's two
    # 1-byte masks (2 B = 1 copy at 2 B), 16 without
    vit_b = _vit_bf16(86_567_656, 12, 768, 12)
    assert activation_bytes_per_sample(vit_b) == pytest.approx(12 * 17 * 2 * 197 * 768)
    no_drop = dataclasses.replace(vit_b, dropout=False)
    assert activation_bytes_per_sample(no_drop) == pytest.approx(12 * 16 * 2 * 197 * 768)
    # fp32 activations: the masks are still 1 B each, i.e. half a copy at 4 B
    fp32 = dataclasses.replace(no_drop, precision=Precision.FP32)
    assert activation_bytes_per_sample(fp32) == pytest.approx(12 * 16.5 * 4 * 197 * 768)
    # eager scores without dropout: the softmax output alone (2 B), not 2·2 + 1
    eager = dataclasses.replace(no_drop, attention=Attention.EAGER)
    extra = activation_bytes_per_sample(eager) - activation_bytes_per_sample(no_drop)
    assert extra == pytest.approx(12 * 12 * 197 * 197 * 2)
    # unsharded autocast (fp32 stream): 19 - 1 copies; scores 4 + 2 B without the mask
    amp = dataclasses.replace(eager, precision=Precision.FP16_AMP)
    amp_sdpa = dataclasses.replace(no_drop, precision=Precision.FP16_AMP)
    assert activation_bytes_per_sample(amp_sdpa) == pytest.approx(12 * 18 * 2 * 197 * 768)
    amp_extra = activation_bytes_per_sample(amp) - activation_bytes_per_sample(amp_sdpa)
    assert amp_extra == pytest.approx(12 * 12 * 197 * 197 * 6)


def test_dropout_leaves_the_measured_swiglu_constant_alone() -> None:
    w = Workload(**LLAMA3_8B, precision=Precision.BF16)
    assert activation_bytes_per_sample(
        dataclasses.replace(w, dropout=False)
    ) == activation_bytes_per_sample(w)


def test_peak_is_states_plus_activations_with_slack_and_context() -> None:
    est = estimate_memory(GPT2, vram_gib=24)
    # fp32 weights + their 16-bit copy (6 B) and AdamW's two moments (8 B): the fp32
    # gradients (4 B) do not exist yet when the forward ends (zero_grad sets them to None,
    # PyTorch 2.0's default, and nothing is accumulated), and they outweigh nothing here:
    # the activations are larger than them
    act = activation_bytes_per_sample(GPT2)
    assert act > 4 * 124_373_760
    states = 14 * 124_373_760
    assert est.peak_memory_gib == pytest.approx((states + act) * SLACK / GIB + CUDA_CONTEXT_GIB)
    assert est.breakdown.gradients_gib == 0
    assert est.usable_vram_gib == pytest.approx(24 * 0.985)
    # gradients kept between steps (zeroed in place, or accumulated): all 18 B at the peak
    for kept in (
        dataclasses.replace(GPT2, set_grads_to_none=False),
        dataclasses.replace(GPT2, grad_accum_steps=2),
    ):
        peak = estimate_memory(kept, vram_gib=24).peak_memory_gib
        assert peak == pytest.approx((18 * 124_373_760 + act) * SLACK / GIB + CUDA_CONTEXT_GIB)


def test_max_micro_batch_size_is_the_largest_whose_risk_is_low() -> None:
    est = estimate_memory(GPT2, vram_gib=24)
    b = est.max_micro_batch_size
    fits = estimate_memory(dataclasses.replace(GPT2, micro_batch_size=b), vram_gib=24)
    over = estimate_memory(dataclasses.replace(GPT2, micro_batch_size=b + 1), vram_gib=24)
    assert fits.oom_risk == OomRisk.LOW and over.oom_risk != OomRisk.LOW
    # the low band is P(OOM) < 0.1, so the batch offered as fitting OOMs < 1 time in 10
    assert fits.oom_probability is not None and over.oom_probability is not None
    assert fits.oom_probability < 0.1 <= over.oom_probability
    assert fits.memory_utilization < max_fitting_utilization()
    assert 10 < b < 60


def test_memory_risk_is_the_band_of_the_full_estimate() -> None:
    # GPT-2 at micro-batch 16 on 16 GB is medium (P(OOM) 0.47), on 12 GB high, on 24 GB low;
    # LLaMA-3 8B full is high on any card; whole and fractional GPUs, shared breakdowns or not
    gpt2 = dataclasses.replace(GPT2, micro_batch_size=16)
    peaks: dict[tuple[int, int], Any] = {}
    bands = []
    for w in (gpt2, Workload(**LLAMA3_8B)):
        peaks.clear()
        for vram_gib in (12.0, 16.0, 24.0, 80.0):
            for count in (0.5, 1, 2, 8):
                full = estimate_memory(w, vram_gib=vram_gib, gpu_count=count, with_fixes=False)
                for shared in (None, peaks):
                    risk = memory_risk(w, vram_gib=vram_gib, gpu_count=count, peaks=shared)
                    assert risk == full.oom_risk, (w.params, vram_gib, count)
                bands.append(full.oom_risk)
    assert memory_risk(gpt2, vram_gib=16.0) == OomRisk.MEDIUM
    assert set(bands) == {OomRisk.LOW, OomRisk.MEDIUM, OomRisk.HIGH}


def test_oom_probability_is_monotone_and_bands_follow_it() -> None:
    utils = [0.3, 0.6, 0.8, 0.9, 1.0, 1.1, 1.5]
    probs = [oom_probability(u) for u in utils]
    assert probs == sorted(probs) and probs[0] < 0.1 < 0.5 < probs[-1]
    assert oom_risk(0.3) == OomRisk.LOW and oom_risk(1.5) == OomRisk.HIGH
    center = max_fitting_utilization()
    assert oom_probability(center) == pytest.approx(0.5)
    assert oom_risk(center * 0.999) != OomRisk.HIGH and oom_risk(center * 1.001) == OomRisk.HIGH


def test_paged_8bit_and_step_in_backward_hold_no_states_or_gradient_buffer() -> None:
    # torchtune 8B_full_single_device: pure bf16, PagedAdamW8bit, optimizer_in_bwd
    w = Workload(
        **LLAMA3_8B,
        precision=Precision.BF16,
        optimizer=Optimizer.PAGED_ADAMW_8BIT,
        optimizer_in_backward=True,
    )
    s = state_bytes(w, 1)
    assert s.weights == 2 * 8_030_261_248
    assert s.optimizer == 0.0  # unified memory, evicted to host
    assert s.gradients == 2 * 128256 * 4096  # only the largest tensor (embedding) at once
    plain = state_bytes(dataclasses.replace(w, optimizer=Optimizer.ADAMW_8BIT), 1)
    assert plain.optimizer == 2 * 8_030_261_248


def test_optimizer_state_bytes_per_variant() -> None:
    p = 1_000_000_000
    one = Workload(architecture=Architecture.TRANSFORMER_DECODER, params=p)
    per = {
        Optimizer.ADAMW: 8,
        Optimizer.LION: 4,
        Optimizer.SGD_MOMENTUM: 4,
        Optimizer.SGD: 0,
        Optimizer.ADAFACTOR: 0,
        Optimizer.ADAMW_8BIT: 2,
    }
    for opt, b in per.items():
        s = state_bytes(dataclasses.replace(one, optimizer=opt, precision=Precision.FP32), 1)
        assert s.optimizer == b * p, opt


def test_high_risk_lists_fixes_that_fit() -> None:
    full = Workload(**LLAMA3_8B, precision=Precision.BF16_AMP)
    est = estimate_memory(full, vram_gib=24)
    assert est.oom_risk == OomRisk.HIGH and est.fixes
    for fix in est.fixes:
        assert fix.oom_risk != OomRisk.HIGH
        assert fix.peak_memory_gib < est.peak_memory_gib
    assert any("QLoRA" in f.label for f in est.fixes)
    low = estimate_memory(dataclasses.replace(full, method=Method.QLORA, lora_rank=8), vram_gib=80)
    assert low.fixes == ()


def test_fsdp_full_model_init_keeps_the_full_model() -> None:
    w = _llama3_8b_adapters(Method.LORA, sharding=Sharding.FSDP)
    lazy = estimate_memory(w, vram_gib=40, gpu_count=2)
    eager = estimate_memory(dataclasses.replace(w, full_model_init=True), vram_gib=40, gpu_count=2)
    # every rank keeps the full bf16 model it loaded next to its shard: + 2P bytes
    extra = eager.breakdown.allocated_gib - lazy.breakdown.allocated_gib
    assert extra == pytest.approx(2 * 8_030_261_248 / GIB)
    assert eager.breakdown.init_extra_gib == pytest.approx(extra)
    assert eager.peak_memory_gib > lazy.peak_memory_gib


def test_llama3_8b_full_does_not_fit_24gb_but_qlora_does() -> None:
    full = Workload(**LLAMA3_8B, precision=Precision.BF16_AMP)
    qlora = _llama3_8b_adapters(Method.QLORA)
    assert estimate_memory(full, vram_gib=24).oom_risk == OomRisk.HIGH
    assert estimate_memory(qlora, vram_gib=24).oom_risk != OomRisk.HIGH


def test_notes_name_the_zero_bucket_and_the_fused_loss_bytes_only_when_counted() -> None:
    plain = memory_notes(GPT2)
    assert not any("reduce bucket" in n or "per logit" in n for n in plain)
    zero1 = memory_notes(dataclasses.replace(GPT2, sharding=Sharding.ZERO1))
    # 5e8 elements x 2 B = 1e9 B = 0.93 GiB
    assert any("500,000,000 16-bit elements, 0.93 GiB" in n for n in zero1)
    assert not any(
        "reduce bucket" in n
        for n in memory_notes(dataclasses.replace(GPT2, sharding=Sharding.ZERO3))
    )
    fused = memory_notes(dataclasses.replace(GPT2, fused_cross_entropy=True))
    # GPT2 is llm.c's: its classifier overwrites the logits in place, 2 B; another stack's
    # chunked loss is the 4 B count
    assert any("in place (llm.c fused_classifier): 2 bytes" in n for n in fused)
    hf = memory_notes(dataclasses.replace(GPT2, fused_cross_entropy=True, stack=Stack.HF_TRAINER))
    assert any("counted at 4 bytes per logit" in n and "keeps 2" in n for n in hf)


def test_fused_kernels_keep_what_each_kernel_saves() -> None:
    # Llama 3.1 8B: 6 hidden-sized tensors + q/k/v at 8 of 32 heads (2 x 1/4) + gate, up and
    # the down projection's input (3 x 14336/4096 = 10.5): 17 copies against 28 eager
    w = Workload(**LLAMA3_8B, precision=Precision.BF16, implementation=Implementation.FUSED)
    assert fused_copies_per_layer(w) == pytest.approx(6 + 0.5 + 10.5)
    assert _copies_per_layer(w, False) == pytest.approx(17.0)
    assert _copies_per_layer(dataclasses.replace(w, implementation=None), False) == 28.0


def test_a_fused_kernel_stack_sets_the_default_implementation() -> None:
    # Unsloth and Megatron/NeMo run fused blocks (17 copies for Llama 3.1 8B, as above), HF
    # Trainer eager (28); a stated implementation wins over the stack's default
    w = Workload(**LLAMA3_8B, precision=Precision.BF16)
    for stack, copies in ((Stack.UNSLOTH, 17.0), (Stack.MEGATRON, 17.0), (Stack.HF_TRAINER, 28.0)):
        assert _copies_per_layer(dataclasses.replace(w, stack=stack), False) == pytest.approx(
            copies
        )
    eager = dataclasses.replace(w, stack=Stack.UNSLOTH, implementation=Implementation.EAGER)
    assert implementation(eager) == Implementation.EAGER
    assert implementation(w) == Implementation.EAGER


def test_torchtune_selective_checkpointing_keeps_every_second_matmul() -> None:
    # block input, attention output, q (h), v (h/4), w1 (14336), w2 (h): 7.75 copies of h
    w = Workload(**LLAMA3_8B, precision=Precision.BF16)
    assert selective_saved_copies(w) == pytest.approx(4 + 0.25 + 3.5)


def test_torchao_nf4_base_carries_no_overhead_beyond_its_blocks() -> None:
    w = Workload(
        **LLAMA3_8B,
        precision=Precision.BF16,
        method=Method.QLORA,
        quant_backend=QuantBackend.TORCHAO,
    )
    emb = 2 * 128256 * 4096
    expected = (8_030_261_248 - emb) * NF4_BYTES_PER_PARAM + emb * 2  # 3.60 + 2.10 GB
    assert frozen_base_bytes(w, load_calibration()) == pytest.approx(expected)
    bnb = frozen_base_bytes(dataclasses.replace(w, quant_backend=None), load_calibration())
    assert bnb > frozen_base_bytes(w, load_calibration())


def test_the_loss_grows_with_sequence_times_vocabulary_by_dtype() -> None:
    # Llama 3.1 8B, 2048 tokens x 128,256 entries = 262.7 M logits per sample
    w = Workload(**LLAMA3_8B)
    n = 2048 * 128256
    # logits, log-softmax output, its gradient, the logits' gradient: 4 x 2 B at 16-bit
    assert logits_bytes_per_sample(w) == pytest.approx(8 * n)
    # fp32 training: the LM head writes fp32 logits, the four tensors at 4 B
    assert logits_bytes_per_sample(dataclasses.replace(w, precision=Precision.FP32)) == (
        pytest.approx(16 * n)
    )
    # a chunked loss keeps every chunk's saved log-softmax: 4 B a 16-bit logit (torchtune's
    # fp32 upcast chunks; LitGPT's 16-bit log-softmax + the 16-bit logits its step holds)
    fused = dataclasses.replace(w, fused_cross_entropy=True)
    assert logits_bytes_per_sample(fused) == pytest.approx(4 * n)
    # llm.c's classifier overwrites its 16-bit logits with their gradient: 2 B a logit
    llmc = dataclasses.replace(fused, stack=Stack.LLM_C)
    assert logits_bytes_per_sample(llmc) == pytest.approx(2 * n)
    assert logits_bytes_per_sample(dataclasses.replace(llmc, fused_cross_entropy=False)) == (
        pytest.approx(8 * n)
    )
    # twice the sequence, twice the loss
    long = dataclasses.replace(w, seq_len=4096)
    assert logits_bytes_per_sample(long) == pytest.approx(2 * logits_bytes_per_sample(w))


def test_the_answer_states_the_base_dtype_and_what_it_ignores() -> None:
    lora = Workload(**LLAMA3_8B, method=Method.LORA)
    assert any("frozen base counted in bf16 (the default" in n for n in memory_notes(lora))
    qlora = Workload(**LLAMA3_8B, method=Method.QLORA, base_dtype=BaseDtype.NF4)
    assert any("frozen base counted in nf4 (as given)" in n for n in memory_notes(qlora))
    # a bf16 QLoRA run: embeddings and LM head cast back to 16-bit, said in the answer
    assert any("LM head and norms counted in 16-bit" in n for n in memory_notes(qlora))
    fp16 = dataclasses.replace(qlora, precision=Precision.FP16_AMP)
    assert any("LM head and norms counted in fp32" in n for n in memory_notes(fp16))
    full = Workload(**LLAMA3_8B, base_dtype=BaseDtype.NF4, quant_backend=QuantBackend.TORCHAO)
    notes = memory_notes(full)
    assert any("base_dtype applies to lora/qlora" in n for n in notes)
    assert any("quant_backend applies to a quantised" in n for n in notes)


def test_a_diffusion_transformer_takes_dit_blocks_on_latent_patches() -> None:
    # DiT-XL/2 at 256 px: a 32x32 latent in 2x2 patches = 256 tokens; a ViT block without
    # dropout (9 + 2*4 - 1 copies) + adaLN-Zero's 4 + 2 for the fp32 stream of unsharded
    # autocast = 22 copies of 256 x 1152 at 2 B, 28 layers: 363.3 MB per sample
    w = Workload(
        architecture=Architecture.DIFFUSION_UNET,
        params=675_000_000,
        layers=28,
        hidden_size=1152,
        heads=16,
        image_size=256,
        patch_size=2,
        dropout=False,
        samples_per_epoch=1,
    )
    assert transformer_tokens(w) == 256
    assert activation_bytes_per_sample(w) == pytest.approx(28 * 22 * 2 * 256 * 1152)
