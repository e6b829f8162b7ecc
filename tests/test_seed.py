"""Seeding: provenance of every row, coverage, idempotency."""

from __future__ import annotations

import csv

import pytest
from sqlalchemy import func, select

from app.db.migrate import upgrade
from app.db.models import (
    GpuModel,
    InstanceOffer,
    PriceObservation,
    Provider,
    ThroughputBenchmark,
    WorkloadPreset,
)
from app.db.seed import SeedError, seed_all
from app.db.session import create_engine_from_url, create_session_factory
from tests.conftest import SEED_DIR

pytestmark = pytest.mark.db


def test_every_seed_row_has_a_source() -> None:
    for path in SEED_DIR.glob("*.csv"):
        with path.open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert rows, path
        assert all((r.get("source") or "").strip() for r in rows), path


def test_seed_is_idempotent_and_covers_the_brief(fresh_url: str) -> None:
    engine = create_engine_from_url(fresh_url)
    upgrade(engine)
    factory = create_session_factory(engine)
    with factory() as s, s.begin():
        first = seed_all(s, SEED_DIR)
    with factory() as s, s.begin():
        second = seed_all(s, SEED_DIR)
    assert first.changed > 3000
    assert second.changed == 0
    with factory() as s:
        offers = s.scalars(select(InstanceOffer)).all()
        providers = {o.provider_id for o in offers}
        assert len(offers) >= 40 and len(providers) >= 5
        assert any(
            o.currency == "CNY"
            and o.gpu_name_raw == "3090-24G"
            and o.vcpus == 11
            and o.max_cuda == "13.0"
            for o in offers
        )
        multi = [o for o in offers if o.gpu_count > 1]
        assert any(o.interconnect in ("nvlink", "nvswitch") for o in multi)
        assert any(o.interconnect == "pcie" for o in multi)
        assert any(o.billing == "spot" for o in offers)
        assert all(o.source for o in offers)
        assert all(o.price_per_hour is None or o.price_per_hour > 0 for o in offers)
        # RunPod H100 SXM Secure was seen at three prices: three observations, latest current
        hist = (
            s.execute(
                select(PriceObservation.price_per_hour)
                .join(InstanceOffer)
                .join(Provider)
                .where(
                    Provider.slug == "runpod", InstanceOffer.offer_key == "H100 SXM (Secure Cloud)"
                )
                .order_by(PriceObservation.observed_at)
            )
            .scalars()
            .all()
        )
        assert [float(p) for p in hist] == [3.29, 3.49, 3.99]
        assert s.scalar(select(func.count()).select_from(ThroughputBenchmark)) > 2500
        assert (
            s.scalar(
                select(func.count()).where(ThroughputBenchmark.throughput_unit.like("%minutes%"))
            )
            == 0
        )
    engine.dispose()


def test_row_without_source_is_rejected(tmp_path, fresh_url: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "providers.csv").write_text("slug,name,homepage_url,kind,source\nx,X,,cloud,\n")
    engine = create_engine_from_url(fresh_url)
    upgrade(engine)
    with create_session_factory(engine)() as s, pytest.raises(SeedError, match="no source"):
        seed_all(s, tmp_path)
    engine.dispose()


def test_llm_benchmarks_are_loaded_with_their_source(seeded_url: str) -> None:
    """``benchmarks_llm.csv`` rows land in the database with source, scope and shape.

    Hand-checkable facts: llm-foundry's benchmark README (H100 80GB BF16 table) gives
    MPT-7B at seq 2048 on 8 GPUs as 85,144 tokens/s total (10,643 per GPU, MFU 46.44 %).
    """
    engine = create_engine_from_url(seeded_url)
    with create_session_factory(engine)() as s:
        rows = s.scalars(
            select(ThroughputBenchmark).where(
                ThroughputBenchmark.workload == "MPT-7B",
                ThroughputBenchmark.gpu_count == 8,
                ThroughputBenchmark.seq_len == 2048,
                ThroughputBenchmark.source == "llm_foundry",
                ThroughputBenchmark.precision == "bf16_amp",
            )
        ).all()
        gpus = {g.id: g.canonical_name for g in s.scalars(select(GpuModel))}
        h100 = [r for r in rows if gpus[r.gpu_model_id] == "H100 SXM 80GB"]
        assert len(h100) == 1
        row = h100[0]
        assert row.throughput == 85144 and row.throughput_total == 85144
        assert row.throughput_scope == "total" and row.throughput_unit == "tokens/s"
        assert row.batch_size_per_gpu == 6 and row.method == "pretrain"
        assert row.source_ref.startswith("mosaicml/llm-foundry@")
        assert "scripts/train/benchmarking/README.md" in row.source_ref
        assert "MFU 46.44%" in (row.notes or "")
        assert row.seen_on is not None
        preset = s.scalars(
            select(WorkloadPreset).where(WorkloadPreset.slug == "mpt-7b-pretrain")
        ).one()
        assert preset.fields["layers"] == 32 and preset.fields["hidden_size"] == 4096
        assert preset.fields["params"] == 6_658_859_008
        assert preset.benchmark_workloads == ["MPT-7B"]
    engine.dispose()


def _catalog_and_rows(name: str) -> tuple[set[str], list[dict[str, str]]]:
    """The catalog's GPU names and the rows of the benchmark file ``name`` (raw CSV cells),
    whose columns must be ``benchmarks.csv``'s."""
    with (SEED_DIR / "gpus.csv").open(encoding="utf-8") as f:
        catalog = {r["canonical_name"] for r in csv.DictReader(f)}
    with (SEED_DIR / "benchmarks.csv").open(encoding="utf-8") as f:
        header = next(csv.reader(f))
    with (SEED_DIR / name).open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == header
        return catalog, list(reader)


def test_llm_benchmark_file_is_consistent() -> None:
    """Every ``benchmarks_llm.csv`` row: catalog GPU, tokens/s, total = per-GPU x count, dated."""
    catalog, rows = _catalog_and_rows("benchmarks_llm.csv")
    assert len(rows) >= 100
    for r in rows:
        assert r["gpu"] in catalog, r["gpu"]
        assert r["throughput_unit"] == "tokens/s"
        assert r["method"] in ("pretrain", "full", "lora", "qlora")
        assert r["seen_on"] == "2026-12-01" and r["source"] and r["source_ref"]
        total, published, n = (
            float(r["throughput_total"]),
            float(r["throughput"]),
            int(r["gpu_count"]),
        )
        expected = published * n if r["throughput_scope"] == "per_gpu" else published
        assert r["throughput_scope"] in ("per_gpu", "total")
        assert abs(total - expected) <= 0.5, r


def test_dle_benchmark_file_is_consistent() -> None:
    """``benchmarks_nvidia_dle.csv``: same columns as ``benchmarks.csv``, catalog GPUs, totals.

    Hand-checkable facts from NVIDIA/DeepLearningExamples@729963dd: the BERT README's DGX A100
    (8x A100 80GB) SQuAD fine-tuning table gives 1 GPU, batch 32, 110.5 sequences/s in mixed
    precision; the ResNeXt101-32x4d DGX-1 16GB table gives 8 GPUs at 1133 img/s in FP32 (batch
    64 in configs.yml); the EfficientNet DGX-1 32GB table's B4 rows scale 17.6x on 8 GPUs, and
    the DGX-1 FP32 BERT-large phase-2 pre-training rows (19 sequences/s at seq 512 on one GPU)
    need 6 x 302,309,376 x 512 x 19 = 17.6 TFLOP/s, above the V100's 15.7: both kept as suspect,
    as are all phase-2 rows (length-binned: tokens per sequence unknown). One instance only: no
    row has more than 8 GPUs (a DGX A100 has 8; the EfficientNet 16-64 GPU rows are several nodes).
    """
    catalog, rows = _catalog_and_rows("benchmarks_nvidia_dle.csv")
    assert len(rows) == 72
    for r in rows:
        assert r["gpu"] in catalog, r["gpu"]
        assert r["source"] == "nvidia_dle" and r["seen_on"] == "2026-12-01"
        assert r["source_ref"].startswith("NVIDIA/DeepLearningExamples@729963dd:PyTorch/")
        assert r["throughput_scope"] == "total" and r["throughput_total"] == r["throughput"]
        assert (r["interconnect"] == "nvlink") == (int(r["gpu_count"]) > 1)
        assert int(r["gpu_count"]) <= 8, r
    bert = [
        r
        for r in rows
        if r["workload"] == "BERT-large uncased"
        and r["gpu"] == "A100 SXM4 80GB"
        and r["gpu_count"] == "1"
        and r["precision"] == "fp16_amp"
    ]
    assert [(r["throughput"], r["batch_size_per_gpu"], r["seq_len"]) for r in bert] == [
        ("110.5", "32", "384")
    ]
    rnxt = [
        r
        for r in rows
        if r["workload"] == "ResNeXt101-32x4d"
        and r["gpu"] == "V100 SXM2 16GB"
        and r["gpu_count"] == "8"
        and r["precision"] == "fp32"
    ]
    assert [(r["throughput"], r["batch_size_per_gpu"]) for r in rnxt] == [("1133", "64")]
    suspect = [(r["workload"], r["gpu"], r["precision"]) for r in rows if r["suspect"] == "true"]
    assert sorted(set(suspect)) == [
        ("BERT-large uncased pre-training (phase 2, seq 512)", "A100 SXM4 80GB", "fp16_amp"),
        ("BERT-large uncased pre-training (phase 2, seq 512)", "A100 SXM4 80GB", "tf32"),
        ("BERT-large uncased pre-training (phase 2, seq 512)", "V100 SXM2 32GB", "fp16_amp"),
        ("BERT-large uncased pre-training (phase 2, seq 512)", "V100 SXM2 32GB", "fp32"),
        ("EfficientNet-B4", "V100 SXM2 32GB", "fp16_amp"),
        ("EfficientNet-B4", "V100 SXM2 32GB", "fp32"),
    ]
    assert len(suspect) == 12
    phase2 = [
        r
        for r in rows
        if r["workload"] == "BERT-large uncased pre-training (phase 2, seq 512)"
        and r["gpu"] == "V100 SXM2 32GB"
        and r["gpu_count"] == "1"
    ]
    # micro-batch = the table's accumulated batch per GPU 2048 / accumulation steps 512 and 256
    assert [(r["precision"], r["batch_size_per_gpu"], r["method"]) for r in phase2] == [
        ("fp32", "4", "pretrain"),
        ("fp16_amp", "8", "pretrain"),
    ]
