"""Every fitted constant of the estimator, as one frozen value read from ``calibration.json``.

The file is data, written by the fits (``python tools/fit_constants.py``: the ``throughput``
section; ``python tools/fit_memory.py``: the ``memory`` section) and never edited by hand.
:func:`load_calibration` reads it into a :class:`Calibration`; the estimator reads constants
only from the calibration it is given (``cal`` arguments, default :func:`load_calibration`'s
cached value), and cross-validation builds ``dataclasses.replace(cal, ...)`` per fold instead
of patching anything. What each constant means and how it is fitted: ``docs/model.md``.

File layout (``version``: the first 12 hex digits of the SHA-256 of both sections' constants,
so two files with the same constants share a version)::

    {"format": 1, "version": "...",
     "throughput": {"fitted_on": "YYYY-MM-DD", "data_sha256": "...", "constants": {...}},
     "memory": {"fitted_on": "YYYY-MM-DD", "data_sha256": "...", "cases": 200, "params": {...}}}

JSON has no tuples: the tuple-valued constants are lists in the file and tuples here.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

#: The served calibration, next to this module (shipped in the wheel: pyproject package-data).
CALIBRATION_PATH = Path(__file__).with_name("calibration.json")

#: Version of the file layout this module reads.
FORMAT = 1


@dataclass(frozen=True, slots=True)
class MemoryParams:
    """Constants of the memory model fitted on the published cases (``tools/fit_memory.py``,
    method ``app/calibrate/memory_fit.py``; priors in brackets, ``PRIOR`` there).

    ``unfused_logit_bytes``: bytes per 16-bit logit element alive at the loss with an
    unfused cross-entropy (logits, log-softmax output, its gradient, the logits' gradient:
    4 × 2 B; × 2 for fp32 logits, :func:`app.model.memory_activations.logit_bytes_per_element`) [8];
    ``chunked_logit_bytes``: with a chunked loss, bytes per 16-bit logit alive when
    backward starts, a count (not fitted) [4]: every chunk's cross-entropy graph is kept
    until backward, so its log-softmax output is saved for every chunk; torchtune's
    ``CEWithChunkedOutputLoss`` upcasts each chunk (``F.cross_entropy(logits.float(), ...)``,
    pytorch/torchtune ``torchtune/modules/loss/ce_chunked_output_loss.py``) and saves the
    fp32 log-softmax (4 B; its recipes ``del logits`` before backward), LitGPT's
    ``chunked_cross_entropy`` (Lightning-AI/litgpt ``litgpt/utils.py``) runs
    ``cross_entropy`` on the 16-bit chunks (2 B saved) while the training step still holds
    the chunked logits (2 B) through ``fabric.backward``; llm.c's in-place classifier keeps 2
    (:data:`app.model.memory_activations.IN_PLACE_LOGIT_BYTES`);
    ``lora_activation_factor``: LoRA's saved activations relative to full fine-tuning
    (frozen linears keep no inputs for weight gradients; dimensionless) [23/28, LitGPT C-2];
    ``qlora_overhead``: bitsandbytes extra bytes as a fraction of the
    NF4 base [0.06, gpu_poor], ``qlora_overhead_torchao`` with torchao's ``NF4Tensor`` [0: its
    64-element blocks with int8 scalers per 256 blocks are the 4.127 bits of
    ``NF4_BYTES_PER_PARAM`` exactly, torchao/dtypes/nf4tensor.py]; ``oom_center``/``oom_scale``:
    logistic OOM probability in log(peak / usable VRAM) (dimensionless).

    Vision and diffusion activations, bytes kept for backward per forward GFLOP of one
    sample at 16-bit activations (×2 at fp32), one constant per family [prior for all three:
    ResNet-50's slope measured by Lambda, :attr:`Calibration.cnn_activation_bytes_per_gflop`]:
    ``cnn_activation_bytes_per_gflop`` (classification CNNs, per forward GFLOP at the input
    size), ``detection_activation_bytes_per_gflop`` (detectors, per *backbone* GFLOP at the
    input pixels, the neck and heads folded into the constant; fitted on FPN two-stage and
    RetinaNet detectors), ``diffusion_activation_bytes_per_gflop`` (UNet, per forward GFLOP at
    its latent size). ``cnn_activation_bytes_per_element``: classification CNNs with a
    published activation count (``forward_activations_per_sample``), bytes kept for backward
    per forward activation element (fvcore's count of convolution and matmul outputs) at
    16-bit activations [prior: the same Lambda ResNet-50 slope ÷ ResNet-50's 11.11 M elements,
    :attr:`Calibration.cnn_activation_bytes_per_element`]; it takes the place of the
    per-GFLOP constant there, since a convolution's saved outputs grow with its output size,
    not its FLOPs.
    """

    unfused_logit_bytes: float
    chunked_logit_bytes: float
    lora_activation_factor: float
    qlora_overhead: float
    oom_center: float
    oom_scale: float
    cnn_activation_bytes_per_gflop: float
    detection_activation_bytes_per_gflop: float
    diffusion_activation_bytes_per_gflop: float
    cnn_activation_bytes_per_element: float
    qlora_overhead_torchao: float = 0.0


@dataclass(frozen=True)
class Calibration:
    """The estimator's fitted constants (one ``calibration.json``), frozen.

    Throughput section (``tools/fit_constants.py``, ``app/calibrate/fit.py``):

    * ``activation_bytes_per_sample``: ``"label|16"`` / ``"label|32"`` → (activation bytes per
      sample, reference image side in pixels or ``None``, fixed bytes), allocated bytes from
      Lambda v0 peak memory (nvidia-smi) at several batches.
    * ``cnn_activation_bytes_per_gflop`` (bytes per forward GFLOP),
      ``cnn_activation_bytes_per_element`` (bytes per forward activation element, fvcore
      count): ResNet-50's measured slope, the *priors* of the memory fit (the memory model
      serves the fitted ``memory.*`` constants of the same names);
      ``default_activation_bytes_per_param`` (bytes per parameter): the fallback without a
      better rule.
    * ``mfu_prior``: median achieved MFU (fraction of peak) per ``"family|precision class"``
      over single-GPU measurements.
    * ``flops_rate_model``: ``"family|class"`` → (a, b, c) of ``ln FLOP/s = a + b ln peak
      TFLOPS + c ln bandwidth GB/s``.
    * ``fp8_gain``: (median, highest, pairs) of the fp8 ÷ 16-bit rate over the measured pairs
      of one job (same source, GPU, count, interconnect, workload, method, sequence and
      micro-batch); the highest bounds an fp8 answer that stands on no fp8 measurement of its
      GPU.
    * ``mfu_range``: ``"family|size|class"`` → (10th percentile, median, highest MFU, highest
      HFU, rows) of the measured rows that pass ``app/model/mfu.py``'s plausibility limit.
    * ``intensity_slope``: per non-transformer family, slope of ln achieved FLOP rate on ln
      forward intensity (FLOPs per activation element), dimensionless, in [0, 1].
    * ``width_h0``: h0 (matmul width units) of a transformer's width efficiency h / (h + h0).
    * ``extrapolation_form``: family → the form of an ``extrapolated`` estimate (a GPU whose
      architecture never measured the workload), chosen by leave-one-architecture-out on the
      data (``app/model/throughput/extrapolate.py``); a family without an entry is ``pooled``.
    * ``qlora_slowdown``: geometric mean LoRA ÷ QLoRA throughput ratio (same model and GPU).
    * ``stack_efficiency``: ``"family|class"`` → rate of the training stacks' efficiency
      class relative to the ``tuned`` class (``app/model/stacks.py``; fitted by
      ``app/calibrate/stack_fit.py``).
    * ``comm_overlap`` (share of the hideable communication overlapped with compute, 0-1),
      ``scaling_loss_per_doubling`` (κ, efficiency lost per doubling of the GPU count, 0-1):
      the multi-GPU model of ``app/model/comm.py``.
    * ``range_factors``: situation or basis → (low, high) multipliers, the 10th/90th
      percentiles of actual ÷ predicted in served-path cross-validation;
      ``multi_gpu_range``: the same for GPU counts that were not measured.

    Memory section (``tools/fit_memory.py``): ``memory`` (:class:`MemoryParams`) and
    ``memory_cases`` (in-scope published cases it was fitted on).

    ``version``: the file's ``version`` (module docstring); a calibration built with
    ``dataclasses.replace`` keeps it unless the caller names another.
    """

    version: str
    activation_bytes_per_sample: Mapping[str, tuple[int, int | None, int]]
    cnn_activation_bytes_per_element: float
    cnn_activation_bytes_per_gflop: float
    comm_overlap: float
    default_activation_bytes_per_param: float
    extrapolation_form: Mapping[str, str]
    flops_rate_model: Mapping[str, tuple[float, float, float]]
    fp8_gain: tuple[float, float, int]
    intensity_slope: Mapping[str, float]
    mfu_prior: Mapping[str, float]
    mfu_range: Mapping[str, tuple[float, float, float, float, int]]
    multi_gpu_range: tuple[float, float]
    qlora_slowdown: float
    range_factors: Mapping[str, tuple[float, float]]
    scaling_loss_per_doubling: float
    stack_efficiency: Mapping[str, float]
    width_h0: Mapping[str, float]
    memory: MemoryParams
    memory_cases: int


#: The Calibration fields of the ``throughput`` section (everything but version and memory).
THROUGHPUT_FIELDS = tuple(
    f.name for f in fields(Calibration) if f.name not in ("version", "memory", "memory_cases")
)


def _tuples(value: Any) -> Any:
    """JSON lists back to tuples, inside mappings too (``{"a": [1, 2]}`` → ``{"a": (1, 2)}``)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def from_document(doc: Mapping[str, Any]) -> Calibration:
    """A :class:`Calibration` from the parsed file.

    Raises:
        ValueError: another ``format``, or a section without a constant the model needs.
    """
    if doc.get("format") != FORMAT:
        raise ValueError(f"calibration format {doc.get('format')!r}, expected {FORMAT}")
    constants = doc["throughput"]["constants"]
    missing = [name for name in THROUGHPUT_FIELDS if name not in constants]
    if missing:
        raise ValueError(f"calibration: throughput constants missing: {', '.join(missing)}")
    values = {name: _tuples(constants[name]) for name in THROUGHPUT_FIELDS}
    memory = doc["memory"]
    params = dict(memory["params"])
    wanted = {f.name for f in fields(MemoryParams)}
    if set(params) != wanted:
        missing, unknown = sorted(wanted - set(params)), sorted(set(params) - wanted)
        raise ValueError(f"calibration: memory params missing {missing}, unknown {unknown}")
    return Calibration(
        version=str(doc["version"]),
        memory=MemoryParams(**params),
        memory_cases=int(memory["cases"]),
        **values,
    )


@functools.cache
def _default() -> Calibration:
    return from_document(json.loads(CALIBRATION_PATH.read_text(encoding="utf-8")))


def load_calibration(path: Path | None = None) -> Calibration:
    """The calibration in ``path`` (default: the served ``calibration.json``, read once and
    cached for the process).

    Raises:
        OSError: the file cannot be read. ValueError: it is not a calibration (see
            :func:`from_document`).
    """
    if path is None:
        return _default()
    return from_document(json.loads(path.read_text(encoding="utf-8")))


def version_of(doc: Mapping[str, Any]) -> str:
    """The ``version`` a document's constants give (module docstring): 12 hex digits."""
    payload = {"throughput": doc["throughput"]["constants"], "memory": doc["memory"]["params"]}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def render(doc: Mapping[str, Any]) -> str:
    """The file text of ``doc``: keys sorted, one mapping entry per line, every list on one
    line, so a refit that changes nothing writes the same bytes."""

    def dump(value: Any, indent: int) -> str:
        if not isinstance(value, Mapping) or not value:
            return json.dumps(value)
        pad = " " * (indent + 2)
        items = [f"{pad}{json.dumps(k)}: {dump(value[k], indent + 2)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"

    return dump(doc, 0) + "\n"
