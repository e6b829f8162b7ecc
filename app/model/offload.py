"""Throughput cost of CPU offloading: the PCIe traffic of each optimizer step.

With ``cpu_offload`` the states that live in host RAM cross PCIe every step. The transfers are
counted per GPU and added to the step time without overlap (a bound on the slowdown: DeepSpeed
and FSDP overlap part of them with compute); the CPU optimizer's own time is not counted.

* ZeRO-Offload (no sharding, ZeRO-1/2): the 16-bit gradients go to the host and the updated
  16-bit parameters come back, 2 + 2 bytes per trained parameter of the GPU's partition per
  optimizer step (the "4M" communication volume of ZeRO-Offload, Ren et al.
  arXiv:2101.06840 §4.1);
* ZeRO-3 / FSDP parameter offload: each micro-batch gathers the GPU's shard of the parameters
  from host RAM for the forward and again for the backward and sends its gradient shard back:
  3 × the shard's bytes per micro-batch (16-bit under DeepSpeed, fp32 under FSDP, which keeps
  the fp32 shard on the host); a LoRA run moves its frozen base the same way (no gradient).

Host-device bandwidth: the measured peak of a PCIe 4.0 x16 link, 25 GB/s, and 12 GB/s for
PCIe 3.0 (V100) (https://github.com/ZaidQureshi/bam/issues/54, the BaM paper's measurements);
PCIe 5.0 hosts are counted at the 4.0 figure, so their slowdown is overstated.
"""

from __future__ import annotations

from dataclasses import replace

from app.model.memory import frozen_base_bytes, lora_trainable_params
from app.model.types import GpuSpec, Method, Sharding, ThroughputEstimate, Workload

#: Measured host↔device bandwidth, bytes/s (module docstring).
PCIE4_BYTES_PER_S = 25e9
PCIE3_BYTES_PER_S = 12e9
#: Architectures whose cards sit on PCIe 3.0 hosts.
PCIE3_ARCHITECTURES = frozenset({"Volta", "Turing", "Pascal", "Maxwell", "Kepler"})


def host_link_bytes_per_s(gpu: GpuSpec) -> float:
    """Host↔device bandwidth of ``gpu``'s PCIe link (module docstring)."""
    return PCIE3_BYTES_PER_S if gpu.architecture in PCIE3_ARCHITECTURES else PCIE4_BYTES_PER_S


def offload_bytes_per_step(w: Workload, gpu_count: int) -> float:
    """Bytes one GPU moves over PCIe per optimizer step because of ``cpu_offload`` (0 without
    it), as the module docstring counts them."""
    if not w.cpu_offload or not w.params:
        return 0.0
    n = max(int(gpu_count), 1)
    lora = w.method in (Method.LORA, Method.QLORA)
    trained = float(lora_trainable_params(w)) if lora else float(w.params)
    if w.sharding in (Sharding.ZERO3, Sharding.FSDP):
        per = 4.0 if w.sharding == Sharding.FSDP else 2.0
        shard = trained * per / n
        frozen = frozen_base_bytes(w) / n if lora else 0.0
        per_micro_batch = 3.0 * shard + 2.0 * frozen
        return per_micro_batch * w.grad_accum_steps
    partition = n if w.sharding in (Sharding.ZERO1, Sharding.ZERO2) else 1
    return 4.0 * trained / partition


def offload_slowed(
    w: Workload, gpu: GpuSpec, gpu_count: float, tp: ThroughputEstimate
) -> ThroughputEstimate:
    """``tp`` with the PCIe transfers of :func:`offload_bytes_per_step` added to every
    optimizer step: ``rate' = S / (S / rate + t)`` with ``S`` the samples of one step on all
    GPUs and ``t`` the transfer time; ``tp`` itself without ``cpu_offload``. Its ``mfu`` and
    ``hfu`` shrink by the same factor (the step's FLOPs are unchanged, its time is longer)."""
    n = max(int(gpu_count), 1)
    seconds = offload_bytes_per_step(w, n) / host_link_bytes_per_s(gpu)
    if seconds <= 0:
        return tp
    rates = offload_rates(
        w, gpu, gpu_count, tp.samples_per_s, tp.samples_per_s_low, tp.samples_per_s_high
    )
    # utilisation is FLOPs over time: the transfers lengthen the step, not the FLOPs
    kept = rates[0] / tp.samples_per_s if tp.samples_per_s > 0 else 1.0
    mfu = tp.mfu * kept if tp.mfu is not None else None
    hfu = tp.hfu * kept if tp.hfu is not None else None
    note = (
        f"cpu_offload: {offload_bytes_per_step(w, n) / 1e9:.1f} GB over PCIe per GPU and "
        f"optimizer step ({seconds:.2f} s at {host_link_bytes_per_s(gpu) / 1e9:.0f} GB/s) "
        "added to the step time" + (f"; implied MFU {mfu:.2f} with them" if mfu is not None else "")
    )
    return replace(
        tp,
        samples_per_s=rates[0],
        samples_per_s_low=rates[1],
        samples_per_s_high=rates[2],
        mfu=mfu,
        hfu=hfu,
        notes=(*tp.notes, note),
    )


def offload_rates(w: Workload, gpu: GpuSpec, gpu_count: float, *rates: float) -> tuple[float, ...]:
    """``rates`` (samples/s) slowed as :func:`offload_slowed` slows an estimate's; themselves
    without ``cpu_offload``."""
    n = max(int(gpu_count), 1)
    seconds = offload_bytes_per_step(w, n) / host_link_bytes_per_s(gpu)
    if seconds <= 0:
        return rates
    step_samples = float(w.micro_batch_size * w.grad_accum_steps * n)
    return tuple(
        step_samples / (step_samples / rate + seconds) if rate > 0 else rate for rate in rates
    )
