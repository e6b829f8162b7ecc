"""Pin the leave-one-source-out accuracy of the memory model (issue 9 targets).

Targets: median peak APE ≤ 12 %, OOM recall ≥ 90 %, fit specificity ≥ 90 %, and torchtune's
single-device Llama 3.1 8B full fine-tune (T-11) within 15 % and not ``high``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.calibrate.dataset import load_dataset
from app.calibrate.memory_fit import leave_one_source_out, load_cases, summarize
from app.settings import PROJECT_ROOT


@pytest.fixture(scope="module")
def cases():  # type: ignore[no-untyped-def]
    return load_cases(load_dataset(PROJECT_ROOT / "seed_data"))


@pytest.fixture(scope="module")
def held_out(cases):  # type: ignore[no-untyped-def]
    return leave_one_source_out(cases)


def test_at_least_100_cases_from_10_sources(cases) -> None:  # type: ignore[no-untyped-def]
    assert len(cases) >= 100
    assert len({c.group for c in cases}) >= 10
    assert sum(c.in_scope for c in cases) >= 80


def test_leave_one_source_out_verdicts(held_out) -> None:  # type: ignore[no-untyped-def]
    s = summarize(r for r in held_out if r.case.in_scope)
    assert s.n_oom >= 35 and s.n_fit >= 160
    assert s.median_ape <= 0.12


def test_leave_one_source_out_oom_recall_meets_target(held_out) -> None:  # type: ignore[no-untyped-def]
    s = summarize(r for r in held_out if r.case.in_scope)
    # 35 of 38: DF-4 (SD DreamBooth + text encoder on 16 GB), C-18a and C-18c (Alpaca FSDP on
    # 4x A100 40GB) are called below high; two more misses would take it under 90 %
    missed = sorted(
        r.case.case_id
        for r in held_out
        if r.case.in_scope and r.case.outcome == "oom" and r.risk != "high"
    )
    assert set(missed) <= {"C-18a", "C-18c", "DF-4"}  # a fixed miss may leave, none may join
    assert s.oom_recall >= 0.90


def test_leave_one_source_out_fit_specificity_meets_target(held_out) -> None:  # type: ignore[no-untyped-def]
    s = summarize(r for r in held_out if r.case.in_scope)
    # 149 of 161: CNNs sized by their published activation count (timm's VGG-13/16/19, wide
    # ResNet-50, ResNeXt-50 and ResNet-50 batches on a 3090 are still called high), ViTs
    # without dropout masks (ViT-L/14 at 48 still high), LLM fits: universal-llm-trainer's
    # C-6a/C-6b (Llama-3.1-8B pure bf16 on 80 GB, 78 GiB reserved measured): foreach AdamW's
    # step holds 2 + 2 + 4 B of states a parameter + a 2 B sqrt temporary = 74.8 GiB
    # allocated, 82.3 GiB with the 10 % slack prior, over the card's 79.1 GiB
    called_high = sorted(
        r.case.case_id
        for r in held_out
        if r.case.in_scope and r.case.outcome == "fits" and r.risk == "high"
    )
    assert called_high == [
        "C-20",
        "C-3a",
        "C-6a",
        "C-6b",
        "PD-3",
        "TM-27",
        "TM-36",
        "TM-44",
        "TM-45",
        "TM-47",
        "TM-49",
        "TM-57",
    ]
    assert s.fit_specificity >= 0.90


def test_torchtune_8b_full_single_device_on_4090(held_out) -> None:  # type: ignore[no-untyped-def]
    r = next(r for r in held_out if r.case.case_id == "T-11")
    assert r.case.observed_gib == 18.9 and r.case.gpu == "GeForce RTX 4090"
    assert r.ape is not None and r.ape <= 0.15
    assert r.risk != "high"


@pytest.mark.refit
def test_memory_constants_are_reproduced_by_the_fit_script() -> None:
    # the refit against app/model/calibration.json, within the tool's stated tolerance
    # (REL_TOL 1e-6, ABS_TOL 1e-9): every difference is printed
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "fit_memory.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_vision_cases_load_with_their_family_fields(cases) -> None:  # type: ignore[no-untyped-def]
    by_id = {c.case_id: c for c in cases}
    d2 = by_id["D2-1"]  # detectron2 Faster R-CNN R50-FPN 1x
    assert d2.family == "detection" and d2.in_scope
    assert d2.workload.backbone_gflops_224 == pytest.approx(8.178)
    assert d2.workload.image_size == 1344 and d2.workload.micro_batch_size == 2
    assert d2.workload.params == 41_755_286
    assert by_id["NV-1"].family == "CNN" and by_id["NV-1"].workload.forward_gflops_per_sample
    sd = by_id["DF-1"].workload
    assert sd.text_encoder_params == 123_060_480 and sd.vae_params == 83_653_863
    assert by_id["DF-4"].in_scope and by_id["DF-4"].outcome == "oom"
    assert not by_id["D2-12"].in_scope  # C4 head: out of scope
    vit = by_id["TM-13"]  # timm vit_base_patch16_224 at its recorded batch 192 on a 3090
    assert vit.family == "ViT" and vit.outcome == "fits" and vit.gpu == "GeForce RTX 3090"
    assert vit.workload.micro_batch_size == 192 and vit.workload.patch_size == 16
    assert (vit.workload.layers, vit.workload.hidden_size, vit.workload.heads) == (12, 768, 12)
    assert by_id["TM-14"].outcome == "oom" and by_id["TM-14"].workload.micro_batch_size == 256
    cnn = by_id["TM-36"]  # timm resnet50 at 512: 2 x 4.11 GMACs, 11.11 M activations
    assert cnn.family == "CNN" and cnn.workload.forward_gflops_per_sample == pytest.approx(8.22)
    assert cnn.workload.forward_activations_per_sample == pytest.approx(11.11)
    assert by_id["TM-59"].workload.forward_activations_per_sample == pytest.approx(21.23)
    # timm's benchmark trains its ViTs at drop rate 0: no dropout masks
    assert not vit.workload.dropout and by_id["TM-33"].workload.dropout
    assert by_id["C-18c"].group == "stanford-alpaca-308" and by_id["C-18c"].outcome == "oom"


def test_non_square_cnn_input_becomes_the_square_of_equal_pixels() -> None:
    from app.calibrate.validate import case_workload

    ds = load_dataset(PROJECT_ROOT / "seed_data")
    row = next(r for r in ds.memory_cases if r["case_id"] == "D2-1")
    w = case_workload(ds, {**row, "image_size": "1333x800"})
    assert w is not None and w.image_size == 1033  # sqrt(1333 × 800) = 1032.7
    vit_row = {**row, "architecture": "transformer_encoder", "image_size": "1333x800"}
    assert case_workload(ds, vit_row) is None  # hierarchical-ViT detectors stay outside
