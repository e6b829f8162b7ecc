"""The training stack: which software runs the job, and the efficiency class it falls in.

Every measured row is labelled with the stack that produced it (:data:`SOURCE_STACK`: one
place maps each benchmark source to a stack); a request names its stack, or gets the default
of its preset (the preset's own recipe, :func:`preset_stack`) or of a custom job (HF Trainer
+ PEFT, what most fine-tunes run).

Stacks fall in the efficiency classes the data can tell apart (:data:`STACK_CLASS`):

* ``tuned``: benchmark and pre-training suites with fused kernels and compiled or
  hand-written graphs (Megatron/NeMo, torchtitan, llm-foundry, llm.c, NVIDIA's
  DeepLearningExamples and the Lambda runs of them, tf_cnn_benchmarks; Unsloth's hand-written
  Triton kernels are placed here without a row of their own);
* ``eager``: PyTorch modules run eagerly (HF Trainer/PEFT/TRL, axolotl, LLaMA-Factory,
  DeepSpeed, Lightning, torchtune's default recipes, timm, a plain PyTorch loop).

Every measured row is a ``tuned`` run (torchtune's published rows ran with ``torch.compile``,
README: "torch compile enabled"), so the rates of the pooled and FLOPs models are ``tuned``
rates. The ``eager`` class's rate relative to them (:data:`EAGER_FACTOR`) is the one eager vs
compiled pair the data holds: torchtune's optimisation table (pytorch/torchtune@bd2a0fc7
README.md, Llama 3.2 3B full fine-tune, 1× A100, batch 2, seq 4096, bf16), "+ Packed
Dataset" 7,075 tokens/s eager and "+ Compile" 8,998 tokens/s compiled, the same job
otherwise: 7,075 / 8,998 = 0.786 (seed_data/benchmarks.csv rows of source ``torchtune``).
"""

from __future__ import annotations

from enum import StrEnum


class Stack(StrEnum):
    """Training software as users name it."""

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
#: (:func:`app.model.memory.implementation`). The other stacks run PyTorch modules eagerly
#: unless the request says ``implementation: fused`` (e.g. Liger-patched HF Trainer).
FUSED_KERNEL_STACKS = frozenset({Stack.MEGATRON, Stack.UNSLOTH})

#: Eager PyTorch's rate relative to the tuned rows (module docstring: 7,075 / 8,998).
EAGER_FACTOR = 7075 / 8998
#: Rate of each class relative to the measured (tuned) rows.
CLASS_FACTOR = {"tuned": 1.0, "eager": EAGER_FACTOR}

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
    "nanogpt": Stack.PYTORCH,
    "tinyllama": Stack.LIGHTNING,
    "timm_benchmark": Stack.TIMM,
}

#: Stack of a preset's recipe, from the repository its ``source`` cites (first match wins).
PRESET_REPO_STACK = (
    ("pytorch/torchtune", Stack.TORCHTUNE),
    ("pytorch/torchtitan", Stack.TORCHTITAN),
    ("mosaicml/llm-foundry", Stack.LLM_FOUNDRY),
    ("karpathy/llm.c", Stack.LLM_C),
    ("karpathy/nanogpt", Stack.PYTORCH),
    ("nvidia/deeplearningexamples", Stack.NVIDIA_DLE),
    ("nvidia/nemo", Stack.MEGATRON),
    ("lambdal/lambda-tensorflow-benchmark", Stack.TENSORFLOW),
    ("jzhang38/tinyllama", Stack.LIGHTNING),
    ("pytorch/vision", Stack.PYTORCH),
    ("huggingface/", Stack.HF_TRAINER),
)

#: What a custom job (no preset) runs unless told: HF Trainer + PEFT.
DEFAULT_STACK = Stack.HF_TRAINER


def parse_stack(text: str) -> Stack:
    """A stack as people write it (``HF Trainer``, ``llm.c``, ``NeMo``); ``ValueError``
    naming the known stacks otherwise."""
    word = text.strip().lower()
    if word in STACK_ALIASES:
        return STACK_ALIASES[word]
    word = word.replace("-", "_").replace(" ", "_").replace("+", "_")
    if word in STACK_ALIASES:
        return STACK_ALIASES[word]
    try:
        return Stack(word)
    except ValueError:
        known = ", ".join(s.value for s in Stack)
        raise ValueError(f"unknown stack {text!r}; one of {known}") from None


def preset_stack(source: str | None) -> Stack | None:
    """The stack of a preset's recipe from its ``source`` (``None`` when none matches)."""
    text = (source or "").lower()
    return next((stack for repo, stack in PRESET_REPO_STACK if repo in text), None)


def stack_factor(asked: Stack, measured: Stack | None) -> float:
    """Rate of ``asked`` relative to rows measured by ``measured``: 1 for the same stack
    (the rows are its own runs), else the class factor of ``asked`` (every row is a tuned
    run: module docstring)."""
    if measured is not None and asked == measured:
        return 1.0
    return CLASS_FACTOR[STACK_CLASS[asked]]


def published_run_stack(source: str) -> Stack | None:
    """The stack a request describing a published row of ``source`` states (the accuracy
    harness): the source's own where it is a tuned stack; torchtitan (compiled PyTorch) for
    the published runs of eager-default stacks, which ran compiled or fused (torchtune's
    README tables "torch compile enabled", nanoGPT ``compile=True``, TinyLlama's fused
    kernels). ``None`` for an unknown source."""
    stack = SOURCE_STACK.get(source)
    if stack is None or STACK_CLASS[stack] == "tuned":
        return stack
    return Stack.TORCHTITAN
