"""Will the job run on this GPU at all, and at which precision? (pure rules, no I/O)

Two tables and four functions:

* :func:`capabilities` — per GPU, from the catalog: vendor and software stack (CUDA on NVIDIA,
  ROCm on AMD), compute capability, and whether bf16, fp8 and TF32 tensor math exist.
* :data:`LIBRARIES` — per library a workload may import, the stack it needs and the lowest
  compute capability its kernels build for.
* :func:`effective_precision` — the precision the GPU really runs a requested one at, with the
  warning when it differs (the throughput model takes the first element).
* :func:`compatibility_warnings` — every software/hardware mismatch of a workload on a GPU.
* :func:`driver_warnings` — a machine whose driver is older than its GPU (no workload needed).

Sources (seen 2026-12-01):

* bf16 and TF32 tensor cores from compute capability 8.0 (Ampere), fp8 from 8.9 (Ada) and 9.0
  (Hopper): NVIDIA CUDA C++ Programming Guide, "Compute Capabilities" (feature table);
  PyTorch ``torch.cuda.is_bf16_supported`` checks ``major >= 8``. Without bf16 tensor cores
  PyTorch runs bf16 matmuls without tensor-core acceleration, i.e. at the fp32 vector rate at
  best, and Hugging Face's Trainer refuses ``--bf16`` (:func:`effective_precision`).
  torchao float8 training and Transformer Engine FP8 require CC >= 8.9.
* First CUDA toolkit that builds native code for each compute capability (:data:`MIN_CUDA_FOR_CC`)
  and the last one that still supports it (:data:`MAX_CUDA_FOR_CC`): NVIDIA CUDA Toolkit
  release notes (9.0 Volta; 10.0 Turing; 11.0 sm_80; 11.1 sm_86; 11.8 sm_89/sm_90; 12.8
  sm_100/sm_120; 12.9 sm_103, B300/GB300: CUDA Features Archive 12.9, "adds compiler target
  support for SM architecture 10.3"; 12.0 dropped Kepler; 13.0 dropped Maxwell, Pascal and
  Volta).
* FlashAttention-2: Dao-AILab/flash-attention README ("Ampere, Ada, or Hopper GPUs"; Turing
  only in FlashAttention 1.x; a ROCm backend for MI200/MI300, i.e. CDNA 2/3).
* bitsandbytes: bitsandbytes-foundation/bitsandbytes README/installation docs (CUDA wheels;
  ROCm is a separate, partial backend, not the default pip install).
* Transformer Engine: NVIDIA/TransformerEngine README (NVIDIA GPUs of CC >= 8.0; FP8 from
  Ada/Hopper).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.model.types import (
    Architecture,
    GpuSpec,
    Interconnect,
    Method,
    Optimizer,
    Precision,
    RunWarning,
    WarningCode,
    Workload,
)
from app.model.vocabulary import Version, parse_version
from app.model.vocabulary import format_version as _fmt

#: First CUDA toolkit with native code generation for a compute capability (see module doc).
MIN_CUDA_FOR_CC: dict[Version, Version] = {
    (3, 7): (5, 0),
    (6, 0): (8, 0),
    (6, 1): (8, 0),
    (7, 0): (9, 0),
    (7, 5): (10, 0),
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (10, 3): (12, 9),
    (12, 0): (12, 8),
}

#: Last CUDA major version that still supports a compute capability (see module doc).
MAX_CUDA_MAJOR_FOR_CC: dict[Version, int] = {
    (3, 7): 11,
    (6, 0): 12,
    (6, 1): 12,
    (7, 0): 12,
}

BF16_MIN_CC: Version = (8, 0)
TF32_MIN_CC: Version = (8, 0)
FP8_MIN_CC: Version = (8, 9)


@dataclass(frozen=True, slots=True)
class Library:
    """What a library needs: ``stacks`` it has builds for, lowest NVIDIA compute capability,
    and the AMD architectures its ROCm build supports (empty: none)."""

    name: str
    stacks: frozenset[str]
    min_cc: Version | None = None
    rocm_architectures: frozenset[str] = frozenset()
    note: str = ""


#: Libraries with CUDA-only (or CUDA-first) builds, keyed by their pip name.
LIBRARIES: dict[str, Library] = {
    "bitsandbytes": Library(
        name="bitsandbytes",
        stacks=frozenset({"cuda"}),
        note="its pip wheels are built for CUDA; the ROCm backend is separate and partial",
    ),
    "flash-attn": Library(
        name="flash-attn",
        stacks=frozenset({"cuda", "rocm"}),
        min_cc=(8, 0),
        rocm_architectures=frozenset({"CDNA 2", "CDNA 3"}),
        note="FlashAttention-2 builds for Ampere, Ada and Hopper (and MI200/MI300 on ROCm)",
    ),
    "transformer-engine": Library(
        name="transformer-engine",
        stacks=frozenset({"cuda"}),
        min_cc=(8, 0),
        note="NVIDIA Transformer Engine runs on NVIDIA GPUs only",
    ),
}


@dataclass(frozen=True, slots=True)
class GpuCapabilities:
    """What a GPU can run: ``software_stack`` is ``cuda`` or ``rocm``."""

    vendor: str
    software_stack: str
    compute_capability: Version | None
    bf16: bool
    fp8: bool
    tf32: bool


def capabilities(gpu: GpuSpec) -> GpuCapabilities:
    """The capability row of ``gpu``: NVIDIA by compute capability, AMD by catalog rates.

    Without a compute capability (AMD, or an NVIDIA row that lacks it) a precision counts as
    supported when the catalog lists a tensor rate for it.
    """
    amd = gpu.vendor.upper() == "AMD"
    cc = None if amd else parse_version(gpu.compute_capability)
    if cc is not None:
        bf16, fp8, tf32 = cc >= BF16_MIN_CC, cc >= FP8_MIN_CC, cc >= TF32_MIN_CC
    else:
        bf16 = gpu.bf16_tflops is not None
        fp8 = gpu.fp8_tflops is not None or gpu.fp8_fp32acc_tflops is not None
        tf32 = gpu.tf32_tflops is not None
    return GpuCapabilities(
        vendor=gpu.vendor,
        software_stack="rocm" if amd else "cuda",
        compute_capability=cc,
        bf16=bf16,
        fp8=fp8,
        tf32=tf32,
    )


def effective_precision(
    gpu: GpuSpec,
    requested: Precision,
    architecture: Architecture | None = None,
    method: Method | None = None,
) -> tuple[Precision, RunWarning | None]:
    """The precision ``gpu`` really runs ``requested`` at, and the warning when they differ.

    The one place the precision stand-ins are decided (throughput, warnings and the ranking
    all ask here):

    * bf16 (``bf16_amp`` or pure ``bf16``) without bf16 support (compute capability < 8.0:
      V100, Turing, Pascal) is estimated at ``fp16_amp``: Hugging Face's Trainer refuses
      ``--bf16`` there (``TrainingArguments.__post_init__`` raises "Your setup doesn't
      support bf16/gpu" unless ``is_torch_bf16_gpu_available()``, which asks for Ampere or
      newer; huggingface/transformers src/transformers/training_args.py and
      utils/import_utils.py, seen 2026-12-04), torchtune's ``verify_bf16_support`` raises
      likewise, and PyTorch's bf16 autocast there runs without tensor cores (bf16 matmuls
      emulated at the fp32 vector rate at best): what a user of these GPUs runs is fp16
      mixed precision, and the warning says so;
    * fp8 without fp8 tensor cores (before Ada/Hopper, MI250X) falls back to bf16 autocast
      (fp16 where bf16 is missing too);
    * TF32 without TF32 tensor cores is plain fp32;
    * fp8 training of a non-transformer ``architecture`` runs at the 16-bit rate: Transformer
      Engine's FP8 recipes (and torchao float8 training) replace the linear layers of
      transformer blocks only (NVIDIA/TransformerEngine README,
      ``te.Linear``/``te.TransformerLayer``); a CNN's convolutions stay in bf16 autocast;
    * fp8 training of a QLoRA ``method`` runs at the 16-bit rate: its frozen base is
      bitsandbytes 4-bit NF4, dequantised to the 16-bit compute dtype for every matmul
      (Dettmers et al. 2023, arXiv:2305.14314 §3, "we dequantize the storage data type to
      the computation data type"; ``bnb.nn.Linear4bit`` with ``bnb_4bit_compute_dtype``),
      and fp8 recipes swap ``nn.Linear`` modules for ``te.Linear`` / torchao ``Float8Linear``,
      not bitsandbytes' ``Linear4bit``: no fp8 matmul path exists for the base, which does
      nearly all of a QLoRA step's FLOPs.
    """
    if requested == Precision.FP8 and architecture is not None and not architecture.is_transformer:
        return _fp8_off_transformer(gpu, architecture)
    if requested == Precision.FP8 and method == Method.QLORA:
        return _fp8_quantised_base(gpu)
    return _missing_capability(gpu, requested)


def _missing_capability(gpu: GpuSpec, requested: Precision) -> tuple[Precision, RunWarning | None]:
    """:func:`effective_precision`'s stand-ins for what ``gpu``'s tensor cores lack (bf16,
    fp8, TF32), with the warning that says so; ``(requested, None)`` when nothing is missing."""
    cap = capabilities(gpu)
    where = gpu.name + (
        f" (compute capability {_fmt(cap.compute_capability)})" if cap.compute_capability else ""
    )
    values: dict[str, object] = {
        "gpu": gpu.name,
        "requested_precision": requested.value,
        "compute_capability": _fmt(cap.compute_capability) if cap.compute_capability else None,
    }
    if requested in (Precision.BF16, Precision.BF16_AMP) and not cap.bf16:
        run = Precision.FP16_AMP
        return run, RunWarning(
            code=WarningCode.BF16_UNSUPPORTED,
            message=f"{where} has no bf16 support: Hugging Face's Trainer refuses --bf16 "
            "there (\"Your setup doesn't support bf16/gpu\") and PyTorch's bf16 autocast "
            "runs without tensor cores, so fp16 mixed precision is what runs on this GPU: "
            "estimated at fp16_amp (fp16 AMP with loss scaling)",
            values={**values, "runs_at_precision": run.value},
        )
    if requested == Precision.FP8 and not cap.fp8:
        run = Precision.BF16_AMP if cap.bf16 else Precision.FP16_AMP
        return run, RunWarning(
            code=WarningCode.FP8_UNSUPPORTED,
            message=f"{where} has no fp8 tensor cores (they start with Ada and Hopper): "
            f"fp8 training falls back to {run.value}",
            values={**values, "runs_at_precision": run.value},
        )
    if requested == Precision.TF32 and not cap.tf32:
        run = Precision.FP32
        return run, RunWarning(
            code=WarningCode.TF32_UNSUPPORTED,
            message=f"{where} has no TF32 tensor cores: TF32 is plain fp32 there",
            values={**values, "runs_at_precision": run.value},
        )
    return requested, None


def min_cuda_for_cc(cc: Version) -> Version | None:
    """The first CUDA version that knows compute capability ``cc`` (:data:`MIN_CUDA_FOR_CC`;
    a capability between two rows takes the lower row's version), ``None`` below the table."""
    return MIN_CUDA_FOR_CC.get(cc) or max(
        (v for k, v in MIN_CUDA_FOR_CC.items() if k <= cc), default=None
    )


def _cc_warning(
    code: WarningCode, message: str, gpu: GpuSpec, cc: Version, **values: object
) -> RunWarning:
    """A warning about ``gpu`` of compute capability ``cc`` (written ``9.0``): its ``values``
    are the GPU's name and compute capability, then ``values`` in the order given."""
    return RunWarning(
        code=code,
        message=message,
        values={"gpu": gpu.name, "compute_capability": _fmt(cc), **values},
    )


def driver_warnings(gpu: GpuSpec, max_cuda: str | None) -> list[RunWarning]:
    """The warning when the machine's driver is older than the GPU itself.

    ``max_cuda`` is the highest CUDA version the offer's driver supports (``"10.0"``); a driver
    that predates the first CUDA release knowing the GPU's compute capability
    (:func:`min_cuda_for_cc`: an H100, sm_90, needs CUDA 11.8) cannot run any CUDA work on it,
    whatever the workload asks. Sources: NVIDIA CUDA Toolkit release notes (module doc); NVIDIA
    developer forum, "Minimum required CUDA version by GPU" (seen 2026-12-01:
    https://forums.developer.nvidia.com/t/minimum-required-cuda-version-by-gpu/276955/2, "the
    earliest CUDA version that supported either cc8.9 or cc9.0 is CUDA 11.8"). Nothing for
    AMD GPUs, an unknown compute capability or an unparsable ``max_cuda``.
    """
    cap = capabilities(gpu)
    have = parse_version(max_cuda)
    if cap.software_stack != "cuda" or cap.compute_capability is None or have is None:
        return []
    need = min_cuda_for_cc(cap.compute_capability)
    if need is None or have >= need:
        return []
    cc = cap.compute_capability
    return [
        _cc_warning(
            WarningCode.DRIVER_TOO_OLD_FOR_GPU,
            f"the driver supports CUDA up to {max_cuda}, older than the {gpu.name} itself "
            f"(compute capability {_fmt(cc)} needs CUDA {_fmt(need)} or later): no CUDA "
            "program runs on it until the driver is upgraded",
            gpu,
            cc,
            max_cuda=max_cuda,
            min_cuda_for_gpu=_fmt(need),
        )
    ]


def job_libraries(w: Workload) -> dict[str, str]:
    """The libraries of :data:`LIBRARIES` the job uses → what uses them (``""``: named in
    ``cuda_only_libraries``): those named, plus those its settings imply. QLoRA quantises
    the frozen base to 4-bit NF4 with bitsandbytes (Dettmers et al. 2023, arXiv:2305.14314,
    §3 and its released code; PEFT's ``BitsAndBytesConfig``), and the 8-bit AdamW optimizers
    are bitsandbytes' (``bnb.optim.AdamW8bit`` / ``PagedAdamW8bit``, Dettmers et al. 2021,
    arXiv:2110.02861). E.g. method qlora with optimizer paged_adamw_8bit →
    ``{"bitsandbytes": "method qlora"}``."""
    out = dict.fromkeys(w.cuda_only_libraries, "")
    if w.method == Method.QLORA:
        out.setdefault("bitsandbytes", "method qlora")
    if w.optimizer in (Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT):
        out.setdefault("bitsandbytes", f"optimizer {w.optimizer.value}")
    return out


def _fp8_quantised_base(gpu: GpuSpec) -> tuple[Precision, RunWarning]:
    """fp8 asked for a QLoRA job: the 16-bit precision its matmuls run at on ``gpu`` (bf16
    autocast, fp16 where bf16 is unsupported) and the warning (:func:`effective_precision`
    gives the source)."""
    fallback, _ = effective_precision(gpu, Precision.BF16_AMP)
    return fallback, RunWarning(
        code=WarningCode.FP8_QUANTISED_BASE,
        message="fp8 does not apply to QLoRA: its frozen 4-bit NF4 base (bitsandbytes) is "
        "dequantised to 16-bit for every matmul and fp8 recipes (Transformer Engine, torchao "
        f"float8) do not replace 4-bit layers, so it trains at {fallback.value} on {gpu.name}",
        values={
            "gpu": gpu.name,
            "requested_precision": Precision.FP8.value,
            "method": Method.QLORA.value,
            "runs_at_precision": fallback.value,
        },
    )


def _fp8_off_transformer(gpu: GpuSpec, architecture: Architecture) -> tuple[Precision, RunWarning]:
    """fp8 asked for a non-transformer ``architecture``: the 16-bit precision it trains at on
    ``gpu`` (bf16 autocast, fp16 where bf16 runs at the fp32 rate) and the warning
    (:func:`effective_precision`)."""
    run, _ = effective_precision(gpu, Precision.BF16_AMP)
    return run, RunWarning(
        code=WarningCode.FP8_TRANSFORMER_ONLY,
        message=f"fp8 training covers transformer linear layers only (Transformer "
        f"Engine); a {architecture.value} trains at {run.value} on {gpu.name}",
        values={
            "gpu": gpu.name,
            "requested_precision": Precision.FP8.value,
            "architecture": architecture.value,
            "runs_at_precision": run.value,
        },
    )


def compatibility_warnings(w: Workload, gpu: GpuSpec) -> list[RunWarning]:
    """Software the workload needs that ``gpu`` cannot run (precision apart).

    Checks the CUDA build against the GPU's compute capability (too old to know the GPU, or
    too new to still support it), a CUDA build on a ROCm GPU, CUDA-only libraries on AMD
    (named, or implied by the method or optimizer: :func:`job_libraries`),
    and the build's or libraries' lowest compute capability.
    """
    cap = capabilities(gpu)
    return [
        *_build_warnings(w, gpu, cap),
        *_min_cc_warnings(w, gpu, cap.compute_capability),
        *_library_warnings(w, gpu, cap),
    ]


def _build_warnings(w: Workload, gpu: GpuSpec, cap: GpuCapabilities) -> list[RunWarning]:
    """The job's CUDA build on ``gpu``: a CUDA build on ROCm, a build too old to know the GPU's
    compute capability, or too new to still support it."""
    cc = cap.compute_capability
    out: list[RunWarning] = []
    build = parse_version(w.cuda_build)
    if build and cap.software_stack == "rocm":
        out.append(
            RunWarning(
                code=WarningCode.CUDA_ONLY_LIBRARY,
                message=f"the job uses a CUDA {w.cuda_build} build, which does not run on the "
                f"AMD {gpu.name} (ROCm); it needs a ROCm build of the framework",
                values={"gpu": gpu.name, "cuda_build": w.cuda_build, "library": "cuda"},
            )
        )
    if build and cc:
        need = min_cuda_for_cc(cc)
        if need and build < need:
            out.append(
                _cc_warning(
                    WarningCode.CUDA_BUILD_TOO_OLD_FOR_GPU,
                    f"a CUDA {w.cuda_build} build has no kernels for the {gpu.name} "
                    f"(compute capability {_fmt(cc)} needs CUDA {_fmt(need)} or later)",
                    gpu,
                    cc,
                    cuda_build=w.cuda_build,
                    min_cuda_for_gpu=_fmt(need),
                )
            )
        last = MAX_CUDA_MAJOR_FOR_CC.get(cc)
        if last is not None and build[0] > last:
            out.append(
                _cc_warning(
                    WarningCode.CUDA_BUILD_TOO_NEW_FOR_GPU,
                    f"CUDA {w.cuda_build} no longer supports the {gpu.name} "
                    f"(compute capability {_fmt(cc)}; last supported in CUDA {last}.x)",
                    gpu,
                    cc,
                    cuda_build=w.cuda_build,
                    max_cuda_major_for_gpu=last,
                )
            )
    return out


def _min_cc_warnings(w: Workload, gpu: GpuSpec, cc: Version | None) -> list[RunWarning]:
    """The build's lowest compute capability (``min_compute_capability``) above ``gpu``'s."""
    need_cc = parse_version(w.min_compute_capability)
    if need_cc and cc and cc < need_cc:
        return [
            _cc_warning(
                WarningCode.COMPUTE_CAPABILITY_TOO_LOW,
                f"the build needs compute capability {w.min_compute_capability} or higher; "
                f"the {gpu.name} has {_fmt(cc)}",
                gpu,
                cc,
                min_compute_capability=w.min_compute_capability,
            )
        ]
    return []


def _library_warnings(w: Workload, gpu: GpuSpec, cap: GpuCapabilities) -> list[RunWarning]:
    """Each library the job needs (:func:`job_libraries`) that ``gpu`` cannot run: a CUDA-only
    one on ROCm, or one needing a higher compute capability."""
    cc = cap.compute_capability
    out: list[RunWarning] = []
    for name, why in job_libraries(w).items():
        lib = LIBRARIES.get(name)
        if lib is None:
            continue
        if cap.software_stack == "rocm":
            if "rocm" in lib.stacks and gpu.architecture in lib.rocm_architectures:
                continue
            used = f" (used by {why})" if why else ""
            out.append(
                RunWarning(
                    code=WarningCode.CUDA_ONLY_LIBRARY,
                    message=f"{lib.name}{used} does not run on the AMD {gpu.name} ({lib.note})",
                    values={
                        "gpu": gpu.name,
                        "library": lib.name,
                        "software_stack": "rocm",
                        **({"used_by": why} if why else {}),
                    },
                )
            )
        elif lib.min_cc and cc and cc < lib.min_cc:
            out.append(
                RunWarning(
                    code=WarningCode.COMPUTE_CAPABILITY_TOO_LOW,
                    message=f"{lib.name} needs compute capability {_fmt(lib.min_cc)} or higher; "
                    f"the {gpu.name} has {_fmt(cc)} ({lib.note})",
                    values={
                        "gpu": gpu.name,
                        "library": lib.name,
                        "compute_capability": _fmt(cc),
                        "min_compute_capability": _fmt(lib.min_cc),
                    },
                )
            )
    return out


def interconnect_warning(
    gpu: GpuSpec, interconnect: Interconnect | None, gpu_count: float
) -> RunWarning | None:
    """``nvlink_unavailable`` when NVLink is asked for a GPU that has none (catalog
    ``nvlink`` false: GeForce RTX 4090, L4 …); the throughput is then estimated over PCIe
    (:meth:`app.model.throughput.ThroughputModel.estimate`)."""
    if gpu_count <= 1 or interconnect != Interconnect.NVLINK or gpu.nvlink:
        return None
    return RunWarning(
        code=WarningCode.NVLINK_UNAVAILABLE,
        message=f"the {gpu.name} has no NVLink: its GPUs talk over PCIe, and the estimate "
        "assumes PCIe",
        values={"gpu": gpu.name, "requested_interconnect": "nvlink", "estimated_as": "pcie"},
    )
