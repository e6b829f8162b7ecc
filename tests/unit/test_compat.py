"""Capability table and the precision a GPU really runs (app.model.compat)."""

from __future__ import annotations

from dataclasses import replace

from app.model.compat import (
    capabilities,
    compatibility_warnings,
    driver_warnings,
    effective_precision,
    min_cuda_for_cc,
)
from app.model.types import GpuSpec, Method, Precision, WarningCode
from app.model.vocabulary import parse_version
from tests.unit.helpers import A100_80_SXM, GPT2, MI300X, RTX_4090

V100 = GpuSpec(
    name="V100 SXM2 32GB",
    architecture="Volta",
    compute_capability="7.0",
    vram_gib=32,
    fp32_tflops=15.7,
    fp16_tflops=125,
    fp16_fp32acc_tflops=125,
)
MI250X = replace(MI300X, name="Instinct MI250X", architecture="CDNA 2", fp8_tflops=None)
H100 = replace(A100_80_SXM, name="H100 SXM 80GB", architecture="Hopper", compute_capability="9.0")
A100 = replace(A100_80_SXM, compute_capability="8.0")
ADA = replace(RTX_4090, compute_capability="8.9")


def test_parse_version() -> None:
    assert parse_version("12.1") == (12, 1)
    assert parse_version("12") == (12, 0)
    assert parse_version("x") is None and parse_version(None) is None


def test_capability_table() -> None:
    assert capabilities(V100).software_stack == "cuda" and not capabilities(V100).bf16
    assert capabilities(A100).bf16 and not capabilities(A100).fp8
    assert capabilities(ADA).fp8 and capabilities(H100).fp8
    amd = capabilities(MI300X)
    assert amd.software_stack == "rocm" and amd.bf16 and amd.fp8
    assert not capabilities(MI250X).fp8


def test_effective_precision() -> None:
    # no bf16 before compute capability 8.0: HF's Trainer refuses --bf16, fp16 AMP is what runs
    run, w = effective_precision(V100, Precision.BF16_AMP)
    assert run == Precision.FP16_AMP and w is not None and w.code == WarningCode.BF16_UNSUPPORTED
    assert w.values["runs_at_precision"] == "fp16_amp"
    run, w = effective_precision(V100, Precision.BF16)
    assert run == Precision.FP16_AMP and w is not None
    # QLoRA's 4-bit base has no fp8 matmul path: the 16-bit rate, with its own warning
    run, w = effective_precision(H100, Precision.FP8, method=Method.QLORA)
    assert run == Precision.BF16_AMP and w is not None and w.code == WarningCode.FP8_QUANTISED_BASE
    run, w = effective_precision(H100, Precision.FP8, method=Method.LORA)
    assert run == Precision.FP8 and w is None
    run, w = effective_precision(A100, Precision.FP8)
    assert run == Precision.BF16_AMP and w is not None and w.code == WarningCode.FP8_UNSUPPORTED
    run, w = effective_precision(V100, Precision.FP8)
    assert run == Precision.FP16_AMP and w is not None
    run, w = effective_precision(MI250X, Precision.FP8)
    assert run == Precision.BF16_AMP and w is not None
    for gpu, p in (
        (A100, Precision.BF16),
        (H100, Precision.FP8),
        (ADA, Precision.FP8),
        (MI300X, Precision.FP8),
        (V100, Precision.FP16_AMP),
    ):
        assert effective_precision(gpu, p) == (p, None)


def test_compatibility_warnings() -> None:
    old = replace(GPT2, cuda_build="11.7")
    assert [w.code for w in compatibility_warnings(old, H100)] == [
        WarningCode.CUDA_BUILD_TOO_OLD_FOR_GPU
    ]
    assert compatibility_warnings(old, A100) == []
    new = replace(GPT2, cuda_build="13.0")
    assert [w.code for w in compatibility_warnings(new, V100)] == [
        WarningCode.CUDA_BUILD_TOO_NEW_FOR_GPU
    ]
    fa = replace(GPT2, cuda_only_libraries=("flash-attn",))
    assert [w.code for w in compatibility_warnings(fa, V100)] == [
        WarningCode.COMPUTE_CAPABILITY_TOO_LOW
    ]
    assert compatibility_warnings(fa, A100) == [] and compatibility_warnings(fa, MI300X) == []
    bnb = replace(GPT2, cuda_only_libraries=("bitsandbytes",))
    assert [w.code for w in compatibility_warnings(bnb, MI300X)] == [WarningCode.CUDA_ONLY_LIBRARY]
    assert compatibility_warnings(bnb, H100) == []
    cc = replace(GPT2, min_compute_capability="8.0")
    assert compatibility_warnings(cc, A100) == []
    assert compatibility_warnings(cc, V100)[0].code == WarningCode.COMPUTE_CAPABILITY_TOO_LOW


def test_a_cuda_12_8_build_has_no_b300_kernels() -> None:
    # sm_103 (B300) first appears in CUDA 12.9; 12.8 knows sm_100 (B200) only
    b300 = replace(H100, name="B300", architecture="Blackwell", compute_capability="10.3")
    b200 = replace(b300, name="B200", compute_capability="10.0")
    build = replace(GPT2, cuda_build="12.8")
    (w,) = compatibility_warnings(build, b300)
    assert w.code == WarningCode.CUDA_BUILD_TOO_OLD_FOR_GPU
    assert w.values["min_cuda_for_gpu"] == "12.9"
    assert compatibility_warnings(build, b200) == []
    assert compatibility_warnings(replace(GPT2, cuda_build="12.9"), b300) == []


def test_a_driver_older_than_the_gpu_warns_without_any_workload_cuda() -> None:
    # H100 is sm_90, first known to CUDA 11.8; a CUDA 10.0 driver predates it
    [w] = driver_warnings(H100, "10.0")
    assert w.code == WarningCode.DRIVER_TOO_OLD_FOR_GPU
    assert w.values == {
        "gpu": "H100 SXM 80GB",
        "compute_capability": "9.0",
        "max_cuda": "10.0",
        "min_cuda_for_gpu": "11.8",
    }
    assert driver_warnings(H100, "11.7") != [] and driver_warnings(H100, "11.8") == []
    assert driver_warnings(A100, "10.2") != [] and driver_warnings(A100, "11.0") == []
    assert driver_warnings(V100, "9.0") == []  # sm_70: CUDA 9.0
    assert driver_warnings(ADA, "11.7") != []  # sm_89: CUDA 11.8
    assert driver_warnings(MI300X, "10.0") == [] and driver_warnings(H100, None) == []


def test_capabilities_between_rows_take_the_lower_rows_cuda() -> None:
    assert min_cuda_for_cc((8, 7)) == (11, 1)  # between sm_86 (11.1) and sm_89 (11.8)
    assert min_cuda_for_cc((10, 3)) == (12, 9) and min_cuda_for_cc((7, 5)) == (10, 0)


def test_fp8_covers_transformers_only() -> None:
    from app.model.types import Architecture

    run, w = effective_precision(H100, Precision.FP8, Architecture.CNN)
    assert run == Precision.BF16_AMP and w is not None
    assert w.code == WarningCode.FP8_TRANSFORMER_ONLY
    assert w.values["runs_at_precision"] == "bf16_amp"
    run, w = effective_precision(V100, Precision.FP8, Architecture.CNN)
    assert run == Precision.FP16_AMP and w is not None
    run, w = effective_precision(H100, Precision.FP8, Architecture.TRANSFORMER_DECODER)
    assert run == Precision.FP8 and w is None


def test_nvlink_on_a_gpu_without_it_warns() -> None:
    from dataclasses import replace

    from app.model.compat import interconnect_warning
    from app.model.types import Interconnect

    geforce = replace(ADA, nvlink=False)
    w = interconnect_warning(geforce, Interconnect.NVLINK, 4)
    assert w is not None and w.code == WarningCode.NVLINK_UNAVAILABLE
    assert interconnect_warning(geforce, Interconnect.PCIE, 4) is None
    assert interconnect_warning(geforce, Interconnect.NVLINK, 1) is None
    assert interconnect_warning(replace(H100, nvlink=True), Interconnect.NVLINK, 8) is None
