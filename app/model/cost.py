"""Time and money per epoch, currency conversion, warnings, and the composed estimate."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from app.model.comm import LinkClass, Topology, host_bridge_busbw_gbs, topology
from app.model.compat import (
    compatibility_warnings,
    driver_warnings,
    effective_precision,
    interconnect_warning,
)
from app.model.epoch_cost import RunCosts, ServedRates, run_costs, served_rates
from app.model.epoch_cost import epoch_hours as epoch_hours  # re-exported
from app.model.memory import (
    host_offload_bytes,
    lora_trainable_params,
    optimizer_state_bytes,
    transformer_tokens,
    vram_per_gpu_gib,
)
from app.model.multigpu import effective_interconnect, gradient_bytes
from app.model.shape import shape_warnings
from app.model.types import (
    Architecture,
    Estimate,
    Hardware,
    MemoryEstimate,
    Method,
    Precision,
    RunWarning,
    Sharding,
    ThroughputEstimate,
    WarningCode,
    Workload,
)
from app.model.vocabulary import parse_version

#: A data-parallel job is called communication-heavy when its predicted PCIe scaling
#: efficiency falls below this (benchmarks.md §4: GNMT/BERT-large lose 10-50 % per GPU).
COMM_HEAVY_EFFICIENCY = 0.85


class UnknownCurrencyError(ValueError):
    """No exchange rate connects the two currencies."""


#: The currency cross rates go through when no stored rate links two currencies directly:
#: every stored rate has USD on one side (seed_data/currency_rates.csv).
PIVOT_CURRENCY = "USD"


def conversion_path(
    source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> tuple[tuple[str, str, bool], ...]:
    """The stored rates that convert ``source`` to ``target``, in order: ``(base, quote,
    inverse)`` per step, ``inverse`` when the step divides by the rate (empty when the two
    are the same).

    ``rates[(base, quote)]`` = units of ``quote`` per one ``base`` (1 USD = 7.0197 CNY is
    ``rates[("USD", "CNY")] = 7.0197``). A stored pair converts in one step (times the rate, or
    divided by it for the inverse pair); otherwise through :data:`PIVOT_CURRENCY`, one such step
    each side (EUR → CNY: × EUR→USD, then × USD→CNY).

    Raises:
        UnknownCurrencyError: no rate links the two currencies, directly or via the pivot.
    """
    if source == target:
        return ()
    if (source, target) in rates:
        return ((source, target, False),)
    if (target, source) in rates:
        return ((target, source, True),)
    if PIVOT_CURRENCY not in (source, target):
        try:
            return conversion_path(source, PIVOT_CURRENCY, rates) + conversion_path(
                PIVOT_CURRENCY, target, rates
            )
        except UnknownCurrencyError:
            pass
    raise UnknownCurrencyError(f"no exchange rate from {source} to {target}")


def conversion_steps(
    source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> tuple[tuple[str, float], ...]:
    """How to convert ``source`` to ``target``: a sequence of ``("*", rate)`` or
    ``("/", rate)`` applied left to right, along :func:`conversion_path`. The SQL price filter
    applies the same steps, so both give the same floats.

    Raises:
        UnknownCurrencyError: no rate links the two currencies, directly or via the pivot.
    """
    return tuple(
        ("/" if inverse else "*", rates[(base, quote)])
        for base, quote, inverse in conversion_path(source, target, rates)
    )


def convert(
    amount: float, source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> float:
    """Convert ``amount`` from ``source`` to ``target`` currency by
    :func:`conversion_steps` (a stored rate, its inverse, or a cross rate via USD).

    Raises:
        UnknownCurrencyError: no rate links the two currencies.
    """
    for op, rate in conversion_steps(source, target, rates):
        amount = amount * rate if op == "*" else amount / rate
    return amount


def price_per_gpu_hour(price_per_hour: float | None, gpu_count: float | None) -> float | None:
    """The price of one GPU for one hour: an instance's price per hour ÷ its GPU count, in the
    price's own currency (a slice's price ÷ its share: half a card at 1.00/h is 2.00 per
    GPU-hour). ``None`` without a price or a GPU count. The one rule behind every per-GPU-hour
    figure (API, catalog, pages)."""
    if price_per_hour is None or not gpu_count:
        return None
    return price_per_hour / gpu_count


def _gb(value: float) -> str:
    """A size in GB for a sentence: whole GB from 10 up, two significant figures below
    (0.05 GB stays 0.05, not 0)."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def data_loader_rate(w: Workload, vcpus: float | None) -> float | None:
    """Samples/s the host CPUs can prepare: ``(vCPUs - 1) × 1000 / cpu_ms_per_sample``.

    A vCPU is one hardware thread; ``cpu_ms_per_sample`` is per thread (the presets' figures
    are single-thread decode rates measured on cloud vCPUs), and hyper-thread siblings sharing
    a core are not discounted, so this is an upper bound. One vCPU is left to the training
    process; data stalls per Mohan et al. (VLDB 2021, arXiv:2007.06775), estimation.md §4.7.
    ``None`` when either input is unknown.
    """
    if not w.cpu_ms_per_sample or not vcpus:
        return None
    workers = max(vcpus - 1, 1.0)
    return workers * 1000.0 / w.cpu_ms_per_sample


#: Upper bound on random reads per second of a 7,200 rpm hard disk from rotation alone: half a
#: revolution on average, 60 s / 7,200 / 2 = 4.17 ms per read → 240 reads/s (arithmetic; seek
#: time comes on top, so real disks are slower).
HDD_MAX_RANDOM_READS_PER_S = 2 * 7200 / 60


def disk_read_rate(w: Workload, hw: Hardware) -> float | None:
    """Samples/s a hard disk can deliver when every sample is a random read, else ``None``.

    Applies when the offer's disk is a hard disk (``disk_type`` ``hdd``) and the dataset does
    not fit in host RAM (so the page cache cannot serve later epochs): one file per sample at
    :data:`HDD_MAX_RANDOM_READS_PER_S`. Only for datasets of many files (images, audio): a
    token stream or a record file is read sequentially.
    """
    if (hw.disk_type or "").lower() != "hdd" or not w.dataset_gb or not w.cpu_ms_per_sample:
        return None
    if hw.ram_gib and w.dataset_gb * 1e9 < hw.ram_gib * 2**30:
        return None
    return HDD_MAX_RANDOM_READS_PER_S


#: Measured 2-GPU DDP speedups over a PCIe host bridge without P2P (the numbers a
#: ``pcie_host_bridge`` warning quotes): 2× RTX 4070 Ti SUPER, ResNet-50 1.18×, ResNet-152
#: 1.60×, ViT-L 1.71× (ahjavid technical-notes blog, "multi-GPU training analysis";
#: estimation.md §4.6); Lambda's benchmark on 2× RTX 3070 Ti behind a PHB bridge 1.34×
#: (https://forum.level1techs.com/t/gpu-gpu-expected-bandwidth/185531, seen 2026-12-01).
HOST_BRIDGE_MEASURED_SPEEDUPS = {
    "ResNet-50 (2x RTX 4070 Ti SUPER)": 1.18,
    "ResNet-152 (2x RTX 4070 Ti SUPER)": 1.60,
    "ViT-L (2x RTX 4070 Ti SUPER)": 1.71,
    "Lambda benchmark (2x RTX 3070 Ti)": 1.34,
}


def host_bridge_efficiency(w: Workload, gpu_count: float, per_gpu_samples_per_s: float) -> float:
    """DDP efficiency if every all-reduce crosses a PCIe host bridge at the link model's bus
    bandwidth (:func:`app.model.comm.host_bridge_busbw_gbs`, the one figure the estimate uses).

    Ring all-reduce volume ``2(n-1)/n × gradient bytes`` per optimizer step against the step's
    compute time ``micro_batch × grad_accum / per-GPU samples/s``, with no overlap (the
    measured host-bridge cases show the copy through system memory does not hide behind the
    backward pass). 1.0 for one GPU or unknown gradient size.
    """
    n = int(gpu_count)
    volume = gradient_bytes(w)
    if n <= 1 or volume <= 0 or per_gpu_samples_per_s <= 0:
        return 1.0
    t_comm = 2 * (n - 1) / n * volume / (host_bridge_busbw_gbs() * 1e9)
    t_step = w.micro_batch_size * w.grad_accum_steps / per_gpu_samples_per_s
    return t_step / (t_step + t_comm)


#: Bytes per parameter of the weights a checkpoint stores: fp32 master weights in mixed
#: precision and fp32 training, bf16 in pure bf16 (torchtune ``dtype: bf16``).
def _checkpoint_weight_bytes(w: Workload) -> float:
    return 2.0 if w.precision == Precision.BF16 else 4.0


def checkpoint_gb(w: Workload) -> float:
    """One resumable checkpoint, GB (1e9 bytes): trainable weights + optimizer state.

    Full fine-tune/pre-training: every parameter's weight (4 B fp32 master, 2 B pure bf16)
    plus its optimizer state (:func:`app.model.memory.optimizer_state_bytes`: AdamW 8 B);
    LoRA/QLoRA: the adapters only. ``0`` without a parameter count.
    """
    if not w.params:
        return 0.0
    trainable = lora_trainable_params(w) if w.method in (Method.LORA, Method.QLORA) else w.params
    per_param = _checkpoint_weight_bytes(w) + optimizer_state_bytes(w.optimizer, w.precision)
    return trainable * per_param / 1e9


def disk_needed_gb(w: Workload) -> dict[str, float]:
    """Disk a run fills, GB: dataset, model weights, kept checkpoints, and their sum.

    The model weights file is the parameters in 16-bit (2 B/param, the safetensors a
    pretrained model ships as, or the final export); ``checkpoints_kept`` ×
    :func:`checkpoint_gb` for resumable checkpoints.
    """
    dataset = w.dataset_gb or 0.0
    model = (w.params or 0) * 2.0 / 1e9
    ckpt = checkpoint_gb(w) * max(w.checkpoints_kept, 0)
    return {
        "dataset_gb": dataset,
        "model_gb": model,
        "checkpoints_gb": ckpt,
        "needed_gb": dataset + model + ckpt,
    }


def _gathered_checkpoint_gib(w: Workload, hw: Hardware) -> float:
    """Host RAM (GiB) to save a full checkpoint of sharded training, else 0.

    FSDP / ZeRO-3 gather the full state dict (weights + optimizer state) into rank 0's CPU
    memory before writing it (torch.distributed.checkpoint ``full_state_dict`` with
    ``cpu_offload``, torchtune's full_finetune_distributed); unsharded jobs write each tensor
    as they copy it.
    """
    if hw.gpu_count <= 1 or w.sharding not in (Sharding.FSDP, Sharding.ZERO3):
        return 0.0
    return checkpoint_gb(w) * 1e9 / 2**30


def _warn(code: WarningCode, message: str, **values: object) -> RunWarning:
    return RunWarning(code=code, message=message, values=values)


def hardware_warnings(
    w: Workload,
    hw: Hardware,
    tp: ThroughputEstimate,
    loader_rate: float | None,
    memory: MemoryEstimate,
) -> list[RunWarning]:
    """Bottlenecks and mismatches of ``w`` on ``hw``, each with a stable code and its numbers.

    Codes: ``oom``, ``oom_possible``, ``disk_too_small``, ``ram_short``, ``cuda_too_old``,
    ``no_nvlink``, ``nvlink_unavailable`` (:func:`app.model.compat.interconnect_warning`),
    ``pcie_host_bridge``, ``data_loader_bound``, ``fp8_gain_unmeasured`` (fp8 asked for a
    workload measured at 16-bit only: ``tp`` stands at that rate,
    :meth:`app.model.throughput.ThroughputModel.stand_in_precision`), plus the software
    rules of
    :func:`app.model.compat.compatibility_warnings` and the precision rule of
    :func:`app.model.compat.effective_precision`.
    """
    out: list[RunWarning] = []
    run, precision_warning = effective_precision(hw.gpu, w.precision, w.architecture)
    if precision_warning is not None:
        out.append(precision_warning)
    if run == Precision.FP8 and tp.precision is not None and tp.precision != Precision.FP8:
        out.append(
            _warn(
                WarningCode.FP8_GAIN_UNMEASURED,
                f"this workload was never measured at fp8: its throughput on {hw.gpu.name} "
                f"is estimated at the measured {tp.precision.value} rate (fp8's gain is "
                "unmeasured for it)",
                gpu=hw.gpu.name,
                requested_precision=w.precision.value,
                estimated_at_precision=tp.precision.value,
            )
        )
    link_warning = interconnect_warning(hw.gpu, hw.interconnect, hw.gpu_count)
    if link_warning is not None:
        out.append(link_warning)
    out.extend(compatibility_warnings(w, hw.gpu))
    if memory.oom_risk.value == "high":
        out.append(
            _warn(
                WarningCode.OOM,
                f"predicted peak {memory.peak_memory_gib:.1f} GiB per GPU exceeds the "
                f"{memory.usable_vram_gib:.1f} GiB usable",
                peak_memory_gib=round(memory.peak_memory_gib, 2),
                usable_vram_gib=round(memory.usable_vram_gib, 2),
            )
        )
    elif memory.memory_utilization > 1.0:
        out.append(
            _warn(
                WarningCode.OOM_POSSIBLE,
                f"predicted peak {memory.peak_memory_gib:.1f} GiB per GPU (with allocator "
                f"slack) exceeds the {memory.usable_vram_gib:.1f} GiB usable; it fits only if "
                "fragmentation stays low (lower the micro-batch to be safe)",
                peak_memory_gib=round(memory.peak_memory_gib, 2),
                usable_vram_gib=round(memory.usable_vram_gib, 2),
            )
        )
    if hw.disk_gb:
        disk = disk_needed_gb(w)
        if disk["needed_gb"] > hw.disk_gb:
            out.append(
                _warn(
                    WarningCode.DISK_TOO_SMALL,
                    f"the run needs ~{_gb(disk['needed_gb'])} GB of disk (dataset "
                    f"{_gb(disk['dataset_gb'])} GB + model {_gb(disk['model_gb'])} GB + "
                    f"{w.checkpoints_kept} checkpoint(s) {_gb(disk['checkpoints_gb'])} GB) "
                    f"but the offer has {hw.disk_gb:g} GB",
                    disk_gb=hw.disk_gb,
                    **{k: round(v, 2) for k, v in disk.items()},
                )
            )
    if hw.ram_gib:
        model_fp32_gib = (w.params or 0) * 4 / 2**30
        total_vram = hw.gpu_count * vram_per_gpu_gib(
            hw.gpu.vram_gib, hw.vram_gib_per_gpu, hw.gpu_count
        )
        offload_gib = host_offload_bytes(w, max(math.floor(hw.gpu_count), 1)) / 2**30
        if hw.ram_gib < offload_gib:
            out.append(
                _warn(
                    WarningCode.RAM_SHORT,
                    f"out of memory on the host: the states offloaded to CPU RAM (master "
                    f"weights, gradients, optimizer states, paged or offloaded activations) "
                    f"need {offload_gib:.1f} GiB but the offer has {hw.ram_gib:g} GiB",
                    ram_gib=hw.ram_gib,
                    needed_gib=round(offload_gib, 2),
                )
            )
        elif hw.ram_gib < model_fp32_gib:
            out.append(
                _warn(
                    WarningCode.RAM_SHORT,
                    f"{hw.ram_gib:g} GiB of host RAM is less than the {model_fp32_gib:.1f} GiB "
                    "needed to load the model in fp32 (and to gather it for a checkpoint)",
                    ram_gib=hw.ram_gib,
                    needed_gib=round(model_fp32_gib, 2),
                )
            )
        elif hw.ram_gib < (ckpt_gib := _gathered_checkpoint_gib(w, hw)):
            out.append(
                _warn(
                    WarningCode.RAM_SHORT,
                    f"{hw.ram_gib:g} GiB of host RAM is less than the {ckpt_gib:.1f} GiB of a "
                    "full checkpoint (weights + optimizer state), which sharded training "
                    "gathers in one process's RAM to save it",
                    ram_gib=hw.ram_gib,
                    needed_gib=round(ckpt_gib, 2),
                    checkpoint_gb=round(checkpoint_gb(w), 2),
                )
            )
        elif hw.ram_gib < total_vram:
            out.append(
                _warn(
                    WarningCode.RAM_SHORT,
                    f"{hw.ram_gib:g} GiB of host RAM is less than the {total_vram:g} GiB of GPU "
                    "memory (pinned staging buffers, data-loader workers and checkpoint saving "
                    "need host RAM at least the size of the GPUs' memory)",
                    ram_gib=hw.ram_gib,
                    needed_gib=round(total_vram, 2),
                )
            )
    need, have = parse_version(w.min_cuda), parse_version(hw.max_cuda)
    if need and have and have < need:
        out.append(
            _warn(
                WarningCode.CUDA_TOO_OLD,
                f"the driver supports CUDA up to {hw.max_cuda}; the job needs {w.min_cuda}",
                max_cuda=hw.max_cuda,
                min_cuda=w.min_cuda,
            )
        )
    out.extend(driver_warnings(hw.gpu, hw.max_cuda))
    build = parse_version(w.cuda_build)
    if build and have and have < build and (not need or build > need):
        out.append(
            _warn(
                WarningCode.CUDA_TOO_OLD,
                f"the driver supports CUDA up to {hw.max_cuda}; the job's build is CUDA "
                f"{w.cuda_build}",
                max_cuda=hw.max_cuda,
                cuda_build=w.cuda_build,
            )
        )
    out.extend(_link_warnings(w, hw, tp))
    disk_rate = disk_read_rate(w, hw)
    if disk_rate is not None and disk_rate < tp.samples_per_s:
        out.append(
            _warn(
                WarningCode.SLOW_DISK,
                f"the dataset ({w.dataset_gb:g} GB, {w.samples_per_epoch:,} files) does not fit "
                "in host RAM, so every epoch reads it from the hard disk: at most "
                f"~{disk_rate:.0f} random reads/s (rotation alone), against the "
                f"{tp.samples_per_s:.0f} samples/s the GPUs could train; copy it to an SSD or "
                "pack it into large record files",
                disk_type=hw.disk_type,
                dataset_gb=w.dataset_gb,
                disk_samples_per_s=disk_rate,
                gpu_samples_per_s=round(tp.samples_per_s, 2),
            )
        )
    if w.cpu_ms_per_sample and not hw.vcpus:
        # the loader cap cannot be applied: say what it would take, so an offer that lists no
        # CPUs is not read as one that has enough (data_loader_rate, solved for vCPUs)
        needed = tp.samples_per_s * w.cpu_ms_per_sample / 1000.0 + 1.0
        out.append(
            _warn(
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
            _warn(
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
        _warn(
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
                _warn(
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
            _warn(
                WarningCode.NO_NVLINK,
                f"{n} GPUs over PCIe scale at {tp.multi_gpu_efficiency:.0%} for this "
                "communication-heavy job (NVLink would help)",
                gpu_count=n,
                predicted_efficiency=round(tp.multi_gpu_efficiency, 3),
            )
        ]
    return []


def tokens_per_sample(w: Workload) -> int | None:
    """Tokens per sample for token-based workloads (transformers, seq2seq), else ``None``."""
    if w.architecture.is_transformer and not w.architecture.takes_images:
        return transformer_tokens(w)
    if w.architecture == Architecture.RNN_SEQ2SEQ and w.seq_len:
        return w.seq_len
    return None


@dataclass(frozen=True, slots=True)
class EpochPlan:
    """One epoch as the throughput counts it: ``samples`` sequences/images/…, ``tokens``
    (token workloads), and the definition in words."""

    samples: float
    tokens: float | None
    definition: str
    #: samples counted as full ``seq_len`` sequences without a real token count
    assumed_full_length: bool = False


def epoch_plan(w: Workload) -> EpochPlan:
    """What one epoch of ``w`` is.

    Token workloads with ``tokens_per_epoch``: packed (default) → ``tokens_per_epoch /
    seq_len`` sequences of ``seq_len`` tokens, so ``epoch_hours = tokens_per_epoch /
    tokens_per_s``; padded → ``samples_per_epoch`` sequences each padded to ``seq_len``.
    Token workloads without it: every sample counts as a full ``seq_len`` sequence, exact
    when ``packed`` says the data is pre-packed (true) or padded to ``seq_len`` (false), an
    upper bound flagged by ``assumed_full_length`` when unknown. Others: samples.
    """
    tps = tokens_per_sample(w)
    n = w.samples_per_epoch
    if tps and w.tokens_per_epoch:
        tokens = float(w.tokens_per_epoch)
        if w.packed is not False:
            seqs = tokens / tps
            return EpochPlan(
                samples=seqs,
                tokens=tokens,
                definition=f"{w.tokens_per_epoch:,} tokens packed into {seqs:,.0f} sequences "
                f"of {tps:,} tokens",
            )
        return EpochPlan(
            samples=float(n),
            tokens=float(n * tps),
            definition=f"{n:,} samples, each padded to {tps:,} tokens ({w.tokens_per_epoch:,} "
            f"real tokens, {w.tokens_per_epoch / (n * tps):.0%} of the {n * tps:,} computed)",
        )
    if tps and w.packed is False:
        return EpochPlan(
            samples=float(n),
            tokens=float(n * tps),
            definition=f"{n:,} samples, each padded to {tps:,} tokens ({n * tps:,} tokens "
            "computed)",
        )
    if tps:
        return EpochPlan(
            samples=float(n),
            tokens=float(n * tps),
            definition=f"{n:,} samples counted as full {tps:,}-token sequences "
            f"({n * tps:,} tokens)",
            assumed_full_length=w.packed is None,
        )
    return EpochPlan(samples=float(n), tokens=None, definition=f"{n:,} samples")


@dataclass(frozen=True, slots=True)
class SpotAssumptions:
    """How a spot run is interrupted, documented assumptions the user can change.

    ``interruptions_per_hour`` 0.05 (one every 20 hours), ``checkpoint_interval_hours`` 1.0
    (the work since the last checkpoint is lost per interruption), ``restart_hours`` 0.25
    (a new instance, image pull, data copy and checkpoint reload). These are assumptions, not
    measurements: providers publish interruption frequencies only as coarse bands (e.g. the AWS Spot
    Instance Advisor's "<5 %" … ">20 %" of instances interrupted per month).
    """

    interruptions_per_hour: float = 0.05
    checkpoint_interval_hours: float = 1.0
    restart_hours: float = 0.25


def spot_expected_hours(hours: float, a: SpotAssumptions) -> float:
    """Expected wall-clock hours of ``hours`` of work on an interruptible instance.

    Interruptions are a Poisson process at λ = ``interruptions_per_hour`` of wall-clock time
    (during restarts too); work since the last checkpoint is lost and each restart takes
    R = ``restart_hours``. A segment of τ = ``checkpoint_interval_hours`` of work then takes
    ``e^(λR) · (e^(λτ) − 1) / λ`` hours on average (Daly, "A higher order estimate of the
    optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22
    (2006) 303-312, eq. for the expected wall time with the checkpoint write time taken as
    part of the work); the run is ``hours // τ`` whole segments plus the remainder. Finite
    for every finite input (the first-order ``hours / (1 − λ(R + τ/2))`` diverges once
    λ(R + τ/2) ≥ 1); ``hours`` when λ = 0.
    """
    lam, tau, restart = a.interruptions_per_hour, a.checkpoint_interval_hours, a.restart_hours
    if math.isinf(hours):
        return math.inf
    if lam <= 0 or hours <= 0:
        return hours

    def segment(work: float) -> float:
        return math.exp(lam * restart) * math.expm1(lam * work) / lam

    whole, rest = divmod(hours, tau) if tau > 0 else (0.0, hours)
    try:
        return whole * segment(tau) + segment(rest)
    except OverflowError:
        return math.inf


def _spot_warning(
    hours: float, expected: float, price: float | None, currency: str, a: SpotAssumptions
) -> RunWarning:
    extra = (
        f" and {expected * price:,.2f} {currency} instead of {hours * price:,.2f}"
        if (price is not None and math.isfinite(expected))
        else ""
    )
    return _warn(
        WarningCode.SPOT_INTERRUPTIBLE,
        "spot offer: the provider can stop the instance at any time. With "
        f"{a.interruptions_per_hour:g} interruptions per hour, a checkpoint every "
        f"{a.checkpoint_interval_hours:g} h and {a.restart_hours:g} h per restart, the run "
        f"is expected to take {expected:,.1f} h instead of {hours:,.1f} h{extra}",
        total_hours=round(hours, 4),
        expected_total_hours=round(expected, 4),
        interruptions_per_hour=a.interruptions_per_hour,
        checkpoint_interval_hours=a.checkpoint_interval_hours,
        restart_hours=a.restart_hours,
    )


def _scaled(value: float | None, served: float, model: float) -> float | None:
    """A utilisation of the model's rate carried to the served rate (the data-loader cap)."""
    return value * served / model if value is not None and model > 0 else value


def _loader_rate(w: Workload, hw: Hardware, cpu_loader: float | None) -> float | None:
    """Samples/s the host can feed: the slower of the CPUs' rate (``cpu_loader``,
    :func:`data_loader_rate`) and a hard disk's random reads (:func:`disk_read_rate`);
    ``None`` when neither limits."""
    disk = disk_read_rate(w, hw)
    if disk is None:
        return cpu_loader
    return disk if cpu_loader is None else min(cpu_loader, disk)


def _run_figures(
    w: Workload,
    plan: EpochPlan,
    tp: ThroughputEstimate,
    loader: float | None,
    price_per_hour: float | None,
) -> tuple[ServedRates, RunCosts]:
    """The served rates and run costs of one answer, by the rule the ranking's columns use
    (:mod:`app.model.epoch_cost`; one-element columns, no price as NaN)."""
    rates = served_rates(
        np.array([tp.samples_per_s]),
        np.array([tp.samples_per_s_low]),
        np.array([tp.samples_per_s_high]),
        np.array([math.inf if loader is None else loader]),
    )
    price = np.array([math.nan if price_per_hour is None else price_per_hour])
    return rates, run_costs(plan.samples, w.epochs, rates, price)


def _first(column: np.ndarray) -> float:
    """The one figure of a one-element column."""
    return float(column[0])


def _priced(column: np.ndarray, price_per_hour: float | None) -> float | None:
    """A cost figure of a one-element column; ``None`` without a price."""
    return None if price_per_hour is None else _first(column)


def _padded_warning(w: Workload, tokens: int | None) -> RunWarning:
    """The epoch counted each sample as a full sequence, its real length unknown."""
    return _warn(
        WarningCode.EPOCH_TOKENS_PADDED,
        f"the epoch counts each of the {w.samples_per_epoch:,} samples as a full "
        f"{tokens:,}-token sequence; if they are shorter, give tokens_per_epoch "
        "(packed) for the real time and cost",
        samples_per_epoch=w.samples_per_epoch,
        seq_len=tokens,
    )


def combine(
    w: Workload,
    hw: Hardware,
    tp: ThroughputEstimate,
    memory: MemoryEstimate,
    *,
    price_per_hour: float | None = None,
    currency: str = "USD",
    billing: str | None = None,
    spot: SpotAssumptions | None = None,
) -> Estimate:
    """Compose throughput and memory into the answer, applying the data-loader cap.

    ``price_per_hour`` is for the whole instance, already in ``currency``; ``billing``
    ``spot`` adds the interruption warning and the expected time and cost under ``spot``
    (default :class:`SpotAssumptions`).
    """
    cpu_loader = data_loader_rate(w, hw.vcpus)
    loader = _loader_rate(w, hw, cpu_loader)
    plan = epoch_plan(w)
    rates, run = _run_figures(w, plan, tp, loader, price_per_hour)
    samples, low, high = (_first(a) for a in (rates.samples_per_s, rates.low, rates.high))
    tokens = tokens_per_sample(w)
    warnings = shape_warnings(w) + hardware_warnings(w, hw, tp, cpu_loader, memory)
    if plan.assumed_full_length:
        warnings.append(_padded_warning(w, tokens))
    total_hours = _first(run.total_hours)
    interruptible = billing == "spot"
    expected_hours = expected_cost = None
    if interruptible:
        a = spot or SpotAssumptions()
        expected_hours = spot_expected_hours(total_hours, a)
        if price_per_hour is not None:
            expected_cost = expected_hours * price_per_hour
        warnings.append(_spot_warning(total_hours, expected_hours, price_per_hour, currency, a))
    return Estimate(
        samples_per_s=samples,
        samples_per_s_low=low,
        samples_per_s_high=high,
        tokens_per_s=samples * tokens if tokens else None,
        basis=tp.basis,
        situation=tp.situation.value if tp.situation else None,
        precision=tp.precision.value if tp.precision else None,
        epoch_hours=_first(run.epoch_hours),
        epoch_hours_low=_first(run.epoch_hours_low),
        epoch_hours_high=_first(run.epoch_hours_high),
        total_hours=total_hours,
        cost_per_epoch=_priced(run.cost_per_epoch, price_per_hour),
        cost_per_epoch_low=_priced(run.cost_per_epoch_low, price_per_hour),
        cost_per_epoch_high=_priced(run.cost_per_epoch_high, price_per_hour),
        total_cost=_priced(run.total_cost, price_per_hour),
        currency=currency,
        memory=memory,
        epochs=w.epochs,
        total_hours_low=_first(run.total_hours_low),
        total_hours_high=_first(run.total_hours_high),
        total_cost_low=_priced(run.total_cost_low, price_per_hour),
        total_cost_high=_priced(run.total_cost_high, price_per_hour),
        multi_gpu_efficiency=tp.multi_gpu_efficiency,
        multi_gpu_basis=tp.multi_gpu_basis,
        multi_gpu=tp.multi_gpu,
        mfu=_scaled(tp.mfu, samples, tp.samples_per_s),
        hfu=_scaled(tp.hfu, samples, tp.samples_per_s),
        stack=tp.stack,
        data_loader_samples_per_s=loader,
        warnings=tuple(warnings),
        evidence=tp.evidence,
        notes=w.input_notes + tp.notes + memory.notes,
        epoch_definition=plan.definition,
        epoch_samples=plan.samples,
        epoch_tokens=plan.tokens,
        interruptible=interruptible,
        expected_total_hours=expected_hours,
        expected_total_cost=expected_cost,
    )
