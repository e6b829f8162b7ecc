"""Resolve an API workload (preset + overrides) into the core job: a thin adapter over
:func:`app.model.job.resolve` that reads the presets from the reference data.

:class:`WorkloadError` is :class:`app.model.types.JobError` (a bad field, named; the API
answers 400 with it)."""

from __future__ import annotations

from typing import Any

from app.model.job import REQUIRED_WITHOUT_PRESET, THROUGHPUT_FIELDS, preset_meta, resolve
from app.model.types import JobError, Workload
from app.services.reference import ReferenceData

__all__ = [
    "REQUIRED_WITHOUT_PRESET",
    "THROUGHPUT_FIELDS",
    "WorkloadError",
    "preset_meta",
    "resolve_workload",
]

#: Bad workload input; ``field`` names the offending field (dotted path), ``errors`` every
#: (field, reason) found at once.
WorkloadError = JobError


def resolve_workload(
    given: dict[str, Any], ref: ReferenceData, *, prefix: str = "workload"
) -> tuple[Workload, Workload | None, dict[str, Any]]:
    """Merge ``given`` (only the fields the client set) over its preset in ``ref``
    (:func:`app.model.job.resolve`).

    Returns:
        (workload, the preset's own workload when ``workload`` departs from it, the merged flat
        field values for echoing back).

    Raises:
        WorkloadError: unknown preset, or a field required without a preset is missing, or
            an inconsistent combination (LoRA rank without LoRA).
    """
    return resolve(given, ref.presets, prefix=prefix)
