"""How the GPUs of a run are joined, and what their collectives cost per optimizer step.

One rule, in one place, turns what an offer or a user states (the GPU, its count, the listed
interconnect word) into a :class:`Topology`: the named link class the collectives cross
(:class:`LinkClass`), how many machines the GPUs span, and whether the link was stated or is
unknown. :func:`bus_bandwidth` gives that link's all-reduce bus bandwidth (nccl-tests
``busbw``) and per-call latency from the published measurements in
``seed_data/link_bandwidth.csv`` (each with its source URL, date seen and units);
:func:`step_traffic` the bytes each GPU moves per optimizer step for a data-parallel strategy
(DDP, ZeRO-1/2/3, FSDP) at the precision used; :func:`comm_estimate` the efficiency
(:mod:`app.model.multigpu` applies it):

    t_compute = micro_batch × grad_accum / per-GPU samples/s
    t_comm    = bus bytes / busbw + calls × latency
    exposed   = max(0, t_comm − overlap × hideable share × t_compute)
    η         = (1 − κ)^log2(n) · t_compute / (t_compute + exposed)

``overlap`` (how much of the hideable compute a collective actually hides behind) and κ (per
doubling: stragglers, synchronisation, input pipelines) are the only fitted constants
(:attr:`~app.model.calibration.Calibration.comm_overlap`,
:attr:`~app.model.calibration.Calibration.scaling_loss_per_doubling` of the calibration
passed in; ``tools/fit_constants.py``, rows weighted by their communication share).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from app.model.calibration import Calibration, load_calibration
from app.model.memory import lora_trainable_params
from app.model.types import GpuSpec, Hardware, Interconnect, Method, Precision, Sharding, Workload
from app.resources import seed_dir


class LinkClass(StrEnum):
    """The link a run's collectives cross (the slowest one on the ring)."""

    #: all-to-all NVLink through NVSwitch chips (HGX/DGX boards; SXM modules)
    NVSWITCH = "nvswitch"
    #: NVLink bridges join PCIe cards in pairs; pairs talk over PCIe
    NVLINK_BRIDGE = "nvlink_bridge"
    #: AMD Infinity Fabric (xGMI) mesh of OAM modules
    INFINITY_FABRIC = "infinity_fabric"
    #: PCIe with peer-to-peer through a PCIe switch (datacenter and workstation cards)
    PCIE_P2P = "pcie_p2p"
    #: PCIe through the CPU's host bridge, no peer-to-peer (GeForce cards: copies via host memory)
    PCIE_HOST_BRIDGE = "pcie_host_bridge"
    #: several machines over a network (InfiniBand, RoCE, Ethernet)
    NETWORK = "network"


#: PCIe x16 per-direction bandwidth in GB/s by generation (Stas Bekman, ML Engineering,
#: network chapter; estimation.md §4.6).
PCIE_GBS = {3: 15.75, 4: 31.5, 5: 63.0}

#: GPUs one machine (one NVLink domain) holds when the offer does not say: 8 (HGX/DGX boards,
#: the largest PCIe instances such as AWS g5.48xlarge); 16 for V100 SXM3, which only ships in
#: 16-GPU DGX-2/HGX-2 systems (NVIDIA DGX-2 datasheet); 72 for Grace-Blackwell superchips,
#: whose NVL72 rack is one NVLink domain of 72 GPUs
#: (https://www.nvidia.com/en-us/data-center/gb200-nvl72/); 1 for other superchips (GH200:
#: one GPU per Grace-Hopper node, e.g. Lambda's 1x GH200 instances).
DEFAULT_GPUS_PER_NODE = 8
SXM3_GPUS_PER_NODE = 16
NVL72_GPUS_PER_NODE = 72

#: PyTorch DDP's default gradient bucket (``bucket_cap_mb=25``,
#: https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html):
#: one all-reduce call per bucket.
DDP_BUCKET_BYTES = 25 * 2**20

#: Share of a step's compute a gradient collective can hide behind: the backward pass, about
#: 2/3 of the training FLOPs (forward 2N, backward 4N per token; Kaplan et al. 2020). Sharded
#: parameter gathers (ZeRO-3/FSDP) prefetch during forward and backward: all of it.
BACKWARD_SHARE = 2 / 3

LINK_TABLE = "link_bandwidth.csv"


def pcie_generation(gpu: GpuSpec) -> int:
    """PCIe generation by GPU architecture (Hopper/Blackwell 5, Ampere/Ada/CDNA 4, older 3)."""
    arch = gpu.architecture.lower()
    if arch in ("hopper", "blackwell"):
        return 5
    if arch in ("ampere", "ada lovelace", "cdna 2", "cdna 3", "rdna 3"):
        return 4
    return 3


@lru_cache(maxsize=4)
def link_table(path: Path | None = None) -> dict[tuple[str, str], float]:
    """``(link class, quantity) -> value`` from ``seed_data/link_bandwidth.csv``.

    Quantities: ``busbw_fraction`` (of the link's per-direction spec), ``busbw_gbs`` (GB/s per
    GPU), ``latency_us`` (per collective call), ``default_node_gbps_*`` (Gbit/s per node).

    Raises:
        FileNotFoundError: the table is missing.
    """
    with (path or seed_dir() / LINK_TABLE).open(encoding="utf-8", newline="") as fh:
        return {(r["link_class"], r["quantity"]): float(r["value"]) for r in csv.DictReader(fh)}


def host_bridge_busbw_gbs() -> float:
    """All-reduce bus bandwidth (GB/s per GPU) of GPUs joined through the PCIe host bridge
    without peer-to-peer: ``pcie_host_bridge`` ``busbw_gbs`` of ``seed_data/link_bandwidth.csv``
    (NCCL's maintainer: 6-9 GB/s through the CPU; 3.32-5.55 GB/s measured between two RTX
    3070 Ti behind a PHB bridge). The one figure both the estimate and its warning use."""
    return link_table()[("pcie_host_bridge", "busbw_gbs")]


def _is_board(gpu: GpuSpec) -> bool:
    """SXM/OAM modules and superchips: they sit on NVSwitch/Infinity Fabric baseboards."""
    form = (gpu.form_factor or "").upper()
    return form in ("SXM", "OAM", "SUPERCHIP") or "SXM" in gpu.name.upper()


def gpus_per_node(gpu: GpuSpec) -> int:
    """GPUs one machine of ``gpu`` holds by default (:data:`DEFAULT_GPUS_PER_NODE`)."""
    name = gpu.name.upper()
    if "SXM3" in name:
        return SXM3_GPUS_PER_NODE
    if (gpu.form_factor or "").upper() == "SUPERCHIP":
        return NVL72_GPUS_PER_NODE if name.startswith(("GB2", "GB3")) else 1
    return DEFAULT_GPUS_PER_NODE


def default_network_gbps(gpu: GpuSpec, node_gpus: int) -> float:
    """Network per node (Gbit/s) assumed when the offer states none: the DGX reference design
    for NVLink-switched boards, one NIC per GPU (200 Gbit/s up to Ampere, 400 from Hopper
    on), and 100 Gbit/s per 8-GPU PCIe machine (``seed_data/link_bandwidth.csv``), scaled to
    ``node_gpus`` GPUs per node."""
    table = link_table()
    if not _is_board(gpu):
        return table[("network", "default_node_gbps_pcie")] * node_gpus / 8
    newer = gpu.architecture.lower() in ("hopper", "blackwell", "cdna 3", "cdna 4")
    key = "default_node_gbps_sxm_hopper" if newer else "default_node_gbps_sxm_ampere"
    return table[("network", key)] * node_gpus / 8


def _chip_key(gpu: GpuSpec) -> tuple[str, str, str, float]:
    """What a board and its PCIe card share: vendor, architecture, memory size and chip (the
    name's first word: ``A100`` of ``A100 PCIe 80GB`` and ``A100 SXM4 80GB``)."""
    return (gpu.vendor, gpu.architecture, gpu.name.split()[0], gpu.vram_gib)


def twin_index(catalog: Mapping[str, GpuSpec]) -> dict[str, GpuSpec]:
    """Name → the other form of the same chip and memory (:func:`_chip_key`): every PCIe
    card → its SXM/OAM board and each board → its first PCIe card (catalog order), where the
    catalog holds both. One pass over the catalog; callers keep the index
    (:func:`board_twin` looks it up)."""
    boards: dict[tuple[str, str, str, float], GpuSpec] = {}
    cards = [gpu for gpu in catalog.values() if gpu.name and not _is_board(gpu)]
    for gpu in catalog.values():
        if gpu.name and _is_board(gpu):
            boards.setdefault(_chip_key(gpu), gpu)
    index: dict[str, GpuSpec] = {}
    for card in cards:
        board = boards.get(_chip_key(card))
        if board is not None:
            index[card.name] = board
            index.setdefault(board.name, card)
    return index


def board_twin(gpu: GpuSpec, index: Mapping[str, GpuSpec]) -> GpuSpec | None:
    """The SXM/OAM module of ``gpu``'s chip and memory (``A100 PCIe 80GB`` → ``A100 SXM4
    80GB``) in a :func:`twin_index`; ``None`` for a board itself or when the catalog has none.
    A PCIe card never scales better than its board twin: same chip, a slower link."""
    twin = index.get(gpu.name)
    if twin is None or _is_board(gpu) or _chip_key(twin) != _chip_key(gpu):
        return None  # (a spec of the same name with other memory is not the catalog's card)
    return twin


@dataclass(frozen=True, slots=True)
class Fabric:
    """What an offer or a request states about the machines its GPUs sit in: ``node_gpus``
    GPUs per machine and ``network_gbps`` Gbit/s of network per machine; ``None`` where not
    stated (:func:`topology` then takes :func:`gpus_per_node` and
    :func:`default_network_gbps`, and the answer says the network was assumed)."""

    node_gpus: int | None = None
    network_gbps: float | None = None


#: nothing stated
NO_FABRIC = Fabric()


def fabric_of(hw: Hardware) -> Fabric:
    """The :class:`Fabric` a machine description states (its ``gpus_per_node`` and
    ``network_gbps``)."""
    if hw.gpus_per_node is None and hw.network_gbps is None:
        return NO_FABRIC
    return Fabric(hw.gpus_per_node, hw.network_gbps)


@dataclass(frozen=True, slots=True)
class Topology:
    """How ``gpus`` GPUs of one model are joined.

    ``intra`` is the link inside one machine, ``link`` the one the collectives are limited by
    (``network`` when ``nodes`` > 1); ``stated`` is False when the offer names no link and the
    GPU's form factor does not imply one (the link is then ``unknown`` to the answer, modelled
    as ``intra``). ``network_gbps`` is the network per node in Gbit/s (several nodes only) and
    ``network_stated`` whether the offer gave it (else :func:`default_network_gbps`).
    """

    gpus: int
    intra: LinkClass
    stated: bool
    nodes: int = 1
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    network_gbps: float | None = None
    network_stated: bool = False

    @property
    def link(self) -> LinkClass:
        """The class the collectives are limited by."""
        return LinkClass.NETWORK if self.nodes > 1 else self.intra

    @property
    def label(self) -> str:
        """The link class as the answer names it: ``unknown`` when neither stated nor implied."""
        return self.link.value if self.stated or self.nodes > 1 else "unknown"


def intra_node_link(gpu: GpuSpec, interconnect: Interconnect | None) -> tuple[LinkClass, bool]:
    """The link inside one machine and whether it is known (stated, or implied by the form).

    SXM/OAM modules: NVSwitch (NVIDIA) or Infinity Fabric (AMD), unless listed as ``pcie``;
    ``nvlink`` on a PCIe card with NVLink: bridge pairs; otherwise PCIe, through a switch with
    peer-to-peer for datacenter/workstation cards, through the host bridge for GeForce cards
    (the driver disables peer-to-peer on them: tinygrad/open-gpu-kernel-modules#17).
    """
    board = _is_board(gpu)
    if board and interconnect != Interconnect.PCIE:
        return (
            LinkClass.INFINITY_FABRIC if gpu.vendor.upper() == "AMD" else LinkClass.NVSWITCH
        ), True
    if interconnect == Interconnect.NVLINK and gpu.nvlink and gpu.nvlink_bandwidth_gbs:
        return LinkClass.NVLINK_BRIDGE, True
    pcie = LinkClass.PCIE_HOST_BRIDGE if gpu.market == "consumer" else LinkClass.PCIE_P2P
    return pcie, interconnect is not None


def link_grows_with_count(gpu: GpuSpec, interconnect: Interconnect | None) -> bool:
    """Whether the link's bandwidth per GPU grows with the GPUs used inside one machine: an
    Infinity Fabric mesh joins each pair by its own link, so 2 of 8 MI300X share one link
    and 8 use all seven (:func:`_intra_busbw_gbs`)."""
    return intra_node_link(gpu, interconnect)[0] == LinkClass.INFINITY_FABRIC


def topology(
    gpu: GpuSpec,
    gpu_count: float,
    interconnect: Interconnect | None,
    *,
    node_gpus: int | None = None,
    network_gbps: float | None = None,
) -> Topology:
    """The :class:`Topology` of ``gpu_count`` × ``gpu`` listed with ``interconnect``.

    ``node_gpus``: GPUs per machine where the offer says (else :func:`gpus_per_node`); more
    GPUs than one machine holds span ``ceil(count / node_gpus)`` machines. ``network_gbps``:
    the offer's network per node in Gbit/s (else :func:`default_network_gbps`).
    """
    n = max(int(gpu_count), 1)
    intra, stated = intra_node_link(gpu, interconnect)
    per_node = node_gpus or gpus_per_node(gpu)
    nodes = math.ceil(n / per_node)
    if nodes <= 1:
        return Topology(gpus=n, intra=intra, stated=stated, gpus_per_node=per_node)
    return Topology(
        gpus=n,
        intra=intra,
        stated=stated,
        nodes=nodes,
        gpus_per_node=per_node,
        network_gbps=network_gbps or default_network_gbps(gpu, per_node),
        network_stated=network_gbps is not None,
    )


def _intra_busbw_gbs(gpu: GpuSpec, intra: LinkClass, ring: int) -> float:
    """All-reduce bus bandwidth (GB/s per GPU) inside one machine over ``ring`` GPUs."""
    table = link_table()
    nvlink_uni = (gpu.nvlink_bandwidth_gbs or 0.0) / 2
    pcie = table[("pcie_p2p", "busbw_fraction")] * PCIE_GBS[pcie_generation(gpu)]
    host = host_bridge_busbw_gbs()
    if intra == LinkClass.NVSWITCH and nvlink_uni:
        return table[("nvswitch", "busbw_fraction")] * nvlink_uni
    if intra == LinkClass.INFINITY_FABRIC:
        # a fully connected mesh: each peer adds one link (7 for 8 GPUs)
        return table[("infinity_fabric", "busbw_gbs")] * min(ring - 1, 7) / 7
    if intra == LinkClass.NVLINK_BRIDGE:
        bridge = table[("nvlink_bridge", "busbw_fraction")] * nvlink_uni
        # more than a pair: the ring also crosses PCIe between the pairs
        slow = host if gpu.market == "consumer" else pcie
        return bridge if ring <= 2 else min(bridge, slow)
    if intra == LinkClass.PCIE_HOST_BRIDGE:
        return min(host, pcie)
    return pcie


def bus_bandwidth(gpu: GpuSpec, topo: Topology) -> tuple[float, float]:
    """``(bus bandwidth in bytes/s per GPU, latency in s per collective call)`` of ``topo``.

    Inside one machine from :func:`_intra_busbw_gbs`; over several machines the ring is held to
    the network: ``busbw_fraction`` × the node's network (Gbit/s ÷ 8), if slower.
    """
    table = link_table()
    ring = min(topo.gpus, topo.gpus_per_node)
    gbs = _intra_busbw_gbs(gpu, topo.intra, ring)
    latency_key = topo.intra.value if topo.intra != LinkClass.NVLINK_BRIDGE else "pcie_p2p"
    latency = table.get((latency_key, "latency_us"), table[("pcie_p2p", "latency_us")])
    if topo.nodes > 1 and topo.network_gbps:
        net = table[("network", "busbw_fraction")] * topo.network_gbps / 8
        gbs = min(gbs, net)
        latency = max(latency, table[("network", "latency_us")])
    return gbs * 1e9, latency * 1e-6


@dataclass(frozen=True, slots=True)
class StepTraffic:
    """Bytes each GPU puts on the link per optimizer step (nccl-tests bus bytes: an
    all-reduce of S bytes moves 2(n-1)/n·S, an all-gather or reduce-scatter (n-1)/n·S),
    the collective calls that takes, and the share of compute it can hide behind;
    ``exposed_bytes`` and ``exposed_calls`` of them run where no compute is left to hide
    behind (ZeRO-2's parameter all-gather after the optimizer step)."""

    bus_bytes: float
    calls: int
    hideable: float
    exposed_bytes: float = 0.0
    exposed_calls: int = 0


def _wire_bytes(w: Workload) -> tuple[float, float]:
    """(bytes per gradient element, bytes per gathered parameter element) on the wire.

    Gradients: 4 B under DDP with autocast (fp32 parameters, so fp32 gradients are
    all-reduced); 2 B for pure bf16 and for ZeRO/FSDP, whose mixed-precision engines reduce in
    16 bits by default (DeepSpeed's fp16/bf16 engines; HF Trainer's FSDP
    ``MixedPrecision(param_dtype=bf16, reduce_dtype=bf16)``, seed_data/memory_cases.md); 4 B at
    fp32/tf32. Gathered parameters: 16-bit (4 B at fp32/tf32), 0.5 B for a QLoRA 4-bit base.
    """
    full = w.precision in (Precision.FP32, Precision.TF32)
    grad = 4.0 if full or (w.sharding == Sharding.NONE and w.precision != Precision.BF16) else 2.0
    param = 4.0 if full else (0.5 if w.method == Method.QLORA else 2.0)
    return grad, param


def gradient_bytes(w: Workload) -> float:
    """Gradient bytes per optimizer step: trainable params × wire bytes (:func:`_wire_bytes`);
    LoRA/QLoRA train only the adapters. 0 without a parameter count."""
    if not w.params:
        return 0.0
    trainable = (
        float(lora_trainable_params(w)) if w.method in (Method.LORA, Method.QLORA) else w.params
    )
    return trainable * _wire_bytes(w)[0]


def step_traffic(w: Workload, n: int) -> StepTraffic:
    """:class:`StepTraffic` of ``w`` data-parallel over ``n`` GPUs (ZeRO paper,
    arXiv:1910.02054 §5, §7; PyTorch FSDP paper, arXiv:2304.11277 §3):

    * DDP, ZeRO-1: all-reduce of the gradients once per optimizer step, 2(n-1)/n · G, hidden
      only behind the last micro-batch's backward (accumulation runs the others under PyTorch
      ``DistributedDataParallel.no_sync``, as HF Accelerate does): BACKWARD_SHARE / grad_accum.
    * ZeRO-2: gradients reduce-scattered every micro-batch, (n-1)/n · G each, hideable behind
      each backward (DeepSpeed's ``overlap_comm`` overlaps the gradient reduction with the
      backward pass), and the updated trainable parameters all-gathered once per step after
      the optimizer step, outside any backward: exposed in full.
    * ZeRO-3, FSDP: every micro-batch all-gathers the parameters for the forward and again for
      the backward pass and reduce-scatters the gradients: (n-1)/n · (2P + G) per micro-batch
      (no amortisation over gradient accumulation), hideable behind the whole step (prefetch).
    """
    if n <= 1 or not w.params:
        return StepTraffic(0.0, 0, BACKWARD_SHARE)
    grad = gradient_bytes(w)
    _, param_b = _wire_bytes(w)
    share = (n - 1) / n
    micro = max(w.grad_accum_steps, 1)
    buckets = max(math.ceil(grad / DDP_BUCKET_BYTES), 1)
    if w.sharding in (Sharding.NONE, Sharding.ZERO1):
        return StepTraffic(2 * share * grad, buckets, BACKWARD_SHARE / micro)
    if w.sharding == Sharding.ZERO2:
        trainable = grad / _wire_bytes(w)[0] * param_b
        traffic = share * (micro * grad + trainable)
        gather = share * trainable
        return StepTraffic(traffic, (micro + 1) * buckets, BACKWARD_SHARE, gather, buckets)
    params = float(w.params) * param_b
    units = w.layers or max(math.ceil(params / DDP_BUCKET_BYTES), 1)
    return StepTraffic(micro * share * (2 * params + grad), micro * 3 * units, 1.0)


@dataclass(frozen=True, slots=True)
class CommEstimate:
    """One run's multi-GPU communication: η in (0, 1], the :class:`Topology`, bus bytes per GPU
    per step, bus bandwidth (GB/s), communication time (s), exposed share of the step."""

    efficiency: float
    topology: Topology
    bytes_per_step: float
    busbw_gbs: float
    comm_s: float
    comm_time_share: float


def comm_estimate(
    w: Workload,
    gpu: GpuSpec,
    topo: Topology,
    per_gpu_samples_per_s: float,
    *,
    micro_batch: float | None = None,
    cal: Calibration | None = None,
) -> CommEstimate:
    """η of ``w`` over ``topo`` at ``per_gpu_samples_per_s`` (see the module docstring),
    with the overlap and κ of ``cal`` (default: the served calibration).

    ``micro_batch`` overrides the workload's micro-batch (the harness uses a benchmark's).
    """
    cal = cal or load_calibration()
    if topo.gpus <= 1 or per_gpu_samples_per_s <= 0:
        return CommEstimate(1.0, topo, 0.0, 0.0, 0.0, 0.0)
    batch = micro_batch if micro_batch is not None else w.micro_batch_size
    step = StepComm(
        topo,
        step_traffic(w, topo.gpus),
        bus_bandwidth(gpu, topo),
        batch * max(w.grad_accum_steps, 1),
        per_gpu_samples_per_s,
    )
    return comm_over(step, cal)


class StepComm(NamedTuple):
    """What one optimizer step's communication is computed from (:func:`comm_estimate`'s
    parts): the :class:`Topology`, its :class:`StepTraffic` (:func:`step_traffic` over
    ``topo.gpus``), the link's (bus bandwidth B/s, latency s) (:func:`bus_bandwidth` of
    ``topo``), samples per step (micro-batch × gradient accumulation) and samples/s per GPU."""

    topo: Topology
    traffic: StepTraffic
    link: tuple[float, float]
    samples_per_step: float
    per_gpu_samples_per_s: float


def comm_over(step: StepComm, cal: Calibration) -> CommEstimate:
    """:func:`comm_estimate` from its parts, so a caller holding them does the arithmetic
    only."""
    topo = step.topo
    if topo.gpus <= 1 or step.per_gpu_samples_per_s <= 0:
        return CommEstimate(1.0, topo, 0.0, 0.0, 0.0, 0.0)
    eta, t_step, t_comm, exposed = _step_times(step, cal)
    return CommEstimate(
        efficiency=eta,
        topology=topo,
        bytes_per_step=step.traffic.bus_bytes,
        busbw_gbs=step.link[0] / 1e9,
        comm_s=t_comm,
        comm_time_share=exposed / (t_step + exposed),
    )


def comm_efficiency(step: StepComm, cal: Calibration) -> float:
    """:func:`comm_over`'s ``efficiency`` alone (no :class:`CommEstimate` built)."""
    if step.topo.gpus <= 1 or step.per_gpu_samples_per_s <= 0:
        return 1.0
    return _step_times(step, cal)[0]


def _step_times(step: StepComm, cal: Calibration) -> tuple[float, float, float, float]:
    """(η, t_compute, t_comm, exposed) of a step over ``step.topo.gpus`` > 1 GPUs (module
    docstring)."""
    traffic = step.traffic
    loss = (1.0 - cal.scaling_loss_per_doubling) ** math.log2(step.topo.gpus)
    busbw, latency = step.link
    t_step = step.samples_per_step / step.per_gpu_samples_per_s
    t_comm = traffic.bus_bytes / busbw + traffic.calls * latency if traffic.bus_bytes else 0.0
    t_fixed = traffic.exposed_bytes / busbw + traffic.exposed_calls * latency
    exposed = t_fixed + max(0.0, t_comm - t_fixed - cal.comm_overlap * traffic.hideable * t_step)
    return loss * t_step / (t_step + exposed), t_step, t_comm, exposed
