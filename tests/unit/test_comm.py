"""The link classes, bytes per step and efficiencies of app/model/comm.py, by hand."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

from app.model.calibration import load_calibration
from app.model.comm import (
    LinkClass,
    StepComm,
    Topology,
    board_twin,
    bus_bandwidth,
    comm_efficiency,
    comm_estimate,
    comm_over,
    link_table,
    step_traffic,
    topology,
    twin_index,
)
from app.model.multigpu import link_cost, multi_gpu_comm
from app.model.types import GpuSpec, Interconnect, Method, Precision, Sharding
from tests.unit.helpers import A100_80_SXM, GPT2, MI300X, RTX_4090

A100_PCIE = dataclasses.replace(A100_80_SXM, name="A100 PCIe 80GB", form_factor="PCIe")
RTX_3090 = dataclasses.replace(
    RTX_4090,
    name="GeForce RTX 3090",
    architecture="Ampere",
    nvlink=True,
    nvlink_bandwidth_gbs=112.5,
)
GB200 = dataclasses.replace(
    A100_80_SXM, name="GB200 (per GPU)", architecture="Blackwell", form_factor="superchip"
)
#: a 7B full fine-tune under DDP at 16-bit: 28 GB of fp32 gradients per step
BIG = dataclasses.replace(GPT2, params=7_000_000_000, precision=Precision.FP16_AMP)


@pytest.mark.parametrize(
    ("gpu", "listed", "count", "link", "label"),
    [
        (A100_80_SXM, None, 8, LinkClass.NVSWITCH, "nvswitch"),
        (MI300X, None, 8, LinkClass.INFINITY_FABRIC, "infinity_fabric"),
        (RTX_3090, Interconnect.NVLINK, 8, LinkClass.NVLINK_BRIDGE, "nvlink_bridge"),
        (A100_PCIE, Interconnect.PCIE, 8, LinkClass.PCIE_P2P, "pcie_p2p"),
        (RTX_4090, Interconnect.PCIE, 2, LinkClass.PCIE_HOST_BRIDGE, "pcie_host_bridge"),
        (RTX_4090, Interconnect.NVLINK, 2, LinkClass.PCIE_HOST_BRIDGE, "pcie_host_bridge"),
        (A100_PCIE, None, 4, LinkClass.PCIE_P2P, "unknown"),
        (A100_80_SXM, None, 16, LinkClass.NETWORK, "network"),
        (GB200, None, 64, LinkClass.NVSWITCH, "nvswitch"),
    ],
)
def test_topology_names_the_link(
    gpu: GpuSpec, listed: Interconnect | None, count: int, link: LinkClass, label: str
) -> None:
    topo = topology(gpu, count, listed)
    assert (topo.link, topo.label) == (link, label)


def test_more_gpus_than_a_machine_holds_are_several_machines() -> None:
    topo = topology(A100_80_SXM, 24, None)
    assert (topo.nodes, topo.gpus_per_node, topo.intra) == (3, 8, LinkClass.NVSWITCH)
    # the DGX A100 default: 8 x 200 Gbit/s, not stated by the offer
    assert (topo.network_gbps, topo.network_stated) == (1600, False)
    stated = topology(A100_80_SXM, 24, None, network_gbps=100)
    assert stated.network_stated
    # the ring is held to the network: 0.86 x 100 Gbit/s / 8 = 10.75 GB/s
    assert bus_bandwidth(A100_80_SXM, stated)[0] == pytest.approx(10.75e9)


def test_published_bus_bandwidths() -> None:
    # NVSwitch: 0.775 of 300 GB/s per direction; PCIe P2P: 0.762 of gen4 x16 31.5 GB/s
    assert bus_bandwidth(A100_80_SXM, topology(A100_80_SXM, 8, None))[0] == pytest.approx(232.5e9)
    p2p = bus_bandwidth(A100_PCIE, topology(A100_PCIE, 8, Interconnect.PCIE))
    assert p2p == pytest.approx((0.762 * 31.5e9, 42e-6))
    # host bridge: 6 GB/s; a bridged 3090 pair: 0.387 of 56.25 GB/s; four 3090s cross PCIe
    assert bus_bandwidth(RTX_4090, topology(RTX_4090, 2, None))[0] == pytest.approx(6e9)
    pair = bus_bandwidth(RTX_3090, topology(RTX_3090, 2, Interconnect.NVLINK))[0]
    assert pair == pytest.approx(0.387 * 56.25e9)
    assert bus_bandwidth(RTX_3090, topology(RTX_3090, 4, Interconnect.NVLINK))[0] == 6e9
    # MI300X: 48 GB/s usable per xGMI link, one link per peer
    assert bus_bandwidth(MI300X, topology(MI300X, 8, None))[0] == pytest.approx(336e9)
    assert bus_bandwidth(MI300X, topology(MI300X, 2, None))[0] == pytest.approx(48e9)
    assert all(v > 0 for v in link_table().values())


def test_link_cost_is_topology_and_bus_bandwidth_kept_per_gpu_spec() -> None:
    topo, cost = link_cost(A100_80_SXM, 8, None)
    assert topo == topology(A100_80_SXM, 8, None)
    assert cost == pytest.approx((232.5e9, bus_bandwidth(A100_80_SXM, topo)[1]))
    assert link_cost(A100_80_SXM, 8.5, None)[1] is cost  # whole GPUs, the same spec: kept
    # another spec under the same name (a what-if GPU) is computed for itself: gen-3 PCIe
    older = dataclasses.replace(A100_PCIE, architecture="Volta")
    assert link_cost(A100_PCIE, 8, Interconnect.PCIE)[1][0] == pytest.approx(0.762 * 31.5e9)
    assert link_cost(older, 8, Interconnect.PCIE)[1][0] == pytest.approx(0.762 * 15.75e9)
    assert link_cost(A100_80_SXM, 24, None, network_gbps=100)[1][0] == pytest.approx(10.75e9)


def test_comm_over_its_parts_is_comm_estimate_and_its_efficiency_alone() -> None:
    cal = load_calibration()
    for w, gpu, n, link, rate in itertools.product(
        (BIG, GPT2, dataclasses.replace(BIG, sharding=Sharding.ZERO3, grad_accum_steps=4)),
        (A100_80_SXM, A100_PCIE, RTX_4090),
        (1, 2, 8, 24),
        (None, Interconnect.PCIE),
        (0.0, 3.5, 900.0),
    ):
        topo = topology(gpu, n, link)
        step = StepComm(
            topo,
            step_traffic(w, topo.gpus),
            bus_bandwidth(gpu, topo),
            w.micro_batch_size * max(w.grad_accum_steps, 1),
            rate,
        )
        parts = comm_over(step, cal)
        assert parts == comm_estimate(w, gpu, topo, rate, cal=cal)
        assert comm_efficiency(step, cal) == parts.efficiency


def test_bytes_per_step_by_strategy() -> None:
    w = dataclasses.replace(GPT2, params=1_000_000_000, precision=Precision.BF16_AMP)
    # DDP under autocast all-reduces fp32 gradients once per step: 2 (n-1)/n x 4 GB
    assert step_traffic(w, 8).bus_bytes == pytest.approx(2 * 7 / 8 * 4e9)
    accum = dataclasses.replace(w, grad_accum_steps=4)
    assert step_traffic(accum, 8).bus_bytes == step_traffic(w, 8).bus_bytes
    # FSDP: every micro-batch gathers the 16-bit weights twice and reduce-scatters 16-bit
    # gradients: (n-1)/n x (2 x 2 + 2) GB, four times with 4 accumulation steps
    fsdp = dataclasses.replace(accum, sharding=Sharding.FSDP)
    assert step_traffic(fsdp, 8).bus_bytes == pytest.approx(4 * 7 / 8 * 6e9)
    # ZeRO-2: 16-bit gradients reduce-scattered per micro-batch, parameters gathered once
    zero2 = dataclasses.replace(accum, sharding=Sharding.ZERO2)
    assert step_traffic(zero2, 8).bus_bytes == pytest.approx(7 / 8 * (4 * 2e9 + 2e9))
    # LoRA under DDP moves only the adapters' gradients
    lora = dataclasses.replace(w, method=Method.LORA, lora_rank=8)
    assert step_traffic(lora, 8).bus_bytes < step_traffic(w, 8).bus_bytes / 100
    assert step_traffic(w, 1).bus_bytes == 0


def test_efficiency_hand_worked() -> None:
    # 28 GB of fp32 gradients over PCIe P2P (24.0 GB/s), 8 GPUs, a 1 s step
    topo = topology(A100_PCIE, 8, Interconnect.PCIE)
    t_comm = 2 * 7 / 8 * 28e9 / (0.762 * 31.5e9) + 1069 * 42e-6
    exposed = max(0.0, t_comm - load_calibration().comm_overlap * 2 / 3 * 1.0)
    loss = (1 - load_calibration().scaling_loss_per_doubling) ** 3
    c = comm_estimate(BIG, A100_PCIE, topo, 1.0)
    assert c.efficiency == pytest.approx(loss / (1 + exposed))
    assert c.comm_time_share == pytest.approx(exposed / (1 + exposed))
    assert c.bytes_per_step == pytest.approx(2 * 7 / 8 * 28e9)


#: the real runs' multi-GPU speed-up cases (../shared/real_runs/time_cases.json), as the model
#: sees them: torchvision ResNet-50 (25,557,032 parameters) and Llama-2-7B's shapes
RESNET50 = dataclasses.replace(GPT2, params=25_557_032, precision=Precision.FP16_AMP)
LLAMA7B = dataclasses.replace(
    GPT2,
    params=6_738_415_616,
    layers=32,
    hidden_size=4096,
    heads=32,
    kv_heads=32,
    ffn_hidden_size=11008,
    vocab_size=32000,
    method=Method.LORA,
)
A10G = dataclasses.replace(
    A100_PCIE, name="A10G", vram_gib=24, nvlink=False, nvlink_bandwidth_gbs=None
)
RTX_3070 = dataclasses.replace(RTX_4090, name="GeForce RTX 3070", architecture="Ampere")


def test_real_run_speed_up_cases_bytes_and_link_time() -> None:
    # U-15: 2 x RTX 3070 (GeForce: no peer-to-peer, the host bridge's 6 GB/s), ResNet-50 DDP
    # under autocast: fp32 gradients, one all-reduce of 2 (n-1)/n x 102.2 MB in 4 buckets of
    # 25 MiB (102.2 MB / 26.2 MB -> 4)
    topo = topology(RTX_3070, 2, Interconnect.PCIE)
    assert topo.link == LinkClass.PCIE_HOST_BRIDGE
    traffic = step_traffic(RESNET50, 2)
    assert traffic.bus_bytes == pytest.approx(102_228_128)
    assert traffic.calls == 4
    busbw, latency = bus_bandwidth(RTX_3070, topo)
    assert (busbw, latency) == pytest.approx((6e9, 42e-6))
    assert traffic.bus_bytes / busbw + traffic.calls * latency == pytest.approx(0.017206, rel=1e-4)
    # U-9: Llama-7B LoRA r=16 on all seven linears: 16 x 32 x (4 x 8192 + 3 x 15104)
    # = 39,976,960 adapter parameters, fp32 gradients (fp16 autocast): 159.9 MB over 2 GPUs
    u9 = dataclasses.replace(LLAMA7B, lora_rank=16, precision=Precision.FP16_AMP)
    assert step_traffic(u9, 2).bus_bytes == pytest.approx(39_976_960 * 4)
    # U-1: r=4 over 8 x A10G (PCIe gen4 P2P, 0.762 x 31.5 = 24.0 GB/s): 2 x 7/8 x 39.98 MB
    # = 69.96 MB in 2 buckets, 2.92 ms of link time per optimizer step
    u1 = dataclasses.replace(LLAMA7B, lora_rank=4, precision=Precision.BF16_AMP)
    a10g = topology(A10G, 8, Interconnect.PCIE)
    assert a10g.link == LinkClass.PCIE_P2P
    busbw, latency = bus_bandwidth(A10G, a10g)
    assert busbw == pytest.approx(24.003e9)
    traffic = step_traffic(u1, 8)
    assert traffic.bus_bytes == pytest.approx(2 * 7 / 8 * 9_994_240 * 4)
    assert traffic.bus_bytes / busbw + traffic.calls * latency == pytest.approx(0.0030, abs=1e-4)


def test_accumulation_hides_the_all_reduce_behind_the_last_micro_batch_only() -> None:
    # DDP all-reduces once per optimizer step, during the last micro-batch's backward (the
    # others run under no_sync): with 4 accumulation steps a quarter of the 2/3 of the step
    cal = load_calibration()
    topo = topology(A100_PCIE, 8, Interconnect.PCIE)
    accum = dataclasses.replace(BIG, grad_accum_steps=4)
    assert step_traffic(accum, 8).hideable == pytest.approx(2 / 3 / 4)
    # 4 micro-batches of one sample at 0.25 samples/s: a 16 s step, 8 s of link time
    t_comm = 2 * 7 / 8 * 28e9 / (0.762 * 31.5e9) + 1069 * 42e-6
    exposed = max(0.0, t_comm - cal.comm_overlap * 2 / 3 / 4 * 16.0)
    loss = (1 - cal.scaling_loss_per_doubling) ** 3
    assert comm_estimate(accum, A100_PCIE, topo, 0.25).efficiency == pytest.approx(
        loss * 16.0 / (16.0 + exposed)
    )
    # ZeRO-2 reduce-scatters every micro-batch's gradients during its backward: 2/3 of the
    # step; ZeRO-3/FSDP also prefetch the parameters during the forward: all of it
    zero2 = dataclasses.replace(accum, sharding=Sharding.ZERO2)
    assert step_traffic(zero2, 8).hideable == pytest.approx(2 / 3)
    fsdp = dataclasses.replace(accum, sharding=Sharding.FSDP)
    assert step_traffic(fsdp, 8).hideable == 1.0


def test_zero2_exposes_its_parameter_gather_after_the_step() -> None:
    # ZeRO-2 all-gathers the updated 16-bit parameters after the optimizer step, outside any
    # backward: 7/8 x 7e9 x 2 B = 12.25 GB in ceil(14e9 / 25 MiB) = 535 calls, never hidden;
    # the 16-bit gradients' reduce-scatter (the same bytes) hides behind 2/3 of the step
    cal = load_calibration()
    topo = topology(A100_PCIE, 8, Interconnect.PCIE)
    zero2 = dataclasses.replace(BIG, sharding=Sharding.ZERO2)
    traffic = step_traffic(zero2, 8)
    assert traffic.exposed_bytes == pytest.approx(7 / 8 * 14e9)
    assert traffic.exposed_calls == math.ceil(14e9 / 25 / 2**20) == 535
    busbw, latency = 0.762 * 31.5e9, 42e-6
    gather = 7 / 8 * 14e9 / busbw + 535 * latency
    scatter = 7 / 8 * 14e9 / busbw + 535 * latency
    t_step = 16.0  # 4 samples at 0.25 samples/s
    exposed = gather + max(0.0, scatter - cal.comm_overlap * 2 / 3 * t_step)
    loss = (1 - cal.scaling_loss_per_doubling) ** 3
    got = comm_estimate(dataclasses.replace(zero2, micro_batch_size=4), A100_PCIE, topo, 0.25)
    assert got.efficiency == pytest.approx(loss * t_step / (t_step + exposed))
    # the same bytes under ZeRO-1 hide behind the backward (one all-reduce): never slower
    zero1 = dataclasses.replace(zero2, sharding=Sharding.ZERO1, micro_batch_size=4)
    assert comm_estimate(zero1, A100_PCIE, topo, 0.25).efficiency > got.efficiency * 0.9


def _eta(topo: Topology, gpu: GpuSpec = A100_PCIE) -> float:
    return comm_estimate(BIG, gpu, topo, 1.0).efficiency


def test_communication_heavy_job_orders_the_links() -> None:
    fast = dataclasses.replace(A100_PCIE, nvlink_bandwidth_gbs=600)
    etas = [
        _eta(Topology(gpus=8, intra=LinkClass.NVSWITCH, stated=True), fast),
        _eta(Topology(gpus=8, intra=LinkClass.NVLINK_BRIDGE, stated=True), fast),
        _eta(Topology(gpus=8, intra=LinkClass.PCIE_P2P, stated=True), fast),
        _eta(Topology(gpus=8, intra=LinkClass.PCIE_HOST_BRIDGE, stated=True), fast),
        _eta(topology(fast, 8, Interconnect.PCIE, node_gpus=4)),
    ]
    assert all(a >= b for a, b in itertools.pairwise(etas)), etas
    assert etas[0] > etas[-1]


@pytest.mark.parametrize("gpu", [A100_80_SXM, A100_PCIE, RTX_4090, RTX_3090, MI300X, GB200])
@pytest.mark.parametrize("sharding", list(Sharding))
def test_efficiency_is_never_above_one(gpu: GpuSpec, sharding: Sharding) -> None:
    # (the served path makes more GPUs never slower: tests/test_properties.py)
    w = dataclasses.replace(BIG, sharding=sharding, grad_accum_steps=2)
    for n in (1, 2, 3, 4, 8, 16, 32, 256):
        for rate in (0.01, 2.0, 1e4):
            assert 0 < multi_gpu_comm(w, gpu, n, Interconnect.NVLINK, rate).efficiency <= 1


def test_sxm_never_slower_than_pcie_of_the_same_chip() -> None:
    for n in (2, 4, 8, 16):
        sxm = multi_gpu_comm(BIG, A100_80_SXM, n, None, 2.0).efficiency
        pcie = multi_gpu_comm(BIG, A100_PCIE, n, Interconnect.PCIE, 2.0).efficiency
        assert sxm >= pcie, n


def _twin_gpu(name: str, vram: float, form: str | None, arch: str = "Ampere") -> GpuSpec:
    return GpuSpec(name=name, architecture=arch, vram_gib=vram, form_factor=form)


SXM40 = _twin_gpu("A100 SXM4 40GB", 40, "SXM")
SXM80 = _twin_gpu("A100 SXM4 80GB", 80, "SXM")
PCIE40 = _twin_gpu("A100 PCIe 40GB", 40, "PCIe")
PCIE80 = _twin_gpu("A100 PCIe 80GB", 80, "PCIe")
H100_NVL = _twin_gpu("H100 NVL 94GB", 94, "PCIe", "Hopper")
H100_SXM = _twin_gpu("H100 SXM 80GB", 80, "SXM", "Hopper")
CATALOG = {g.name: g for g in (SXM40, SXM80, PCIE40, PCIE80, H100_NVL, H100_SXM)}


def test_twins_pair_the_same_chip_and_memory() -> None:
    index = twin_index(CATALOG)
    assert board_twin(PCIE80, index) is SXM80
    assert board_twin(PCIE40, index) is SXM40
    assert index[SXM40.name] is PCIE40 and index[SXM80.name] is PCIE80
    # a board has no board twin
    assert board_twin(SXM80, index) is None


def test_no_twin_across_memory_sizes() -> None:
    index = twin_index(CATALOG)
    # the only H100 card is 94 GB, the only board 80 GB: not the same memory
    assert H100_SXM.name not in index
    assert board_twin(H100_NVL, index) is None
    assert len(index) == 4
