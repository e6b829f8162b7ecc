"""The job resolved in one place: a preset and the fields a client gives → the job the model
estimates, the preset's own job when they differ, and the notes saying what was done.

:func:`resolve` is the one path every surface takes (API, page, CLI, submissions, the
calibration's presets); :func:`build_workload` turns flat field values (API names, seed
cells) into a :class:`~app.model.types.Workload`. The field lists the resolution works
from are read from each field's metadata (:class:`~app.model.types.InputSpec`: its
``group``, ``throughput`` and ``required`` flags), not written out by hand. What a given
field moves, drops or contradicts is in :mod:`app.model.overrides`.

Pure: no database, HTTP or framework; a bad combination raises
:class:`~app.model.types.JobError` naming the field (the API answers 400 with it).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import fields as dc_fields
from dataclasses import replace
from typing import Any, Protocol

from app.model.flops import training_flops_per_sample
from app.model.overrides import (
    architecture_of,
    drop_inapplicable,
    drop_stale_activations,
    drop_stale_lookup,
    epoch_counts,
    follow_shape,
    is_transformer,
    scale_per_pixel,
)
from app.model.shape import shape_errors, too_few_multiplied
from app.model.stacks import parse_stack, preset_stack
from app.model.types import (
    WORKLOAD_INPUTS,
    Attention,
    BaseDtype,
    CheckpointGranularity,
    FieldGroup,
    Implementation,
    JobError,
    Method,
    Optimizer,
    QuantBackend,
    Sharding,
    VisionTask,
    Workload,
)
from app.model.vocabulary import Architecture, Precision

__all__ = [
    "FIELD_GROUPS",
    "REQUIRED_WITHOUT_PRESET",
    "THROUGHPUT_FIELDS",
    "JobError",
    "PresetLike",
    "build_workload",
    "preset_meta",
    "preset_slug",
    "resolve",
]

#: Fields whose change means the preset's measurements no longer describe the job (their
#: :class:`~app.model.types.InputSpec` says ``throughput``).
THROUGHPUT_FIELDS = tuple(n for n, given in WORKLOAD_INPUTS.items() if given.spec.throughput)
#: Fields a job without a preset must give (``required``), in declaration order.
REQUIRED_WITHOUT_PRESET = tuple(n for n, given in WORKLOAD_INPUTS.items() if given.spec.required)
#: The outside-given fields of each part of the job (shape, training, data, software,
#: preset), in declaration order: the job's sub-records, read from each field's ``group``.
FIELD_GROUPS: dict[FieldGroup, tuple[str, ...]] = {
    group: tuple(n for n, given in WORKLOAD_INPUTS.items() if given.spec.group == group)
    for group in FieldGroup
}


class PresetLike(Protocol):
    """What :func:`resolve` reads of a preset (``app.services.reference.Preset`` is one):
    its slug, its flat field values and the measurements it stands for."""

    @property
    def slug(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, Any]: ...
    @property
    def benchmark_workloads(self) -> tuple[str, ...]: ...
    @property
    def benchmark_method(self) -> str | None: ...
    @property
    def units_per_sample(self) -> float | None: ...
    @property
    def throughput_unit(self) -> str | None: ...
    @property
    def source(self) -> str: ...


#: flat text → value of the fields whose values are enums (or the stack)
_ENUMS: dict[str, Callable[[Any], Any]] = {
    "architecture": Architecture,
    "precision": Precision,
    "optimizer": Optimizer,
    "method": Method,
    "attention": Attention,
    "sharding": Sharding,
    "checkpoint_granularity": CheckpointGranularity,
    "base_dtype": BaseDtype,
    "implementation": Implementation,
    "quant_backend": QuantBackend,
    "vision_task": VisionTask,
    "stack": parse_stack,
}
_WORKLOAD_FIELDS = {f.name for f in dc_fields(Workload)}


def build_workload(
    values: Mapping[str, Any], meta: Mapping[str, Any] | None = None, matches_preset: bool = False
) -> Workload:
    """Core workload from flat ``values`` (API field names) plus preset ``meta``.

    ``meta`` may carry ``preset``, ``benchmark_workloads``, ``benchmark_method``,
    ``units_per_sample``, ``throughput_unit`` and ``recipe_stack`` (:func:`preset_meta`).
    Unknown names and ``None`` values are left out (the field's default applies).

    Raises:
        ValueError: a value that is not one of its field's enum members.
    """
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in _WORKLOAD_FIELDS or value is None:
            continue
        if key == "cuda_only_libraries":  # a list from the API, "a|b" from a preset row
            parts = value.split("|") if isinstance(value, str) else value
            value = tuple(str(p).strip() for p in parts if str(p).strip())
        kwargs[key] = _ENUMS[key](value) if key in _ENUMS else value
    kwargs.update(meta or {})
    kwargs["matches_preset"] = matches_preset
    return Workload(**kwargs)


def preset_meta(preset: PresetLike) -> dict[str, Any]:
    """The preset-level workload attributes (benchmark labels, units, recipe stack)."""
    return {
        "preset": preset.slug,
        "benchmark_workloads": preset.benchmark_workloads,
        "benchmark_method": preset.benchmark_method,
        "units_per_sample": preset.units_per_sample,
        "throughput_unit": preset.throughput_unit,
        "recipe_stack": preset_stack(preset.source),
    }


def _build(values: Mapping[str, Any], preset: PresetLike | None, matches: bool) -> Workload:
    return build_workload(values, preset_meta(preset) if preset is not None else None, matches)


def _find_preset(
    given: Mapping[str, Any], presets: Mapping[str, PresetLike], prefix: str
) -> PresetLike | None:
    """The preset ``given`` names, ``None`` when it names none.

    Raises:
        JobError: ``{prefix}.preset`` not among ``presets`` (the known slugs listed).
    """
    slug = given.get("preset")
    if slug is None:
        return None
    found = preset_slug(slug, presets)
    if found is None:
        raise JobError(f"{prefix}.preset", _unknown_preset(slug, presets))
    return presets[found]


def preset_slug(typed: str, presets: Mapping[str, PresetLike]) -> str | None:
    """The slug of the preset ``typed`` names, in any case and with ``_``, ``.`` or spaces
    for ``-`` (:func:`_preset_word`); ``None`` when it names none. The one reading of a preset
    name: the API's ``workload.preset`` and the pages' ``preset`` parameter."""
    if typed in presets:
        return typed
    return next((s for s in presets if _preset_word(s) == _preset_word(typed)), None)


def _preset_word(slug: str) -> str:
    """A preset slug as people type it: any case, ``_``, ``.`` or spaces for ``-``
    (``Llama3-8B-LoRA``, ``llama3 8b lora`` and ``llama3_8b_lora`` are ``llama3-8b-lora``)."""
    return re.sub(r"[\s_.-]+", "-", slug.strip().lower())


def _unknown_preset(slug: str, presets: Mapping[str, PresetLike]) -> str:
    """Why ``slug`` names no preset: the closest slugs when some are close (difflib's
    ratio ≥ 0.6), else every known slug."""
    close = difflib.get_close_matches(_preset_word(slug), sorted(presets), n=3)
    if close:
        named = " or ".join(repr(c) for c in close)
        listed = f"all {len(presets)}: GET /v1/workloads"
        return f"unknown preset {slug!r}; did you mean {named}? ({listed})"
    return f"unknown preset {slug!r}; known: {', '.join(sorted(presets))}"


def _packed_count(merged: Mapping[str, Any]) -> bool:
    """Whether ``merged`` counts its epoch in tokens packed into sequences (a
    ``tokens_per_epoch`` and ``packed`` not false), which needs no sample count."""
    return bool(merged.get("tokens_per_epoch")) and merged.get("packed") is not False


def _missing(merged: Mapping[str, Any], name: str) -> bool:
    """Whether a :data:`REQUIRED_WITHOUT_PRESET` field is missing (a packed token count is
    the epoch without a sample count: README, "What an epoch is")."""
    if merged.get(name) is not None:
        return False
    return not (name == "samples_per_epoch" and _packed_count(merged))


def _raise_all_missing(merged: Mapping[str, Any], prefix: str) -> None:
    """Without a preset: every required field that is missing, named in one error (the
    shape fields of its architecture too, :attr:`Architecture.shape_fields`).

    Raises:
        JobError: with ``errors`` listing each missing field (none missing: no error).
    """
    missing = [
        (f"{prefix}.{name}", "required when no preset is given")
        for name in REQUIRED_WITHOUT_PRESET
        if _missing(merged, name)
    ]
    arch = architecture_of(merged)
    missing += [
        (f"{prefix}.{name}", f"required for architecture {merged.get('architecture')}")
        for name in (arch.shape_fields if arch is not None else ())
        if not merged.get(name)
    ]
    if missing:
        (field, reason), *more = missing
        raise JobError(field, reason, tuple(more))


def _check_required(merged: Mapping[str, Any], preset: PresetLike | None, prefix: str) -> None:
    """The required fields: all named at once without a preset; with one, the preset's
    own gaps (no sourced dataset size; no sourced parameter count on an unmeasured preset).

    Raises:
        JobError: the first required field missing.
    """
    if preset is None:
        _raise_all_missing(merged, prefix)
        return
    if _missing(merged, "params") and not preset.benchmark_workloads:
        raise JobError(
            f"{prefix}.params",
            f"preset {preset.slug!r} has no sourced parameter count; give it",
        )
    if _missing(merged, "samples_per_epoch"):
        raise JobError(
            f"{prefix}.samples_per_epoch",
            f"preset {preset.slug!r} has no sourced dataset size; give the number of "
            "training samples per epoch",
        )


def _fill_defaults(values: dict[str, Any]) -> None:
    """Multi-head attention (``kv_heads`` = ``heads``) for a transformer unless
    ``kv_heads`` says otherwise."""
    if values.get("heads") and not values.get("kv_heads") and is_transformer(values):
        values["kv_heads"] = values["heads"]


def _check_architecture_fields(merged: Mapping[str, Any], prefix: str) -> None:
    """The architecture's shape fields are there, and token counts only on token workloads.

    Raises:
        JobError: the first missing shape field (:attr:`Architecture.shape_fields`), or a
            ``tokens_per_epoch``/``tokens_per_sample`` on a non-token architecture.
    """
    value = merged["architecture"]
    arch = architecture_of(merged)
    for name in arch.shape_fields if arch is not None else ():
        if not merged.get(name):
            raise JobError(f"{prefix}.{name}", f"required for architecture {value}")
    for name in ("tokens_per_epoch", "tokens_per_sample"):
        if merged.get(name) and not (arch is not None and arch.counts_tokens):
            raise JobError(
                f"{prefix}.{name}",
                f"only for token workloads (transformer encoder/decoder, seq2seq), not {value}",
            )


def _same(a: Any, b: Any, key: str, architecture: Any = None) -> bool:
    """Whether a :data:`THROUGHPUT_FIELDS` value is the preset's (unset and default equal)."""
    if key == "lookup_params" and architecture != Architecture.TRANSFORMER_ENCODER:
        # 0 is a decoder's or ViT's own default (no lookup-only tables); an encoder's
        # default is its vocab × hidden table, so there 0 and unset differ
        return (a or 0) == (b or 0)
    if key == "method":
        return (a or Method.FULL) == (b or Method.FULL)
    if key == "gradient_checkpointing":
        return bool(a) == bool(b)
    if key == "checkpoint_granularity":
        full = CheckpointGranularity.FULL
        return CheckpointGranularity(a or full) == CheckpointGranularity(b or full)
    return bool(a == b)


def _matches(base: Mapping[str, Any], merged: Mapping[str, Any]) -> bool:
    """Whether no :data:`THROUGHPUT_FIELDS` value departs from the preset's."""
    arch = merged.get("architecture")
    keys = THROUGHPUT_FIELDS
    if not merged.get("gradient_checkpointing") and not base.get("gradient_checkpointing"):
        # the granularity of a recompute neither runs changes nothing
        keys = tuple(k for k in keys if k != "checkpoint_granularity")
    return all(_same(merged.get(k), base.get(k), k, arch) for k in keys)


def _count_culprit(
    workload: Workload, given: Mapping[str, Any], base: Mapping[str, Any], counts: list[str]
) -> str:
    """Of the counts given, the one whose preset value would have left enough multiplied
    parameters (an unset ``lookup_params`` is its default; an unset ``params`` no
    alternative); the first when none would."""
    for k in counts:
        reverted: Any = base.get(k)
        if (reverted is not None or k == "lookup_params") and too_few_multiplied(
            replace(workload, **{k: reverted})
        ) is None:
            return k
    return counts[0]


def _check_shape(
    workload: Workload, given: Mapping[str, Any], base: Mapping[str, Any], prefix: str
) -> None:
    """Every impossible shape combination (:func:`~app.model.shape.shape_errors`), and
    counts given that leave the layers fewer multiplied parameters than they hold (a
    preset's own count left under a changed ``layers``/``hidden_size`` only warns:
    ``params_off_shape``), named at once.

    Raises:
        JobError: with ``errors`` listing each.
    """
    errors = [(f"{prefix}.{name}", why) for name, why in shape_errors(workload)]
    counts = [
        k
        for k in ("params", "lookup_params", "vocab_size")
        if given.get(k) is not None and given[k] != base.get(k)  # a preset's own restated: not new
    ]
    if not errors and counts and (few := too_few_multiplied(workload)):
        errors.append((f"{prefix}.{_count_culprit(workload, given, base, counts)}", few))
    if errors:
        (field, reason), *more = errors
        raise JobError(field, reason, tuple(more))


def _check_estimable(workload: Workload, prefix: str) -> None:
    """An unmeasured job needs its FLOPs (``params`` for a transformer, else
    ``forward_gflops_per_sample``).

    Raises:
        JobError: the field that would give the FLOPs.
    """
    if workload.benchmark_workloads or training_flops_per_sample(workload) is not None:
        return
    arch = workload.architecture
    field = "params" if arch.is_transformer else "forward_gflops_per_sample"
    raise JobError(
        f"{prefix}.{field}",
        f"needed to estimate throughput of a {arch} workload that has no measurements "
        "(or give a preset)",
    )


def _apply_overrides(
    base: dict[str, Any], given: Mapping[str, Any], merged: dict[str, Any], prefix: str
) -> tuple[str, ...]:
    """Everything a given field moves, drops or fills in ``merged`` (and the defaults of
    ``base``), in order (:mod:`app.model.overrides`); returns the notes."""
    values = dict(given)
    notes = follow_shape(base, values, merged, prefix)  # no preset (base empty): no-ops
    scale_per_pixel(base, values, merged)
    notes += drop_inapplicable(base, values, merged)
    notes += drop_stale_activations(base, values, merged)
    notes += drop_stale_lookup(base, values, merged, prefix)
    for v in (base, merged):
        _fill_defaults(v)
    if merged.get("method", Method.FULL) in (Method.LORA, Method.QLORA) and not merged.get(
        "lora_rank"
    ):
        merged["lora_rank"] = 8  # the rank app.model.memory_states.lora_trainable_params assumes
    _check_architecture_fields(merged, prefix)
    return notes + epoch_counts(base, values, merged, prefix)


def resolve(
    given: Mapping[str, Any], presets: Mapping[str, PresetLike], *, prefix: str = "workload"
) -> tuple[Workload, Workload | None, dict[str, Any]]:
    """Merge ``given`` (only the fields the client set) over its preset.

    Returns:
        (the job, the preset's own job when the job departs from it in a
        :data:`THROUGHPUT_FIELDS` value, the merged flat field values for echoing back).
        The job's ``input_notes`` say what was done with the given fields.

    Raises:
        JobError: unknown preset, a field required without a preset missing, or an
            inconsistent combination (a shape no head count fits, counts fewer than the
            layers multiply, token counts on an image model, …), naming the field.
    """
    preset = _find_preset(given, presets, prefix)
    base: dict[str, Any] = dict(preset.fields) if preset is not None else {}
    merged = {**base, **{k: v for k, v in given.items() if k != "preset" and v is not None}}
    _check_required(merged, preset, prefix)
    notes = _apply_overrides(base, given, merged, prefix)
    matches = preset is not None and _matches(base, merged)
    workload = replace(_build(merged, preset, matches), input_notes=notes)
    _check_shape(workload, given, base, prefix)
    _check_estimable(workload, prefix)
    reference = _build(base, preset, True) if preset is not None and not matches else None
    slug = preset.slug if preset is not None else None
    return workload, reference, {"preset": slug, **merged}
