"""Which offers cannot run a job because of their host (disk, RAM, driver), over the
snapshot's rows at once, for the ranking (:func:`app.services.estimates.rank_offers`).

The rules are the answer's warnings' own (:mod:`app.model.run_warnings`, codes in
:data:`~app.model.run_warnings.CANNOT_RUN`), evaluated once per distinct value instead of
once per offer: ``disk_too_small`` (the disk needed, :func:`app.model.host.disk_needed_gb`),
``ram_short`` (:func:`app.model.host_ram.ram_needed_gib`, per hardware configuration)
and the driver's CUDA against the job and the GPU
(:func:`app.model.run_warnings.cuda_warnings`, per configuration and driver).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.model.host import disk_needed_gb
from app.model.host_ram import ram_needed_gib
from app.model.run_warnings import cannot_run, cuda_warnings
from app.model.types import Hardware, Workload
from app.services.reference import ReferenceData
from app.services.snapshot import OfferSnapshot


def host_cannot_run(
    w: Workload, snap: OfferSnapshot, rows: np.ndarray, ref: ReferenceData
) -> np.ndarray:
    """Per row of ``rows`` (indices into ``snap``): whether the offer's disk (system + data,
    GB), host RAM (GiB) or driver (highest CUDA version) cannot run ``w``: bool array of
    ``len(rows)``. An unlisted value (NaN, 0, ``None``) never blocks, as in the warnings; nor
    does anything of an offer whose GPU is not in the catalog (it is not estimated). Made
    for every row of the snapshot once per workload and kept with it (:meth:`OfferSnapshot.cached`).
    """
    every = snap.cached("host_cannot_run", w, lambda: _every_row(w, snap, ref))
    return every[np.asarray(rows, dtype=np.intp).reshape(-1)]


def _every_row(w: Workload, snap: OfferSnapshot, ref: ReferenceData) -> np.ndarray:
    """:func:`host_cannot_run` of every row of ``snap``."""
    if not len(snap):
        return np.zeros(0, dtype=bool)
    host = snap.cached("host_columns", None, lambda: _host_columns(snap, ref))
    with np.errstate(invalid="ignore"):
        blocked = (host.disk > 0) & (host.disk < disk_needed_gb(w)["needed_gb"])
    # host RAM against the need of each distinct machine (GPU, count, listed VRAM)
    need = np.array(
        [0.0 if hw is None else ram_needed_gib(w, hw) for hw in host.hardware], dtype=np.float64
    ).reshape(-1)
    with np.errstate(invalid="ignore"):
        blocked |= (host.ram > 0) & (host.ram < need[host.hardware_of])
    # the driver: once per (machine, listed max CUDA)
    driver = np.array(
        [
            _driver_blocks(
                w, host.hardware[p // len(host.versions)], host.versions[p % len(host.versions)]
            )
            for p in host.pairs.tolist()
        ],
        dtype=bool,
    ).reshape(-1)
    blocked |= driver[host.pair_of]
    return np.asarray(blocked, dtype=bool)


@dataclass(frozen=True, slots=True)
class _HostColumns:
    """What :func:`host_cannot_run` reads of a snapshot's rows, whatever the workload (kept
    per version: a new workload per request re-reads none of it): the disk (system + data,
    GB; NaN when neither is listed, as :attr:`app.services.offers.OfferRow.disk_gb`), host
    RAM (GiB), the distinct machines (GPU, count, listed VRAM: all the host's needs depend on;
    ``None`` without a catalog GPU) and each row's index among them, the listed max CUDA
    versions, and the distinct (machine, version) pairs with each row's index among them."""

    disk: np.ndarray
    ram: np.ndarray
    hardware: list[Hardware | None]
    hardware_of: np.ndarray
    versions: tuple[str | None, ...]
    pairs: np.ndarray
    pair_of: np.ndarray


def _host_columns(snap: OfferSnapshot, ref: ReferenceData) -> _HostColumns:
    """:class:`_HostColumns` of every row of ``snap``."""
    cols = snap.columns
    system, data = cols["system_disk_gb"], cols["data_disk_gb"]
    listed = ~(np.isnan(system) & np.isnan(data))
    disk = np.where(listed, np.nan_to_num(system) + np.nan_to_num(data), np.nan)
    used, config_of = np.unique(snap.config, return_inverse=True)
    machines: dict[tuple[int | None, float, float | None], int] = {}
    hardware: list[Hardware | None] = []
    machine_of_config = []
    for i in used.tolist():
        gpu_id, count, _, listed_vram, _ = snap.configs[i]
        at = machines.setdefault((gpu_id, count, listed_vram), len(machines))
        if at == len(hardware):
            hardware.append(_hardware(snap.configs[i], ref))
        machine_of_config.append(at)
    hardware_of = np.array(machine_of_config, dtype=np.intp).reshape(-1)[config_of.reshape(-1)]
    versions, version_codes = snap.codes("max_cuda")
    pairs, pair_of = np.unique(
        hardware_of.astype(np.int64) * len(versions) + version_codes, return_inverse=True
    )
    return _HostColumns(
        disk=disk,
        ram=cols["ram_gib"],
        hardware=hardware,
        hardware_of=hardware_of,
        versions=tuple(versions),
        pairs=pairs,
        pair_of=pair_of.reshape(-1),
    )


def _driver_blocks(w: Workload, hw: Hardware | None, max_cuda: str | None) -> bool:
    """Whether a driver supporting CUDA up to ``max_cuda`` cannot run ``w`` on ``hw``'s GPU."""
    return (
        hw is not None
        and max_cuda is not None
        and cannot_run(x.code for x in cuda_warnings(w, hw.gpu, max_cuda))
    )


def _hardware(
    config: tuple[int | None, float, str | None, float | None, float | None], ref: ReferenceData
) -> Hardware | None:
    """The GPU, count and listed VRAM of a snapshot configuration (what the host needs of
    :func:`app.model.host_ram.ram_needed_gib` depend on); ``None`` when its GPU is not in
    the catalog."""
    gpu_id, count, _, listed_vram, _ = config
    if gpu_id is None or gpu_id not in ref.gpu_names_by_id:
        return None
    return Hardware(
        gpu=ref.gpus[ref.gpu_names_by_id[gpu_id]],
        gpu_count=count,
        vram_gib_per_gpu=listed_vram,
    )
