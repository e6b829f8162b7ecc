"""Vision memory terms that do not follow the per-GFLOP activation rule of
:mod:`app.model.memory`: a detector's label-assignment tensors.

Pure: standard library only (the workload's fields in, bytes out).
"""

from __future__ import annotations

from app.model.types import Architecture, VisionTask, Workload

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


def detect_anchors(image_size: int) -> int:
    """Anchor points of a stride-8/16/32 detection head on a square ``image_size`` input:
    ``Σ (image_size / s)²`` (8,400 at 640 px)."""
    return sum((image_size // s) ** 2 for s in DETECT_STRIDES)


def assigner_bytes_per_sample(w: Workload) -> float:
    """Label-assignment bytes per image of a detector with ``max_boxes_per_image`` given.

    ``ASSIGNER_BYTES_PER_PAIR × max_boxes_per_image × anchors``: a task-aligned assigner
    (YOLOv8/YOLO11, PP-YOLOE, TOOD) computes box × anchor tensors over the batch padded to
    its most-boxes image (``n_max_boxes``), while the forward activations are still held for
    backward. It grows with the dataset's object density, not with the network: dense
    datasets (VisDrone, crowds) OOM at batches the activation profile says fit. 0 for
    non-detectors or without ``max_boxes_per_image`` and ``image_size``.
    """
    if (
        w.architecture != Architecture.CNN
        or w.vision_task != VisionTask.DETECTION
        or not w.max_boxes_per_image
        or not w.image_size
    ):
        return 0.0
    return ASSIGNER_BYTES_PER_PAIR * w.max_boxes_per_image * detect_anchors(w.image_size)
