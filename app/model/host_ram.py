"""The host's RAM against a job (:func:`ram_warnings`): short of what the job itself needs
(``ram_short``), below the GPUs' memory (``ram_below_vram``, advice), or not stated for a job
that offloads to it (``ram_unlisted``); :func:`ram_needed_gib` is the one rule all three read.

Pure; part of :func:`app.model.run_warnings.hardware_warnings`.
"""

from __future__ import annotations

import math

from app.model.host import checkpoint_gb, gathered_checkpoint_gib
from app.model.memory import host_offload_bytes, vram_per_gpu_gib
from app.model.types import Hardware, RunWarning, WarningCode, Workload


def ram_warnings(w: Workload, hw: Hardware) -> list[RunWarning]:
    """Host RAM short of, in turn: the states offloaded to it, the model in fp32, a gathered
    checkpoint of sharded training, the GPUs' memory (the first that applies); with no RAM
    stated, :func:`_ram_unlisted`."""
    needs = _ram_needs(w, hw)
    offload_gib, model_fp32_gib, ckpt_gib, total_vram = needs
    if not hw.ram_gib:
        return _ram_unlisted(offload_gib, _needed(needs), total_vram)
    ram = hw.ram_gib
    if ram < offload_gib:
        message = (
            f"out of memory on the host: the states offloaded to CPU RAM (master "
            f"weights, gradients, optimizer states, paged or offloaded activations) "
            f"need {offload_gib:.1f} GiB but the offer has {ram:g} GiB"
        )
        return [_ram_short(ram, offload_gib, message)]
    if ram < model_fp32_gib:
        message = (
            f"{ram:g} GiB of host RAM is less than the {model_fp32_gib:.1f} GiB "
            "needed to load the model in fp32 (and to gather it for a checkpoint)"
        )
        return [_ram_short(ram, model_fp32_gib, message)]
    if ram < ckpt_gib:
        message = (
            f"{ram:g} GiB of host RAM is less than the {ckpt_gib:.1f} GiB of a "
            "full checkpoint (weights + optimizer state), which sharded training "
            "gathers in one process's RAM to save it"
        )
        return [_ram_short(ram, ckpt_gib, message, checkpoint_gb=round(checkpoint_gb(w), 2))]
    if ram < total_vram:
        # advice, not a blocker: the job's own host needs (above) fit
        message = (
            f"{ram:g} GiB of host RAM is less than the {total_vram:g} GiB of GPU "
            "memory: pinned staging buffers, data-loader workers and checkpoint saving "
            "usually want host RAM at least the size of the GPUs' memory, so loading or "
            "saving may be slow; the job's own host needs fit"
        )
        values = {"ram_gib": ram, "needed_gib": round(total_vram, 2)}
        return [RunWarning(code=WarningCode.RAM_BELOW_VRAM, message=message, values=values)]
    return []


def _ram_unlisted(offload_gib: float, needed_gib: float, total_vram: float) -> list[RunWarning]:
    """No host RAM stated for a job that offloads states to the CPU (``offload_gib`` > 0) and
    needs more host RAM (``needed_gib``: :func:`ram_needed_gib`, the ``ram_short`` rule) than
    the machine's GPU memory (``total_vram``, GiB), the size host RAM usually at least
    matches (``ram_below_vram``): ``ram_unlisted``, naming the need, so a machine that lists
    no RAM is not read as one that has enough."""
    if offload_gib <= 0 or needed_gib <= total_vram:
        return []
    message = (
        "the host RAM is not stated (hardware.ram_gib; the offer lists none): this job "
        f"offloads training states to the CPU and needs {needed_gib:.1f} GiB of host RAM, "
        f"more than the {total_vram:g} GiB of GPU memory that host RAM usually at least "
        "matches; with less it cannot run"
    )
    values = {"needed_gib": round(needed_gib, 2), "gpu_memory_gib": round(total_vram, 2)}
    return [RunWarning(code=WarningCode.RAM_UNLISTED, message=message, values=values)]


def _ram_needs(w: Workload, hw: Hardware) -> tuple[float, float, float, float]:
    """Host RAM (GiB) ``w`` needs on ``hw`` (its RAM aside), in the order
    :func:`ram_warnings` checks them: the states offloaded to it
    (:func:`app.model.memory.host_offload_bytes`), the model in fp32 (4 bytes per
    parameter), a gathered checkpoint of sharded training
    (:func:`app.model.host.gathered_checkpoint_gib`), the GPUs' memory."""
    offload_gib = host_offload_bytes(w, max(math.floor(hw.gpu_count), 1)) / 2**30
    model_fp32_gib = (w.params or 0) * 4 / 2**30
    ckpt_gib = gathered_checkpoint_gib(w, hw)
    total_vram = hw.gpu_count * vram_per_gpu_gib(hw.gpu.vram_gib, hw.vram_gib_per_gpu, hw.gpu_count)
    return offload_gib, model_fp32_gib, ckpt_gib, total_vram


def ram_needed_gib(w: Workload, hw: Hardware) -> float:
    """The least host RAM (GiB) with which ``w`` on ``hw`` gets no ``ram_short`` warning: an
    offer whose listed RAM (``hw.ram_gib``, ignored here) is below it cannot run the job
    (:func:`ram_warnings`, the same needs: the offloaded states, the model in fp32, a
    gathered checkpoint; RAM below the GPUs' memory is advice, ``ram_below_vram``)."""
    return _needed(_ram_needs(w, hw))


def _needed(needs: tuple[float, float, float, float]) -> float:
    """The ``ram_short`` rule on :func:`_ram_needs`: the largest of the offloaded states, the
    model in fp32 and a gathered checkpoint (GiB; the GPUs' memory is advice only)."""
    return max(needs[:3])


def _ram_short(ram_gib: float, needed_gib: float, message: str, **more: object) -> RunWarning:
    """A ``ram_short`` warning: ``ram_gib`` on offer, ``needed_gib`` (rounded) needed."""
    values = {"ram_gib": ram_gib, "needed_gib": round(needed_gib, 2), **more}
    return RunWarning(code=WarningCode.RAM_SHORT, message=message, values=values)
