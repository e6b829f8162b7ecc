"""The software stack factor and the physical checks: the datasheet peak and the credible-MFU
bound an answer is held to.
"""

from __future__ import annotations

from collections.abc import Callable

from app.model.compat import capabilities
from app.model.flops import (
    flops_peak_tflops,
    peak_tflops,
    training_flops_per_sample,
)
from app.model.int8_base import int8_rate
from app.model.pooled import rate_class
from app.model.stacks import (
    DEFAULT_STACK,
    SOURCE_STACK,
    STACK_CLASS,
    Stack,
    published_class,
    stack_factor,
)
from app.model.throughput.common import _OWN, CREDIBLE_SHARPNESS, SingleGpu
from app.model.throughput.flops_model import FlopsModel
from app.model.throughput.rates import credible_rate, implied_utilisation, width_efficiency
from app.model.types import (
    GpuSpec,
    Precision,
    Situation,
    Workload,
)
from app.model.vocabulary import Family, PrecisionClass, family

#: Each stack's fp32 matmul default on GPUs with TF32 tensor cores, with the source that shows
#: it: ``True`` turns TF32 on, ``False`` keeps PyTorch's default (full-FP32 matmuls:
#: ``torch.backends.cuda.matmul.allow_tf32 = False`` since PyTorch 1.12,
#: https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices).
#: A stack missing here is unverified: its fp32 answer keeps the TF32 rate its rows ran at and
#: says that the stack's TF32 default is unverified (:meth:`PhysicalChecks.runs_tf32`).
#: Sources read 2026-12-04 (repository snapshots: HEAD commit dates in parentheses).
FP32_MATMUL_TF32: dict[Stack, tuple[bool, str]] = {
    Stack.NVIDIA_DLE: (
        True,
        "NVIDIA DeepLearningExamples: its A100 fp32 runs are labelled TF32 and the seed's fp32 "
        "rows reach up to 2.6x an A100's FP32 vector peak (only TF32 tensor cores allow it)",
    ),
    Stack.MEGATRON: (
        True,
        "Megatron/NeMo in NVIDIA's NGC containers: the seed's fp32 rows of these sources run "
        "above the FP32 vector peak (TF32 tensor cores)",
    ),
    Stack.TENSORFLOW: (
        True,
        "TensorFlow >= 2.4: TensorFloat-32 is enabled by default, https://www.tensorflow.org/"
        "api_docs/python/tf/config/experimental/enable_tensor_float_32_execution",
    ),
    Stack.LLM_C: (True, "karpathy/llm.c train_gpt2.cu: override_enable_tf32 = 1"),
    Stack.PYTORCH_COMPILE: (
        True,
        "nanoGPT (karpathy/nanoGPT train.py): torch.backends.cuda.matmul.allow_tf32 = True",
    ),
    Stack.LLM_FOUNDRY: (
        True,
        "Composer (mosaicml/composer composer/devices/device_gpu.py): DeviceGPU(allow_tf32=True) "
        "sets torch.backends.cuda.matmul.allow_tf32, 'Defaults to True'",
    ),
    Stack.TIMM: (
        True,
        "timm (huggingface/pytorch-image-models train.py main()): "
        "torch.backends.cuda.matmul.allow_tf32 = True when CUDA is available",
    ),
    Stack.AXOLOTL: (
        True,
        "axolotl (axolotl-ai-cloud/axolotl src/axolotl/utils/schemas/config.py, 2026-07): "
        "tf32 defaults to 'auto' = is_torch_tf32_available(), then "
        "torch.set_float32_matmul_precision('high') (src/axolotl/utils/config/__init__.py)",
    ),
    Stack.PYTORCH: (False, "PyTorch >= 1.12: allow_tf32 defaults to False (docs above)"),
    Stack.HF_TRAINER: (
        False,
        "HF Trainer: TrainingArguments.tf32 defaults to None, which leaves PyTorch's default "
        "(huggingface/transformers training_args.py; PR #14606: 'The default should be "
        "whatever PyTorch has by default, so None')",
    ),
    Stack.LLAMA_FACTORY: (
        False,
        "LLaMA-Factory (hiyouga/LLaMA-Factory src/, 2026-08): trains through HF Trainer "
        "arguments and sets no allow_tf32 / float32_matmul_precision",
    ),
    Stack.UNSLOTH: (
        False,
        "Unsloth (unslothai/unsloth unsloth/ and unslothai/unsloth-zoo, 2026-08): trains "
        "through HF/TRL Trainer arguments; sets no torch allow_tf32 / float32_matmul_precision "
        "for training (only its studio's diffusion inference 'max' tier does)",
    ),
    Stack.TORCHTUNE: (
        False,
        "torchtune (pytorch/torchtune torchtune/training/precision.py, 2026-04): "
        "_set_float32_precision is defined but called nowhere in torchtune/ or recipes/",
    ),
    Stack.TORCHTITAN: (
        False,
        "torchtitan (pytorch/torchtitan, 2026-08): sets allow_tf32 only to False "
        "(torchtitan/distributed/utils.py, batch-invariant mode), never to True",
    ),
    Stack.DEEPSPEED: (
        False,
        "DeepSpeed (deepspeedai/DeepSpeed, 2026-08): sets no allow_tf32 / float32_matmul_precision",
    ),
    Stack.LIGHTNING: (
        False,
        "Lightning (Lightning-AI/pytorch-lightning src/lightning/fabric/accelerators/cuda.py): "
        "keeps PyTorch's 'highest' and only warns that set_float32_matmul_precision would use "
        "the tensor cores",
    ),
}

#: Stacks whose fp32 transformer matmuls run on TF32 tensor cores by default
#: (:data:`FP32_MATMUL_TF32`).
TF32_STACKS = frozenset(s for s, (on, _) in FP32_MATMUL_TF32.items() if on)

#: Stacks verified to keep PyTorch's full-FP32 matmuls (:data:`FP32_MATMUL_TF32`).
FULL_FP32_STACKS = frozenset(s for s, (on, _) in FP32_MATMUL_TF32.items() if not on)


class PhysicalChecks(FlopsModel):
    """The situations plus the stack factor, the peak cap and the credible-MFU bound."""

    def measured_source(
        self, software: str | None, precision: Precision | None = None
    ) -> str | None:
        """The source of the rows the pooled estimate stands on (its level's); ``None``
        without a measured group that stands for ``precision`` (memoised: asked once per
        estimate)."""
        key = (software, precision)
        if key in self._stacks:
            return self._stacks[key]
        found = None
        if self.groups and (precision is None or self._usable(precision, software)):
            group = self._group_at(software)
            level = self.data.level_of(group, software, precision == Precision.FP8)
            found = level.source if level is not None else None
        self._stacks[key] = found
        return found

    def measured_stack(
        self, software: str | None, precision: Precision | None = None
    ) -> Stack | None:
        """The stack of the rows the pooled estimate stands on (the level's source,
        :data:`app.model.stacks.SOURCE_STACK`); ``None`` without a measured group that
        stands for ``precision`` or for a source no stack is known for."""
        return SOURCE_STACK.get(self.measured_source(software, precision) or "")

    def stack(self, software: str | None = None, precision: Precision | None = None) -> Stack:
        """The stack the answer assumes: the workload's, else its preset's recipe's (what
        users of the preset run, issue 23; rows of its label may come from another source:
        torchtitan's pre-training runs stand for torchtune's Llama 3.1 full fine-tunes), else
        the stack of the measured rows the estimate stands on, else the recipe of the preset
        the job is derived from, else :data:`app.model.stacks.DEFAULT_STACK`."""
        return (
            self.w.stack
            or self.w.recipe_stack
            or self.measured_stack(software, precision)
            or (self.reference.recipe_stack if self.reference is not None else None)
            or DEFAULT_STACK
        )

    def _with_stack(
        self, est: SingleGpu, software: str | None, precision: Precision, gpu: GpuSpec
    ) -> SingleGpu:
        """``est`` moved from the class of its rows to the asked stack's
        (:func:`app.model.stacks.stack_factor` with the calibration's fitted class
        efficiencies; a FLOPs-model estimate is a tuned rate: its donors are), with the
        sentence that says which stack is assumed."""
        rate, situation, evidence, notes = est
        asked = self.stack(software, precision)
        fam = family(self.w.architecture)
        eff = self.cal.stack_efficiency
        if situation == Situation.FLOPS_MODEL:
            measured: str | None = None
            factor = stack_factor(asked, None, fam, eff)
        else:
            measured = self.measured_source(software, precision)
            # rows of a source no stack is known for stand for the stack asked
            known = measured is not None and measured in SOURCE_STACK
            factor = stack_factor(asked, measured, fam, eff) if known else 1.0
        given = "asked" if self.w.stack else "default"
        text = f"stack: {asked.value} ({given}; {STACK_CLASS[asked]} class"
        if factor != 1.0:
            rows = published_class(measured)
            text += (
                f", ×{factor:.2f} of the {rows}-class rates the estimate stands on: the "
                f"classes' {fam} efficiencies fitted from the rows, docs/model.md#throughput)"
            )
        else:
            text += ", at the measured rows' rate)"
        # an 8-bit base runs its matmuls at LLM.int8's measured rate and rebuilds its 16-bit
        # weights in every backward (app.model.int8_base)
        rate, int8 = int8_rate(self.w, rate * factor, gpu.memory_bandwidth_gbs)
        return rate, situation, evidence, (*notes, *int8, text)

    def _credible(
        self, w: Workload, gpu: GpuSpec, precision: Precision, est: SingleGpu
    ) -> SingleGpu:
        """``est`` held below :func:`credible_rate` ``B`` unless it is this GPU's own
        measurement of this very configuration (``measured``): no answer implies more MFU
        (or HFU) than the measured runs of its family, size and precision reach. The bound is
        smooth, ``r / (1 + (r/B)^k)^(1/k)`` with k = :data:`CREDIBLE_SHARPNESS`: below B
        always, rising with ``r`` (a bigger micro-batch stays faster, recompute slower), and
        within 0.03 % of ``r`` up to 0.7·B."""
        rate, situation, evidence, notes = est
        bound = credible_rate(w, gpu, precision, self.cal)
        if situation == Situation.MEASURED or bound is None or rate <= 0:
            return est
        k = CREDIBLE_SHARPNESS
        held = rate / (1.0 + (rate / bound[0]) ** k) ** (1.0 / k)
        if held > 0.99 * rate:
            return held, situation, evidence, notes
        note = f"{bound[1]}: ×{held / rate:.2f}"
        return held, situation, evidence, (*notes, note)

    def _within_peak(
        self, est: SingleGpu, base: Workload, gpu: GpuSpec, precision: Precision
    ) -> SingleGpu:
        """``est`` (a pooled estimate of ``base``) capped at the datasheet peak
        (:func:`flops_peak_tflops`) where it stands on no measurement on this GPU (sibling,
        extrapolated, precision switch): specs and suite factors can carry a rate past what
        the GPU can do (Llama 2 7B, measured at fp8 on H100s, came out at 1.3× an A100's
        bf16 peak). A measured rate stands as measured."""
        rate, situation, evidence, notes = est
        flops = training_flops_per_sample(base)
        peak = flops_peak_tflops(gpu, precision) * 1e12
        if situation in _OWN or not flops or rate * flops <= peak:
            return est
        note = (
            f"capped at the {peak / 1e12:.0f} TFLOP/s {precision.value} peak counted here "
            f"(the {situation.value} rate would imply MFU {rate * flops / peak:.2f})"
        )
        return peak / flops, situation, evidence, (*notes, note)

    def fp8_measured_here(self, gpu: GpuSpec, software: str | None = None) -> bool:
        """Whether the measured group the estimate stands on has an fp8 row of ``gpu``: an
        fp8 answer then stands on its own GPU's fp8 rate, otherwise fp8's gain on ``gpu`` is
        extrapolated (from other GPUs, or from other workloads by the FLOPs model)."""
        if not self.groups or not self._usable(Precision.FP8, software):
            return False
        rows = self.data.rows(self._group_at(software))
        return any(p.precision == Precision.FP8 and p.gpu == gpu.name for p in rows)

    def _fp8_bounded(
        self,
        gpu: GpuSpec,
        precision: Precision,
        software: str | None,
        est: SingleGpu,
        at: Callable[[Precision], float],
    ) -> SingleGpu:
        """An fp8 answer ``est`` that stands on no fp8 measurement of ``gpu``
        (:meth:`fp8_measured_here`) held to the 16-bit answer of the same job and GPU ×
        the highest fp8 ÷ 16-bit rate measured on one job (``cal.fp8_gain``, fitted by
        :func:`app.calibrate.mfu_fit.fit_fp8_gain` over the seed's fp8/bf16 pairs: the same
        source, GPU, GPU count, interconnect, workload, method, sequence and micro-batch; 1.70
        at most, the torchtitan Llama 3.1 405B pair on 128 H100s; median 1.28). fp8 speeds up
        the linear layers' matmuls only (Transformer Engine, torchao float8), so its gain is
        below the 2× of the datasheet peaks; specs and spec slopes carried it to 3.4× on GPUs
        the workload was never measured on at fp8. Always with the sentence saying the fp8
        gain is extrapolated, and its size; the gain left and whether it was held are kept
        for the answer (``self._fp8``, :attr:`ThroughputEstimate.fp8_gain`).
        ``at(precision)``: the per-GPU answer of the same job and GPU at another precision."""
        rate, situation, evidence, notes = est
        if precision != Precision.FP8 or rate <= 0 or self.fp8_measured_here(gpu, software):
            return est
        sixteen = at(Precision.BF16_AMP)
        if sixteen <= 0:
            return est
        median, top, pairs = self.cal.fp8_gain
        gain = rate / sixteen
        held = gain > top
        text = (
            f"fp8 was never measured for this workload on {gpu.name}: its gain over bf16_amp "
            f"(×{min(gain, top):.2f} here) is extrapolated; measured fp8/16-bit pairs of one "
            f"job gain ×{median:.2f} (median of {pairs}), ×{top:.2f} at most"
        )
        if held:
            text += f"; held to ×{top:.2f} the bf16_amp answer (was ×{gain:.2f})"
            rate = sixteen * top
        self._fp8[(gpu.name, software)] = (rate / sixteen, held)
        return rate, situation, evidence, (*notes, text)

    def runs_tf32(
        self, precision: Precision, software: str | None = None, gpu: GpuSpec | None = None
    ) -> bool | None:
        """Whether a ``precision`` job's matmuls run on TF32 tensor cores on ``gpu``: never
        on a GPU without them (:func:`app.model.compat.capabilities`: compute capability
        below 8.0, V100, T4, RTX 20xx; AMD without a catalog TF32 rate), whatever the stack
        sets (``allow_tf32`` has nothing to switch on there: fp32 runs at the FP32 vector
        rate); elsewhere (or ``gpu`` not given) ``tf32`` asked; ``fp32`` of a network other
        than a transformer (convolutions and RNNs run in cuDNN, whose ``allow_tf32`` defaults
        to True); an ``fp32`` transformer by its stack's default (:data:`FP32_MATMUL_TF32`:
        True or False with its source), ``None`` where that default is unverified (the
        answer then keeps the TF32 rate its rows ran at and says so). Other precisions:
        False."""
        if precision not in (Precision.TF32, Precision.FP32):
            return False
        if gpu is not None and not capabilities(gpu).tf32:
            return False
        if precision == Precision.TF32:
            return True
        if family(self.w.architecture) != Family.TRANSFORMER:
            return True
        found = FP32_MATMUL_TF32.get(self.stack(software, precision))
        return found[0] if found is not None else None

    def run_peak(self, gpu: GpuSpec, precision: Precision, software: str | None = None) -> float:
        """Dense TFLOPS ``gpu`` runs ``precision``'s matmuls at: :func:`flops_peak_tflops`,
        except fp32 by a stack verified to keep full-FP32 matmuls (:meth:`runs_tf32` False),
        the FP32 vector rate."""
        if precision == Precision.FP32 and self.runs_tf32(precision, software, gpu) is False:
            return peak_tflops(gpu, Precision.FP32)
        return flops_peak_tflops(gpu, precision)

    def _fp32_vector_bounded(
        self, w: Workload, gpu: GpuSpec, rate: float, added: list[str]
    ) -> float:
        """An fp32 transformer rate on ``gpu`` with 16-bit but without TF32 tensor cores
        (V100, T4, RTX 20xx: a GPU without any keeps mixed precision and fp32 at one rate)
        held to MFU ``e`` = :func:`app.model.throughput.rates.width_efficiency` (the width
        law's share of the matmul FLOP rate reached at the network's width, ``h / (h +
        h₀)``) of the FP32 vector peak, the only matmul rate such a GPU has; appends the
        sentence to ``added`` when it holds. The fp32 rows the estimate stands on ran TF32
        matmuls (2× an A100's or H100's 16-bit ÷ TF32 peak), so their conversion implied
        1.7-2.0× the FP32 peak of a T4 or V100 before any cap (the 0.74 MFU the fp32
        credible cell allowed is a fraction of TF32 peaks). Checked on the seed's only fp32
        transformer rows of such a GPU (nvidia_dle, V100 SXM2 16GB): Transformer-XL base MFU
        0.28 ≤ e 0.39 (width 582), large 0.52 ≤ 0.55 (width 1,115; h₀ = 912, the served
        calibration)."""
        fp32 = peak_tflops(gpu, Precision.FP32)
        per_sample = implied_utilisation(w, gpu, Precision.FP32, 1.0, fp32)
        e = width_efficiency(w, self.cal)
        if per_sample is None or rate * per_sample[0] <= e:
            return rate
        added.append(
            f"{gpu.name} has no TF32 tensor cores: fp32 matmuls run at its {fp32:.1f} TFLOP/s "
            f"FP32 vector rate whatever the stack sets; held to MFU {e:.2f} of it (the width "
            f"law's share of the matmul rate at this width; the TF32-era rate would imply "
            f"{rate * per_sample[0]:.2f})"
        )
        return e / per_sample[0]

    def _fp32_bounded(
        self,
        w: Workload,
        gpu: GpuSpec,
        precision: Precision,
        software: str | None,
        est: SingleGpu,
        at: Callable[[Precision], float],
    ) -> SingleGpu:
        """An fp32 transformer answer ``est`` (every fp32 row of the seed ran TF32 matmuls:
        Lambda's NGC-container runs reach up to 2.6× the FP32 vector peak of an A100, which
        only TF32 tensor cores allow; the credible bound already applied is the TF32-peak
        cells') moved to what the job runs:

        * by a stack verified to keep full-FP32 matmuls (:meth:`runs_tf32` False) the matmul
          share of the TF32 step, ``e``, takes ``R`` = TF32 ÷ FP32 vector peak times longer
          (Amdahl): rate × 1 / (e·R + 1 − e). ``e`` comes from
          :func:`app.model.throughput.rates.width_efficiency` ``e16`` (the width law's matmul
          share, ``h₀`` fitted on pairs that are mostly 16-bit): matmuls take ``k`` = 16-bit ÷
          TF32 peak (2 on A100/H100) times longer at TF32, so ``e = k·e16 / (k·e16 + 1 − e16)``
          (1 where the GPU has no 16-bit tensor cores). The result is then held to the FP32
          vector peak itself (HFU 1 at it: no cell of the table was measured without TF32, and
          the cells' MFU are fractions of the TF32 peak, not of this one);
        * by a stack whose default is unverified (:meth:`runs_tf32` None): the TF32 rate, with
          the sentence that says the stack's TF32 default is unverified and what full FP32
          would cost;
        * never faster than the 16-bit answer of the same job on a GPU with 16-bit tensor
          cores: 16-bit matmuls run at 2× TF32 and ≥ 8× FP32 there, and of the seed's
          fp32/16-bit pairs of one transformer job only one (Transformer-XL large on a
          Quadro RTX 5000, ×1.06) has fp32 ahead.

        ``at(precision)``: the per-GPU answer of the same job and GPU at another precision.
        """
        rate, situation, evidence, notes = est
        if precision != Precision.FP32 or family(w.architecture) != Family.TRANSFORMER:
            return est
        if rate <= 0:
            return est
        added: list[str] = []
        fp32 = peak_tflops(gpu, Precision.FP32)
        ratio = flops_peak_tflops(gpu, precision) / fp32
        half = Precision.BF16_AMP if gpu.bf16_tflops else Precision.FP16_AMP
        tensor16 = rate_class(gpu, half) == PrecisionClass.HALF
        tf32 = self.runs_tf32(precision, software, gpu)
        stack = self.stack(software, precision).value
        if not capabilities(gpu).tf32:
            if tensor16:  # without any tensor cores 16-bit runs at this rate too: as measured
                rate = self._fp32_vector_bounded(w, gpu, rate, added)
        elif tf32 is not True and ratio > 1.01:
            k = flops_peak_tflops(gpu, half) / flops_peak_tflops(gpu, precision) if tensor16 else 1
            rate = self._full_fp32(w, gpu, rate, k, tf32 is None, stack, added)
        if tensor16:
            sixteen = at(half)
            if 0 < sixteen < rate:
                added.append(
                    f"held to the {half.value} answer ({sixteen:.4g} samples/s per GPU): "
                    "fp32 is never faster than 16-bit on tensor cores"
                )
                rate = sixteen
        return rate, situation, evidence, (*notes, *added)

    def _full_fp32(
        self,
        w: Workload,
        gpu: GpuSpec,
        rate: float,
        k: float,
        unverified: bool,
        stack: str,
        added: list[str],
    ) -> float:
        """:meth:`_fp32_bounded` on a GPU with TF32 tensor cores: the TF32-rate ``rate``
        (samples/s per GPU) of ``w`` with its matmul share run at the FP32 vector rate (``k``
        = 16-bit ÷ TF32 peak, 1 without 16-bit tensor cores), held to the FP32 peak;
        ``unverified`` (the stack's TF32 default unknown): the rate stays and the sentence
        says what full FP32 would cost. Sentences go to ``added``."""
        precision = Precision.FP32
        fp32 = peak_tflops(gpu, precision)
        ratio = flops_peak_tflops(gpu, precision) / fp32
        e16 = width_efficiency(w, self.cal)
        share = k * e16 / (k * e16 + 1.0 - e16)
        factor = 1.0 / (share * ratio + 1.0 - share)
        if unverified:
            added.append(
                f"fp32 at the TF32 rate its measured rows ran: the TF32 default of stack "
                f"{stack} is unverified; with full-FP32 matmuls ({share:.0%} of the step) "
                f"at the {fp32:.1f} TFLOP/s FP32 rate it would run ×{factor:.2f}"
            )
            return rate
        rate *= factor
        added.append(
            f"fp32 without TF32 (stack {stack} keeps PyTorch's default, "
            "torch.backends.cuda.matmul.allow_tf32 = False): the matmuls "
            f"({share:.0%} of the TF32 step) run at the {fp32:.1f} TFLOP/s FP32 rate, "
            f"not TF32's ({ratio:.1f}× faster): ×{factor:.2f}; tf32 (or a stack that "
            "enables it) runs them on tensor cores"
        )
        per_sample = implied_utilisation(w, gpu, precision, 1.0, fp32)
        if per_sample is not None and rate * max(per_sample) > 1.0:
            rate = 1.0 / max(per_sample)
            added.append(
                f"capped at the {fp32:.1f} TFLOP/s FP32 vector peak (HFU 1): no "
                "measured row ran fp32 without TF32"
            )
        return rate
