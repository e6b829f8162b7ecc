"""``gpucost bench-setup``: install the PyTorch build this machine's driver and GPUs can run.

PyTorch publishes one wheel index per CUDA version (``https://download.pytorch.org/whl/cu126``
...); a build runs when the driver supports its CUDA version (``nvidia-smi`` prints the
highest, "CUDA Version: 12.4") and it carries kernels for the GPUs' compute capability
(Blackwell, 10.0 and 12.0, only from cu128; Volta, 7.0, no longer in cu128). The indexes, their
CUDA version, the compute capabilities their wheels carry and the least Linux driver of each
CUDA version are data, each with its source: ``seed_data/torch_builds.csv``.

:func:`choose` picks the newest index both allow, or says exactly why none fits (the driver is
too old for any build, or for the builds the GPU needs); :func:`probe` reads ``nvidia-smi``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from app.data.rows import TorchBuildRow, read_rows
from app.model.vocabulary import Version, format_version, parse_version

#: Where PyTorch's wheel indexes live (``<INDEX_URL>/cu126``).
INDEX_URL = "https://download.pytorch.org/whl"
#: The torch versions the ``bench`` extra takes (pyproject.toml).
TORCH_REQUIREMENT = "torch>=2.2"

_CUDA_VERSION = re.compile(r"CUDA Version:\s*(\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class Build:
    """One PyTorch wheel index (``seed_data/torch_builds.csv``)."""

    index: str
    cuda: Version
    min_cc: Version
    max_cc: Version
    min_driver: str

    @property
    def url(self) -> str:
        """The index URL for ``pip install --index-url``."""
        return f"{INDEX_URL}/{self.index}"


@dataclass(frozen=True, slots=True)
class Gpu:
    """A GPU as ``nvidia-smi`` names it, with its compute capability (``(9, 0)``)."""

    name: str
    compute_capability: Version | None


@dataclass(frozen=True, slots=True)
class Machine:
    """What ``nvidia-smi`` says: the driver, the highest CUDA it supports, the GPUs."""

    driver: str
    cuda: Version
    gpus: tuple[Gpu, ...]


class SetupError(RuntimeError):
    """No PyTorch build fits this machine; the message says why and what to do."""


def _version(text: str) -> Version:
    """``"12.4"`` → ``(12, 4)`` (:func:`app.model.vocabulary.parse_version`).

    Raises:
        ValueError: not a dotted version.
    """
    v = parse_version(text)
    if v is None:
        raise ValueError(f"not a version: {text!r}")
    return v


def load_builds(seed_dir: Path) -> list[Build]:
    """The wheel indexes, oldest CUDA first."""
    rows = [
        Build(
            r.index,
            _version(r.cuda),
            _version(r.min_compute_capability),
            _version(r.max_compute_capability),
            r.min_driver_linux,
        )
        for r in read_rows(seed_dir / "torch_builds.csv", TorchBuildRow)
    ]
    return sorted(rows, key=lambda b: b.cuda)


def parse_nvidia_smi(summary: str, query: str) -> Machine:
    """A machine from ``nvidia-smi``'s summary (its header names the driver's CUDA version)
    and ``nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader``.

    Raises:
        SetupError: the summary names no CUDA version (a driver too old to say it).
    """
    m = _CUDA_VERSION.search(summary)
    if m is None:
        raise SetupError(
            "nvidia-smi names no CUDA version: the driver is older than any PyTorch build "
            "supports (CUDA 11.8 needs driver 520.61.05 or newer); upgrade the NVIDIA driver"
        )
    gpus = []
    driver = ""
    for line in query.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0]:
            continue
        cc = _version(parts[1]) if re.fullmatch(r"\d+\.\d+", parts[1]) else None
        gpus.append(Gpu(parts[0], cc))
        driver = parts[2]
    return Machine(driver, (int(m.group(1)), int(m.group(2))), tuple(gpus))


def probe(nvidia_smi: str = "nvidia-smi") -> Machine | None:
    """This machine's driver and GPUs, ``None`` when ``nvidia-smi`` is not there.

    Raises:
        SetupError: ``nvidia-smi`` is there but fails (no driver loaded, no GPU visible).
    """
    exe = shutil.which(nvidia_smi)
    if exe is None:
        return None
    try:
        summary = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True)
        query = subprocess.run(
            [exe, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SetupError(
            f"nvidia-smi failed ({exc}): the NVIDIA driver is not loaded or sees no GPU"
        ) from None
    return parse_nvidia_smi(summary.stdout, query.stdout)


def choose(machine: Machine, builds: list[Build]) -> Build:
    """The newest build whose CUDA version the driver supports and whose kernels cover every
    GPU's compute capability.

    Raises:
        SetupError: none fits; the message names the driver's CUDA version, the builds the
            GPUs need and the driver they would take.
    """
    ccs = {g.compute_capability for g in machine.gpus if g.compute_capability}
    for_gpus = [b for b in builds if all(b.min_cc <= cc <= b.max_cc for cc in ccs)]
    fitting = [b for b in for_gpus if b.cuda <= machine.cuda]
    if fitting:
        return fitting[-1]
    driver = f"driver {machine.driver or '(unknown)'} supports CUDA {format_version(machine.cuda)}"
    if not for_gpus:
        names = ", ".join(
            f"{g.name} ({format_version(g.compute_capability)})"
            for g in machine.gpus
            if g.compute_capability
        )
        raise SetupError(
            f"no PyTorch CUDA build carries kernels for every GPU here ({names}); "
            f"the builds cover compute capability {format_version(builds[0].min_cc)} to "
            f"{format_version(max(b.max_cc for b in builds))}"
        )
    oldest = for_gpus[0]
    needs = (
        f"these GPUs need {', '.join(b.index for b in for_gpus)}"
        if len(for_gpus) < len(builds)
        else f"the oldest PyTorch CUDA build, {oldest.index}"
    )
    raise SetupError(
        f"{driver}, but {needs} (CUDA {format_version(oldest.cuda)} or newer): upgrade the NVIDIA "
        f"driver to {oldest.min_driver} or newer (Linux), or install the CPU build with "
        f"--cpu"
    )


def pip_command(python: str, index_url: str) -> list[str]:
    """The ``pip install`` of the torch build from ``index_url``."""
    return [python, "-m", "pip", "install", TORCH_REQUIREMENT, "--index-url", index_url]
