"""Training throughput of a workload on a GPU set: the one estimation path.

:func:`estimate_throughput` (and :meth:`ThroughputModel.estimate`, its memoised form for a
ranking) is what ``/v1/estimate``, ``/v1/rank``, the web page and the accuracy harness call.
It selects the evidence and produces the estimate, in one of seven situations:

* ``measured``: the workload was measured on this GPU model at the served software level,
  precision and micro-batch: the per-GPU rate is the mean of those measurements.
* ``measured_rescaled``: measured on this GPU model, but at another software level,
  micro-batch or precision; the pooled model of :mod:`app.model.pooled`, corrected by the
  GPU's own rows' residuals, moves it to the asked one (the note gives both figures).
* ``sibling``: not measured on this GPU, but on a GPU of the same architecture; the pooled
  model predicts from specs with the architecture terms learnt from the siblings.
* ``extrapolated``: no GPU of this architecture measured the workload; specs only.
* ``flops_model``: the workload was never measured: FLOPs per sample (§4.1) against the FLOP
  rate other workloads of the same family reach on this GPU, those of similar size weighing
  most (parameters for transformers, FLOPs per sample for CNNs; transformers never borrow
  from CNNs, and borrow from their own architecture and attention kernel where they can),
  their rates in time-weighted FLOPs (:func:`width_weighted_flops`); a CNN with an
  activation count borrows from CNNs of similar arithmetic intensity (forward FLOPs per
  activation element), their rates moved along the fitted rate-vs-intensity slope.
* ``derived``: a custom workload that departs from its preset: the preset's estimate at the
  requested precision and at the micro-batch of the same matmul work
  (:func:`app.model.pooled.matmul_rows_per_sample`), times the ratio of training FLOPs
  per sample weighted by the time they take (:func:`width_weighted_flops`: a wider
  transformer's matmuls reach a higher share of the peak; a FLOP-rate trend with size taken
  across workloads was tried and mixed architecture with size: docs/accuracy.md).
* ``precision_switch``: the workload was measured, but never at the precision class asked
  (fp32/tf32 vs 16-bit); the pooled model converts with the family's
  shared fp32-vs-16-bit terms (its own deviation from them is unknown).

Every GPU of one ranking is predicted at one software level (the suite that measured the
most GPUs), so offers are ordered by hardware, not by which lab measured them. Multi-GPU data
parallelism multiplies by the measured efficiency of that GPU count where one exists, else
by the model of :mod:`app.model.multigpu`; more GPUs are never slower.

The package, one module per part: :mod:`.measured` (the pooled situations),
:mod:`.flops_model`, :mod:`.derived`, :mod:`.checks` (stack factor, peak cap, credible-MFU
bound), :mod:`.multi_gpu`, :mod:`.range`, :mod:`.rates` (FLOP rates and utilisation) and
:mod:`.model` (the composition, :class:`ThroughputModel`).
"""

from app.model.flops import flops_peak_tflops, training_flops_per_sample, transformer_flops
from app.model.pooled import family
from app.model.throughput.common import (
    CREDIBLE_SHARPNESS,
    FlopsTable,
    SingleGpu,
    label_workloads,
    point_samples_per_s,
    precision_class,
    precision_compatible,
)
from app.model.throughput.flops_model import donor_weight
from app.model.throughput.model import ThroughputModel, estimate_throughput
from app.model.throughput.range import range_factors
from app.model.throughput.rates import (
    achieved_flops_prior,
    credible_rate,
    forward_intensity,
    implied_utilisation,
    rate_model_features,
    utilisation_note,
    width_efficiency,
    width_weighted_flops,
)

__all__ = [
    "CREDIBLE_SHARPNESS",
    "FlopsTable",
    "SingleGpu",
    "ThroughputModel",
    "achieved_flops_prior",
    "credible_rate",
    "donor_weight",
    "estimate_throughput",
    "family",
    "flops_peak_tflops",
    "forward_intensity",
    "implied_utilisation",
    "label_workloads",
    "point_samples_per_s",
    "precision_class",
    "precision_compatible",
    "range_factors",
    "rate_model_features",
    "training_flops_per_sample",
    "transformer_flops",
    "utilisation_note",
    "width_efficiency",
    "width_weighted_flops",
]
