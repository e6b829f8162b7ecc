"""The one GPU-name normaliser against names seen in offers, benchmarks and the brief."""

from __future__ import annotations

import pytest

from app.data.load import load_extra_aliases
from app.gpu_names import CatalogGpu, GpuNameNormaliser, normalise_key
from tests.conftest import SEED_DIR


@pytest.fixture(scope="module")
def normaliser() -> GpuNameNormaliser:
    import csv

    with (SEED_DIR / "gpus.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    gpus = [
        CatalogGpu(
            r["canonical_name"],
            float(r["vram_gib"]),
            r["form_factor"],
            tuple(a.strip() for a in r["aliases"].split("|") if a.strip()),
        )
        for r in rows
    ]
    return GpuNameNormaliser(gpus, load_extra_aliases(SEED_DIR))


@pytest.mark.parametrize(
    ("raw", "vram", "hint", "expected"),
    [
        ("A100-SXM4-80GB", None, None, "A100 SXM4 80GB"),
        ("NVIDIA A100 80GB PCIe", None, None, "A100 PCIe 80GB"),
        ("A100-80GB", 80, "sxm", "A100 SXM4 80GB"),
        ("A100-80G-PCIe-NVLink", 80, "pcie", "A100 PCIe 80GB"),
        ("A100", 40, None, "A100 SXM4 40GB"),
        ("H100", 80, "pcie", "H100 PCIe 80GB"),
        ("H100 80GB HBM3", None, None, "H100 SXM 80GB"),
        ("H100 NVL", 93.58, None, "H100 NVL 94GB"),
        ("RTX 4090D", None, None, "GeForce RTX 4090 D"),
        ("4090D-24G", None, None, "GeForce RTX 4090 D"),
        ("3090-24G", None, None, "GeForce RTX 3090"),
        ("GeForce RTX 3090 Ti", None, None, "GeForce RTX 3090 Ti"),
        ("Tesla V100-SXM2-32GB", None, None, "V100 SXM2 32GB"),
        ("A10G", 22.35, None, "A10G"),
        ("A10", 24, None, "A10"),
        ("L40S", 44.99, None, "L40S"),
        ("L40", 48, None, "L40"),
        ("RTX6000", 24, None, "Quadro RTX 6000"),
        ("RTX6000-Ada", 48, None, "RTX 6000 Ada"),
        ("RTX 4080S", None, None, "GeForce RTX 4080 SUPER"),
        ("NVIDIA GH200 480GB", None, None, "GH200 96GB"),
        ("MI300X (amd_mi300x)", 192, None, "Instinct MI300X"),
    ],
)
def test_known_names(
    normaliser: GpuNameNormaliser, raw: str, vram: float | None, hint: str | None, expected: str
) -> None:
    match = normaliser.match(raw, vram_gib=vram, form_hint=hint)
    assert match is not None and match.canonical_name == expected


def test_memory_modded_card_keeps_family_and_is_flagged(normaliser: GpuNameNormaliser) -> None:
    match = normaliser.match("RTX 4090 (48 GB variant)", vram_gib=47.99)
    assert match is not None
    assert match.canonical_name == "GeForce RTX 4090" and match.vram_mismatch


def test_unknown_name_is_none(normaliser: GpuNameNormaliser) -> None:
    assert normaliser.match("Z9000", vram_gib=268.59) is None
    assert normaliser.match("Z9000") is None


@pytest.mark.parametrize(
    "raw",
    ["B300", "NVIDIA B300 SXM6 AC", "B300 SXM6 268GB"],  # AWS/Verda labels, gpu_specs.md
)
def test_b300_has_a_catalog_row(normaliser: GpuNameNormaliser, raw: str) -> None:
    match = normaliser.match(raw, vram_gib=268.59)
    assert match is not None and match.canonical_name == "B300" and not match.vram_mismatch
    # a B200 label stays a B200 (the two share the family stem)
    b200 = normaliser.match("B200", vram_gib=179.06)
    assert b200 is not None and b200.canonical_name == "B200"


def test_normalise_key() -> None:
    assert normalise_key("NVIDIA_GeForce-RTX 4090D (China)") == "rtx 4090 d"


@pytest.mark.parametrize(
    ("raw", "members"),
    [
        ("A100", ["A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB"]),
        ("a100 80gb", ["A100 SXM4 80GB", "A100 PCIe 80GB"]),
        ("A100 40GB", ["A100 SXM4 40GB", "A100 PCIe 40GB"]),
        ("A100 PCIe", ["A100 PCIe 40GB", "A100 PCIe 80GB"]),
        ("A100-SXM4-80GB", ["A100 SXM4 80GB"]),
        ("V100 32GB", ["V100 SXM2 32GB", "V100 PCIe 32GB", "V100 SXM3 32GB"]),
        ("H100 PCIe", ["H100 PCIe 80GB"]),
        # 10 GB vs 12 GB is beyond the 12 % tolerance: two different cards
        ("RTX 3080 10GB", ["GeForce RTX 3080 10GB"]),
        ("Z9000", []),
    ],
)
def test_family_members_keep_the_size_and_form_asked_for(
    normaliser: GpuNameNormaliser, raw: str, members: list[str]
) -> None:
    assert normaliser.family_members(raw) == members
