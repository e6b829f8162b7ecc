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
        "listed VRAM 48 GiB per GPU differs from the GeForce RTX 4090's 24 GiB datasheet size "
        "(kept as listed)"
    )
    assert gpu_note(GpuMatch("L4", "alias"), 24.0, 24.0) is None


def _catalog():  # type: ignore[no-untyped-def]
    import csv

    from app.db.seed import _split, load_extra_aliases
    from app.gpu_names import CatalogGpu, GpuNameNormaliser
    from app.settings import PROJECT_ROOT

    seed = PROJECT_ROOT / "seed_data"
    with (seed / "gpus.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    gpus = [
        CatalogGpu(
            r["canonical_name"],
            float(r["vram_gib"]),
            r["form_factor"] or None,
            tuple(_split(r["aliases"])),
        )
        for r in rows
    ]
    return GpuNameNormaliser(gpus, load_extra_aliases(seed))


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
