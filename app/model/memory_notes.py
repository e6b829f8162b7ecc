"""What the memory model does not describe for a workload: the notes of a memory answer
(:func:`memory_notes`); split out of :mod:`app.model.memory`.
"""

from __future__ import annotations

from dataclasses import replace

from app.model.calibration import Calibration, load_calibration
from app.model.memory_activations import (
    IN_PLACE_LOGIT_BYTES,
    IN_PLACE_LOGIT_GRADIENT_STACKS,
    _detector,
    dit_image_tokens,
)
from app.model.memory_dtypes import (
    GIB,
    _diffusion,
    _fit_key,
    base_dtype,
    kbit_upcast,
    quantised_base,
)
from app.model.memory_states import ZERO_BUCKET_ELEMENTS, _full_bytes_per_param
from app.model.memory_vision import task_notes
from app.model.types import (
    Architecture,
    Method,
    Precision,
    Sharding,
    VisionTask,
    Workload,
)


def memory_notes(w: Workload, cal: Calibration | None = None) -> tuple[str, ...]:
    """What the memory model does not describe for ``w`` (shown in the answer's notes), with
    ``cal``'s constants (default: the served calibration)."""
    cal = cal or load_calibration()
    out: list[str] = []
    transformer = w.architecture in (
        Architecture.TRANSFORMER_ENCODER,
        Architecture.TRANSFORMER_DECODER,
        Architecture.VIT,
    )
    if transformer and not (w.hidden_size and w.layers):
        out.append(
            "memory: activations need hidden_size and layers for a transformer; without them "
            "they are a fitted bytes-per-parameter guess"
        )
    if w.base_dtype is not None and w.method == Method.FULL:
        out.append("memory: base_dtype applies to lora/qlora; ignored for a full fine-tune")
    if w.quant_backend is not None and not (
        w.method in (Method.LORA, Method.QLORA) and quantised_base(w)
    ):
        out.append("memory: quant_backend applies to a quantised (int8/nf4) base; ignored")
    out += _adapter_notes(w)
    out += _vision_notes(w, cal)
    if w.precision == Precision.FP8:
        out.append("memory: fp8 is modelled as bf16 mixed precision (no fp8 weight savings)")
    out += _pure_bf16_notes(w)
    if w.cpu_offload and w.sharding in (Sharding.NONE,) and w.method == Method.FULL:
        out.append("memory: CPU offload without ZeRO/FSDP is modelled as ZeRO-Offload")
    if w.activation_offloading and not w.gradient_checkpointing:
        out.append("memory: activation offloading without checkpointing is not modelled")
    if w.optimizer_in_backward and w.sharding != Sharding.NONE:
        out.append("memory: optimizer-in-backward with sharding is modelled as unsharded grads")
    if w.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        out.append(
            f"memory: ZeRO-1/2 counts DeepSpeed's reduce bucket ({ZERO_BUCKET_ELEMENTS:,.0f} "
            f"16-bit elements, {ZERO_BUCKET_ELEMENTS * 2 / GIB:.2f} GiB per GPU); a trainer "
            "that reduce-scatters the gradients in place (llm.c -z 1) has none"
        )
    if (
        w.fused_cross_entropy
        and w.architecture == Architecture.TRANSFORMER_DECODER
        and w.vocab_size
    ):
        if (w.stack or w.recipe_stack) in IN_PLACE_LOGIT_GRADIENT_STACKS:
            out.append(
                f"memory: the fused classifier overwrites its logits with their gradient in "
                f"place (llm.c fused_classifier): {IN_PLACE_LOGIT_BYTES:g} bytes per 16-bit logit"
            )
        else:
            out.append(
                f"memory: the fused/chunked loss is counted at "
                f"{cal.memory.chunked_logit_bytes:g} bytes per logit; a classifier that "
                "overwrites its 16-bit logits with their gradient in place (llm.c "
                "fused_classifier) keeps 2"
            )
    return tuple(out)


def _adapter_notes(w: Workload) -> list[str]:
    """LoRA/QLoRA: the dtypes the answer counts the frozen base, its non-quantised modules
    (:func:`kbit_upcast`) and the adapters in."""
    if w.method not in (Method.LORA, Method.QLORA):
        return []
    given = "as given" if w.base_dtype is not None else "the default; set base_dtype"
    adapters = "bf16" if w.precision == Precision.BF16 else "fp32"
    out = [
        f"memory: frozen base counted in {base_dtype(w).value} ({given}); adapters, their "
        f"gradients and optimizer states in {adapters}"
    ]
    if not quantised_base(w):
        return out
    if kbit_upcast(w):
        out.append(
            "memory: the quantised base's embeddings, LM head and norms counted in fp32 "
            "(PEFT's prepare_model_for_kbit_training, not cast back in this run): fp32 logits "
            "and residual stream"
        )
    else:
        out.append(
            "memory: the quantised base's embeddings, LM head and norms counted in 16-bit "
            "(cast back by TRL and the QLoRA script in bf16 runs, by axolotl with flash "
            "attention); a trainer that keeps them fp32 needs 2 B more per embedding "
            "parameter and twice the loss memory"
        )
    return out


def _vision_notes(w: Workload, cal: Calibration) -> list[str]:
    """Notes on what the vision/diffusion activation and state model leaves out for ``w``."""
    out: list[str] = []
    arch = w.architecture
    measured = cal.activation_bytes_per_sample.get(_fit_key(w)) is not None
    if w.vision_task == VisionTask.DETECTION and arch != Architecture.CNN:
        out.append(f"memory: vision_task applies to cnn; ignored for {arch.value}")
    out += task_notes(w)
    if _detector(w) and not measured:
        if w.backbone_gflops_224 and w.image_size:
            out.append(
                "memory: detector activations use one fitted bytes-per-backbone-GFLOP constant "
                "(FPN two-stage, RetinaNet and YOLO heads with a frozen stem, as in "
                "mmdetection/detectron2 defaults); C4/DC5 heads, segmentation decoders and "
                "per-batch padding beyond image_size are not described"
            )
        else:
            out.append(
                "memory: detector activations need backbone_gflops_224 and image_size; "
                "without them they are a bytes-per-parameter guess"
            )
    elif arch == Architecture.CNN and not measured:
        if w.forward_activations_per_sample:
            out.append(
                "memory: CNN activations use one fitted bytes-per-activation-element constant "
                "on the given forward activation count (conv and matmul outputs); "
                "per-layer transients (the largest layer's gradients, max-pool indices) are "
                "not counted separately"
            )
        elif w.forward_gflops_per_sample:
            out.append(
                "memory: CNN activations use one fitted bytes-per-forward-GFLOP constant for "
                "classification nets; depthwise/inverted-residual nets (MobileNet, "
                "EfficientNet) keep more activations per FLOP"
            )
        else:
            out.append(
                "memory: CNN activations need forward_gflops_per_sample; without it they are "
                "a bytes-per-parameter guess"
            )
    elif arch in (Architecture.RNN_SEQ2SEQ, Architecture.TTS, Architecture.VOCODER) and not (
        measured
    ):
        out.append(
            f"memory: {arch.value} activations are not modelled per architecture "
            "(bytes-per-parameter fallback)"
        )
    if arch == Architecture.VIT:
        if not w.patch_size:
            out.append("memory: ViT tokens assume 16-pixel patches ((image/16)² + 1)")
        out.append(
            "memory: ViT activations use the GPT block formula on patch tokens; windowed or "
            "hierarchical ViTs (Swin) and ViT detection backbones are not described"
        )
    if _diffusion(w):
        out += _diffusion_notes(w, measured)
    return out


def _diffusion_notes(w: Workload, measured: bool) -> list[str]:
    """What the diffusion (UNet or transformer) memory model assumes or leaves out for ``w``."""
    out: list[str] = []
    if w.architecture == Architecture.DIFFUSION_TRANSFORMER or (w.hidden_size and w.layers):
        text = f" + {w.seq_len} text tokens" if w.seq_len else ""
        out.append(
            "memory: a diffusion transformer: DiT blocks (ViT block + adaLN-Zero, no dropout) "
            f"on {dit_image_tokens(w)} latent tokens{text}"
            + ("" if w.patch_size else " (patch 2 assumed)")
            + (
                "; architecture diffusion_transformer also counts its FLOPs from the shape"
                if w.architecture == Architecture.DIFFUSION_UNET
                else ""
            )
        )
    elif not measured and not w.forward_gflops_per_sample:
        out.append(
            "memory: UNet activations need forward_gflops_per_sample; without it they "
            "are a bytes-per-parameter guess"
        )
    if w.text_encoder_params is None or w.vae_params is None:
        out.append(
            "memory: frozen text encoder(s) / VAE not counted (give text_encoder_params "
            "and vae_params)"
        )
    out.append(
        "memory: a trained text encoder is counted as UNet-like parameters (put it in "
        "params); SDXL scripts keep the VAE in fp32, modelled at the training dtype"
    )
    return out


def _pure_bf16_notes(w: Workload) -> list[str]:
    """The sentence that says what precision ``bf16`` assumes for a full fine-tune: pure bf16
    training states, no fp32 master weights (torchtune's ``dtype: bf16``), which people
    writing "bf16" for Hugging Face's ``--bf16`` / Lightning's ``"bf16-mixed"`` (bf16
    autocast over fp32 master weights: ``bf16_amp``) do not mean; with both regimes' bytes
    per parameter unsharded (:func:`app.model.memory_states._full_bytes_per_param`: pure bf16
    AdamW 2 + 2 + 4 = 8 B, ``bf16_amp`` 6 + 4 + 8 = 18 B) and what the difference comes to
    for ``w.params``. Empty for other precisions, methods, or without ``params``."""
    if w.precision != Precision.BF16 or w.method != Method.FULL or not w.params:
        return []
    pure = sum(_full_bytes_per_param(w))
    amp_w = replace(w, precision=Precision.BF16_AMP, sharding=Sharding.NONE)
    amp = sum(_full_bytes_per_param(amp_w))
    more = (amp - pure) * float(w.params) / GIB
    return [
        f"memory: precision bf16 = pure bf16 training states (weights, gradients and optimizer "
        f"states in bf16, no fp32 master weights: {pure:g} B per parameter); Hugging Face's "
        f"--bf16 and Lightning's bf16-mixed are bf16_amp (bf16 autocast over fp32 master "
        f"weights and optimizer states: {amp:g} B per parameter unsharded), {more:.1f} GiB "
        "more for this model before any sharding"
    ]
