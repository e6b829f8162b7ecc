"""Memory properties users take for granted (issue 24), on the core: a 16-bit base never
needs more than an fp32 one; offloading never lowers the host RAM needed; more GPUs under
FSDP/ZeRO-3 never raise the per-GPU state memory; usable VRAM is below the datasheet figure
for every catalog card."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from app.calibrate.dataset import load_dataset
from app.model.memory import (
    host_offload_bytes,
    peak_memory_bytes,
    state_bytes,
    usable_vram_gib,
)
from app.model.offload import offload_bytes_per_step, offload_slowed
from app.model.types import (
    Architecture,
    BaseDtype,
    Basis,
    GpuSpec,
    Method,
    Optimizer,
    Precision,
    Sharding,
    ThroughputEstimate,
    Workload,
)
from app.settings import PROJECT_ROOT

LLAMA_7B = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    params=6_738_415_616,
    layers=32,
    hidden_size=4096,
    heads=32,
    ffn_hidden_size=11008,
    vocab_size=32000,
    seq_len=2048,
    micro_batch_size=2,
    gradient_checkpointing=True,
)
PRECISIONS = [Precision.BF16_AMP, Precision.FP16_AMP, Precision.BF16, Precision.FP32]
SHARDINGS = list(Sharding)


@pytest.mark.parametrize(("precision", "sharding"), list(itertools.product(PRECISIONS, SHARDINGS)))
def test_a_16_bit_base_never_needs_more_than_fp32(precision: Precision, sharding: Sharding) -> None:
    for method, count in itertools.product((Method.LORA, Method.QLORA), (1, 4)):
        w = dataclasses.replace(LLAMA_7B, precision=precision, sharding=sharding, method=method)
        bf16 = peak_memory_bytes(dataclasses.replace(w, base_dtype=BaseDtype.BF16), count, 2)
        fp32 = peak_memory_bytes(dataclasses.replace(w, base_dtype=BaseDtype.FP32), count, 2)
        assert bf16.total_gib <= fp32.total_gib, (method, count)
        # the base itself: 2 bytes per parameter against 4, whole on one GPU
        if count == 1 and sharding == Sharding.NONE:
            assert fp32.weights_gib - bf16.weights_gib == pytest.approx(
                2 * 6_738_415_616 / 2**30, rel=1e-9
            )


@pytest.mark.parametrize("method", list(Method))
@pytest.mark.parametrize("optimizer", [Optimizer.ADAMW, Optimizer.PAGED_ADAMW_8BIT])
def test_offloading_never_lowers_host_ram_needed(method: Method, optimizer: Optimizer) -> None:
    for sharding, count in itertools.product(SHARDINGS, (1, 2, 8)):
        w = dataclasses.replace(LLAMA_7B, method=method, optimizer=optimizer, sharding=sharding)
        plain = host_offload_bytes(w, count)
        states = host_offload_bytes(dataclasses.replace(w, cpu_offload=True), count)
        both = host_offload_bytes(
            dataclasses.replace(w, cpu_offload=True, activation_offloading=True), count
        )
        assert plain <= states <= both, (sharding, count)
    # full fine-tune with ZeRO-Offload: fp32 master + fp32 grads + AdamW's two fp32 moments
    full = dataclasses.replace(LLAMA_7B, cpu_offload=True, sharding=Sharding.ZERO2)
    assert host_offload_bytes(full, 8) == pytest.approx(16 * 6_738_415_616)
    # pure bf16 (torchtune dtype bf16 + fsdp_cpu_offload): bf16 weights, gradients and AdamW's
    # two bf16 moments, 2 + 2 + 4 = 8 B, the pure-bf16 note's bytes per parameter
    pure = dataclasses.replace(full, precision=Precision.BF16, sharding=Sharding.FSDP)
    assert host_offload_bytes(pure, 8) == pytest.approx(8 * 6_738_415_616)


@pytest.mark.parametrize("sharding", [Sharding.FSDP, Sharding.ZERO3])
@pytest.mark.parametrize("method", list(Method))
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("offload", [False, True])
def test_more_gpus_never_raise_per_gpu_state_memory(
    sharding: Sharding, method: Method, precision: Precision, offload: bool
) -> None:
    w = dataclasses.replace(
        LLAMA_7B, sharding=sharding, method=method, precision=precision, cpu_offload=offload
    )

    def per_gpu(n: int) -> float:
        s = state_bytes(w, n)
        return s.weights + s.gradients + s.optimizer + s.buffers

    sizes = [per_gpu(n) for n in (1, 2, 4, 8, 16, 64)]
    assert sizes == sorted(sizes, reverse=True), sizes


def test_usable_vram_is_below_the_datasheet_for_every_card() -> None:
    catalog = load_dataset(PROJECT_ROOT / "seed_data").catalog
    assert len(catalog) > 50
    for name, gpu in catalog.items():
        assert 0 < usable_vram_gib(gpu.vram_gib, name) < gpu.vram_gib, name
    # ECC GDDR6 cards expose ~22 of their 24 GiB (nvidia-smi 23028 MiB less the driver's share)
    assert usable_vram_gib(24, "A10G") == pytest.approx(21.99, abs=0.01)
    assert usable_vram_gib(80, "A100 SXM4 80GB") == pytest.approx(79.14)


def test_offloading_slows_each_step_by_its_pcie_traffic() -> None:
    # ZeRO-Offload of a 7B full fine-tune on one GPU: 2 B of gradients out and 2 B of
    # parameters back per parameter and step, 26.95 GB, 1.08 s at 25 GB/s (PCIe 4.0)
    w = dataclasses.replace(LLAMA_7B, cpu_offload=True)
    assert offload_bytes_per_step(w, 1) == pytest.approx(4 * 6_738_415_616)
    gpu = GpuSpec(name="A100 SXM4 80GB", architecture="Ampere", vram_gib=80)
    tp = ThroughputEstimate(
        samples_per_s=2.0,
        samples_per_s_low=1.0,
        samples_per_s_high=4.0,
        basis=Basis.MEASURED,
        multi_gpu_efficiency=1.0,
    )
    slowed = offload_slowed(w, gpu, 1, tp)
    seconds = 4 * 6_738_415_616 / 25e9
    assert slowed.samples_per_s == pytest.approx(2 / (2 / 2.0 + seconds))  # 2 samples a step
    assert slowed.samples_per_s < tp.samples_per_s
    assert offload_slowed(LLAMA_7B, gpu, 1, tp) is tp  # no offload, no change
    # more GPUs under ZeRO-2 split the partition each one moves
    assert offload_bytes_per_step(dataclasses.replace(w, sharding=Sharding.ZERO2), 8) == (
        pytest.approx(4 * 6_738_415_616 / 8)
    )
