"""Which offers cannot run a job because of their host (disk, RAM, driver), over the
snapshot's rows at once, for the ranking (:func:`app.services.estimates.rank_offers`).

The rules are the answer's warnings' own (:mod:`app.model.run_warnings`, codes in
:data:`~app.model.run_warnings.CANNOT_RUN`), evaluated once per distinct value instead of
once per offer: ``disk_too_small`` (the disk needed, :func:`app.model.host.disk_needed_gb`),
``ram_short`` (:func:`app.model.run_warnings.ram_needed_gib`, per hardware configuration)
and the driver's CUDA against the job and the GPU
(:func:`app.model.run_warnings.cuda_warnings`, per configuration and driver).
"""

from __future__ import annotations

import numpy as np

from app.model.host import disk_needed_gb
from app.model.run_warnings import cannot_run, cuda_warnings, ram_needed_gib
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
    rows = np.arange(len(snap), dtype=np.intp)
    if not len(rows):
        return np.zeros(0, dtype=bool)
    cols = snap.columns
    # disk: system + data (NaN when neither is listed: OfferRow.disk_gb)
    system, data = cols["system_disk_gb"][rows], cols["data_disk_gb"][rows]
    listed = ~(np.isnan(system) & np.isnan(data))
    disk = np.where(listed, np.nan_to_num(system) + np.nan_to_num(data), np.nan)
    with np.errstate(invalid="ignore"):
        blocked = (disk > 0) & (disk < disk_needed_gb(w)["needed_gb"])
    # host RAM against the need of each configuration (GPU, count, listed VRAM)
    used, config_of = np.unique(snap.config[rows], return_inverse=True)
    config_of = config_of.reshape(-1)
    hardware = [_hardware(snap.configs[i], ref) for i in used.tolist()]
    need = np.array(
        [0.0 if hw is None else ram_needed_gib(w, hw) for hw in hardware], dtype=np.float64
    ).reshape(-1)
    ram = cols["ram_gib"][rows]
    with np.errstate(invalid="ignore"):
        blocked |= (ram > 0) & (ram < need[config_of])
    # the driver: once per (configuration, listed max CUDA)
    versions, version_codes = snap.codes("max_cuda")
    pairs, pair_of = np.unique(
        config_of.astype(np.int64) * len(versions) + version_codes[rows], return_inverse=True
    )
    driver = np.array(
        [
            _driver_blocks(w, hardware[p // len(versions)], versions[p % len(versions)])
            for p in pairs.tolist()
        ],
        dtype=bool,
    ).reshape(-1)
    blocked |= driver[pair_of.reshape(-1)]
    return np.asarray(blocked, dtype=bool)


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
    :func:`app.model.run_warnings.ram_needed_gib` depend on); ``None`` when its GPU is not in
    the catalog."""
    gpu_id, count, _, listed_vram, _ = config
    if gpu_id is None or gpu_id not in ref.gpu_names_by_id:
        return None
    return Hardware(
        gpu=ref.gpus[ref.gpu_names_by_id[gpu_id]],
        gpu_count=count,
        vram_gib_per_gpu=listed_vram,
    )
