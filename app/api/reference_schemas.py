"""Answer models of the reference listings: ``GET /v1/gpus``, ``/v1/benchmarks``, ``/v1/workloads``.

The handlers return the rows as plain dicts (:mod:`app.services.catalog`); these models are
what the OpenAPI document says of them, field by field with units, and
``tests/test_openapi.py`` checks that every key the listings return is documented here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.interface.schemas import EvidenceOut, Page, WorkloadIn, described_as


class GpuOut(BaseModel):
    """A GPU model of the spec catalog (one row per SKU). TFLOPS are dense (sparsity halved)."""

    id: int = Field(description="catalog id")
    canonical_name: str = Field(
        description="the catalog name offers, benchmarks and estimates use", examples=["T4"]
    )
    vendor: str = Field(description="NVIDIA or AMD")
    architecture: str = Field(description="GPU architecture (Hopper, Ampere, Ada Lovelace …)")
    compute_capability: str | None = Field(
        description="NVIDIA compute capability (9.0); null for AMD"
    )
    vram_gib: float = Field(
        description="memory per GPU as marketed, taken as GiB (an 80 GB A100 shows 81920 MiB)"
    )
    memory_type: str | None = Field(description="memory technology (HBM3, GDDR6X …)")
    memory_bandwidth_gbs: float | None = Field(description="memory bandwidth, GB/s")
    fp32_tflops: float | None = Field(description="FP32 (non-tensor) peak, TFLOPS")
    tf32_tflops: float | None = Field(description="TF32 tensor peak, dense TFLOPS")
    fp16_tflops: float | None = Field(
        description="FP16 tensor peak with FP16 accumulate, dense TFLOPS"
    )
    bf16_tflops: float | None = Field(description="BF16 tensor peak, dense TFLOPS")
    fp8_tflops: float | None = Field(description="FP8 tensor peak, dense TFLOPS")
    fp16_fp32acc_tflops: float | None = Field(
        description="FP16 tensor peak with FP32 accumulate (what mixed precision runs at; half "
        "the FP16-accumulate rate on GeForce), dense TFLOPS"
    )
    fp8_fp32acc_tflops: float | None = Field(
        description="FP8 tensor peak with FP32 accumulate, dense TFLOPS"
    )
    tdp_w: float | None = Field(description="board power, W")
    nvlink: bool = Field(description="the model has NVLink")
    nvlink_bandwidth_gbs: float | None = Field(description="NVLink bandwidth per GPU, GB/s")
    form_factor: str | None = Field(description="board form: SXM, PCIe, OAM …")
    release_year: int | None = Field(description="year of release")
    market: str | None = Field(description="market segment (datacenter, consumer, workstation)")
    aliases: list[str] = Field(description="other names the model is listed under")
    uncertain_fields: list[str] = Field(
        description="columns whose figure the source marks as uncertain"
    )
    source: str = Field(description="where the specs come from")
    seen_on: str | None = Field(description="date the source was read (YYYY-MM-DD)")
    notes: str | None = Field(description="remarks on the figures")


class BenchmarkOut(BaseModel):
    """A measured training throughput, as published (or submitted by ``gpucost bench``)."""

    id: int = Field(description="measurement id (an estimate's evidence benchmark_id)")
    seed_key: str | None = Field(description="stable key of the seed row; null for submissions")
    gpu_model_id: int | None = Field(description="catalog id of the GPU; null: not in catalog")
    gpu: str | None = Field(description="canonical GPU name; null when not in the catalog")
    gpu_label: str = Field(description="the GPU as the source names it")
    gpu_count: int = described_as(EvidenceOut, "gpu_count")
    interconnect: str | None = Field(description="GPU-to-GPU link of the run (nvlink, pcie)")
    workload: str = Field(description="benchmark workload label (ResNet-50 v1.5 …)")
    task: str = Field(description="what was trained, in words")
    method: str = Field(description="full, lora or qlora")
    precision: str = Field(description="numeric precision in the API's enum (bf16_amp …)")
    precision_label: str = Field(description="the precision as the source names it")
    batch_size_per_gpu: int | None = Field(description="micro-batch per GPU; null: not given")
    seq_len: int | None = Field(description="tokens per sample, for token workloads")
    throughput: float = Field(description="throughput as published, in throughput_unit")
    throughput_scope: str = Field(
        description="total (throughput is for all gpu_count GPUs) or per_gpu"
    )
    throughput_total: float = Field(
        description="throughput of the whole GPU set, in throughput_unit"
    )
    throughput_per_gpu: float = Field(description="throughput_total / gpu_count")
    throughput_unit: str = Field(
        description="images/s, sequences/s, tokens/s, mel_frames/s, audio_samples/s or samples/s"
    )
    peak_memory_gib: float | None = Field(description="peak memory per GPU, GiB, when published")
    framework: str = Field(description="training framework of the run")
    framework_version: str | None = Field(description="its version, when published")
    suspect: bool = Field(description="the source or our review calls the row broken: unused")
    source: str = Field(description="who published it (submitted: a gpucost bench run)")
    source_ref: str = described_as(EvidenceOut, "source_ref")
    seen_on: str | None = described_as(GpuOut, "seen_on")
    notes: str | None = Field(description="remarks kept with the row")
    status: str = Field(
        description="accepted (used by estimates), held (stored, unused, until corroborated) "
        "or revoked (its submitter was revoked: stored, unused)"
    )
    hold_reason: str | None = Field(description="why a held or revoked row is so")
    run_id: str | None = Field(description="client run id of a submitted row")
    environment: dict[str, Any] | None = Field(
        description="the machine a submitted row ran on (GPU, driver, CUDA, torch, CPU …)"
    )
    submitted_by: str | None = Field(description="name of the API token that submitted it")
    submitted_at: str | None = Field(description="when it was submitted (ISO 8601, UTC)")
    corroborated_by: str | None = Field(
        default=None,
        description="who corroborated a submitted row that alone would have moved its answer "
        "past the bound: another submitter, or maintainer:<name>; null: nobody",
    )
    corroborated_at: str | None = Field(
        default=None, description="when it was corroborated (ISO 8601, UTC)"
    )
    submitted: bool = Field(description="sent by a gpucost bench run, not published")


class BenchmarkPage(Page[BenchmarkOut]):
    """A page of measurements, by id."""


class WorkloadPresetOut(WorkloadIn):
    """A workload preset: the workload fields it sets (those of ``WorkloadIn``, ``preset``
    being its slug) and the measurements it stands for."""

    # stored in the flat form of GET /v1/rank (text, where WorkloadIn takes a list): an
    # answer model overriding a request field's type, which mypy rightly flags
    cuda_only_libraries: str | None = Field(  # type: ignore[assignment]
        default=None,
        description="libraries with CUDA-only builds the job uses, comma-separated",
        examples=["bitsandbytes"],
    )
    name: str = Field(description="the preset's name for display")
    benchmark_workloads: list[str] = Field(
        description="benchmark labels whose measurements stand for this workload"
    )
    benchmark_method: str | None = Field(description="training method of those measurements")
    units_per_sample: float | None = Field(
        description="benchmark throughput units per sample (tokens per sequence …)"
    )
    throughput_unit: str | None = Field(description="unit of those measurements (tokens/s …)")
    source: str = Field(description="where the preset's figures come from")
    notes: str | None = Field(description="remarks on the preset")
