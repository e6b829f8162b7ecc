"""`gpucost bench-setup` picks the PyTorch build the driver and the GPUs allow, or says why not.

The nvidia-smi answers are written for the tests in nvidia-smi's format (header line with
"CUDA Version", ``--query-gpu=name,compute_cap,driver_version --format=csv,noheader``); the
builds are ``seed_data/torch_builds.csv``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.torch_setup import SetupError, choose, load_builds, parse_nvidia_smi
from tests.conftest import SEED_DIR

BUILDS = load_builds(SEED_DIR)


def smi_header(driver: str, cuda: str) -> str:
    return (
        "+-----------------------------------------------------------------------------+\n"
        f"| NVIDIA-SMI {driver}    Driver Version: {driver}    CUDA Version: {cuda}     |\n"
    )


def machine(driver: str, cuda: str, *gpus: tuple[str, str]) -> object:
    query = "\n".join(f"{name}, {cc}, {driver}" for name, cc in gpus)
    return parse_nvidia_smi(smi_header(driver, cuda), query)


@pytest.mark.parametrize(
    ("driver", "cuda", "gpu", "cc", "index"),
    [
        ("550.54.15", "12.4", "NVIDIA H100 80GB HBM3", "9.0", "cu124"),  # newest the driver runs
        ("535.104.05", "12.2", "NVIDIA A100-SXM4-80GB", "8.0", "cu121"),
        ("520.61.05", "11.8", "Tesla T4", "7.5", "cu118"),
        ("570.86.10", "12.8", "NVIDIA B200", "10.0", "cu128"),  # Blackwell: cu128 or newer
        ("580.65.06", "13.0", "Tesla V100-SXM2-16GB", "7.0", "cu126"),  # cu128+ dropped Volta
        ("580.65.06", "13.0", "NVIDIA GeForce RTX 5090", "12.0", "cu130"),
    ],
)
def test_the_newest_build_the_driver_and_gpu_both_allow(
    driver: str, cuda: str, gpu: str, cc: str, index: str
) -> None:
    build = choose(machine(driver, cuda, (gpu, cc)), BUILDS)  # type: ignore[arg-type]
    assert build.index == index
    assert build.url == f"https://download.pytorch.org/whl/{index}"


def test_a_driver_too_old_or_a_gpu_too_new_for_it_is_said_plainly() -> None:
    with pytest.raises(SetupError, match=r"supports CUDA 11\.4.*oldest PyTorch CUDA build, cu118"):
        choose(machine("470.82.01", "11.4", ("Tesla T4", "7.5")), BUILDS)  # type: ignore[arg-type]
    with pytest.raises(SetupError, match=r"need cu128, cu130 .*driver to 570\.26 or newer"):
        choose(machine("550.54.15", "12.4", ("NVIDIA B200", "10.0")), BUILDS)  # type: ignore[arg-type]
    with pytest.raises(SetupError, match="names no CUDA version"):
        parse_nvidia_smi("NVIDIA-SMI 390.87 Driver Version: 390.87", "")


def fake_nvidia_smi(folder: Path, driver: str, cuda: str, gpu: str, cc: str) -> None:
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "" ]; then\n'
        f"  printf '%s' '{smi_header(driver, cuda)}'\n"
        "else\n"
        f"  echo '{gpu}, {cc}, {driver}'\n"
        "fi\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_cli_names_the_build_and_the_pip_command(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fake_nvidia_smi(tmp_path, "550.54.15", "12.4", "NVIDIA H100 80GB HBM3", "9.0")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    result = CliRunner().invoke(main, ["bench-setup", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "driver 550.54.15 supports CUDA 12.4" in result.stdout
    assert "PyTorch build: cu124 (CUDA 12.4)" in result.stdout
    assert "-m pip install 'torch>=2.2' --index-url https://download.pytorch.org/whl/cu124" in (
        result.stdout
    )


def test_cli_without_a_driver_exits_1_and_says_so(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    result = CliRunner().invoke(main, ["bench-setup", "--dry-run"])
    assert result.exit_code == 1
    assert "no NVIDIA driver here (nvidia-smi is not on PATH)" in result.stderr
