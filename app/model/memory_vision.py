"""Vision memory terms that do not follow the per-GFLOP activation rule of
:mod:`app.model.memory`: a detector's label-assignment tensors and a segmentation net's
full-resolution loss.

Pure: standard library only (the workload's fields in, bytes out).
"""

from __future__ import annotations

from app.model.memory_dtypes import activation_bytes
from app.model.types import Architecture, Attention, VisionTask, Workload

#: Output strides of a YOLOv8/YOLO11 ``Detect`` head (P3, P4, P5): one anchor point per
#: output pixel at each (ultralytics/nn/modules/head.py ``Detect.stride``; 8,400 anchors at
#: 640 px, 4,725 at 480 px).
DETECT_STRIDES = (8, 16, 32)
#: Bytes alive per (image, ground-truth box, anchor) triple while a task-aligned assigner
#: selects candidates: ultralytics ``TaskAlignedAssigner.select_candidates_in_gts``
#: (ultralytics/utils/tal.py) builds the fp32 differences ``xy_centers - lt`` and
#: ``rb - xy_centers`` (2 values each, 8 + 8 B) and their fp32 concatenation (4 values,
#: 16 B) over ``(batch · n_max_boxes, anchors)`` before reducing them. The 3.22 GiB
#: allocation of ultralytics issue #4679 (YOLOv8s, 640 px, batch 39 on VisDrone) is that
#: concatenation at 16 B × 39 × 8,400 anchors × about 660 boxes.
ASSIGNER_BYTES_PER_PAIR = 32.0
#: Bytes per (class, pixel) element alive in a segmentation loss's backward: mmsegmentation's
#: decode head resizes its logits to the label size (``BaseDecodeHead.loss_by_feat``:
#: ``resize(seg_logits, size=seg_label.shape[2:], mode='bilinear')``) and scores them with
#: ``F.cross_entropy``, which keeps its fp32 log-softmax output (4 B, fp32 under autocast
#: too: PyTorch's autocast runs ``log_softmax``/``cross_entropy`` in fp32); its backward
#: adds the gradient of that output (4 B) and of its input (4 B).
SEGMENTATION_LOSS_BYTES_PER_ELEMENT = 12.0


def detect_anchors(image_size: int) -> int:
    """Anchor points of a stride-8/16/32 detection head on a square ``image_size`` input:
    ``Σ (image_size / s)²`` (8,400 at 640 px)."""
    return sum((image_size // s) ** 2 for s in DETECT_STRIDES)


def _task_sizes(w: Workload, task: VisionTask, count: int | None) -> tuple[int, int] | None:
    """``(count, image_size)`` of a conv net ``w`` trained for ``task`` with both given
    (``count``: the task's size field, boxes per image or classes), else ``None``."""
    if w.architecture != Architecture.CNN or w.vision_task != task or not count:
        return None
    return (count, w.image_size) if w.image_size else None


def assigner_bytes_per_sample(w: Workload) -> float:
    """Label-assignment bytes per image of a detector with ``max_boxes_per_image`` given.

    ``ASSIGNER_BYTES_PER_PAIR × max_boxes_per_image × anchors``: a task-aligned assigner
    (YOLOv8/YOLO11, PP-YOLOE, TOOD) computes box × anchor tensors over the batch padded to
    its most-boxes image (``n_max_boxes``), while the forward activations are still held for
    backward. It grows with the dataset's object density, not with the network: dense
    datasets (VisDrone, crowds) OOM at batches the activation profile says fit. 0 for
    non-detectors or without ``max_boxes_per_image`` and ``image_size``.
    """
    sized = _task_sizes(w, VisionTask.DETECTION, w.max_boxes_per_image)
    if sized is None:
        return 0.0
    boxes, side = sized
    return ASSIGNER_BYTES_PER_PAIR * boxes * detect_anchors(side)


def segmentation_loss_bytes_per_sample(w: Workload) -> float:
    """Loss-side bytes per image of a semantic-segmentation net with ``num_classes`` given:
    ``SEGMENTATION_LOSS_BYTES_PER_ELEMENT × num_classes × image_size²`` (the logits at the
    input resolution, scored per pixel; 0.44 GiB for ADE20K's 150 classes at 512²). A
    decode head's FLOPs are in ``forward_gflops_per_sample``, its upsampled logits and their
    cross-entropy are not (upsampling and the loss cost no multiply-adds). An auxiliary head
    (UPerNet's FCN) scores a second set: give its classes twice. 0 otherwise.
    """
    sized = _task_sizes(w, VisionTask.SEGMENTATION, w.num_classes)
    if sized is None:
        return 0.0
    classes, side = sized
    return SEGMENTATION_LOSS_BYTES_PER_ELEMENT * classes * side**2


def task_notes(w: Workload) -> list[str]:
    """What a detector's or segmentation net's head memory leaves out for ``w``: the
    assigner without ``max_boxes_per_image``, the full-resolution loss without
    ``num_classes``."""
    if w.architecture != Architecture.CNN:
        return []
    if w.vision_task == VisionTask.DETECTION and not w.max_boxes_per_image:
        return [
            "memory: a detector's label assignment (YOLOv8-style box × anchor tensors) is not "
            "counted: give max_boxes_per_image for dense datasets"
        ]
    if w.vision_task == VisionTask.SEGMENTATION and not w.num_classes:
        return [
            "memory: a segmentation net's full-resolution logits and cross-entropy are not "
            "counted: give num_classes"
        ]
    return []


#: Stable Diffusion's VAE downsamples the image 8× per side (Rombach et al. arXiv:2112.10752,
#: f = 8): a 512×512 image is a 64×64 latent.
UNET_LATENT_DOWNSAMPLE = 8
#: SD 1.x UNet (UNet2DConditionModel config of stable-diffusion v1: attention_head_dim 8,
#: i.e. 8 heads in diffusers' naming; CrossAttnDownBlock2D first; layers_per_block 2):
#: self-attention over every latent pixel runs in 2 down + 3 up transformer blocks.
UNET_TOP_ATTENTION_HEADS = 8
UNET_TOP_ATTENTION_LAYERS = 5


def unet_attention_scores_bytes(w: Workload) -> float:
    """Eager attention score tensors of a diffusion UNet for one sample, in bytes.

    Without a memory-efficient kernel (``attention`` ``eager``: no xformers/SDPA) each
    self-attention over the ``s = (image_size / 8)²`` latent pixels materialises ``heads · s²``
    scores. The UNet's attention has no dropout, so autograd keeps only the softmax output for
    backward (``bytes`` per element: softmax and the following matmul both save that one
    tensor): all ``UNET_TOP_ATTENTION_LAYERS`` full-resolution layers keep it without
    checkpointing. With checkpointing only the block being recomputed holds scores, and its
    backward has the softmax output, its gradient and the gradient of the scores alive at once
    (``3 · bytes`` per element). Layout of the SD 1.x UNet (constants above); 0 for other
    architectures, SDPA or without ``image_size``.
    """
    if (
        w.architecture != Architecture.DIFFUSION_UNET
        or w.attention != Attention.EAGER
        or not w.image_size
        or (w.hidden_size and w.layers)  # a diffusion transformer: the block formula's scores
    ):
        return 0.0
    s = (w.image_size // UNET_LATENT_DOWNSAMPLE) ** 2
    nbytes = activation_bytes(w.precision)
    per_element = 3 * nbytes if w.gradient_checkpointing else UNET_TOP_ATTENTION_LAYERS * nbytes
    return float(UNET_TOP_ATTENTION_HEADS * s * s * per_element)
