"""Why a run may fail, be slower or cost more than its headline figure: the hardware
warnings of an answer (:func:`hardware_warnings`), each a
:class:`~app.model.types.RunWarning` with a stable code and its numbers.

Pure; :func:`app.model.cost.combine` adds them to the answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from app.model.comm import LinkClass, Topology, host_bridge_busbw_gbs, topology
from app.model.compat import (
    compatibility_warnings,
    driver_warnings,
    effective_precision,
    interconnect_warning,
)
from app.model.host import (
    HOST_BRIDGE_MEASURED_SPEEDUPS,
    disk_needed_gb,
    disk_read_rate,
    host_bridge_efficiency,
)
from app.model.host_ram import ram_warnings
from app.model.multigpu import effective_interconnect, gradient_bytes
from app.model.types import (
    GpuSpec,
    Hardware,
    MemoryEstimate,
    Precision,
    RunWarning,
    ThroughputEstimate,
    WarningCode,
    Workload,
)
from app.model.vocabulary import parse_version

#: Warning codes that say the job cannot run on the offer as asked: out of GPU memory, a disk
#: too small for the data, host RAM short of what loading needs, a driver or a build that
#: does not know the GPU, software with no build for it (``bitsandbytes``, which QLoRA and
#: 8-bit optimizers need, on ROCm) or a compute capability below what it needs. Such an offer
#: is never an answer's pick and, where the ranking can tell (the GPU against the job's
#: software, :func:`software_blocked`; the memory verdict), ranks after every runnable offer.
#: The pages draw these codes in red.
CANNOT_RUN: frozenset[WarningCode] = frozenset(
    {
        WarningCode.OOM,
        WarningCode.DISK_TOO_SMALL,
        WarningCode.RAM_SHORT,
        WarningCode.CUDA_TOO_OLD,
        WarningCode.DRIVER_TOO_OLD_FOR_GPU,
        WarningCode.CUDA_BUILD_TOO_OLD_FOR_GPU,
        WarningCode.CUDA_BUILD_TOO_NEW_FOR_GPU,
        WarningCode.CUDA_ONLY_LIBRARY,
        WarningCode.COMPUTE_CAPABILITY_TOO_LOW,
    }
)


def cannot_run(codes: Iterable[str]) -> bool:
    """Whether warning ``codes`` (values of :class:`~app.model.types.WarningCode`) include one
    of :data:`CANNOT_RUN`: the job cannot run on the offer as asked."""
    return any(code in CANNOT_RUN for code in codes)


def software_blocked(w: Workload, gpu: GpuSpec) -> bool:
    """Whether ``gpu`` cannot run ``w``'s software as asked, whatever the offer around it
    (:func:`app.model.compat.compatibility_warnings` has a :data:`CANNOT_RUN` code): e.g. a
    QLoRA job (bitsandbytes NF4) on an AMD Instinct MI300X (ROCm). One answer per GPU model,
    so the ranking asks it once per hardware configuration."""
    return cannot_run(x.code for x in compatibility_warnings(w, gpu))


#: A data-parallel job is called communication-heavy when its predicted PCIe scaling
#: efficiency falls below this (benchmarks.md §4: GNMT/BERT-large lose 10-50 % per GPU).
COMM_HEAVY_EFFICIENCY = 0.85


def _gb(value: float) -> str:
    """A size in GB for a sentence: whole GB from 10 up, two significant figures below
    (0.05 GB stays 0.05, not 0)."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def warn(code: WarningCode, message: str, **values: object) -> RunWarning:
    """A :class:`~app.model.types.RunWarning` of ``code`` with ``message`` and its numbers."""
    return RunWarning(code=code, message=message, values=values)


def hardware_warnings(
    w: Workload,
    hw: Hardware,
    tp: ThroughputEstimate,
    loader_rate: float | None,
    memory: MemoryEstimate,
) -> list[RunWarning]:
    """Bottlenecks and mismatches of ``w`` on ``hw``, each with a stable code and its numbers.

    Codes: ``oom``, ``oom_possible``, ``disk_too_small``, ``ram_short``, ``ram_unlisted``,
    ``cuda_too_old``,
    ``no_nvlink``, ``nvlink_unavailable`` (:func:`app.model.compat.interconnect_warning`),
    ``pcie_host_bridge``, ``data_loader_bound``, ``fp8_gain_unmeasured`` (fp8 asked for a
    workload measured at 16-bit only: ``tp`` stands at that rate,
    :meth:`app.model.throughput.ThroughputModel.stand_in_precision`),
    ``fp8_gain_extrapolated`` (an fp8 answer standing on no fp8 measurement of the GPU:
    ``tp.fp8_gain``), plus the software
    rules of
    :func:`app.model.compat.compatibility_warnings` and the precision rule of
    :func:`app.model.compat.effective_precision`.
    """
    return [
        *_gpu_warnings(w, hw, tp),
        *_memory_warnings(memory),
        *_disk_warnings(w, hw),
        *ram_warnings(w, hw),
        *_cuda_warnings(w, hw),
        *_link_warnings(w, hw, tp),
        *_slow_disk_warnings(w, hw, tp),
        *_loader_warnings(w, hw, tp, loader_rate),
    ]


def _gpu_warnings(w: Workload, hw: Hardware, tp: ThroughputEstimate) -> list[RunWarning]:
    """The GPU against the job: its precision, its link for the count, the software rules."""
    out: list[RunWarning] = []
    run, precision_warning = effective_precision(hw.gpu, w.precision, w.architecture, w.method)
    if precision_warning is not None:
        out.append(precision_warning)
    if run == Precision.FP8 and tp.precision is not None and tp.precision != Precision.FP8:
        out.append(
            warn(
                WarningCode.FP8_GAIN_UNMEASURED,
                f"this workload was never measured at fp8: its throughput on {hw.gpu.name} "
                f"is estimated at the measured {tp.precision.value} rate (fp8's gain is "
                "unmeasured for it)",
                gpu=hw.gpu.name,
                requested_precision=w.precision.value,
                estimated_at_precision=tp.precision.value,
            )
        )
    if run == Precision.FP8 and tp.precision == Precision.FP8 and tp.fp8_gain is not None:
        out.append(
            warn(
                WarningCode.FP8_GAIN_EXTRAPOLATED,
                f"this workload was never measured at fp8 on {hw.gpu.name}: its fp8 gain "
                f"over bf16_amp (×{tp.fp8_gain:.2f} here) is extrapolated from other GPUs or "
                "workloads and "
                + (
                    "held to the highest gain measured on one job"
                    if tp.fp8_gain_held
                    else "within the highest gain measured on one job"
                )
                + " (docs/mfu_table.md)",
                gpu=hw.gpu.name,
                fp8_gain=round(tp.fp8_gain, 3),
            )
        )
    link_warning = interconnect_warning(hw.gpu, hw.interconnect, hw.gpu_count)
    if link_warning is not None:
        out.append(link_warning)
    out.extend(compatibility_warnings(w, hw.gpu))
    return out


def _memory_warnings(memory: MemoryEstimate) -> list[RunWarning]:
    """Predicted peak over the usable VRAM (``oom``), or over it only with allocator slack
    (``oom_possible``)."""
    if memory.oom_risk.value == "high":
        return [
            warn(
                WarningCode.OOM,
                f"predicted peak {memory.peak_memory_gib:.1f} GiB per GPU exceeds the "
                f"{memory.usable_vram_gib:.1f} GiB usable",
                peak_memory_gib=round(memory.peak_memory_gib, 2),
                usable_vram_gib=round(memory.usable_vram_gib, 2),
            )
        ]
    if memory.memory_utilization > 1.0:
        return [
            warn(
                WarningCode.OOM_POSSIBLE,
                f"predicted peak {memory.peak_memory_gib:.1f} GiB per GPU (with allocator "
                f"slack) exceeds the {memory.usable_vram_gib:.1f} GiB usable; it fits only if "
                "fragmentation stays low (lower the micro-batch to be safe)",
                peak_memory_gib=round(memory.peak_memory_gib, 2),
                usable_vram_gib=round(memory.usable_vram_gib, 2),
            )
        ]
    return []


def _disk_warnings(w: Workload, hw: Hardware) -> list[RunWarning]:
    """The offer's disk smaller than dataset + model + kept checkpoints
    (:func:`app.model.host.disk_needed_gb`)."""
    if not hw.disk_gb:
        return []
    disk = disk_needed_gb(w)
    if disk["needed_gb"] > hw.disk_gb:
        return [
            warn(
                WarningCode.DISK_TOO_SMALL,
                f"the run needs ~{_gb(disk['needed_gb'])} GB of disk (dataset "
                f"{_gb(disk['dataset_gb'])} GB + model {_gb(disk['model_gb'])} GB + "
                f"{w.checkpoints_kept} checkpoint(s) {_gb(disk['checkpoints_gb'])} GB) "
                f"but the offer has {hw.disk_gb:g} GB",
                disk_gb=hw.disk_gb,
                **{k: round(v, 2) for k, v in disk.items()},
            )
        ]
    return []


def _cuda_warnings(w: Workload, hw: Hardware) -> list[RunWarning]:
    """:func:`cuda_warnings` of ``hw``'s GPU and driver."""
    return cuda_warnings(w, hw.gpu, hw.max_cuda)


def cuda_warnings(w: Workload, gpu: GpuSpec, max_cuda: str | None) -> list[RunWarning]:
    """The driver's CUDA (``max_cuda``, the highest version it supports) older than the job
    needs (``min_cuda``) or than its build (``cuda_build``), and the driver against ``gpu``
    (:func:`app.model.compat.driver_warnings`). Nothing where ``max_cuda`` is not listed."""
    out: list[RunWarning] = []
    need, have = parse_version(w.min_cuda), parse_version(max_cuda)
    if need and have and have < need:
        out.append(
            warn(
                WarningCode.CUDA_TOO_OLD,
                f"the driver supports CUDA up to {max_cuda}; the job needs {w.min_cuda}",
                max_cuda=max_cuda,
                min_cuda=w.min_cuda,
            )
        )
    out.extend(driver_warnings(gpu, max_cuda))
    build = parse_version(w.cuda_build)
    if build and have and have < build and (not need or build > need):
        out.append(
            warn(
                WarningCode.CUDA_TOO_OLD,
                f"the driver supports CUDA up to {max_cuda}; the job's build is CUDA "
                f"{w.cuda_build}",
                max_cuda=max_cuda,
                cuda_build=w.cuda_build,
            )
        )
    return out


def _slow_disk_warnings(w: Workload, hw: Hardware, tp: ThroughputEstimate) -> list[RunWarning]:
    """A hard disk's random reads slower than the GPUs train
    (:func:`app.model.host.disk_read_rate`)."""
    disk_rate = disk_read_rate(w, hw)
    if disk_rate is not None and disk_rate < tp.samples_per_s:
        return [
            warn(
                WarningCode.SLOW_DISK,
                f"the dataset ({w.dataset_gb:g} GB, {w.samples_per_epoch:,} files) does not "
                "fit in host RAM, so every epoch reads it from the hard disk: at most "
                f"~{disk_rate:.0f} random reads/s (rotation alone), against the "
                f"{tp.samples_per_s:.0f} samples/s the GPUs could train; copy it to an SSD or "
                "pack it into large record files",
                disk_type=hw.disk_type,
                dataset_gb=w.dataset_gb,
                disk_samples_per_s=disk_rate,
                gpu_samples_per_s=round(tp.samples_per_s, 2),
            )
        ]
    return []


def _loader_warnings(
    w: Workload, hw: Hardware, tp: ThroughputEstimate, loader_rate: float | None
) -> list[RunWarning]:
    """The data loader: no vCPU count to cap by (``vcpus_unlisted``), or the CPUs slower than
    the GPUs (``data_loader_bound``; ``loader_rate``: :func:`app.model.host.data_loader_rate`)."""
    out: list[RunWarning] = []
    if w.cpu_ms_per_sample and not hw.vcpus:
        # the loader cap cannot be applied: say what it would take, so an offer that lists no
        # CPUs is not read as one that has enough (data_loader_rate, solved for vCPUs)
        needed = tp.samples_per_s * w.cpu_ms_per_sample / 1000.0 + 1.0
        out.append(
            warn(
                WarningCode.VCPUS_UNLISTED,
                "the offer lists no vCPU count, so the data-loader limit is not applied: "
                f"feeding {tp.samples_per_s:.0f} samples/s at {w.cpu_ms_per_sample:g} ms of "
                f"CPU per sample needs about {math.ceil(needed)} vCPUs",
                cpu_ms_per_sample=w.cpu_ms_per_sample,
                vcpus_needed=math.ceil(needed),
                gpu_samples_per_s=round(tp.samples_per_s, 2),
            )
        )
    if loader_rate is not None and loader_rate < tp.samples_per_s:
        out.append(
            warn(
                WarningCode.DATA_LOADER_BOUND,
                f"{hw.vcpus:g} vCPUs prepare ~{loader_rate:.0f} samples/s, below the GPUs' "
                f"{tp.samples_per_s:.0f}: the GPUs wait for data "
                f"({loader_rate / tp.samples_per_s:.0%} busy)",
                vcpus=hw.vcpus,
                cpu_ms_per_sample=w.cpu_ms_per_sample,
                data_loader_samples_per_s=round(loader_rate, 2),
                gpu_samples_per_s=round(tp.samples_per_s, 2),
            )
        )
    return out


def _link_warnings(w: Workload, hw: Hardware, tp: ThroughputEstimate) -> list[RunWarning]:
    # the link class the throughput estimate scaled over (SXM boards listed without a link
    # are NVLink: effective_interconnect), so warning and estimate never disagree
    if hw.gpu_count <= 1:
        return []
    topo = topology(
        hw.gpu,
        hw.gpu_count,
        effective_interconnect(hw.gpu, hw.interconnect),
        node_gpus=hw.gpus_per_node,
        network_gbps=hw.network_gbps,
    )
    out = _topology_warnings(topo, tp)
    return out + _intra_link_warnings(w, hw, tp, topo.intra)


def _topology_warnings(topo: Topology, tp: ThroughputEstimate) -> list[RunWarning]:
    """Several machines (the network rate assumed where the offer states none)."""
    if topo.nodes <= 1:
        return []
    stated = (
        "as stated"
        if topo.network_stated
        else "assumed: no network stated, give hardware.network_gbps to use yours"
    )
    return [
        warn(
            WarningCode.MULTI_NODE,
            f"{topo.gpus} GPUs are more than one machine holds ({topo.gpus_per_node}): "
            f"{topo.nodes} machines whose collectives cross the network at "
            f"{topo.network_gbps or 0:,.0f} Gbit/s per machine ({stated}); the estimate "
            f"scales at {tp.multi_gpu_efficiency:.0%}",
            gpu_count=topo.gpus,
            nodes=topo.nodes,
            gpus_per_node=topo.gpus_per_node,
            network_gbps=topo.network_gbps,
            network_stated=topo.network_stated,
            predicted_efficiency=round(tp.multi_gpu_efficiency, 3),
        )
    ]


def _intra_link_warnings(
    w: Workload, hw: Hardware, tp: ThroughputEstimate, link: LinkClass
) -> list[RunWarning]:
    """PCIe host bridge or PCIe without NVLink for a communication-heavy job."""
    if link in (LinkClass.NVSWITCH, LinkClass.NVLINK_BRIDGE, LinkClass.INFINITY_FABRIC):
        return []
    n = int(hw.gpu_count)
    if link == LinkClass.PCIE_HOST_BRIDGE:
        per_gpu = tp.samples_per_s / max(n * tp.multi_gpu_efficiency, 1e-9)
        volume = gradient_bytes(w)
        bridge = host_bridge_efficiency(w, n, per_gpu) if volume > 0 else 1.0
        eff = tp.multi_gpu_efficiency
        if min(bridge, eff) < COMM_HEAVY_EFFICIENCY:
            measured = tp.multi_gpu_basis == "measured"
            source = (
                f"measured on {n}× {hw.gpu.name} for this workload"
                if measured
                else "from the consumer-PCIe scaling fitted to the measured GeForce "
                "multi-GPU benchmarks"
            )
            message = (
                f"{n} {hw.gpu.name} GPUs have no peer-to-peer link: gradients cross the "
                f"PCIe host bridge. The estimate scales at {eff:.0%} ({n * eff:.2f}× one GPU), "
                f"{source}"
            )
            if volume > 0:
                message += (
                    f"; this job all-reduces {volume / 1e9:.2f} GB per step, which a host "
                    f"bridge alone would hold to ~{bridge:.0%} ({n * bridge:.2f}× one GPU)"
                )
            message += "; measured 2-GPU speedups over host bridges were 1.18–1.71×"
            return [
                warn(
                    WarningCode.PCIE_HOST_BRIDGE,
                    message,
                    gpu_count=n,
                    gradient_gb_per_step=round(volume / 1e9, 3),
                    predicted_efficiency=round(eff, 3),
                    predicted_from="measured" if measured else "model",
                    host_bridge_efficiency=round(bridge, 3),
                    host_bridge_gbs=host_bridge_busbw_gbs(),
                    measured_speedups=HOST_BRIDGE_MEASURED_SPEEDUPS,
                )
            ]
        return []
    if tp.multi_gpu_efficiency < COMM_HEAVY_EFFICIENCY:
        return [
            warn(
                WarningCode.NO_NVLINK,
                f"{n} GPUs over PCIe scale at {tp.multi_gpu_efficiency:.0%} for this "
                "communication-heavy job (NVLink would help)",
                gpu_count=n,
                predicted_efficiency=round(tp.multi_gpu_efficiency, 3),
            )
        ]
    return []


def padded_warning(w: Workload, tokens: int | None) -> RunWarning:
    """The epoch counted each sample as a full sequence, its real length unknown."""
    return warn(
        WarningCode.EPOCH_TOKENS_PADDED,
        f"the epoch counts each of the {w.samples_per_epoch:,} samples as a full "
        f"{tokens:,}-token sequence; if they are shorter, give tokens_per_epoch "
        "(packed) for the real time and cost",
        samples_per_epoch=w.samples_per_epoch,
        seq_len=tokens,
    )
