"""The seed rows (:mod:`app.data.rows`) read real values, and a bad row fails naming its file,
line and column. Expected values are the cells of ``seed_data/*.csv`` as written there."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path

import pytest

from app.data.load import gpu_spec, load_catalog, load_points, load_presets, read_benchmarks
from app.data.rows import GpuRow, PresetFactRow, RateRow, SeedError, SeedRow, read_rows
from app.settings import PROJECT_ROOT

SEED = PROJECT_ROOT / "seed_data"
GPU_HEADER = (
    "canonical_name,vendor,architecture,compute_capability,vram_gib,memory_type,"
    "memory_bandwidth_gbs,fp32_tflops,tf32_tflops,fp16_tflops,bf16_tflops,fp8_tflops,"
    "fp16_fp32acc_tflops,fp8_fp32acc_tflops,tdp_w,nvlink,nvlink_bandwidth_gbs,form_factor,"
    "release_year,market,aliases,uncertain_fields,source,seen_on,notes"
)
A5000 = (
    "RTX A5000,NVIDIA,Ampere,8.6,24,GDDR6,768,27.8,55.5,111.1,111.1,,111.1,,230,yes,112.5,"
    "PCIe,2021,professional,RTX A5000 | A5000,,https://www.techpowerup.com/gpu-specs/"
    "rtx-a5000.c3748,2026-11-29,"
)


def _rows(by: str, rows: list[GpuRow]) -> GpuRow:
    return next(r for r in rows if r.canonical_name == by)


def test_a_known_gpu_row_reads_as_written() -> None:
    # gpus.csv line 4: H100 SXM 80GB ... 80,HBM3,3350,67,494.5,989.5,989.5,1979,...,700,yes,900
    rows = read_rows(SEED / "gpus.csv", GpuRow)
    h100 = _rows("H100 SXM 80GB", rows)
    assert (h100.file, h100.line) == ("gpus.csv", 4)
    assert h100.vram_gib == 80.0
    assert h100.memory_bandwidth_gbs == 3350.0
    assert (h100.fp32_tflops, h100.tf32_tflops, h100.bf16_tflops, h100.fp8_tflops) == (
        67.0,
        494.5,
        989.5,
        1979.0,
    )
    assert (h100.tdp_w, h100.nvlink, h100.nvlink_bandwidth_gbs) == (700.0, True, 900.0)
    assert (h100.compute_capability, h100.release_year, h100.form_factor) == ("9.0", 2022, "SXM")
    assert "H100 SXM5" in h100.aliases
    a5000 = gpu_spec(_rows("RTX A5000", rows))
    assert (a5000.memory_bandwidth_gbs, a5000.fp16_fp32acc_tflops) == (768.0, 111.1)
    assert a5000.fp8_tflops is None  # an empty cell
    assert load_catalog(SEED)["RTX A5000"] == a5000


def test_a_rate_row_is_exact() -> None:
    (usd_cny,) = [r for r in read_rows(SEED / "currency_rates.csv", RateRow) if r.quote == "CNY"]
    assert usd_cny.rate == Decimal("7.0197")
    assert usd_cny.seen_on == dt.date(2026, 1, 8)


def test_a_known_benchmark_row_reads_as_written() -> None:
    # benchmarks.csv line 2: GH200 96GB,GH200 96GB,1,,BERT-base uncased,...,full,fp16_amp,
    # fp16,384,384,838,total,838,sequences/s,,...,2.5,false,lambda_pytorch_v2,...
    rows = read_benchmarks(SEED)
    first = rows[0]
    assert (first.file, first.line, first.gpu, first.gpu_count) == (
        "benchmarks.csv",
        2,
        "GH200 96GB",
        1,
    )
    assert (first.batch_size_per_gpu, first.seq_len, first.throughput_total) == (384, 384, 838.0)
    assert (first.interconnect, first.peak_memory_gib, first.suspect) == (None, None, False)
    assert first.key_cells[7:9] == ("384", "838")  # the seed key hashes the cells as written
    points, _ = load_points(SEED)
    assert points[0].id == 1 and points[0].throughput_unit == "sequences/s"
    # rows of unknown scope are not measurements, but keep their place in the ids
    unknown = [i for i, r in enumerate(rows, start=1) if r.throughput_scope == "unknown"]
    assert len(points) == len(rows) - len(unknown)
    assert not {p.id for p in points} & set(unknown)


def test_a_preset_gets_its_memory_overlay_and_facts() -> None:
    # workloads.csv says adamw_8bit; workloads_memory.csv lays paged_adamw_8bit over it;
    # preset_facts.csv line 25 adds tokens_per_epoch 4804985 and line 26 packed true
    preset = next(p for p in load_presets(SEED) if p.slug == "llama31-8b-full-single-device")
    assert preset.fields["optimizer"] == "paged_adamw_8bit"
    assert preset.fields["tokens_per_epoch"] == 4804985
    assert preset.fields["packed"] is True
    assert preset.fields["params"] == 8030261248
    assert " ; " in preset.source  # the overlay's source appended to the row's


def _refused(tmp_path: Path, schema: type[SeedRow], text: str, message: str) -> None:
    """Reading ``text`` with ``schema`` from the file ``message`` starts with (``gpus.csv:3:
    ...``) raises a SeedError whose message starts with ``message``."""
    path = tmp_path / message.split(":", 1)[0]
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SeedError, match=f"^{re.escape(message)}"):
        read_rows(path, schema)


#: (gpus.csv text, the message its SeedError starts with): file, line, column, reason
BAD_GPU_FILES = [
    pytest.param(
        f"{GPU_HEADER}\n{A5000}\n{A5000.replace(',24,GDDR6,', ',twenty-four,GDDR6,')}\n",
        "gpus.csv:3: column vram_gib: could not convert",
        id="bad cell",
    ),
    pytest.param(
        f"{GPU_HEADER}\n"
        + A5000.replace("https://www.techpowerup.com/gpu-specs/rtx-a5000.c3748", " ")
        + "\n",
        "gpus.csv:2: column source: row has no source",
        id="no source",
    ),
    # an unquoted comma in a text cell shifts every later cell; the row must not load silently
    pytest.param(
        f"{GPU_HEADER}\n{A5000}\n{A5000},stray\n",
        "gpus.csv:3: 1 cell(s) past the header's last",
        id="cells past the header",
    ),
    pytest.param(
        f"{GPU_HEADER.replace('memory_bandwidth_gbs', 'bandwidth')}\n{A5000}\n",
        "gpus.csv:1: column memory_bandwidth_gbs: missing",
        id="header missing a column",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_GPU_FILES)
def test_a_bad_gpu_file_is_refused_naming_file_line_and_column(
    tmp_path: Path, text: str, message: str
) -> None:
    _refused(tmp_path, GpuRow, text, message)


def test_a_fact_of_an_unknown_field_or_bad_value_is_refused(tmp_path: Path) -> None:
    header = "preset,field,value,unit,source,seen_on,notes"
    text = f"{header}\ngpt2,paramz,7,,src,,\n"
    _refused(tmp_path, PresetFactRow, text, "preset_facts.csv:2: column field: unknown")
    text = f"{header}\ngpt2,epochs,two,,src,,\n"
    _refused(tmp_path, PresetFactRow, text, "preset_facts.csv:2: column value: epochs: could")


def test_the_link_table_the_model_reads_is_the_seed_rows() -> None:
    # app/model/comm.py still reads link_bandwidth.csv itself (the model may not import
    # app.data); until the table is passed in, it must read what the schema reads
    from app.data.rows import LinkRow
    from app.model.comm import link_table

    rows = read_rows(SEED / "link_bandwidth.csv", LinkRow)
    assert {(r.link_class, r.quantity): r.value for r in rows} == link_table()
    assert len(rows) == len(link_table()) > 10
    # line 2: nvswitch,busbw_fraction,0.775 (nccl-tests issue 175)
    assert (rows[0].link_class, rows[0].quantity, rows[0].value) == (
        "nvswitch",
        "busbw_fraction",
        0.775,
    )
