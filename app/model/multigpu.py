"""Data-parallel scaling efficiency of a workload over several GPUs.

The one entry the throughput estimate, the pooled model and the calibration harness use: the
GPUs' :class:`~app.model.comm.Topology` (named link class, machines) from the listed
interconnect, and the communication model of :mod:`app.model.comm` (published bus
bandwidths, bytes per step by strategy, a fitted overlap) on top of it.
"""

from __future__ import annotations

import math

from app.model.calibration import Calibration, load_calibration
from app.model.comm import (
    CommEstimate,
    Topology,
    bus_bandwidth,
    comm_estimate,
    gradient_bytes,
    topology,
)
from app.model.types import GpuSpec, Interconnect, MultiGpuSummary, Workload

__all__ = [
    "effective_interconnect",
    "gradient_bytes",
    "link_class",
    "link_cost",
    "multi_gpu_comm",
    "multi_gpu_summary",
]


def effective_interconnect(gpu: GpuSpec, interconnect: Interconnect | None) -> Interconnect | None:
    """The link between ``gpu``'s GPUs in one instance: as listed, else NVLink for SXM modules.

    SXM modules only come on NVLink/NVSwitch baseboards, so an offer that lists none is NVLink;
    other unlisted links stay ``None`` (modelled by :func:`app.model.comm.intra_node_link`).
    """
    if interconnect is None and (gpu.form_factor or "").upper() == "SXM":
        return Interconnect.NVLINK
    return interconnect


def link_class(gpu: GpuSpec, interconnect: Interconnect | None, gpu_count: float = 2) -> str:
    """The named link class ``gpu_count`` × ``gpu`` communicate over
    (:class:`app.model.comm.LinkClass` value; ``network`` past one machine)."""
    return topology(gpu, gpu_count, interconnect).link.value


#: :func:`link_cost` answers by (GPU name, whole GPUs, interconnect, GPUs per machine, network),
#: each with the GPU spec it was computed for; emptied when it reaches :data:`LINK_MEMO_SIZE`
#: (what-if requests may ask for any count)
_LINK_COSTS: dict[
    tuple[str, int, Interconnect | None, int | None, float | None],
    tuple[GpuSpec, Topology, tuple[float, float]],
] = {}
LINK_MEMO_SIZE = 16384


def link_cost(
    gpu: GpuSpec,
    gpu_count: float,
    interconnect: Interconnect | None,
    *,
    node_gpus: int | None = None,
    network_gbps: float | None = None,
) -> tuple[Topology, tuple[float, float]]:
    """:func:`app.model.comm.topology` of ``gpu_count`` × ``gpu`` over ``interconnect``
    and its :func:`app.model.comm.bus_bandwidth`, memoised across workloads and requests:
    both depend only on the GPU's specs, the whole GPU count, the link, the stated fabric and
    the published link table (read once per process, :func:`app.model.comm.link_table`),
    never on the workload. A hit needs the very GPU spec object it was computed for (a
    what-if spec with a catalog name is computed afresh)."""
    key = (gpu.name, max(int(gpu_count), 1), interconnect, node_gpus, network_gbps)
    hit = _LINK_COSTS.get(key)
    if hit is None or hit[0] is not gpu:
        topo = topology(
            gpu, gpu_count, interconnect, node_gpus=node_gpus, network_gbps=network_gbps
        )
        if len(_LINK_COSTS) >= LINK_MEMO_SIZE:
            _LINK_COSTS.clear()
        hit = _LINK_COSTS[key] = (gpu, topo, bus_bandwidth(gpu, topo))
    return hit[1], hit[2]


def multi_gpu_comm(
    w: Workload,
    gpu: GpuSpec,
    gpu_count: float,
    interconnect: Interconnect | None,
    per_gpu_samples_per_s: float,
    *,
    micro_batch: float | None = None,
    node_gpus: int | None = None,
    network_gbps: float | None = None,
    cal: Calibration | None = None,
) -> CommEstimate:
    """:func:`app.model.comm.comm_estimate` over the :func:`app.model.comm.topology` of
    ``gpu_count`` × ``gpu`` listed with ``interconnect``, with ``cal``'s constants (default:
    the served calibration); its ``efficiency`` is the data-parallel scaling efficiency η in
    (0, 1] (1 for one GPU).

    ``micro_batch`` overrides the workload's micro-batch (the harness uses a benchmark's);
    ``node_gpus`` (GPUs per machine) and ``network_gbps`` (Gbit/s per machine) where the
    offer or the request states them (else :func:`app.model.comm.topology`'s defaults).
    """
    topo = topology(gpu, gpu_count, interconnect, node_gpus=node_gpus, network_gbps=network_gbps)
    return comm_estimate(w, gpu, topo, per_gpu_samples_per_s, micro_batch=micro_batch, cal=cal)


def multi_gpu_summary(
    w: Workload,
    gpu: GpuSpec,
    gpu_count: float,
    interconnect: Interconnect | None,
    per_gpu_samples_per_s: float,
    efficiency: float,
    cal: Calibration | None = None,
    comm: CommEstimate | None = None,
    *,
    node_gpus: int | None = None,
    network_gbps: float | None = None,
) -> MultiGpuSummary:
    """What a multi-GPU answer says about its link (:class:`MultiGpuSummary`).

    ``comm``: :func:`multi_gpu_comm` of the same arguments when the caller has it already.

    ``efficiency`` is the one the answer uses: where it was measured, the communication share
    is what the measurement leaves after the per-doubling loss, ``1 − η / (1 − κ)^log2(n)``
    (else the model's exposed share); κ and the overlap are ``cal``'s. ``node_gpus`` and
    ``network_gbps`` as :func:`multi_gpu_comm`.
    """
    cal = cal or load_calibration()
    if comm is None:
        comm = multi_gpu_comm(
            w,
            gpu,
            gpu_count,
            interconnect,
            per_gpu_samples_per_s,
            node_gpus=node_gpus,
            network_gbps=network_gbps,
            cal=cal,
        )
    topo = comm.topology
    loss = (1.0 - cal.scaling_loss_per_doubling) ** math.log2(max(topo.gpus, 1))
    share = comm.comm_time_share
    if abs(efficiency - comm.efficiency) > 1e-9:
        share = min(max(1.0 - efficiency / loss, 0.0), 1.0)
    return MultiGpuSummary(
        link_class=topo.label,
        modelled_as=topo.link.value,
        nodes=topo.nodes,
        gpus_per_node=topo.gpus_per_node,
        bytes_per_step=comm.bytes_per_step,
        comm_time_share=share,
        bus_bandwidth_gbs=comm.busbw_gbs,
        network_gbps=topo.network_gbps,
        network_stated=topo.network_stated,
    )
