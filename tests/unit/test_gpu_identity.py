"""The stored VRAM is the matched GPU's own size when the listing is its full memory; a
detected mismatch becomes a note."""

from __future__ import annotations

import pytest

from app.gpu_names import GpuIdentity, GpuMatch, mismatch_note, offer_vram, stored_vram_gib


def test_only_the_matched_gpus_size_is_stored() -> None:
    # an L4 (24 GB) listed at 178.75 GiB is kept as listed, not snapped to B200's 180
    assert stored_vram_gib(178.75, 24.0) == 178.75
    assert stored_vram_gib(23.99, 24.0) == 24.0  # 24564 MiB on a 4090
    assert stored_vram_gib(47.99, None) == 47.99  # no match: as listed


@pytest.mark.parametrize(
    ("listed", "catalog", "stored"),
    [
        (44.99, 48.0, 48.0),  # Vast L40S: 46068 MiB, the driver's reading (0.937)
        (79.65, 80.0, 80.0),  # Vast H100 SXM
        (179.06, 180.0, 180.0),  # AWS/Vast B200
        (22.35, 24.0, 24.0),  # AWS A10G/L4 (0.931)
        (43.0, 48.0, 43.0),  # 0.896: below the band, kept
        (192.0, 186.0, 186.0),  # "192 GB" of a GB200's 186 GiB (1.032)
        (52.0, 48.0, 52.0),  # 1.083: above the band, kept
        (48.0, 48.0, 48.0),
    ],
)
def test_a_listing_within_the_full_card_band_stores_the_catalog_size(
    listed: float, catalog: float, stored: float
) -> None:
    assert stored_vram_gib(listed, catalog) == stored


def test_slices_keep_their_share() -> None:
    # a slice listing its own memory (3 GiB of a 24 GiB L4 at 1/8) keeps it
    assert stored_vram_gib(3.0, 24.0, 0.125) == 3.0
    # a half card listing the whole card's driver reading gets the card's size (the share is
    # taken from it by app.model.memory.vram_per_gpu_gib)
    assert stored_vram_gib(44.99, 48.0, 0.5) == 48.0
    # a 0.95 slice listing its own 45.6 GiB of 48 keeps it
    assert stored_vram_gib(45.6, 48.0, 0.95) == 45.6


def test_the_listed_figure_stays_visible_in_the_note() -> None:
    identity = GpuIdentity("match", GpuMatch("L40S", "alias"))
    assert offer_vram(identity, 44.99, 48.0, 1) == (
        48.0,
        "listed VRAM 44.99 GiB per GPU is the driver-reported capacity of the L40S's 48 GiB; "
        "stored as 48",
    )
    assert offer_vram(identity, 48.0, 48.0, 1) == (48.0, None)
    unknown = GpuIdentity("none", note="GPU 'X' matches no catalog model")
    assert offer_vram(unknown, 44.99, None, 1) == (44.99, "GPU 'X' matches no catalog model")


def test_a_vram_mismatch_is_described() -> None:
    match = GpuMatch("GeForce RTX 4090", "family", vram_mismatch=True)
    assert mismatch_note(match, 48.0, 24.0) == (
        "listed VRAM 48 GiB per GPU differs from the GeForce RTX 4090's 24 GiB datasheet size "
        "(kept as listed)"
    )
    assert mismatch_note(GpuMatch("L4", "alias"), 24.0, 24.0) is None


def _catalog():  # type: ignore[no-untyped-def]
    from tests.unit.helpers import seed_normaliser

    return seed_normaliser()


def test_rtx_6000_is_resolved_by_vram_and_instance_name_or_reported() -> None:
    n = _catalog()
    quadro = n.identify("RTX 6000", vram_gib=24)
    assert quadro.status == "match" and quadro.match.canonical_name == "Quadro RTX 6000"  # type: ignore[union-attr]
    open_ = n.identify("RTX 6000", vram_gib=48)
    assert open_.status == "ambiguous" and set(open_.candidates) == {"RTX A6000", "RTX 6000 Ada"}
    assert "is ambiguous" in (open_.note or "")
    ada = n.identify("RTX 6000", vram_gib=48, context=("1x RTX_6000Ada",))
    assert ada.status == "match" and ada.match.canonical_name == "RTX 6000 Ada"  # type: ignore[union-attr]
    assert n.identify("RTX 6000").status == "ambiguous"


def test_bare_h100_needs_context_and_a100_takes_it_from_the_instance_name() -> None:
    n = _catalog()
    bare = n.identify("H100", vram_gib=80)
    assert bare.status == "ambiguous"
    assert set(bare.candidates) == {"H100 SXM 80GB", "H100 PCIe 80GB"}
    sxm = n.identify("H100", vram_gib=80, form_hint="sxm")
    assert sxm.status == "match" and sxm.match.canonical_name == "H100 SXM 80GB"  # type: ignore[union-attr]
    a100 = n.identify("A100", context=("gpu_8x_a100_80gb_sxm4",))
    assert a100.status == "match" and a100.match.canonical_name == "A100 SXM4 80GB"  # type: ignore[union-attr]
    assert n.identify("GTX 1660 S").status == "none"


def test_a_slice_listing_its_own_memory_is_matched_to_the_card_it_is_cut_from() -> None:
    n = _catalog()
    # 3 GiB = 1/8 of a 24 GB L4: the slice's memory, not a mismatch
    eighth = n.identify("L4", vram_gib=3, gpu_count=0.125)
    assert eighth.match is not None and eighth.match.canonical_name == "L4"
    assert not eighth.match.vram_mismatch
    # 4 GB at 0.05 of a card = 80 GB: the 80 GB A100, not the 40 GB one nearer to 4
    a100 = n.identify("A100", vram_gib=4, gpu_count=0.05, form_hint="pcie")
    assert a100.match is not None and a100.match.canonical_name == "A100 PCIe 80GB"
    assert not a100.match.vram_mismatch
    # the whole card's VRAM with a share is read as the card (the scrapers' contract)
    whole = n.identify("A10", vram_gib=24, gpu_count=1 / 6)
    assert whole.match is not None and not whole.match.vram_mismatch
    # one whole L4 listing 3 GiB stays a flagged mismatch
    one = n.identify("L4", vram_gib=3)
    assert one.match is not None and one.match.vram_mismatch


def test_verda_instance_types_name_the_board_and_the_vram() -> None:
    n = _catalog()
    # "1H100.80S.32V": 80 GB SXM (Verda's naming, ../shared/docs/providers.md §7.5)
    verda = n.identify("H100", vram_gib=80, context=("1H100.80S.32V",))
    assert verda.status == "match" and verda.match.canonical_name == "H100 SXM 80GB"  # type: ignore[union-attr]
    # without the naming scheme the same listing stays open
    assert n.identify("H100", vram_gib=80, context=("1H100.32V",)).status == "ambiguous"


@pytest.mark.parametrize(
    ("label", "instance_type"),
    [
        ("H100", "p5.4xlarge"),  # AWS P5, one GPU of the HGX board
        ("H100", "p5.48xlarge"),
        ("H100 80GB", "a3-highgpu-1g"),  # GCP A3 High, one GPU
        ("H100 80GB", "a3-megagpu-8g"),
    ],
)
def test_aws_p5_and_gcp_a3_instance_families_are_sxm_boards(label: str, instance_type: str) -> None:
    n = _catalog()
    got = n.identify(label, vram_gib=80, context=(instance_type,))
    assert got.status == "match" and got.match.canonical_name == "H100 SXM 80GB"  # type: ignore[union-attr]
    # a look-alike that is no such family decides nothing
    assert n.identify(label, vram_gib=80, context=("p50.xlarge",)).status == "ambiguous"
    assert n.identify(label, vram_gib=80, context=("a2-highgpu-1g",)).status == "ambiguous"


def test_the_could_also_be_list_keeps_to_what_the_label_leaves_open() -> None:
    n = _catalog()
    sxm = n.identify("H100-SXM", vram_gib=80)
    assert sxm.match is not None and sxm.match.canonical_name == "H100 SXM 80GB"
    assert "PCIe" not in (sxm.note or "")
    assert "H100 SXM 96GB HBM2e (500 W)" in (sxm.note or "")  # same label, other size
    pcie = n.identify("H100 PCIe", vram_gib=80)
    assert pcie.note is None  # the label names one model


def test_a_bare_family_name_without_a_provider_is_not_decided_by_a_convention() -> None:
    n = _catalog()
    # the catalog's "A100 (SkyPilot name = 40GB)" alias is a tool's convention for the bare
    # label; a name typed without a provider names the whole family
    assert n.identify("A100").status == "match"
    typed = n.identify("A100", conventions=False)
    assert typed.status == "ambiguous" and len(typed.candidates) == 4
    told = n.identify("A100", vram_gib=80, form_hint="pcie", conventions=False)
    assert told.match is not None and told.match.canonical_name == "A100 PCIe 80GB"
    assert n.identify("A100 SXM4 80GB", conventions=False).status == "match"


def test_vultrs_nvidia_a100_is_its_own_spelling_not_every_bare_a100() -> None:
    n = _catalog()
    # gpu_aliases.csv: Vultr's gpu_type "NVIDIA_A100" is the A100 80GB PCIe
    # (../shared/docs/providers.md §10); it normalises to the bare family key "a100" but
    # applies to that spelling only
    whole = n.identify("NVIDIA_A100", vram_gib=80, context=("vcg-a100-12c-120g-80vram",))
    assert whole.match is not None and whole.match.canonical_name == "A100 PCIe 80GB"
    # a half slice listing the whole card (80 GB at 0.5), and one listing no VRAM
    half = n.identify("NVIDIA_A100", vram_gib=80, gpu_count=0.5)
    assert half.match is not None and half.match.canonical_name == "A100 PCIe 80GB"
    bare = n.identify("nvidia_a100 ", gpu_count=0.5)  # case and outer space aside
    assert bare.match is not None and bare.match.canonical_name == "A100 PCIe 80GB"
    assert n.match("NVIDIA_A100") == n.match("NVIDIA_A100", vram_gib=80)
    # another provider's bare "A100" at 80 GB with no form is not taken for Vultr's PCIe card
    other = n.identify("A100", vram_gib=80)
    assert other.status == "ambiguous"
    assert set(other.candidates) == {"A100 SXM4 80GB", "A100 PCIe 80GB"}
    # the VRAM still contradicts the convention: 40 GB is not the 80 GB PCIe card
    forty = n.identify("NVIDIA_A100", vram_gib=40)
    assert forty.status == "ambiguous"
    assert set(forty.candidates) == {"A100 SXM4 40GB", "A100 PCIe 40GB"}
    # the bare label keeps the catalog's own convention (SkyPilot's "A100" = 40 GB)
    skypilot = n.identify("A100", vram_gib=40)
    assert skypilot.match is not None and skypilot.match.canonical_name == "A100 SXM4 40GB"


def test_a_label_decided_by_the_alias_table_says_so() -> None:
    # "A100 80GB" leaves SXM4 and PCIe open; providers list "A100-80GB" for SXM4 boards
    # (seed_data/gpu_aliases.csv), which decides it at ingest: the note names that, not the
    # VRAM both cards share
    a100 = _catalog().identify("A100 80GB")
    assert a100.status == "match" and a100.match.canonical_name == "A100 SXM4 80GB"  # type: ignore[union-attr]
    assert "could also be A100 PCIe 80GB" in (a100.note or "")
    assert "the alias table" in (a100.note or "")
