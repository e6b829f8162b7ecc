"""Usable VRAM per card: what the CUDA driver reports, not the datasheet.

A card marketed as 24 GB shows less to a training process: ECC on GDDR6 reserves part of the
memory (L4, A10, A10G, L40S), and the driver keeps a share of every card outside CUDA's reach.
The figure an allocation can reach is the ``total capacity`` PyTorch prints in its
out-of-memory error (``torch.cuda.get_device_properties(i).total_memory``); where only an
``nvidia-smi`` total is published, that total minus :data:`SMI_TO_CUDA_GAP_GIB` (the median
gap of the cards with both figures below).

The CUDA context and NCCL buffers are not subtracted here: the peak adds them
(:data:`app.model.memory.CUDA_CONTEXT_GIB`, ``NCCL_GIB``).
"""

from __future__ import annotations

import statistics

#: Fraction of the marketed VRAM that CUDA reports on a card without a row below: an "80GB"
#: A100/H100 reports ~79.1-79.25 GiB and a 24 GB GeForce ~23.6-23.7 GiB (rows below).
DEFAULT_USABLE_FRACTION = 0.985

#: Catalog card → (marketed GiB as in the catalog, GiB CUDA reports as total capacity), each
#: read from a public out-of-memory message (``GPU 0 has a total capacity of … GiB``; the
#: lowest figure where several were seen; ECC at the cloud default).
CUDA_TOTAL_GIB: dict[str, tuple[float, float]] = {
    # https://github.com/lianqi1008/Control-GIC/issues/6 (79.14) and
    # https://github.com/levihsu/OOTDiffusion/issues/235 (79.25)
    "A100 SXM4 80GB": (80.0, 79.14),
    # https://github.com/TianheWu/CoSeR/issues/10
    "A100 SXM4 40GB": (40.0, 39.50),
    # https://github.com/Tencent-Hunyuan/HunyuanVideo-Avatar/issues/6 ("80GB H100")
    "H100 SXM 80GB": (80.0, 79.10),
    # https://github.com/3DTopia/Phidias-Diffusion/issues/8 (23.64) and
    # https://github.com/zai-org/CogVideo/issues/36 (23.68)
    "GeForce RTX 4090": (24.0, 23.64),
    # https://github.com/google/RB-Modulation/issues/5
    "A30": (24.0, 23.53),
    # https://github.com/DengKaiCQ/VGGT-Long/issues/6
    "RTX A4000": (16.0, 15.61),
    # https://github.com/Wan-Video/Wan2.1/issues/205
    "L40S": (48.0, 44.53),
    # https://github.com/DINGYANB/MTVCrafter/issues/21
    "RTX 6000 Ada": (48.0, 44.43),
    # https://github.com/ucwxb/GraphAvatar/issues/4 (23.69, next to its nvidia-smi table) and
    # https://github.com/GaoLii/DSP/issues/10 (23.70)
    "GeForce RTX 3090": (24.0, 23.69),
    # https://github.com/liucongg/ChatGLM-Finetuning/issues/73 ("V100 32GB", 31.74) and
    # https://github.com/haotian-liu/LLaVA/issues/812 (V100 x8, 31.74); the SXM2, SXM3 and PCIe
    # boards carry the same 32 GB of HBM2
    "V100 SXM2 32GB": (32.0, 31.74),
    "V100 SXM3 32GB": (32.0, 31.74),
    "V100 PCIe 32GB": (32.0, 31.74),
    # https://github.com/kchengiva/Shift-GCN/issues/34 ("16G V100", 15.78); same HBM2 on both
    "V100 SXM2 16GB": (16.0, 15.78),
    "V100 PCIe 16GB": (16.0, 15.78),
    # https://github.com/antirez/ds4/issues/431 (cudaMemGetInfo "total=94.97 GiB" on the 96 GB
    # RTX Pro 6000 Blackwell, 97887 MiB in nvidia-smi)
    "RTX PRO 6000 Blackwell 96GB": (96.0, 94.97),
    # https://github.com/Zheng-Chong/CatVTON/issues/133 and
    # https://github.com/AlphaGPU/leetgpu-challenges/issues/52 (Tesla T4, 14.56)
    "T4": (16.0, 14.56),
}

#: Catalog card → (marketed GiB, ``nvidia-smi`` total MiB) for cards published only by
#: nvidia-smi: https://github.com/modal-labs/modal-client/pull/2797 (L4 23034 MiB, A10
#: 23028 MiB; also https://github.com/QwenLM/Qwen3/issues/678 for the A10), the A10G being
#: the same ECC GA102 board (https://github.com/huggingface/local-gemma/pull/25: "A10G
#: reports ~22GB"). The same source's totals of cards in :data:`CUDA_TOTAL_GIB` give the gap.
SMI_TOTAL_MIB: dict[str, tuple[float, float]] = {
    "L4": (24.0, 23034.0),
    "A10": (24.0, 23028.0),
    "A10G": (24.0, 23028.0),
}
_SMI_OF_MEASURED_MIB = {
    # modal-labs/modal-client#2797 (H100, A100 80/40GB, L40S, T4) and the nvidia-smi tables of
    # https://github.com/RLinf/RLinf/issues/255 (RTX 4090, 24564 MiB) and
    # https://github.com/DINGYANB/MTVCrafter/issues/21 (RTX 6000 Ada, 46068 MiB)
    "H100 SXM 80GB": 81559.0,
    "A100 SXM4 80GB": 81920.0,
    "A100 SXM4 40GB": 40960.0,
    "L40S": 46068.0,
    "T4": 15360.0,
    "GeForce RTX 4090": 24564.0,
    "RTX 6000 Ada": 46068.0,
}

#: Median of nvidia-smi total − CUDA total capacity over the cards with both (GiB, ~0.5):
#: memory the driver keeps outside CUDA's reach.
SMI_TO_CUDA_GAP_GIB = statistics.median(
    mib / 1024 - CUDA_TOTAL_GIB[name][1] for name, mib in _SMI_OF_MEASURED_MIB.items()
)


def usable_fraction(gpu: str | None) -> float:
    """CUDA-visible share of a card's marketed VRAM: from :data:`CUDA_TOTAL_GIB` or
    :data:`SMI_TOTAL_MIB` when the card has a row, else :data:`DEFAULT_USABLE_FRACTION`."""
    if gpu in CUDA_TOTAL_GIB:
        marketed, cuda = CUDA_TOTAL_GIB[gpu]
        return cuda / marketed
    if gpu in SMI_TOTAL_MIB:
        marketed, smi_mib = SMI_TOTAL_MIB[gpu]
        return (smi_mib / 1024 - SMI_TO_CUDA_GAP_GIB) / marketed
    return DEFAULT_USABLE_FRACTION
