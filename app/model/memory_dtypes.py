"""Units and the dtypes a training step holds things in, shared by the memory modules.

Bytes per activation element, the frozen base's dtype of a LoRA/QLoRA run and whether PEFT
upcasts its non-quantised modules to fp32 (:func:`kbit_upcast`); split out of
:mod:`app.model.memory` (formulas: ``../shared/docs/estimation.md`` §1 and §5.1).
"""

from __future__ import annotations

from app.model.stacks import Stack
from app.model.types import (
    Architecture,
    Attention,
    BaseDtype,
    Method,
    Precision,
    Sharding,
    Workload,
)

GIB = 2**30


#: NF4 with double quantisation: ~4.127 bits per parameter (QLoRA paper; PEFT PR #476 "4.5 →
#: 4.1 bits"), i.e. 0.516 bytes; without double quantisation ~4.5 bits (same sources).
NF4_BYTES_PER_PARAM = 4.127 / 8
NF4_NO_DQ_BYTES_PER_PARAM = 4.5 / 8


def activation_bytes(precision: Precision) -> int:
    """Bytes per activation element: 4 for fp32/tf32 training, 2 for 16-bit/fp8 regimes."""
    return 4 if precision in (Precision.FP32, Precision.TF32) else 2


def _amp(precision: Precision) -> bool:
    return precision in (Precision.FP16_AMP, Precision.BF16_AMP, Precision.FP8)


def _diffusion(w: Workload) -> bool:
    """A diffusion model (UNet or transformer): frozen text encoders and VAE, adaLN blocks."""
    return w.architecture in (Architecture.DIFFUSION_UNET, Architecture.DIFFUSION_TRANSFORMER)


def _fit_key(w: Workload) -> str:
    label = w.benchmark_workloads[0] if w.benchmark_workloads else (w.preset or "")
    regime = "32" if activation_bytes(w.precision) == 4 else "16"
    return f"{label}|{regime}"


#: Bytes per parameter of a frozen base held in each dtype (quantised formats without their
#: quantisation-state overhead, which :class:`MemoryParams` ``qlora_overhead`` adds).
BASE_DTYPE_BYTES: dict[BaseDtype, float] = {
    BaseDtype.FP32: 4.0,
    BaseDtype.BF16: 2.0,
    BaseDtype.FP16: 2.0,
    # LLM.int8: int8 weights (1 B) + fp32 row scales (negligible; Dettmers et al. 2208.07339)
    BaseDtype.INT8: 1.0,
    BaseDtype.NF4: NF4_BYTES_PER_PARAM,
}


def base_dtype(w: Workload) -> BaseDtype:
    """The dtype the frozen base of a LoRA/QLoRA run is held in: ``base_dtype`` when given,
    else NF4 for QLoRA, fp32 for a LoRA run in fp32/tf32 and 16-bit otherwise (PEFT's
    ``from_pretrained(torch_dtype=...)`` as axolotl, LLaMA-Factory, H2O LLM Studio and
    torchtune's LoRA recipes load it; fp16 under ``fp16_amp``)."""
    if w.base_dtype is not None:
        return w.base_dtype
    if w.method == Method.QLORA:
        return BaseDtype.NF4
    if w.precision in (Precision.FP32, Precision.TF32):
        return BaseDtype.FP32
    return BaseDtype.FP16 if w.precision == Precision.FP16_AMP else BaseDtype.BF16


def quantised_base(w: Workload) -> bool:
    """Whether the frozen base is quantised (int8 or NF4)."""
    return base_dtype(w) in (BaseDtype.INT8, BaseDtype.NF4)


#: Stacks that prepare a quantised base with PEFT's ``prepare_model_for_kbit_training``
#: (huggingface/peft ``src/peft/utils/other.py``), which casts every parameter left in 16-bit
#: (token embeddings, LM head, norms) to fp32; a custom job's default stack (HF Trainer + PEFT).
#: LLaMA-Factory does not call it (its ``upcast_layernorm``/``upcast_lmhead_output`` are off
#: by default); torchtune, LitGPT and Unsloth keep those modules in the training dtype.
KBIT_UPCAST_STACKS = frozenset({Stack.HF_TRAINER, Stack.AXOLOTL})


def kbit_upcast(w: Workload) -> bool:
    """Whether the non-quantised modules of a quantised LoRA base (embeddings, LM head, norms)
    are fp32: 4 B per embedding parameter, fp32 logits, and an fp32 residual stream (the fp32
    embedding output promotes every block output added to it, :func:`_fp32_stream`).

    fp32/tf32 training loads them in fp32. In 16-bit runs PEFT's
    ``prepare_model_for_kbit_training`` upcasts them (:data:`KBIT_UPCAST_STACKS`; no stack
    named: HF Trainer + PEFT), and a bf16 run casts embeddings and LM head back to bf16: TRL's
    ``SFTTrainer`` (``peft_module_casting_to_bf16`` on a 4-bit model when ``bf16`` is set) and
    the QLoRA reference script (artidoro/qlora ``qlora.py``, same cast under ``--bf16``), so
    only fp16 runs keep them fp32. axolotl casts them back whenever flash attention is on
    (``utils/models.py``: "LlamaRMSNorm layers are in fp32 after kbit_training ... convert
    them back to fp16/bf16 for flash-attn compatibility"): with axolotl an fp16 run keeps them
    with eager attention only. Sharded QLoRA (FSDP/ZeRO-3) keeps them in the storage dtype:
    FSDP needs one dtype per flat parameter, and TRL skips both steps then
    (``is_sharded_qlora``; PEFT's FSDP-QLoRA guide loads them in ``bnb_4bit_quant_storage``).
    """
    if w.method not in (Method.LORA, Method.QLORA) or not quantised_base(w):
        return False
    if w.precision in (Precision.FP32, Precision.TF32):
        return True
    stack = w.stack or Stack.HF_TRAINER
    if (
        stack not in KBIT_UPCAST_STACKS
        or w.sharding in (Sharding.FSDP, Sharding.ZERO3)
        or w.precision != Precision.FP16_AMP
    ):
        return False
    return stack != Stack.AXOLOTL or w.attention == Attention.EAGER
