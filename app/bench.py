"""``gpucost bench``: measure a preset's training throughput on this machine (PyTorch).

Needs the optional ``bench`` extra (``pip install 'gpucost[bench]'``); torch is imported only
inside the functions that run the model, so importing this module (and the base CLI) works
without it.

The model is built from the preset's architecture fields (layers, hidden size, heads, FFN size,
vocabulary, sequence length, image size) with random weights; the data are random tensors of
the right shape (no download). After ``warmup`` optimizer steps, ``steps`` timed steps run;
throughput = samples of the timed steps ÷ their wall time (all ranks under DDP). Memory is
``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` per GPU in GiB, ``None`` on CPU.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app import resources
from app.data.load import load_presets

#: Presets that exist only to test ``gpucost bench`` (a model small enough for a CPU in
#: seconds). Not a real workload and not in the seed data; its submitted rows are always held.
TEST_PRESETS: dict[str, dict[str, Any]] = {
    "tiny-test-decoder": {
        "preset": "tiny-test-decoder",
        "name": "TEST PRESET: 2-layer decoder, hidden 64 (for testing gpucost bench on a CPU)",
        "architecture": "transformer_decoder",
        "layers": 2,
        "hidden_size": 64,
        "heads": 4,
        "ffn_hidden_size": 256,
        "vocab_size": 512,
        "seq_len": 32,
        "micro_batch_size": 4,
        "precision": "fp32",
        "optimizer": "adamw",
        "method": "full",
    },
}

#: Architectures the bench can build.
SUPPORTED = ("transformer_decoder", "transformer_encoder", "vit", "cnn")


class BenchError(ValueError):
    """The bench cannot run this preset/option (the message says why)."""


def load_preset(slug: str) -> dict[str, Any]:
    """A preset's fields: a test preset, else the seeded preset's workload fields (typed as
    ``gpucost seed`` stores them: :func:`app.data.load.load_presets`) and its slug.

    Raises:
        BenchError: unknown preset.
    """
    if slug in TEST_PRESETS:
        return dict(TEST_PRESETS[slug])
    for preset in load_presets(resources.seed_dir()):
        if preset.slug == slug:
            return {**preset.fields, "preset": slug}
    raise BenchError(f"unknown preset {slug!r}")


@dataclass
class BenchResult:
    """One bench run. Throughput for all ranks together; memory per GPU in GiB (rank 0)."""

    preset: str
    precision: str
    micro_batch_size: int
    seq_len: int | None
    gpu_count: int
    device: str
    warmup: int
    steps: int
    samples_per_s: float
    tokens_per_s: float | None
    step_time_s: dict[str, float]
    peak_memory_gib: float | None
    reserved_memory_gib: float | None
    environment: dict[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: f"bench-{uuid.uuid4().hex}")

    def submission(self) -> dict[str, Any]:
        """The body ``POST /v1/benchmarks`` takes."""
        import torch  # the run needed it; still lazy for importers of this module

        env = self.environment
        return {
            "run_id": self.run_id,
            "preset": self.preset,
            "gpu": env.get("gpu_name"),
            "gpu_count": self.gpu_count,
            "interconnect": env.get("interconnect"),
            "precision": self.precision,
            "micro_batch_size": self.micro_batch_size,
            "seq_len": self.seq_len,
            "steps": self.steps,
            "samples_per_s": self.samples_per_s,
            "tokens_per_s": self.tokens_per_s,
            "peak_memory_gib": self.peak_memory_gib,
            "reserved_memory_gib": self.reserved_memory_gib,
            "framework": "PyTorch",
            "framework_version": torch.__version__,
            "environment": {**env, "step_time_s": self.step_time_s, "warmup": self.warmup},
        }


# --- the models ---------------------------------------------------------------------------


def build_model(fields: dict[str, Any]) -> tuple[Any, Callable[[int, Any], tuple[Any, Any]]]:
    """(module, batch maker) for a preset: ``make(batch, device)`` → (inputs, targets).

    Raises:
        BenchError: an architecture :data:`SUPPORTED` does not list, or a missing field.
    """
    import torch
    from torch import nn

    arch = fields.get("architecture")

    def need(name: str) -> int:
        if name not in fields:
            raise BenchError(f"preset {fields.get('preset')!r} has no {name} (needed for {arch})")
        return int(fields[name])

    if arch in ("transformer_decoder", "transformer_encoder"):
        layers, hidden, heads = need("layers"), need("hidden_size"), need("heads")
        ffn = int(fields.get("ffn_hidden_size") or 4 * hidden)
        vocab, seq = need("vocab_size"), need("seq_len")
        causal = arch == "transformer_decoder"

        class LM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.tok = nn.Embedding(vocab, hidden)
                self.pos = nn.Embedding(seq, hidden)
                layer = nn.TransformerEncoderLayer(
                    hidden, heads, ffn, dropout=0.0, batch_first=True, norm_first=True
                )
                self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
                self.norm = nn.LayerNorm(hidden)
                self.head = nn.Linear(hidden, vocab, bias=False)
                if causal:
                    self.register_buffer(
                        "mask", nn.Transformer.generate_square_subsequent_mask(seq), False
                    )

            def forward(self, x: Any) -> Any:
                pos = torch.arange(x.shape[1], device=x.device)
                h = self.tok(x) + self.pos(pos)
                h = self.blocks(h, mask=self.mask if causal else None, is_causal=causal)
                return self.head(self.norm(h)).flatten(0, 1)

        def make(batch: int, device: Any) -> tuple[Any, Any]:
            x = torch.randint(0, vocab, (batch, seq), device=device)
            return x, torch.randint(0, vocab, (batch * seq,), device=device)

        return LM(), make

    if arch == "vit":
        layers, hidden, heads = need("layers"), need("hidden_size"), need("heads")
        ffn = int(fields.get("ffn_hidden_size") or 4 * hidden)
        size, patch, classes = need("image_size"), 16, 1000

        class ViT(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.patch = nn.Conv2d(3, hidden, patch, patch)
                n = (size // patch) ** 2 + 1
                self.cls = nn.Parameter(torch.zeros(1, 1, hidden))
                self.pos = nn.Parameter(torch.zeros(1, n, hidden))
                layer = nn.TransformerEncoderLayer(
                    hidden, heads, ffn, dropout=0.0, batch_first=True, norm_first=True
                )
                self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
                self.head = nn.Linear(hidden, classes)

            def forward(self, x: Any) -> Any:
                h = self.patch(x).flatten(2).transpose(1, 2)
                h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], 1) + self.pos
                return self.head(self.blocks(h)[:, 0])

        def make_img(batch: int, device: Any) -> tuple[Any, Any]:
            x = torch.randn(batch, 3, size, size, device=device)
            return x, torch.randint(0, classes, (batch,), device=device)

        return ViT(), make_img

    if arch == "cnn":
        return _resnet50(int(fields.get("image_size") or 224))

    raise BenchError(
        f"gpucost bench cannot build architecture {arch!r} yet (supported: {', '.join(SUPPORTED)})"
    )


def _resnet50(size: int) -> tuple[Any, Callable[[int, Any], tuple[Any, Any]]]:
    """ResNet-50 v1.5 (bottleneck blocks [3, 4, 6, 3], stride on the 3×3; He et al. 2015,
    arXiv:1512.03385 Table 1), 1000 classes: the cnn presets' reference network."""
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False),
                nn.BatchNorm2d(cout),
            )
            self.skip = (
                nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                if stride != 1 or cin != cout
                else nn.Identity()
            )

        def forward(self, x: Any) -> Any:
            return torch.relu(self.body(x) + self.skip(x))

    stages: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    cin = 64
    for i, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        for b in range(blocks):
            stages.append(Bottleneck(cin, width, 2 if b == 0 and i > 0 else 1))
            cin = width * 4
    stages += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]

    def make(batch: int, device: Any) -> tuple[Any, Any]:
        x = torch.randn(batch, 3, size, size, device=device)
        return x, torch.randint(0, 1000, (batch,), device=device)

    return nn.Sequential(*stages), make


# --- the loop ------------------------------------------------------------------------------


def _autocast_dtype(precision: str) -> Any:
    import torch

    return {"fp16_amp": torch.float16, "bf16_amp": torch.bfloat16}.get(precision)


def run_bench(
    slug: str,
    *,
    steps: int = 20,
    warmup: int = 3,
    micro_batch_size: int | None = None,
    precision: str | None = None,
    device: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BenchResult:
    """Measure ``slug``: ``warmup`` untimed then ``steps`` timed optimizer steps.

    Under torchrun (``WORLD_SIZE`` > 1) the model is wrapped in DDP (NCCL on GPUs, gloo on
    CPUs), each rank runs ``micro_batch_size`` samples per step, and the result counts all
    ranks' samples. ``progress(done, total)`` is called after every step.

    Raises:
        BenchError: unknown preset, unsupported architecture or precision.
    """
    import torch
    import torch.nn.functional as F

    fields = load_preset(slug)
    precision = precision or fields.get("precision") or "fp32"
    if precision not in ("fp32", "tf32", "fp16_amp", "bf16_amp", "bf16"):
        raise BenchError(f"precision {precision!r} is not supported by gpucost bench")
    batch = int(micro_batch_size or fields.get("micro_batch_size") or 1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device is None:
        device = f"cuda:{local}" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    on_gpu = dev.type == "cuda"
    if on_gpu:
        torch.cuda.set_device(dev)
        torch.cuda.reset_peak_memory_stats(dev)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.manual_seed(rank)
    model, make = build_model(fields)
    model = model.to(dev)
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    if world > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if on_gpu else "gloo")
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index] if on_gpu else None
        )
    opt: torch.optim.Optimizer = (
        torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.875)
        if fields.get("optimizer") == "sgd_momentum"
        else torch.optim.AdamW(model.parameters(), lr=1e-4)
    )
    amp = _autocast_dtype(precision)
    scaler = torch.amp.GradScaler("cuda", enabled=on_gpu and precision == "fp16_amp")
    x, y = make(batch, dev)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
            loss = F.cross_entropy(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    def sync() -> None:
        if on_gpu:
            torch.cuda.synchronize(dev)

    total = warmup + steps
    for i in range(warmup):
        step()
        if progress:
            progress(i + 1, total)
    sync()
    times = []
    start = time.perf_counter()
    for i in range(steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
        if progress:
            progress(warmup + i + 1, total)
    elapsed = time.perf_counter() - start
    samples = batch * world * steps / elapsed
    seq = (
        fields.get("seq_len") if fields.get("architecture", "").startswith("transformer") else None
    )
    ordered = sorted(times)
    spread = {
        "mean": statistics.fmean(times),
        "median": statistics.median(times),
        "min": ordered[0],
        "max": ordered[-1],
        "stdev": statistics.stdev(times) if len(times) > 1 else 0.0,
    }
    gib = 2**30
    return BenchResult(
        preset=slug,
        precision=precision,
        micro_batch_size=batch,
        seq_len=int(seq) if seq else None,
        gpu_count=world,
        device=dev.type,
        warmup=warmup,
        steps=steps,
        samples_per_s=samples,
        tokens_per_s=samples * int(seq) if seq else None,
        step_time_s=spread,
        peak_memory_gib=torch.cuda.max_memory_allocated(dev) / gib if on_gpu else None,
        reserved_memory_gib=torch.cuda.max_memory_reserved(dev) / gib if on_gpu else None,
        environment=environment(world),
    )


# --- the machine ---------------------------------------------------------------------------


def _run(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def interconnect_from_topology(topo: str | None, gpu_count: int) -> str | None:
    """``nvlink`` when ``nvidia-smi topo -m`` shows an ``NV#`` link between GPUs, ``pcie``
    for a multi-GPU set without one, ``None`` for one GPU or no topology."""
    if gpu_count < 2 or not topo:
        return None
    cells = [c for line in topo.splitlines() if line.startswith("GPU") for c in line.split()]
    return "nvlink" if any(c.startswith("NV") and c[2:].isdigit() for c in cells) else "pcie"


def environment(gpu_count: int = 1) -> dict[str, Any]:
    """The machine: GPU name (from the driver), count, driver, CUDA, torch, CPU, vCPUs, RAM
    (GiB), and the ``nvidia-smi topo -m`` matrix where present."""
    import torch

    cuda = torch.cuda.is_available()
    driver = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    topo = _run(["nvidia-smi", "topo", "-m"]) if cuda else None
    return {
        "gpu_name": torch.cuda.get_device_name(0) if cuda else None,
        "gpu_count": gpu_count,
        "gpus_visible": torch.cuda.device_count() if cuda else 0,
        "driver": driver.splitlines()[0] if driver else None,
        "cuda": torch.version.cuda if cuda else None,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "vcpus": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "topology": topo[:4000] if topo else None,
        "interconnect": interconnect_from_topology(topo, gpu_count),
    }


# --- DDP and submission --------------------------------------------------------------------


def run_distributed(slug: str, gpus: int, options: dict[str, Any]) -> BenchResult:
    """Run the bench under torchrun on ``gpus`` processes; rank 0's result.

    Raises:
        BenchError: torchrun failed.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={gpus}",
            "-m",
            "app.bench",
            slug,
            json.dumps(options),
            str(out),
        ]
        done = subprocess.run(cmd, check=False)
        if done.returncode != 0 or not out.exists():
            raise BenchError(f"torchrun exited with status {done.returncode}")
        data = json.loads(out.read_text(encoding="utf-8"))
    return BenchResult(**data)


def submit(result: BenchResult, url: str, token: str | None, client: Any = None) -> Any:
    """POST the result to ``url``/v1/benchmarks; returns the httpx response.

    ``client`` is an ``httpx.Client`` (tests pass the server's test client); by default one
    with a 30 s timeout.
    """
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    own = client is None
    client = client or httpx.Client(timeout=30.0)
    try:
        return client.post(
            url.rstrip("/") + "/v1/benchmarks", json=result.submission(), headers=headers
        )
    finally:
        if own:
            client.close()


def _worker(argv: list[str]) -> None:
    """torchrun entry point: ``python -m app.bench SLUG OPTIONS_JSON OUT``."""
    slug, options, out = argv[0], json.loads(argv[1]), Path(argv[2])
    result = run_bench(slug, **options)
    if int(os.environ.get("RANK", "0")) == 0:
        out.write_text(json.dumps(asdict(result)), encoding="utf-8")
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    _worker(sys.argv[1:])
