"""Time and money per epoch, currency conversion, warnings, and the composed estimate."""

from __future__ import annotations

import math
from collections.abc import Mapping

from app.estimate.memory import transformer_tokens, vram_per_gpu_gb
from app.estimate.multigpu import effective_interconnect, link_class
from app.estimate.types import (
    TRANSFORMER_ARCHITECTURES,
    Architecture,
    Estimate,
    Hardware,
    MemoryEstimate,
    ThroughputEstimate,
    Workload,
    version_tuple,
)

#: A data-parallel job is called communication-heavy when its predicted PCIe scaling
#: efficiency falls below this (benchmarks.md §4: GNMT/BERT-large lose 10-50 % per GPU).
COMM_HEAVY_EFFICIENCY = 0.85


class UnknownCurrencyError(ValueError):
    """No exchange rate connects the two currencies."""


def convert(
    amount: float, source: str, target: str, rates: Mapping[tuple[str, str], float]
) -> float:
    """Convert ``amount`` from ``source`` to ``target`` currency.

    ``rates[(base, quote)]`` = units of ``quote`` per one ``base`` (1 USD = 7.0197 CNY is
    ``rates[("USD", "CNY")] = 7.0197``); the inverse pair is used when only it is known.

    Raises:
        UnknownCurrencyError: no rate links the two currencies.
    """
    if source == target:
        return amount
    if (source, target) in rates:
        return amount * rates[(source, target)]
    if (target, source) in rates:
        return amount / rates[(target, source)]
    raise UnknownCurrencyError(f"no exchange rate from {source} to {target}")


def epoch_hours(samples_per_epoch: float, samples_per_s: float) -> float:
    """Hours for one epoch: samples per epoch ÷ samples/s ÷ 3600 (∞ if throughput is 0)."""
    if samples_per_s <= 0:
        return math.inf
    return samples_per_epoch / samples_per_s / 3600.0


def data_loader_rate(w: Workload, vcpus: float | None) -> float | None:
    """Samples/s the host CPUs can prepare: ``(vCPUs - 1) × 1000 / cpu_ms_per_sample``.

    One vCPU is left to the training process; data stalls per Mohan et al. (VLDB 2021,
    arXiv:2007.06775), estimation.md §4.7. ``None`` when either input is unknown.
    """
    if not w.cpu_ms_per_sample or not vcpus:
        return None
    workers = max(vcpus - 1, 1.0)
    return workers * 1000.0 / w.cpu_ms_per_sample


def hardware_warnings(
    w: Workload,
    hw: Hardware,
    tp: ThroughputEstimate,
    loader_rate: float | None,
    memory: MemoryEstimate,
) -> list[str]:
    """Bottlenecks and mismatches of ``w`` on ``hw`` as short machine-readable sentences.

    Each warning starts with a stable code: ``oom``, ``oom_possible``, ``disk_too_small``,
    ``ram_short``, ``cuda_too_old``, ``no_nvlink``, ``data_loader_bound``.
    """
    out: list[str] = []
    if memory.oom_risk.value == "high":
        out.append(
            f"oom: predicted peak {memory.peak_memory_gib:.1f} GiB per GPU exceeds the "
            f"{memory.usable_vram_gib:.1f} GiB usable"
        )
    elif memory.memory_utilization > 1.0:
        out.append(
            f"oom_possible: predicted peak {memory.peak_memory_gib:.1f} GiB per GPU (with "
            f"allocator slack) exceeds the {memory.usable_vram_gib:.1f} GiB usable; it fits "
            "only if fragmentation stays low (lower the micro-batch to be safe)"
        )
    if w.dataset_gb and hw.disk_gb and w.dataset_gb > hw.disk_gb:
        out.append(f"disk_too_small: dataset {w.dataset_gb:g} GB > disk {hw.disk_gb:g} GB")
    if hw.ram_gib:
        model_fp32_gib = (w.params or 0) * 4 / 2**30
        total_vram = hw.gpu_count * vram_per_gpu_gb(
            hw.gpu.vram_gb, hw.vram_gib_per_gpu, hw.gpu_count
        )
        if hw.ram_gib < model_fp32_gib:
            out.append(
                f"ram_short: {hw.ram_gib:g} GiB RAM < {model_fp32_gib:.1f} GiB to load the "
                "model in fp32"
            )
        elif hw.ram_gib < total_vram:
            out.append(
                f"ram_short: {hw.ram_gib:g} GiB RAM is less than the {total_vram:g} GiB of GPU "
                "memory (pinned staging buffers, data-loader workers and checkpoint saving "
                "need host RAM at least the size of the GPUs' memory)"
            )
    need, have = version_tuple(w.min_cuda, 2), version_tuple(hw.max_cuda, 2)
    if need and have and have < need:
        out.append(f"cuda_too_old: driver supports CUDA {hw.max_cuda}, workload needs {w.min_cuda}")
    if (
        hw.gpu_count > 1
        and link_class(hw.gpu, effective_interconnect(hw.gpu, hw.interconnect)) != "nvlink"
        and tp.multi_gpu_efficiency < COMM_HEAVY_EFFICIENCY
    ):
        out.append(
            f"no_nvlink: {int(hw.gpu_count)} GPUs over PCIe scale at "
            f"{tp.multi_gpu_efficiency:.0%} for this communication-heavy job"
        )
    if loader_rate is not None and loader_rate < tp.samples_per_s:
        out.append(
            f"data_loader_bound: {hw.vcpus:g} vCPUs prepare ~{loader_rate:.0f} samples/s, "
            f"below the GPUs' {tp.samples_per_s:.0f}"
        )
    return out


def tokens_per_sample(w: Workload) -> int | None:
    """Tokens per sample for token-based workloads (transformers, seq2seq), else ``None``."""
    if w.architecture in TRANSFORMER_ARCHITECTURES and w.architecture != Architecture.VIT:
        return transformer_tokens(w)
    if w.architecture == Architecture.RNN_SEQ2SEQ and w.seq_len:
        return w.seq_len
    return None


def combine(
    w: Workload,
    hw: Hardware,
    tp: ThroughputEstimate,
    memory: MemoryEstimate,
    *,
    price_per_hour: float | None = None,
    currency: str = "USD",
) -> Estimate:
    """Compose throughput and memory into the answer, applying the data-loader cap.

    ``price_per_hour`` is for the whole instance, already in ``currency``.
    """
    loader = data_loader_rate(w, hw.vcpus)
    samples, low, high = tp.samples_per_s, tp.samples_per_s_low, tp.samples_per_s_high
    if loader is not None and loader < samples:
        samples, low, high = loader, min(low, loader), loader
    hours = epoch_hours(w.samples_per_epoch, samples)
    hours_low = epoch_hours(w.samples_per_epoch, high)
    hours_high = epoch_hours(w.samples_per_epoch, low)
    cost = cost_low = cost_high = total = None
    if price_per_hour is not None:
        cost = hours * price_per_hour
        cost_low = hours_low * price_per_hour
        cost_high = hours_high * price_per_hour
        total = cost * w.epochs
    tokens = tokens_per_sample(w)
    return Estimate(
        samples_per_s=samples,
        samples_per_s_low=low,
        samples_per_s_high=high,
        tokens_per_s=samples * tokens if tokens else None,
        basis=tp.basis,
        epoch_hours=hours,
        epoch_hours_low=hours_low,
        epoch_hours_high=hours_high,
        total_hours=hours * w.epochs,
        cost_per_epoch=cost,
        cost_per_epoch_low=cost_low,
        cost_per_epoch_high=cost_high,
        total_cost=total,
        currency=currency,
        memory=memory,
        multi_gpu_efficiency=tp.multi_gpu_efficiency,
        data_loader_samples_per_s=loader,
        warnings=tuple(hardware_warnings(w, hw, tp, loader, memory)),
        evidence=tp.evidence,
        notes=tp.notes,
    )
