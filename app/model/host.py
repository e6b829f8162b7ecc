"""What a job asks of the machine around its GPUs: the data loader's CPUs, a hard disk's
random reads, a PCIe host bridge between GPUs, disk and host RAM for checkpoints.

Pure functions of the workload and hardware (:mod:`app.model.cost` re-exports them).
"""

from __future__ import annotations

from app.model.comm import host_bridge_busbw_gbs
from app.model.memory import lora_trainable_params, optimizer_state_bytes
from app.model.multigpu import gradient_bytes
from app.model.types import Hardware, Method, Precision, Sharding, Workload


def data_loader_rate(w: Workload, vcpus: float | None) -> float | None:
    """Samples/s the host CPUs can prepare: ``(vCPUs - 1) × 1000 / cpu_ms_per_sample``.

    A vCPU is one hardware thread; ``cpu_ms_per_sample`` is per thread (the presets' figures
    are single-thread decode rates measured on cloud vCPUs), and hyper-thread siblings sharing
    a core are not discounted, so this is an upper bound. One vCPU is left to the training
    process; data stalls per Mohan et al. (VLDB 2021, arXiv:2007.06775), estimation.md §4.7.
    ``None`` when either input is unknown.
    """
    if not w.cpu_ms_per_sample or not vcpus:
        return None
    workers = max(vcpus - 1, 1.0)
    return workers * 1000.0 / w.cpu_ms_per_sample


#: Upper bound on random reads per second of a 7,200 rpm hard disk from rotation alone: half a
#: revolution on average, 60 s / 7,200 / 2 = 4.17 ms per read → 240 reads/s (arithmetic; seek
#: time comes on top, so real disks are slower).
HDD_MAX_RANDOM_READS_PER_S = 2 * 7200 / 60


def disk_read_rate(w: Workload, hw: Hardware) -> float | None:
    """Samples/s a hard disk can deliver when every sample is a random read, else ``None``.

    Applies when the offer's disk is a hard disk (``disk_type`` ``hdd``) and the dataset does
    not fit in host RAM (so the page cache cannot serve later epochs): one file per sample at
    :data:`HDD_MAX_RANDOM_READS_PER_S`. Only for datasets of many files (images, audio): a
    token stream or a record file is read sequentially.
    """
    if (hw.disk_type or "").lower() != "hdd" or not w.dataset_gb or not w.cpu_ms_per_sample:
        return None
    if hw.ram_gib and w.dataset_gb * 1e9 < hw.ram_gib * 2**30:
        return None
    return HDD_MAX_RANDOM_READS_PER_S


#: Measured 2-GPU DDP speedups over a PCIe host bridge without P2P (the numbers a
#: ``pcie_host_bridge`` warning quotes): 2× RTX 4070 Ti SUPER, ResNet-50 1.18×, ResNet-152
#: 1.60×, ViT-L 1.71× (ahjavid technical-notes blog, "multi-GPU training analysis";
#: estimation.md §4.6); Lambda's benchmark on 2× RTX 3070 Ti behind a PHB bridge 1.34× (the
#: level1techs thread above).
HOST_BRIDGE_MEASURED_SPEEDUPS = {
    "ResNet-50 (2x RTX 4070 Ti SUPER)": 1.18,
    "ResNet-152 (2x RTX 4070 Ti SUPER)": 1.60,
    "ViT-L (2x RTX 4070 Ti SUPER)": 1.71,
    "Lambda benchmark (2x RTX 3070 Ti)": 1.34,
}


def host_bridge_efficiency(w: Workload, gpu_count: float, per_gpu_samples_per_s: float) -> float:
    """DDP efficiency if every all-reduce crosses a PCIe host bridge at the link model's bus
    bandwidth (:func:`app.model.comm.host_bridge_busbw_gbs`, the one figure the estimate uses).

    Ring all-reduce volume ``2(n-1)/n × gradient bytes`` per optimizer step against the step's
    compute time ``micro_batch × grad_accum / per-GPU samples/s``, with no overlap (the
    measured host-bridge cases show the copy through system memory does not hide behind the
    backward pass). 1.0 for one GPU or unknown gradient size.
    """
    n = int(gpu_count)
    volume = gradient_bytes(w)
    if n <= 1 or volume <= 0 or per_gpu_samples_per_s <= 0:
        return 1.0
    t_comm = 2 * (n - 1) / n * volume / (host_bridge_busbw_gbs() * 1e9)
    t_step = w.micro_batch_size * w.grad_accum_steps / per_gpu_samples_per_s
    return t_step / (t_step + t_comm)


#: Bytes per parameter of the weights a checkpoint stores: fp32 master weights in mixed
#: precision and fp32 training, bf16 in pure bf16 (torchtune ``dtype: bf16``).
def _checkpoint_weight_bytes(w: Workload) -> float:
    return 2.0 if w.precision == Precision.BF16 else 4.0


def checkpoint_gb(w: Workload) -> float:
    """One resumable checkpoint, GB (1e9 bytes): trainable weights + optimizer state.

    Full fine-tune/pre-training: every parameter's weight (4 B fp32 master, 2 B pure bf16)
    plus its optimizer state (:func:`app.model.memory_states.optimizer_state_bytes`: AdamW 8 B);
    LoRA/QLoRA: the adapters only. ``0`` without a parameter count.
    """
    if not w.params:
        return 0.0
    trainable = lora_trainable_params(w) if w.method in (Method.LORA, Method.QLORA) else w.params
    per_param = _checkpoint_weight_bytes(w) + optimizer_state_bytes(w.optimizer, w.precision)
    return trainable * per_param / 1e9


def disk_needed_gb(w: Workload) -> dict[str, float]:
    """Disk a run fills, GB: dataset, model weights, kept checkpoints, and their sum.

    The model weights file is the parameters in 16-bit (2 B/param, the safetensors a
    pretrained model ships as, or the final export); ``checkpoints_kept`` ×
    :func:`checkpoint_gb` for resumable checkpoints.
    """
    dataset = w.dataset_gb or 0.0
    model = (w.params or 0) * 2.0 / 1e9
    ckpt = checkpoint_gb(w) * max(w.checkpoints_kept, 0)
    return {
        "dataset_gb": dataset,
        "model_gb": model,
        "checkpoints_gb": ckpt,
        "needed_gb": dataset + model + ckpt,
    }


def gathered_checkpoint_gib(w: Workload, hw: Hardware) -> float:
    """Host RAM (GiB) to save a full checkpoint of sharded training, else 0.

    FSDP / ZeRO-3 gather the full state dict (weights + optimizer state) into rank 0's CPU
    memory before writing it (torch.distributed.checkpoint ``full_state_dict`` with
    ``cpu_offload``, torchtune's full_finetune_distributed); unsharded jobs write each tensor
    as they copy it.
    """
    if hw.gpu_count <= 1 or w.sharding not in (Sharding.FSDP, Sharding.ZERO3):
        return 0.0
    return checkpoint_gb(w) * 1e9 / 2**30
