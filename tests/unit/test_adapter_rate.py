"""The LoRA-vs-full FLOP-rate pair the FLOPs model carries full-training donors to adapter
jobs with (issue 23: LoRA answers from tuned full-training rows)."""

from __future__ import annotations

import csv
import math

import pytest

from app.model.throughput.flops_model import ADAPTER_RATE, method_shift
from app.model.types import Method
from app.settings import PROJECT_ROOT


def test_adapter_rate_is_torchtunes_lora_vs_full_pair() -> None:
    # 8,210 x (6N + 16Lhs) / (7,301 x (8N + 16Lhs)), Llama 3.2 3B at seq 4096 with recompute
    n, attn = 3_212_749_824, 16 * 28 * 3072 * 4096
    assert pytest.approx(8210 * (6 * n + attn) / (7301 * (8 * n + attn))) == ADAPTER_RATE
    assert pytest.approx(0.894, abs=0.001) == ADAPTER_RATE


def test_the_pair_is_in_the_seed_rows() -> None:
    with (PROJECT_ROOT / "seed_data" / "benchmarks.csv").open(newline="", encoding="utf-8") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["source"] == "torchtune" and r["workload"] == "Llama 3.2 3B"
        ]
    lora = [r for r in rows if r["method"] == "lora"]
    offload = [r for r in rows if "+ Activation Offloading" in r["notes"]]
    assert [float(r["throughput_total"]) for r in lora] == [8210.0]
    assert [float(r["throughput_total"]) for r in offload] == [7301.0]
    assert all(r["batch_size_per_gpu"] == "2" and r["seq_len"] == "4096" for r in lora + offload)


def test_method_shift_moves_only_between_kinds() -> None:
    assert method_shift(Method.LORA, "full") == pytest.approx(math.log(0.894), abs=1e-3)
    assert method_shift(Method.QLORA, "pretrain") == pytest.approx(math.log(ADAPTER_RATE))
    assert method_shift(Method.FULL, "lora") == pytest.approx(-math.log(ADAPTER_RATE))
    assert method_shift(Method.QLORA, "lora") == 0.0
    assert method_shift(Method.FULL, "pretrain") == 0.0
