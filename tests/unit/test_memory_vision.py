"""Vision, detection and diffusion memory (issue 9): formulas against hand-worked numbers."""

from __future__ import annotations

import dataclasses

import pytest

from app.calibrate.memory_fit import family
from app.model.calibration import load_calibration
from app.model.memory import (
    GIB,
    SLACK,
    activation_bytes_per_sample,
    ema_bytes,
    estimate_memory,
    frozen_component_bytes,
    memory_notes,
    peak_memory_bytes,
    state_bytes,
    transformer_tokens,
    unet_attention_scores_bytes,
)
from app.model.memory_vision import (
    assigner_bytes_per_sample,
    detect_anchors,
    segmentation_loss_bytes_per_sample,
)
from app.model.types import (
    Architecture,
    Attention,
    Method,
    Optimizer,
    Precision,
    Sharding,
    VisionTask,
    Workload,
)
from tests.unit.helpers import resnet50

#: round constants so every expected figure below is arithmetic a reader can redo
SERVED = load_calibration()
CAL = dataclasses.replace(
    SERVED,
    memory=dataclasses.replace(
        SERVED.memory,
        cnn_activation_bytes_per_gflop=1e6,
        detection_activation_bytes_per_gflop=2e6,
        diffusion_activation_bytes_per_gflop=3e6,
    ),
)

DETECTOR = Workload(
    architecture=Architecture.CNN,
    vision_task=VisionTask.DETECTION,
    params=40_000_000,
    backbone_gflops_224=8.0,
    image_size=448,
    precision=Precision.FP16_AMP,
    optimizer=Optimizer.SGD_MOMENTUM,
)

UNET = Workload(
    architecture=Architecture.DIFFUSION_UNET,
    params=859_520_964,
    text_encoder_params=123_060_480,
    vae_params=83_653_863,
    image_size=512,
    forward_gflops_per_sample=800.0,
    precision=Precision.FP16_AMP,
    attention=Attention.SDPA,
)


def test_detector_activations_scale_backbone_gflops_by_pixels() -> None:
    # 2e6 B/GFLOP × 8 GFLOPs × (448/224)² = 6.4e7 B at 16-bit; ×2 at fp32
    assert activation_bytes_per_sample(DETECTOR, CAL) == pytest.approx(6.4e7)
    fp32 = dataclasses.replace(DETECTOR, precision=Precision.FP32)
    assert activation_bytes_per_sample(fp32, CAL) == pytest.approx(1.28e8)


def test_classification_cnn_uses_its_own_constant() -> None:
    cnn = resnet50(image_size=224)
    # 1e6 B/GFLOP × 8.178 GFLOPs; the detection constant does not apply to a classifier
    assert activation_bytes_per_sample(cnn, CAL) == pytest.approx(8.178e6)
    as_detector = dataclasses.replace(cnn, vision_task=VisionTask.DETECTION)
    # a detector without backbone_gflops_224 falls back to the forward-GFLOP constant
    assert activation_bytes_per_sample(as_detector, CAL) == pytest.approx(8.178e6)


def test_a_published_activation_count_sizes_cnn_activations() -> None:
    cnn = resnet50(image_size=224, forward_activations_per_sample=11.11)
    memory = dataclasses.replace(CAL.memory, cnn_activation_bytes_per_element=4.0)
    per_element = dataclasses.replace(CAL, memory=memory)
    # 4 B per element × 11.11e6 elements (timm's infer_macts for resnet50 at 224), not the
    # per-GFLOP constant; ×2 at fp32
    assert activation_bytes_per_sample(cnn, per_element) == pytest.approx(4.444e7)
    fp32 = dataclasses.replace(cnn, precision=Precision.FP32)
    assert activation_bytes_per_sample(fp32, per_element) == pytest.approx(8.888e7)
    # micro-batch 16 -> 64: 48 × the per-sample bytes enter the peak (gradients kept between
    # steps, so the states are the same at both micro-batches; at micro-batch 1 the AdamW
    # step's peak, 4 + 4 B a parameter = 205 MB, is above the forward's 2 + 4 B a parameter
    # + 44 MB of activations = 198 MB, so the slope starts above it)
    kept = dataclasses.replace(cnn, set_grads_to_none=False)
    one = peak_memory_bytes(kept, 1, 16, per_element)
    many = peak_memory_bytes(kept, 1, 64, per_element)
    assert (many.allocated_gib - one.allocated_gib) * GIB == pytest.approx(48 * 4.444e7)
    # without the count the per-GFLOP rule stays: 1e6 B/GFLOP × 8.178
    no_count = dataclasses.replace(cnn, forward_activations_per_sample=None)
    assert activation_bytes_per_sample(no_count, per_element) == pytest.approx(8.178e6)
    # the count is a conv-net rule: a detector keeps its per-backbone-GFLOP constant
    det = dataclasses.replace(
        DETECTOR, forward_activations_per_sample=100.0, image_size=448, backbone_gflops_224=8.0
    )
    assert activation_bytes_per_sample(det, per_element) == pytest.approx(6.4e7)
    assert any("bytes-per-activation-element" in n for n in memory_notes(cnn))


def test_vit_tokens_follow_the_patch_size() -> None:
    vit = Workload(architecture=Architecture.VIT, image_size=224)
    assert transformer_tokens(vit) == 14 * 14 + 1  # patch 16 by default: 197
    assert transformer_tokens(dataclasses.replace(vit, patch_size=14)) == 16 * 16 + 1
    assert transformer_tokens(dataclasses.replace(vit, patch_size=32)) == 7 * 7 + 1


def test_frozen_text_encoder_and_vae_in_the_training_dtype() -> None:
    # fp16 mixed precision: diffusers casts both to fp16 (2 B/param)
    assert frozen_component_bytes(UNET) == (123_060_480 * 2.0, 83_653_863 * 2.0)
    fp32 = dataclasses.replace(UNET, precision=Precision.FP32)
    assert frozen_component_bytes(fp32) == (123_060_480 * 4.0, 83_653_863 * 4.0)
    cnn = Workload(architecture=Architecture.CNN, params=1000, vae_params=10)
    assert frozen_component_bytes(cnn) == (0.0, 0.0)


def test_breakdown_shows_each_diffusion_component() -> None:
    b = peak_memory_bytes(UNET, gpu_count=1, micro_batch_size=1, cal=CAL)
    assert b.text_encoder_gib == pytest.approx(123_060_480 * 2 / GIB)
    assert b.vae_gib == pytest.approx(83_653_863 * 2 / GIB)
    # AMP UNet: 6 B weights (fp32 + 16-bit copy) + the frozen components, inside weights_gib
    unet_weights = 859_520_964 * 6.0
    assert b.weights_gib * GIB == pytest.approx(unet_weights + (123_060_480 + 83_653_863) * 2)
    # SDPA: activations are only the per-GFLOP term, 3e6 × 800
    assert b.activations_gib * GIB == pytest.approx(2.4e9)
    # fp32 gradients (4 B, 3.44 GB) do not exist when the forward ends (zero_grad sets them
    # to None); backward frees the 16-bit copies (1.72 GB) as it writes them, but a UNet has
    # no per-block split, so all activations (2.4 GB) count as alive with the last gradients:
    # max(1.72 + 2.4, 3.44 + 2.4) = 5.84 GB, i.e. 2 B a parameter of the gradients above the
    # copies + activations (1.72 GB) and 2 B a parameter freed
    p = 859_520_964
    assert b.gradients_gib * GIB == pytest.approx(2 * p)
    assert b.gradients_freed_gib * GIB == pytest.approx(2 * p)
    # then foreach AdamW's step: gradients (4 B) + its exp_avg_sq sqrt (4 B) = 6.88 GB, above
    # the 5.84 GB of the backward by 4 B x p - 2.4e9 = 1.038 GB, inside optimizer_gib
    assert b.optimizer_step_gib * GIB == pytest.approx(4 * p - 2.4e9)
    kept = dataclasses.replace(UNET, set_grads_to_none=False)
    b_kept = peak_memory_bytes(kept, gpu_count=1, micro_batch_size=1, cal=CAL)
    assert b_kept.gradients_gib * GIB == pytest.approx(859_520_964 * 4.0)
    s = state_bytes(UNET, gpu_count=1, cal=CAL)
    assert s.text_encoder == 123_060_480 * 2.0 and s.vae == 83_653_863 * 2.0


def test_eager_unet_attention_scores() -> None:
    eager = dataclasses.replace(UNET, attention=Attention.EAGER, precision=Precision.FP32)
    s = 64 * 64  # 512 px / 8 latent pixels per side
    # no checkpointing: 5 full-resolution layers keep their 8-head softmax output (4 B)
    assert unet_attention_scores_bytes(eager) == 5 * 8 * s * s * 4
    ckpt = dataclasses.replace(eager, gradient_checkpointing=True)
    # checkpointing: one layer in backward, softmax output + its gradient + score gradient
    assert unet_attention_scores_bytes(ckpt) == 8 * s * s * 12
    assert unet_attention_scores_bytes(UNET) == 0.0  # SDPA keeps no score matrix
    assert activation_bytes_per_sample(eager, CAL) == pytest.approx(
        3e6 * 800 * 2 + 5 * 8 * s * s * 4
    )


def test_notes_name_what_the_vision_model_leaves_out() -> None:
    bare_unet = dataclasses.replace(UNET, text_encoder_params=None, vae_params=None)
    assert any("text_encoder_params" in n for n in memory_notes(bare_unet))
    assert not any("text_encoder_params" in n for n in memory_notes(UNET))
    assert any("trained text encoder" in n for n in memory_notes(UNET))
    no_backbone = dataclasses.replace(DETECTOR, backbone_gflops_224=None)
    assert any("backbone_gflops_224" in n for n in memory_notes(no_backbone))
    assert any("C4/DC5" in n for n in memory_notes(DETECTOR))
    vit = Workload(architecture=Architecture.VIT, image_size=224, hidden_size=768, layers=12)
    assert any("16-pixel patches" in n for n in memory_notes(vit))
    assert any("Swin" in n for n in memory_notes(vit))
    wrong = Workload(architecture=Architecture.VIT, vision_task=VisionTask.DETECTION)
    assert any("vision_task applies to cnn" in n for n in memory_notes(wrong))
    # the notes reach the answer
    est = estimate_memory(bare_unet, vram_gib=24)
    assert any("text_encoder_params" in n for n in est.notes)


def test_reporting_family_of_a_detector() -> None:
    assert family(DETECTOR, 8) == "detection"
    cnn = dataclasses.replace(DETECTOR, vision_task=VisionTask.CLASSIFICATION)
    assert family(cnn, 1) == "CNN"
    assert family(UNET, 1) == "diffusion"


def test_eager_unet_that_does_not_fit_is_offered_memory_efficient_attention() -> None:
    # DreamBooth-like: fp32 UNet with 8-bit Adam and checkpointing, 2 images, eager attention,
    # on 12 GB. The OOM boundary is pinned at "peak = usable VRAM" (the fit's prior) so the
    # test checks the fix, not where the served boundary was last fitted (served, the SDPA
    # variant of this run is itself high: DF-2 in docs/accuracy.md)
    memory = dataclasses.replace(SERVED.memory, oom_center=0.0, oom_scale=0.05)
    cal = dataclasses.replace(SERVED, memory=memory)
    w = dataclasses.replace(
        UNET,
        precision=Precision.FP32,
        optimizer=Optimizer.ADAMW_8BIT,
        attention=Attention.EAGER,
        gradient_checkpointing=True,
        micro_batch_size=2,
        set_grads_to_none=False,  # train_dreambooth.py without --set_grads_to_none
    )
    est = estimate_memory(w, vram_gib=12, cal=cal)
    assert est.oom_risk.value == "high"
    labels = [f.label for f in est.fixes]
    assert "memory-efficient attention (SDPA/xformers)" in labels
    fix = next(f for f in est.fixes if f.label.startswith("memory-efficient"))
    assert dict(fix.changes) == {"attention": "sdpa"}
    # the fix removes exactly the eager score tensors of the recomputed block
    # (8 heads × 4096² × 12 B × 2 images), times the allocator slack
    saved = 8 * 4096**2 * 12 * 2 * SLACK / GIB
    assert est.peak_memory_gib - fix.peak_memory_gib == pytest.approx(saved, rel=1e-6)


def test_ema_copy_is_four_bytes_per_trained_parameter() -> None:
    ema = dataclasses.replace(UNET, ema_weights=True)
    assert ema_bytes(ema, 1) == 859_520_964 * 4.0
    assert ema_bytes(UNET, 1) == 0.0
    b = peak_memory_bytes(ema, gpu_count=1, micro_batch_size=1, cal=CAL)
    plain = peak_memory_bytes(UNET, gpu_count=1, micro_batch_size=1, cal=CAL)
    assert b.ema_gib == pytest.approx(859_520_964 * 4 / GIB)
    assert b.optimizer_gib - plain.optimizer_gib == pytest.approx(b.ema_gib)
    # LoRA: the EMA shadows only the adapters; FSDP/ZeRO-3 shards it
    lora = Workload(
        architecture=Architecture.TRANSFORMER_DECODER,
        params=1_000_000,
        hidden_size=64,
        layers=2,
        method=Method.LORA,
        lora_rank=4,
        ema_weights=True,
    )
    # 7 adapted linears per layer, rank 4: 4 × 2 layers × (4·(64+64) + 3·(64+256)) = 11,776
    assert ema_bytes(lora, 1) == 4.0 * 11_776
    full = dataclasses.replace(lora, method=Method.FULL, sharding=Sharding.FSDP)
    assert ema_bytes(full, 4) == 4.0 * 1_000_000 / 4


def test_a_detectors_assigner_grows_with_boxes_times_anchors() -> None:
    # stride 8/16/32 heads: 80² + 40² + 20² anchors at 640 px, 60² + 30² + 15² at 480 px
    assert detect_anchors(640) == 8400 and detect_anchors(480) == 4725
    yolo = dataclasses.replace(DETECTOR, image_size=640, backbone_gflops_224=None)
    base = activation_bytes_per_sample(yolo, CAL)
    dense = dataclasses.replace(yolo, max_boxes_per_image=660)
    # 32 B × 660 boxes × 8,400 anchors per image, on top of the activations
    assert assigner_bytes_per_sample(dense) == 32 * 660 * 8400 == 177_408_000
    assert activation_bytes_per_sample(dense, CAL) == pytest.approx(base + 177_408_000)
    # checkpointing does not shrink it (the assigner runs after the forward)
    ckpt = dataclasses.replace(dense, gradient_checkpointing=True)
    assert activation_bytes_per_sample(ckpt, CAL) - 177_408_000 == pytest.approx(
        activation_bytes_per_sample(dataclasses.replace(yolo, gradient_checkpointing=True), CAL)
    )
    # a classifier has no assigner; a detector without the box count is told so
    assert (
        assigner_bytes_per_sample(dataclasses.replace(dense, vision_task=VisionTask.CLASSIFICATION))
        == 0
    )
    assert any("max_boxes_per_image" in n for n in memory_notes(yolo, CAL))
    assert not any("max_boxes_per_image" in n for n in memory_notes(dense, CAL))


def test_a_segmentation_loss_is_scored_at_the_input_resolution() -> None:
    seg = dataclasses.replace(
        resnet50(image_size=512), vision_task=VisionTask.SEGMENTATION, num_classes=150
    )
    # 12 B × 150 classes × 512² pixels = 471,859,200 B an image (0.44 GiB)
    assert segmentation_loss_bytes_per_sample(seg) == 12 * 150 * 512**2 == 471_859_200
    plain = dataclasses.replace(seg, num_classes=None)
    assert activation_bytes_per_sample(seg, CAL) == pytest.approx(
        activation_bytes_per_sample(plain, CAL) + 471_859_200
    )
    # a classifier or a detector has none; a segmentation net without classes is told so
    assert (
        segmentation_loss_bytes_per_sample(
            dataclasses.replace(seg, vision_task=VisionTask.DETECTION)
        )
        == 0
    )
    assert any("num_classes" in n for n in memory_notes(plain, CAL))
    assert not any("num_classes" in n for n in memory_notes(seg, CAL))
