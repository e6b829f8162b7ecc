"""The real-run time cases with the training stack (and the frozen base's dtype) each source
ran, where ``cases.md`` says.

``python -m benchmarks.real_runs URL [--no-stacks] [--cases DIR]`` scores a running server
with ``DIR/score.py``'s own measure (``../shared/real_runs`` by default), the cases'
requests carrying :data:`CASE_STACKS` and :data:`CASE_BASE_DTYPES` (``--no-stacks``: as they
stand, i.e. the defaults). Nothing is tuned here: the stacks and base dtypes are those the
sources name (tests/test_real_run_stacks.py holds the mapping to ``cases.md``'s words).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import tempfile
from pathlib import Path
from typing import Any

from app.settings import PROJECT_ROOT

#: ``../shared/real_runs`` of the repository (or of the folder holding a worktree)
DEFAULT_CASES = next(
    (
        p / "shared" / "real_runs"
        for p in (PROJECT_ROOT.parent, PROJECT_ROOT.parent.parent)
        if (p / "shared" / "real_runs").is_dir()
    ),
    PROJECT_ROOT.parent / "shared" / "real_runs",
)

#: Case id prefix → the stack its source ran, with the words of cases.md that say so. Cases
#: whose source names no stack (U-8: "parallelism: DeepSpeed/FSDP # unknown"; U-15: "the
#: benchmark model is not named") keep the default.
CASE_STACKS: dict[str, tuple[str, str]] = {
    "U-7 ": ("llm_c", "The implementation is llm.c (C/CUDA, mixed precision)"),
    "U-9 ": ("hf_trainer", "fine-tuned with the repo's script"),  # tloen/alpaca-lora: HF+PEFT
    "U-10 ": ("pytorch", "fp32, SGD, DDP, 8 V100s"),  # facebookresearch/moco: a PyTorch loop
    "U-11 ": ("pytorch", "MiniMind"),  # jingyaogong/minimind: its own PyTorch loop
    "U-1 ": ("pytorch", "parallelism: DDP (replicated model)"),  # H2O LLM Studio: own loop
    "C-21 ": ("torchtitan", "torchtitan"),
}


#: Case id prefix → the dtype its source loaded the frozen LoRA base in, with the words of
#: cases.md that say so (U-9: tloen/alpaca-lora's finetune.py, ``load_in_8bit=True``).
CASE_BASE_DTYPES: dict[str, tuple[str, str]] = {
    "U-9 ": ("int8", "frozen base loaded in 8-bit"),
}


def base_dtype_of(case_id: str) -> str | None:
    """The base dtype :data:`CASE_BASE_DTYPES` gives the case (``None``: not stated)."""
    return next((d for p, (d, _) in CASE_BASE_DTYPES.items() if case_id.startswith(p)), None)


def stack_of(case_id: str) -> str | None:
    """The stack :data:`CASE_STACKS` gives the case (``None``: not stated)."""
    return next((s for p, (s, _) in CASE_STACKS.items() if case_id.startswith(p)), None)


def with_stacks(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``cases`` with each request's workload stating its case's stack and frozen-base dtype
    (where stated)."""
    out = copy.deepcopy(cases)
    for case in out:
        stack = stack_of(case["id"])
        dtype = base_dtype_of(case["id"])
        for req in case["requests"]:
            if stack is not None:
                req["workload"]["stack"] = stack
            if dtype is not None:
                req["workload"]["base_dtype"] = dtype
    return out


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--no-stacks", action="store_true")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("score", args.cases / "score.py")
    assert spec is not None and spec.loader is not None
    score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(score)
    cases = json.loads((args.cases / "time_cases.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        body = cases if args.no_stacks else with_stacks(cases)
        (Path(tmp) / "time_cases.json").write_text(json.dumps(body))
        score.HERE = Path(tmp)
        score.time(args.url.rstrip("/"))


if __name__ == "__main__":
    main()
