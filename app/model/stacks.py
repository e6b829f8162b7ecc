"""The training stack: which software runs the job, and the efficiency class it falls in.

Every measured row is labelled with the stack that produced it (:data:`SOURCE_STACK`: one
place maps each benchmark source to a stack); a request names its stack, or gets the default
of its preset (the preset's own recipe, :func:`preset_stack`) or of a custom job (HF Trainer
+ PEFT, what most fine-tunes run).

Stacks fall in the efficiency classes the data can tell apart (:data:`STACK_CLASS`):

* ``tuned``: benchmark and pre-training suites with fused kernels and compiled or
  hand-written graphs (Megatron/NeMo, torchtitan, llm-foundry, llm.c, NVIDIA's
  DeepLearningExamples and the Lambda runs of them, tf_cnn_benchmarks; Unsloth's hand-written
  Triton kernels are placed here without a row of their own), and a plain PyTorch loop under
  ``torch.compile`` (``pytorch_compile``: nanoGPT, whose ``train.py`` compiles by default,
  ``compile = True``; its published row, seed_data/benchmarks_llm.csv source ``nanogpt``,
  names "PyTorch 2 DDP, torch.compile");
* ``eager``: PyTorch modules run eagerly (HF Trainer/PEFT/TRL, axolotl, LLaMA-Factory,
  DeepSpeed, Lightning, torchtune's default recipes, timm, a plain PyTorch loop).

Every measured row carries the class of the runs its source published
(:func:`published_class`): the class of the source's stack, except where the published runs
ran otherwise (torchtune's README tables ran with ``torch.compile``, "torch compile enabled";
TinyLlama's with fused kernels: ``tuned``). timm's benchmark sheets (eager PyTorch 1.12) and
PEFT's MetaMathQA benchmark (``compile False``) are ``eager`` sources (their rows wait in
seed_data/stack_rows_pending.csv). The class is the
source's, not the row's (a stored row has no stack of its own): torchtune's first README
table (pytorch/torchtune@0217d44c, seed_data/benchmarks_stacks.csv) and the two first
technique rows of its optimisation table ran eager and count as ``tuned`` with the rest of
torchtune's rows.

Each class has a rate relative to the ``tuned`` class, per family (``stack_efficiency`` of the
calibration: ``"family|class"`` → efficiency, ``tuned`` = 1 by definition), fitted from the
rows by :func:`app.calibrate.stack_fit.fit_stack_efficiency`: where a workload was measured
by an eager source and a tuned one, the pooled fit's ratio of the two software levels on the
same GPU, precision and micro-batch; torchtune's optimisation table's eager vs compiled pair
of the same job. A measured row's rate divided by its class's efficiency is its ``tuned``
rate; an answer is that rate times the efficiency of the asked stack's class
(:func:`stack_factor`: the ratio of the two classes).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class Stack(StrEnum):
    """Training software as users name it: ``Stack("HF Trainer")``, ``Stack("composer")``
    and ``Stack("llm.c")`` read the names of :data:`STACK_ALIASES` as :func:`parse_stack`
    does, so the JSON API, query strings, the page's form and presets take the same words."""

    @classmethod
    def _missing_(cls, value: object) -> Stack | None:
        return _lookup_stack(value) if isinstance(value, str) else None

    HF_TRAINER = "hf_trainer"
    AXOLOTL = "axolotl"
    LLAMA_FACTORY = "llama_factory"
    UNSLOTH = "unsloth"
    TORCHTUNE = "torchtune"
    DEEPSPEED = "deepspeed"
    LIGHTNING = "lightning"
    MEGATRON = "megatron"
    TORCHTITAN = "torchtitan"
    LLM_FOUNDRY = "llm_foundry"
    LLM_C = "llm_c"
    TIMM = "timm"
    NVIDIA_DLE = "nvidia_dle"
    PYTORCH = "pytorch"
    PYTORCH_COMPILE = "pytorch_compile"
    TENSORFLOW = "tensorflow"


#: Other names people write for a stack (lower case, ``-``/space read as ``_``).
STACK_ALIASES = {
    "huggingface": Stack.HF_TRAINER,
    "transformers": Stack.HF_TRAINER,
    "peft": Stack.HF_TRAINER,
    "trl": Stack.HF_TRAINER,
    "hf": Stack.HF_TRAINER,
    "hf_peft": Stack.HF_TRAINER,
    "llamafactory": Stack.LLAMA_FACTORY,
    "nemo": Stack.MEGATRON,
    "megatron_lm": Stack.MEGATRON,
    "megatron_nemo": Stack.MEGATRON,
    "llmc": Stack.LLM_C,
    "llm.c": Stack.LLM_C,
    "llmfoundry": Stack.LLM_FOUNDRY,
    "composer": Stack.LLM_FOUNDRY,
    "pytorch_lightning": Stack.LIGHTNING,
    "dle": Stack.NVIDIA_DLE,
    "deeplearningexamples": Stack.NVIDIA_DLE,
    "torch": Stack.PYTORCH,
    "torch.compile": Stack.PYTORCH_COMPILE,
    "torch_compile": Stack.PYTORCH_COMPILE,
    "pytorch_compiled": Stack.PYTORCH_COMPILE,
    "nanogpt": Stack.PYTORCH_COMPILE,
}

#: Efficiency class of each stack (module docstring).
STACK_CLASS = {
    Stack.MEGATRON: "tuned",
    Stack.TORCHTITAN: "tuned",
    Stack.LLM_FOUNDRY: "tuned",
    Stack.LLM_C: "tuned",
    Stack.NVIDIA_DLE: "tuned",
    Stack.TENSORFLOW: "tuned",
    Stack.UNSLOTH: "tuned",
    Stack.PYTORCH_COMPILE: "tuned",
    Stack.HF_TRAINER: "eager",
    Stack.AXOLOTL: "eager",
    Stack.LLAMA_FACTORY: "eager",
    Stack.DEEPSPEED: "eager",
    Stack.LIGHTNING: "eager",
    Stack.TORCHTUNE: "eager",
    Stack.TIMM: "eager",
    Stack.PYTORCH: "eager",
}

#: Stacks whose transformer blocks run fused kernels (a fused norm, FlashAttention, a fused
#: SwiGLU) by default: Megatron/NeMo (Transformer Engine layers) and Unsloth (its Triton
#: kernels); the memory model keeps what those kernels save for backward
#: (:func:`app.model.memory_activations.implementation`). The other stacks run PyTorch modules
#: eagerly unless the request says ``implementation: fused`` (e.g. Liger-patched HF Trainer).
FUSED_KERNEL_STACKS = frozenset({Stack.MEGATRON, Stack.UNSLOTH})

#: The class of a source's published rows where it is not its stack's (module docstring):
#: torchtune's README tables ran compiled ("torch compile enabled"), TinyLlama's with fused
#: kernels (its README: fused layernorm, SwiGLU, rotary and cross-entropy kernels).
PUBLISHED_CLASS = {
    "torchtune": "tuned",
    "tinyllama": "tuned",
}

#: The stack of each benchmark source of seed_data/benchmarks*.csv (the only such mapping).
SOURCE_STACK = {
    "lambda_pytorch_v0": Stack.NVIDIA_DLE,
    "lambda_pytorch_v1": Stack.NVIDIA_DLE,
    "lambda_pytorch_v2": Stack.NVIDIA_DLE,
    "lambda_tensorflow": Stack.TENSORFLOW,
    "nvidia_dle": Stack.NVIDIA_DLE,
    "torchtitan": Stack.TORCHTITAN,
    "torchtune": Stack.TORCHTUNE,
    "llm_c": Stack.LLM_C,
    "llm_foundry": Stack.LLM_FOUNDRY,
    "megatron_bridge": Stack.MEGATRON,
    "nemo_perf_summary": Stack.MEGATRON,
    "nemo_automodel": Stack.MEGATRON,
    "nanogpt": Stack.PYTORCH_COMPILE,
    "tinyllama": Stack.LIGHTNING,
    "timm_benchmark": Stack.TIMM,
    "peft_method_comparison": Stack.HF_TRAINER,
    "mlperf_training": Stack.MEGATRON,
}

#: Stack of a preset's recipe, from the repository its ``source`` cites (the repository cited
#: first in the text wins: a source citing torchtitan's benchmark and then torchtune's config
#: is a torchtitan recipe).
PRESET_REPO_STACK = (
    ("pytorch/torchtune", Stack.TORCHTUNE),
    ("pytorch/torchtitan", Stack.TORCHTITAN),
    ("mosaicml/llm-foundry", Stack.LLM_FOUNDRY),
    ("karpathy/llm.c", Stack.LLM_C),
    ("karpathy/nanogpt", Stack.PYTORCH_COMPILE),
    ("nvidia/deeplearningexamples", Stack.NVIDIA_DLE),
    ("nvidia/nemo", Stack.MEGATRON),
    ("lambdal/lambda-tensorflow-benchmark", Stack.TENSORFLOW),
    ("jzhang38/tinyllama", Stack.LIGHTNING),
    ("pytorch/vision", Stack.PYTORCH),
    ("huggingface/", Stack.HF_TRAINER),
)

#: What a custom job (no preset) runs unless told: HF Trainer + PEFT.
DEFAULT_STACK = Stack.HF_TRAINER


def _lookup_stack(text: str) -> Stack | None:
    """The stack ``text`` names (any case; ``-``, space or ``+`` for ``_``; an alias of
    :data:`STACK_ALIASES`), ``None`` when it names none. Looks members up by value, never
    through ``Stack(...)``, whose :meth:`Stack._missing_` calls this."""
    word = text.strip().lower()
    if word in STACK_ALIASES:
        return STACK_ALIASES[word]
    word = word.replace("-", "_").replace(" ", "_").replace("+", "_")
    if word in STACK_ALIASES:
        return STACK_ALIASES[word]
    return next((s for s in Stack if s.value == word), None)


def parse_stack(text: str) -> Stack:
    """A stack as people write it (``HF Trainer``, ``llm.c``, ``NeMo``); ``ValueError``
    naming the known stacks otherwise."""
    found = _lookup_stack(text)
    if found is None:
        known = ", ".join(s.value for s in Stack)
        raise ValueError(f"unknown stack {text!r}; one of {known}")
    return found


def preset_stack(source: str | None) -> Stack | None:
    """The stack of a preset's recipe from its ``source``: the one of the repository of
    :data:`PRESET_REPO_STACK` cited first in the text (``None`` when none is)."""
    text = (source or "").lower()
    found = [(text.find(repo), stack) for repo, stack in PRESET_REPO_STACK if repo in text]
    return min(found, key=lambda f: f[0])[1] if found else None


def published_class(source: str | None) -> str:
    """The efficiency class of ``source``'s published rows: :data:`PUBLISHED_CLASS`, else
    its stack's (:data:`SOURCE_STACK`); ``tuned`` for ``None`` or an unknown source (the
    FLOPs model's rates are tuned rates)."""
    if source is None:
        return "tuned"
    if source in PUBLISHED_CLASS:
        return PUBLISHED_CLASS[source]
    stack = SOURCE_STACK.get(source)
    return STACK_CLASS[stack] if stack is not None else "tuned"


def class_efficiency(fam: str, cls: str, efficiency: Mapping[str, float]) -> float:
    """Rate of class ``cls`` relative to ``tuned`` for family ``fam``: the calibration's
    ``stack_efficiency["fam|cls"]``; 1 for ``tuned`` and for a class the data never
    measured against it.

    Raises:
        ValueError: a non-positive efficiency in the calibration.
    """
    if cls == "tuned":
        return 1.0
    value = float(efficiency.get(f"{fam}|{cls}", 1.0))
    if value <= 0:
        raise ValueError(f"stack_efficiency {fam}|{cls} must be positive, got {value}")
    return value


def stack_factor(
    asked: Stack, measured: str | None, fam: str, efficiency: Mapping[str, float]
) -> float:
    """Rate of ``asked`` relative to rows published by source ``measured`` (``None``: a
    tuned rate, the FLOPs model's): 1 where ``asked`` is the source's own stack (the rows
    are its own runs), else the efficiency of ``asked``'s class over that of the rows'
    class (:func:`published_class`), for family ``fam`` (:func:`class_efficiency`)."""
    if measured is not None and SOURCE_STACK.get(measured) == asked:
        return 1.0
    own = class_efficiency(fam, STACK_CLASS[asked], efficiency)
    return own / class_efficiency(fam, published_class(measured), efficiency)


def published_run_stack(source: str) -> Stack | None:
    """The stack a request describing a published row of ``source`` states (the accuracy
    harness): the source's own where its rows ran in its stack's class (timm's eager sheets
    are ``timm``, PEFT's eager loop ``hf_trainer``); torchtitan (compiled PyTorch) for the
    published runs of eager-default stacks that ran compiled or fused
    (:data:`PUBLISHED_CLASS`). ``None`` for an unknown source."""
    stack = SOURCE_STACK.get(source)
    if stack is None or STACK_CLASS[stack] == published_class(source):
        return stack
    return Stack.TORCHTITAN
