"""Single changes that may take a workload out of ``high`` OOM risk, least intrusive first
(:func:`_fix_candidates`; :func:`app.model.memory.fixes_for` keeps those that do).
"""

from __future__ import annotations

from app.model.memory_dtypes import _diffusion
from app.model.types import (
    Architecture,
    Attention,
    Method,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)


def _fix_candidates(w: Workload, gpu_count: int) -> list[tuple[str, dict[str, object]]]:
    """Single changes to try, least intrusive first: step-level changes
    (:func:`_step_fixes`), sharding over the GPUs (:func:`_fsdp_fixes`), then the recipe and
    method changes (:func:`_method_fixes`)."""
    return _step_fixes(w) + _fsdp_fixes(w, gpu_count) + _method_fixes(w)


def _step_fixes(w: Workload) -> list[tuple[str, dict[str, object]]]:
    """Checkpointing, memory-efficient attention, a fused loss, a paged 8-bit optimizer and
    the optimizer step in backward, where ``w`` does not already use them."""
    out: list[tuple[str, dict[str, object]]] = []
    if not w.gradient_checkpointing:
        out.append(("activation checkpointing", {"gradient_checkpointing": True}))
    if _diffusion(w) and w.attention == Attention.EAGER:
        # the UNet's full-resolution score matrices (unet_attention_scores_bytes), a DiT's
        # latent-token scores
        out.append(("memory-efficient attention (SDPA/xformers)", {"attention": Attention.SDPA}))
    if (
        w.architecture == Architecture.TRANSFORMER_DECODER
        and w.vocab_size
        and not w.fused_cross_entropy
    ):
        out.append(("chunked/fused cross-entropy", {"fused_cross_entropy": True}))
    if w.method == Method.FULL and w.optimizer not in (
        Optimizer.ADAMW_8BIT,
        Optimizer.PAGED_ADAMW_8BIT,
        Optimizer.SGD,
        Optimizer.ADAFACTOR,
    ):
        out.append(("paged 8-bit AdamW", {"optimizer": Optimizer.PAGED_ADAMW_8BIT}))
    if w.method == Method.FULL and not w.optimizer_in_backward and w.sharding == Sharding.NONE:
        out.append(("optimizer step in backward", {"optimizer_in_backward": True}))
    return out


def _fsdp_fixes(w: Workload, gpu_count: int) -> list[tuple[str, dict[str, object]]]:
    """FSDP over the ``gpu_count`` GPUs, without and with CPU offload, for an unsharded job
    on more than one GPU."""
    if gpu_count <= 1 or w.sharding != Sharding.NONE:
        return []
    return [
        (f"FSDP over the {gpu_count} GPUs", {"sharding": Sharding.FSDP}),
        (
            f"FSDP over the {gpu_count} GPUs with CPU offload",
            {"sharding": Sharding.FSDP, "cpu_offload": True},
        ),
    ]


def _method_fixes(w: Workload) -> list[tuple[str, dict[str, object]]]:
    """For a transformer: torchtune's single-device full fine-tune recipe, then, for a job
    that is not pre-training (its measured group, ``benchmark_method``, is not
    ``pretrain``), LoRA and QLoRA adapters on the base in its default dtype (16-bit for
    LoRA, NF4 for QLoRA: :func:`app.model.memory_dtypes.base_dtype`)."""
    out: list[tuple[str, dict[str, object]]] = []
    transformer = w.architecture in (
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.VIT,
    )
    if w.method == Method.FULL and transformer and w.sharding == Sharding.NONE:
        # torchtune's single-device full fine-tune recipe (llama3_1/8B_full_single_device)
        out.append(
            (
                "pure bf16 + paged 8-bit AdamW + step in backward + checkpointing",
                {
                    "precision": Precision.BF16,
                    "optimizer": Optimizer.PAGED_ADAMW_8BIT,
                    "optimizer_in_backward": True,
                    "gradient_checkpointing": True,
                    **(
                        {"fused_cross_entropy": True}
                        if w.architecture == Architecture.TRANSFORMER_DECODER and w.vocab_size
                        else {}
                    ),
                },
            )
        )
    if w.benchmark_method == "pretrain":
        # pre-training trains every weight from scratch: adapters on a frozen base are
        # another job, not a fix of this one
        return out
    if transformer and w.method == Method.FULL:
        out.append(("LoRA", {"method": Method.LORA, "lora_rank": w.lora_rank or 8}))
    if transformer and w.method != Method.QLORA:
        out.append(("QLoRA", {"method": Method.QLORA, "lora_rank": w.lora_rank or 8}))
    return out
