"""Plain data types of the estimation core: enums, GPU specs, workloads, hardware, results.

Everything here is a frozen dataclass or a string enum; no I/O, no ORM, no framework. The
definitions live in :mod:`app.model.enums`, :mod:`app.model.workload` (with each given
field's input table in :mod:`app.model.workload_inputs`), :mod:`app.model.results` and
:mod:`app.model.vocabulary`; this module re-exports them where they were always imported from.
"""

from __future__ import annotations

from app.model.enums import (
    INTERCONNECT_LABELS,
    Attention,
    BaseDtype,
    CheckpointGranularity,
    Implementation,
    Interconnect,
    InterconnectLabel,
    Method,
    OomRisk,
    Optimizer,
    QuantBackend,
    Sharding,
    VisionTask,
    WarningCode,
    interconnect_class,
    interconnect_label,
)
from app.model.results import (
    BenchmarkPoint,
    Estimate,
    Evidence,
    GpuSpec,
    Hardware,
    MemoryBreakdown,
    MemoryEstimate,
    MemoryFix,
    MultiGpuBasis,
    MultiGpuSummary,
    RunWarning,
    ThroughputEstimate,
)
from app.model.stacks import (
    Stack,
)
from app.model.vocabulary import (
    SITUATION_BASIS,
    SITUATION_TEXT,
    TRANSFORMER_ARCHITECTURES,
    Architecture,
    Basis,
    Precision,
    Situation,
    range_situation,
)
from app.model.workload import (
    WORKLOAD_INPUTS,
    JobError,
    Workload,
    WorkloadInput,
    unwrap_optional,
)
from app.model.workload_inputs import (
    VERSION_PATTERN,
    FieldGroup,
    InputSpec,
)

__all__ = [
    "INTERCONNECT_LABELS",
    "SITUATION_BASIS",
    "SITUATION_TEXT",
    "TRANSFORMER_ARCHITECTURES",
    "VERSION_PATTERN",
    "WORKLOAD_INPUTS",
    "Architecture",
    "Attention",
    "BaseDtype",
    "Basis",
    "BenchmarkPoint",
    "CheckpointGranularity",
    "Estimate",
    "Evidence",
    "FieldGroup",
    "GpuSpec",
    "Hardware",
    "Implementation",
    "InputSpec",
    "Interconnect",
    "InterconnectLabel",
    "JobError",
    "MemoryBreakdown",
    "MemoryEstimate",
    "MemoryFix",
    "Method",
    "MultiGpuBasis",
    "MultiGpuSummary",
    "OomRisk",
    "Optimizer",
    "Precision",
    "QuantBackend",
    "RunWarning",
    "Sharding",
    "Situation",
    "Stack",
    "ThroughputEstimate",
    "VisionTask",
    "WarningCode",
    "Workload",
    "WorkloadInput",
    "interconnect_class",
    "interconnect_label",
    "range_situation",
    "unwrap_optional",
]
