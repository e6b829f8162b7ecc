"""One interconnect rule for the estimate and the ``no_nvlink`` warning.

SXM modules sit on NVLink/NVSwitch boards: an SXM offer listing no interconnect is estimated
as NVLink, and is then not warned about as "over PCIe". A GPU without NVLink in the catalog
scales over PCIe whatever the offer says, and is warned about like PCIe.
"""

from __future__ import annotations

import dataclasses

import pytest

from app.model.cost import COMM_HEAVY_EFFICIENCY, combine
from app.model.memory import estimate_memory
from app.model.multigpu import effective_interconnect
from app.model.throughput import estimate_throughput
from app.model.types import GpuSpec, Hardware, Interconnect, Workload
from tests.unit.helpers import A100_80_SXM, GPT2, RTX_4090

#: a hypothetical SXM board with slow NVLink (20 GB/s), so that GPT-2 DDP over 8 GPUs is
#: communication-bound even on NVLink (with the real 600 GB/s it overlaps almost fully)
SLOW_SXM = dataclasses.replace(A100_80_SXM, name="slow-NVLink SXM", nvlink_bandwidth_gbs=20)


#: GPT-2 on 256-token sequences: a short step per GPU, so that its all-reduce over PCIe is
#: exposed (at 1,024 tokens an RTX 4090's slower step hides more of it)
GPT2_SHORT = dataclasses.replace(GPT2, seq_len=256)


def _run(gpu: GpuSpec, link: Interconnect | None, w: Workload = GPT2) -> tuple[float, set[str]]:
    """(multi-GPU efficiency, warning codes) of ``w`` on 8 × ``gpu`` listed with ``link``."""
    tp = estimate_throughput(w, gpu, gpu_count=8, interconnect=link)
    mem = estimate_memory(w, vram_gib=gpu.vram_gib, gpu_count=8)
    e = combine(w, Hardware(gpu=gpu, gpu_count=8, interconnect=link), tp, mem)
    return tp.multi_gpu_efficiency, {w.code.value for w in e.warnings}


def test_sxm_without_a_listed_link_is_nvlink() -> None:
    assert effective_interconnect(A100_80_SXM, None) == Interconnect.NVLINK
    assert effective_interconnect(A100_80_SXM, Interconnect.PCIE) == Interconnect.PCIE
    assert effective_interconnect(RTX_4090, None) is None


@pytest.mark.parametrize("gpu", [A100_80_SXM, SLOW_SXM], ids=["A100", "slow-NVLink"])
def test_unlisted_sxm_link_is_estimated_and_warned_like_nvlink(gpu: GpuSpec) -> None:
    unlisted, listed = _run(gpu, None), _run(gpu, Interconnect.NVLINK)
    assert unlisted == listed
    assert "no_nvlink" not in unlisted[1]


def test_sxm_listed_as_pcie_is_warned() -> None:
    eta, codes = _run(A100_80_SXM, Interconnect.PCIE)
    assert eta < _run(A100_80_SXM, Interconnect.NVLINK)[0]
    assert eta < COMM_HEAVY_EFFICIENCY
    assert "no_nvlink" in codes


@pytest.mark.parametrize("link", [None, Interconnect.NVLINK, Interconnect.PCIE])
def test_gpu_without_nvlink_is_warned_whatever_the_offer_says(link: Interconnect | None) -> None:
    eta, codes = _run(RTX_4090, link, GPT2_SHORT)
    pcie_eta, pcie_codes = _run(RTX_4090, Interconnect.PCIE, GPT2_SHORT)
    assert eta == pcie_eta < COMM_HEAVY_EFFICIENCY
    # GeForce cards talk through the host: the host-bridge warning, as for a PCIe listing;
    # a listed NVLink the card does not have is said so (nvlink_unavailable)
    assert codes - {"nvlink_unavailable"} == pcie_codes
    assert ("nvlink_unavailable" in codes) == (link == Interconnect.NVLINK)
    assert "pcie_host_bridge" in codes
