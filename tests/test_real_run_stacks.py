"""The real-run cases' stacks and base dtypes (benchmarks/real_runs.py) against what cases.md
says."""

from __future__ import annotations

import json

import pytest

from app.model.stacks import parse_stack
from app.model.types import BaseDtype
from benchmarks.real_runs import (
    CASE_BASE_DTYPES,
    CASE_STACKS,
    DEFAULT_CASES,
    base_dtype_of,
    stack_of,
    with_stacks,
)


def test_every_case_stack_is_a_stack() -> None:
    assert {s for s, _ in CASE_STACKS.values()} == {
        parse_stack(s).value for s, _ in CASE_STACKS.values()
    }
    assert stack_of("U-7 GPT-2 124M llm.c, 8xA100-80 SXM") == "llm_c"
    assert stack_of("C-21 torchtitan Llama-2-70B FSDP2 64xA100-80, full AC (MFU)") == "torchtitan"
    assert stack_of("U-9 alpaca-lora 7B LoRA 1x3090") == "hf_trainer"
    assert stack_of("U-11 MiniMind 26.9M pretrain 4090") == "pytorch"
    # sources that name no stack keep the default
    assert stack_of("U-8 DeepSeek-Coder 6.7B full FT, 8xA100-80") is None
    assert stack_of("U-15 2x vs 1x RTX 3070 (Ti) over PCIe host bridge") is None


@pytest.mark.skipif(not DEFAULT_CASES.is_dir(), reason="../shared/real_runs not here")
def test_stacks_are_the_ones_cases_md_states() -> None:
    text = (DEFAULT_CASES / "cases.md").read_text(encoding="utf-8")
    oom = (DEFAULT_CASES / "oom_cases.md").read_text(encoding="utf-8")
    for prefix, (_, words) in CASE_STACKS.items():
        case = prefix.strip()
        section = text.split(f"### {case} ")[1].split("\n### ")[0] if case != "C-21" else oom
        assert words in section, (case, words)
    cases = json.loads((DEFAULT_CASES / "time_cases.json").read_text())
    stated = with_stacks(cases)
    for before, after in zip(cases, stated, strict=True):
        stack = stack_of(before["id"])
        for req in after["requests"]:
            assert req["workload"].get("stack") == stack
        assert all("stack" not in r["workload"] for r in before["requests"])


def test_every_case_base_dtype_is_a_base_dtype() -> None:
    assert {BaseDtype(d).value for d, _ in CASE_BASE_DTYPES.values()} == {"int8"}
    assert base_dtype_of("U-9 alpaca-lora 7B LoRA 1xA4000") == "int8"
    assert base_dtype_of("U-9 RTX 3090 vs RTX A4000, 7B LoRA (speed ratio)") == "int8"
    # U-1 (H2O LLM Studio) runs a 16-bit base or nf4 as its requests say: nothing added
    assert base_dtype_of("U-1 nf4 vs bf16 slowdown on 1xA100-80, 7B LoRA") is None


@pytest.mark.skipif(not DEFAULT_CASES.is_dir(), reason="../shared/real_runs not here")
def test_base_dtypes_are_the_ones_cases_md_states() -> None:
    text = (DEFAULT_CASES / "cases.md").read_text(encoding="utf-8")
    for prefix, (_, words) in CASE_BASE_DTYPES.items():
        section = text.split(f"### {prefix.strip()} ")[1].split("\n### ")[0]
        assert words in section, (prefix, words)
    cases = json.loads((DEFAULT_CASES / "time_cases.json").read_text())
    stated = with_stacks(cases)
    u9 = [c for c in stated if c["id"].startswith("U-9 ")]
    assert len(u9) == 5
    for before, after in zip(cases, stated, strict=True):
        dtype = base_dtype_of(before["id"])
        for req in after["requests"]:
            assert req["workload"].get("base_dtype") == dtype
        assert all("base_dtype" not in r["workload"] for r in before["requests"])
