"""VRAM snapping uses only the matched GPU's size; a detected mismatch becomes a note."""

from __future__ import annotations

from app.db.ingest import gpu_note, snap_vram
from app.gpu_names import GpuMatch


def test_snapping_only_to_the_matched_gpus_size() -> None:
    # an L4 (24 GB) listed at 178.75 GiB is kept as listed, not snapped to B200's 180
    assert snap_vram(178.75, (24.0,)) == 178.75
    assert snap_vram(23.99, (24.0,)) == 24.0  # 24564 MiB on a 4090
    assert snap_vram(47.99, ()) == 47.99  # no match: as listed


def test_a_vram_mismatch_is_described() -> None:
    match = GpuMatch("GeForce RTX 4090", "family", vram_mismatch=True)
    assert gpu_note(match, 48.0, 24.0) == (
        "listed VRAM 48 GiB per GPU differs from the GeForce RTX 4090's 24 GB datasheet size "
        "(kept as listed)"
    )
    assert gpu_note(GpuMatch("L4", "alias"), 24.0, 24.0) is None
