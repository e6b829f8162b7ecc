"""Resolve an API workload (preset + overrides) into the core :class:`Workload`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.model.shape import TRANSFORMERS, shape_errors, shape_params, too_few_multiplied
from app.model.stacks import preset_stack
from app.model.throughput import training_flops_per_sample
from app.model.types import Workload
from app.services.presets import build_workload
from app.services.reference import Preset, ReferenceData

#: Fields whose change means the preset's measurements no longer describe the job.
THROUGHPUT_FIELDS = (
    "architecture",
    "params",
    "layers",
    "hidden_size",
    "heads",
    "kv_heads",
    "ffn_hidden_size",
    "vocab_size",
    "seq_len",
    "image_size",
    "method",
    "gradient_checkpointing",
    "forward_gflops_per_sample",
    "lookup_params",
)

REQUIRED_WITHOUT_PRESET = ("architecture", "params", "samples_per_epoch")


class WorkloadError(ValueError):
    """Bad workload input; ``field`` names the offending field (dotted path).

    ``errors`` lists every (field, reason) found at once, the first being (field, reason):
    a custom workload missing several required fields names them all in one answer.
    """

    def __init__(self, field: str, reason: str, more: tuple[tuple[str, str], ...] = ()):
        super().__init__("; ".join(f"{f}: {r}" for f, r in ((field, reason), *more)))
        self.field = field
        self.reason = reason
        self.errors: list[tuple[str, str]] = [(field, reason), *more]


def _build(values: dict[str, Any], preset: Preset | None, matches: bool) -> Workload:
    meta = preset_meta(preset) if preset is not None else None
    return build_workload(values, meta, matches)


def preset_meta(preset: Preset) -> dict[str, Any]:
    """The preset-level workload attributes (benchmark labels, units)."""
    return {
        "preset": preset.slug,
        "benchmark_workloads": preset.benchmark_workloads,
        "benchmark_method": preset.benchmark_method,
        "units_per_sample": preset.units_per_sample,
        "throughput_unit": preset.throughput_unit,
        "recipe_stack": preset_stack(preset.source),
    }


def _raise_all_missing(merged: dict[str, Any], prefix: str) -> None:
    """Without a preset: every required field that is missing, named in one error.

    Raises:
        WorkloadError: with ``errors`` listing each missing field (none missing: no error).
    """
    missing = [
        (f"{prefix}.{name}", "required when no preset is given")
        for name in REQUIRED_WITHOUT_PRESET
        if merged.get(name) is None
        # a packed token count is the epoch without a sample count (epoch rule, README)
        and not (name == "samples_per_epoch" and _packed_count(merged))
    ]
    arch = merged.get("architecture")
    shape = {
        "transformer_encoder": ("layers", "hidden_size", "seq_len"),
        "transformer_decoder": ("layers", "hidden_size", "seq_len"),
        "vit": ("layers", "hidden_size"),
    }.get(str(arch), ())
    missing += [
        (f"{prefix}.{name}", f"required for architecture {arch}")
        for name in shape
        if not merged.get(name)
    ]
    if missing:
        (field, reason), *more = missing
        raise WorkloadError(field, reason, tuple(more))


def resolve_workload(
    given: dict[str, Any], ref: ReferenceData, *, prefix: str = "workload"
) -> tuple[Workload, Workload | None, dict[str, Any]]:
    """Merge ``given`` (only the fields the client set) over its preset.

    Returns:
        (workload, the preset's own workload when ``workload`` departs from it, the merged flat
        field values for echoing back).

    Raises:
        WorkloadError: unknown preset, or a field required without a preset is missing, or
            an inconsistent combination (LoRA rank without LoRA).
    """
    preset_slug = given.get("preset")
    preset = None
    base: dict[str, Any] = {}
    if preset_slug is not None:
        preset = ref.presets.get(preset_slug)
        if preset is None:
            known = ", ".join(sorted(ref.presets))
            raise WorkloadError(
                f"{prefix}.preset", f"unknown preset {preset_slug!r}; known: {known}"
            )
        base = dict(preset.fields)
    merged = {**base, **{k: v for k, v in given.items() if k != "preset" and v is not None}}
    if preset is None:
        _raise_all_missing(merged, prefix)
    else:
        for name in REQUIRED_WITHOUT_PRESET:
            if merged.get(name) is not None or (
                name == "samples_per_epoch" and _packed_count(merged)
            ):
                continue
            if name == "samples_per_epoch":
                raise WorkloadError(
                    f"{prefix}.samples_per_epoch",
                    f"preset {preset.slug!r} has no sourced dataset size; give the number of "
                    "training samples per epoch",
                )
            if name == "params" and not preset.benchmark_workloads:
                raise WorkloadError(
                    f"{prefix}.params",
                    f"preset {preset.slug!r} has no sourced parameter count; give it",
                )
    shape_notes = _follow_shape(base, given, merged, prefix) if preset is not None else ()
    # convolutions cost and output per pixel: a preset's published forward cost and
    # activation count scale with image area when only the image size is changed (ViT
    # FLOPs and activations follow from the token count instead)
    old_image, new_image = base.get("image_size"), merged.get("image_size")
    for per_pixel in ("forward_gflops_per_sample", "forward_activations_per_sample"):
        if (
            preset is not None
            and old_image
            and new_image
            and new_image != old_image
            and base.get(per_pixel)
            and per_pixel not in given
            and merged.get("architecture") in ("cnn", "diffusion_unet")
        ):
            merged[per_pixel] = base[per_pixel] * (new_image / old_image) ** 2
    if (
        preset is not None
        and old_image
        and new_image != old_image
        and base.get("forward_activations_per_sample")
        and "forward_activations_per_sample" not in given
        and merged.get("architecture") == "vit"
    ):
        # attention's token-by-token products do not scale with pixels: a ViT preset's
        # published count holds at its own size only (the per-layer formula takes over)
        merged.pop("forward_activations_per_sample")
    input_notes = (
        shape_notes
        + _drop_inapplicable(base, given, merged)
        + _drop_stale_activations(base, given, merged)
        + _drop_stale_lookup(base, given, merged, prefix)
    )
    for values in (base, merged):  # multi-head attention unless kv_heads says otherwise
        if (
            values.get("heads")
            and not values.get("kv_heads")
            and values.get("architecture") in TRANSFORMER_NAMES
        ):
            values["kv_heads"] = values["heads"]
    method = merged.get("method", "full")
    if method in ("lora", "qlora") and not merged.get("lora_rank"):
        merged["lora_rank"] = 8
    arch = merged["architecture"]
    if arch in ("transformer_encoder", "transformer_decoder", "vit") and not (
        merged.get("layers") and merged.get("hidden_size")
    ):
        missing = "layers" if not merged.get("layers") else "hidden_size"
        raise WorkloadError(f"{prefix}.{missing}", f"required for architecture {arch}")
    if arch in ("transformer_encoder", "transformer_decoder") and not merged.get("seq_len"):
        raise WorkloadError(f"{prefix}.seq_len", f"required for architecture {arch}")
    for name in ("tokens_per_epoch", "tokens_per_sample"):
        if merged.get(name) and arch not in TOKEN_ARCHITECTURES:
            raise WorkloadError(
                f"{prefix}.{name}",
                f"only for token workloads (transformer encoder/decoder, seq2seq), not {arch}",
            )
    input_notes += _epoch_counts(base, given, merged, prefix)
    matches = preset is not None and all(
        _same(merged.get(k), base.get(k), k, merged.get("architecture")) for k in THROUGHPUT_FIELDS
    )
    workload = replace(_build(merged, preset, matches), input_notes=input_notes)
    errors = [(f"{prefix}.{name}", why) for name, why in shape_errors(workload)]
    counts = [
        k
        for k in ("params", "lookup_params", "vocab_size")
        if given.get(k) is not None and given[k] != base.get(k)  # a preset's own restated: not new
    ]
    if not errors and counts and (few := too_few_multiplied(workload)):
        # counts given that leave the layers fewer multiplied parameters than they hold (a
        # preset's own count left under a changed layers/hidden_size only warns:
        # params_off_shape); named: the one whose preset value would have passed
        reverted: dict[str, Any] = {k: base.get(k) for k in counts}
        culprit = next(
            (
                k
                for k in counts
                # an unset lookup_params is its default; an unset params no alternative
                if (reverted[k] is not None or k == "lookup_params")
                and too_few_multiplied(replace(workload, **{k: reverted[k]})) is None
            ),
            counts[0],
        )
        errors.append((f"{prefix}.{culprit}", few))
    if errors:
        (field, reason), *more = errors
        raise WorkloadError(field, reason, tuple(more))
    if not workload.benchmark_workloads and training_flops_per_sample(workload) is None:
        field = (
            "params"
            if arch in ("transformer_encoder", "transformer_decoder", "vit")
            else "forward_gflops_per_sample"
        )
        raise WorkloadError(
            f"{prefix}.{field}",
            f"needed to estimate throughput of a {arch} workload that has no measurements "
            "(or give a preset)",
        )
    reference = None
    if preset is not None and not matches:
        reference = _build(base, preset, True)
    echo = {"preset": preset_slug, **merged}
    return workload, reference, echo


#: architectures whose LoRA/QLoRA adapters the estimator counts
#: (:func:`app.model.memory.lora_trainable_params`)
LORA_ARCHITECTURES = ("transformer_encoder", "transformer_decoder", "vit", "diffusion_unet")
#: fields that mean nothing for some architectures / methods: (field, applies to it?, why);
#: checked in order (``method`` put back first, so a ``lora_rank`` with it goes too)
INAPPLICABLE: tuple[tuple[str, Any, str], ...] = (
    (
        "method",
        lambda m: m.get("method", "full") == "full" or m.get("architecture") in LORA_ARCHITECTURES,
        "LoRA/QLoRA adapters are counted for transformers and diffusion UNets, not for a CNN, "
        "an RNN, a TTS model, a vocoder or a recommender",
    ),
    ("lora_rank", lambda m: m.get("method", "full") in ("lora", "qlora"), "method is full"),
    (
        "image_size",
        lambda m: m.get("architecture") in ("cnn", "vit", "diffusion_unet"),
        "not an image model",
    ),
    (
        "seq_len",
        lambda m: m.get("architecture") not in ("cnn", "diffusion_unet"),
        "an image model without token sequences",
    ),
    (
        "lookup_params",
        lambda m: m.get("architecture") in ("transformer_encoder", "transformer_decoder", "vit"),
        "not a transformer (only transformers' FLOPs are counted from parameters)",
    ),
)


def _drop_inapplicable(
    base: dict[str, Any], given: dict[str, Any], merged: dict[str, Any]
) -> tuple[str, ...]:
    """Put back the preset's value (none without a preset) of every given field that does
    not apply to the merged workload (:data:`INAPPLICABLE`: ``method`` lora or qlora on a
    CNN, an RNN or a recommender, ``lora_rank`` with method full,
    ``image_size`` on a language model, ``seq_len`` on a CNN or UNet), so it moves no figure
    and does not make the estimate depart from the preset's measurements; returns a note per
    field dropped."""
    notes: list[str] = []
    for name, applies, why in INAPPLICABLE:
        if given.get(name) is None or applies(merged):
            continue
        if base.get(name) is None:
            merged.pop(name, None)
        else:
            merged[name] = base[name]
        notes.append(f"{name} {given[name]} ignored: {why}")
    return tuple(notes)


def _drop_stale_activations(
    base: dict[str, Any], given: dict[str, Any], merged: dict[str, Any]
) -> tuple[str, ...]:
    """A preset's published activation count describes its own network: when the client
    changes the network (``forward_gflops_per_sample``, ``params`` or ``architecture``)
    without giving a count, drop the preset's from ``merged`` (the per-GFLOP activation rule
    of :mod:`app.model.memory` takes over) and return a note saying so. E.g.
    vgg16-imagenet-tf with its forward GFLOPs doubled kept VGG-16's 13.56 M elements and the
    preset's peak."""
    count = base.get("forward_activations_per_sample")
    if count is None or given.get("forward_activations_per_sample") is not None:
        return ()
    changed = [
        k
        for k in ("forward_gflops_per_sample", "params", "architecture")
        if given.get(k) is not None and given[k] != base.get(k)
    ]
    if not changed or merged.get("forward_activations_per_sample") is None:
        return ()
    merged.pop("forward_activations_per_sample")
    return (
        f"the preset's activation count ({count:g} M elements per sample) describes its own "
        f"network; with {', '.join(changed)} changed it is not used (activation memory from "
        "forward GFLOPs instead; give forward_activations_per_sample for your network)",
    )


def _drop_stale_lookup(
    base: dict[str, Any], given: dict[str, Any], merged: dict[str, Any], prefix: str
) -> tuple[str, ...]:
    """A preset's ``lookup_params`` counts its own embedding and softmax tables. With
    ``architecture`` changed it is dropped from ``merged``; with ``vocab_size`` or
    ``hidden_size`` changed and no ``lookup_params`` given it is kept as it is, with or
    without a new ``params``, and a note asks for the model's own count: how a new model
    ties, splits or projects its tables no field tells, and a scaled guess would make the
    answer jump where it stops fitting inside ``params`` (kept, the FLOPs move smoothly with
    ``params`` and restating the preset's count changes nothing). Changing only ``layers``
    (and ``params``) keeps it silently: the tables stay the same. An encoder preset without
    the field counts its token table, vocab × hidden (its default,
    :func:`app.model.flops.matmul_params`), and keeps that count the same way: a wider or
    larger-vocabulary encoder on the preset's parameters does not lose multiplied
    parameters to a table that grew. Returns the notes.

    Raises:
        WorkloadError: ``{prefix}.params`` when a given ``params`` does not exceed the
            preset's lookup-only count.
    """
    count = base.get("lookup_params")
    implicit = (
        count is None
        and base.get("architecture") == "transformer_encoder"
        and bool(base.get("vocab_size"))
        and bool(base.get("hidden_size"))
    )
    if implicit:
        # an encoder preset's token table, vocab × hidden (app.model.flops.matmul_params)
        count = base["vocab_size"] * base["hidden_size"]
    if count is None or given.get("lookup_params") is not None:
        return ()
    if given.get("architecture") is not None and given["architecture"] != base.get("architecture"):
        if implicit:
            return ()
        merged.pop("lookup_params", None)
        return (
            f"the preset's lookup_params ({count:,}) describes its own architecture's tables; "
            "with architecture changed it is not used (give lookup_params for your model)",
        )
    params = given.get("params")
    if params is not None and params <= count:
        raise WorkloadError(
            f"{prefix}.params",
            f"{params:,} parameters are not more than the preset's {count:,} lookup-only "
            "parameters (its token-embedding / softmax-tail tables); give the model's whole "
            "parameter count, or lookup_params for your model",
        )
    changed = [
        k
        for k in ("vocab_size", "hidden_size")
        if given.get(k) is not None and base.get(k) and given[k] != base[k]
    ]
    if not changed:
        return ()
    if implicit and merged.get("params") and merged.get("vocab_size") and merged.get("hidden_size"):
        table = merged["vocab_size"] * merged["hidden_size"]
        if table >= merged["params"]:
            raise WorkloadError(
                f"{prefix}.{changed[0]}",
                f"the {merged['vocab_size']:,} × {merged['hidden_size']:,} token-embedding "
                f"table alone ({table:,}) is not fewer than the {merged['params']:,} "
                "parameters",
            )
    merged["lookup_params"] = count
    shape = " × ".join(f"{k} {base[k]:,}" for k in ("vocab_size", "hidden_size") if base.get(k))
    tables = "token-embedding table" if implicit else "embedding and softmax-tail tables"
    return (
        f"the preset's {count:,} lookup-only parameters (its {tables} at {shape}) are kept "
        f"as they are with {' and '.join(changed)} changed: "
        "give lookup_params for your model's tables (0 when every parameter is multiplied "
        "per token)",
    )


#: the architectures built of transformer blocks (:data:`app.model.shape.TRANSFORMERS`)
TRANSFORMER_NAMES = tuple(a.value for a in TRANSFORMERS)
#: the shape fields of a transformer whose change moves the parameter count
SHAPE_FIELDS = ("layers", "hidden_size", "heads", "kv_heads", "ffn_hidden_size", "vocab_size")


def _follow_shape(
    base: dict[str, Any], given: dict[str, Any], merged: dict[str, Any], prefix: str
) -> tuple[str, ...]:
    """Move, in ``merged``, the preset's values that follow from a shape field the client
    changed, unless the client gave them too (only given values can contradict each other);
    returns a note per value moved. For a transformer preset, in order:

    * ``hidden_size`` changed: ``heads`` keeps the preset's head size (BERT-base's 64:
      hidden 1024 → 16 heads), ``ffn_hidden_size`` its ratio to ``hidden_size`` (4 ×;
      Llama 3's 3.5 ×);
    * ``heads`` changed (given or moved): ``kv_heads`` follows them on a multi-head preset
      (kv_heads = heads); on a grouped-query one it stays while it divides them, else keeps
      the preset's group size;
    * any shape field changed and no ``params`` given: ``params`` is the preset's count plus
      what the changed shape adds or removes (:func:`app.model.shape.shape_params`, with
      the plain or gated MLP and tied or untied embedding that fits the preset's count best;
      the blocks only where the preset's tables are lookup-only and kept, an encoder's token
      table or a preset's ``lookup_params``: :func:`_drop_stale_lookup`).

    Raises:
        WorkloadError: a given ``hidden_size`` or ``heads`` that no head count or key/value
            head count of the preset's kind fits (naming the given field).
    """
    if base.get("architecture") not in TRANSFORMER_NAMES or (
        given.get("architecture") not in (None, base.get("architecture"))
    ):
        return ()
    notes: list[str] = []

    def move(name: str, value: int, why: str) -> None:
        if given.get(name) is None and value != merged.get(name):
            notes.append(f"{name} {_count_text(merged.get(name))} → {_count_text(value)}: {why}")
            merged[name] = value

    h0, h = base.get("hidden_size"), merged.get("hidden_size")
    heads0, kv0 = base.get("heads"), base.get("kv_heads") or base.get("heads")
    if h0 and h and h != h0 and heads0 and h0 % heads0 == 0:
        size = h0 // heads0
        if h % size == 0:
            move("heads", h // size, f"the preset's head size {size} kept at hidden_size {h}")
        elif given.get("heads") is None and h % heads0:
            raise WorkloadError(
                f"{prefix}.hidden_size",
                f"hidden_size {h} is neither a multiple of the preset's head size {size} nor "
                f"divisible by its {heads0} heads; give heads",
            )
        if base.get("ffn_hidden_size"):
            ratio = base["ffn_hidden_size"] / h0
            move(
                "ffn_hidden_size",
                round(ratio * h),
                f"the preset's MLP ratio {ratio:g} × hidden_size kept",
            )
    heads = merged.get("heads")
    if heads0 and kv0 and heads and heads != heads0:
        group = heads0 // kv0
        if kv0 == heads0:
            move("kv_heads", heads, "multi-head attention: one key/value head per head")
        elif heads % kv0 and heads % group == 0:
            move("kv_heads", heads // group, f"the preset's {group} heads per key/value head kept")
        elif heads % kv0 and given.get("kv_heads") is None and not (h and h % heads):
            raise WorkloadError(
                f"{prefix}.heads",
                f"{heads} heads are divisible neither by the preset's {kv0} key/value heads "
                f"nor by its {group} heads per key/value head; give kv_heads",
            )
    changed = [k for k in SHAPE_FIELDS if merged.get(k) != base.get(k)]
    if given.get("params") is None and base.get("params") and changed:
        params = _shape_moved_params(base, merged)
        if params is not None:
            move(
                "params",
                params,
                f"the preset's count with its {', '.join(changed)} changed "
                "(app/model/shape.py); give params for your model",
            )
    return tuple(notes)


def _count_text(value: Any) -> str:
    """A value for a note: integers grouped in thousands (8,030,261,248)."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def _shape_moved_params(base: dict[str, Any], merged: dict[str, Any]) -> int | None:
    """The preset's ``params`` plus the count its changed shape adds or removes: the
    :func:`~app.model.shape.shape_params` form (plain or gated MLP, tied or untied
    embedding) nearest to the preset's own count, taken at both shapes; ``None`` when the
    shape is unknown or the count would not be positive."""
    old = build_workload({k: base.get(k) for k in ("architecture", *SHAPE_FIELDS)})
    new = build_workload({k: merged.get(k) for k in ("architecture", *SHAPE_FIELDS)})
    forms = [(g, u) for g in (False, True) for u in (False, True)]
    counts = [(shape_params(old, gated=g, untied=u), g, u) for g, u in forms]
    known = [(c, g, u) for c, g, u in counts if c is not None]
    if not known:
        return None
    _, gated, untied = min(known, key=lambda t: abs(t[0] - base["params"]))
    if base.get("lookup_params") is not None or base.get("architecture") == "transformer_encoder":
        # the preset's tables are lookup-only (its lookup_params, an encoder's token table)
        # and kept as they are (_drop_stale_lookup): only the blocks move the count
        old, new = replace(old, vocab_size=0), replace(new, vocab_size=0)
    before = shape_params(old, gated=gated, untied=untied)
    after = shape_params(new, gated=gated, untied=untied)
    if before is None or after is None:
        return None
    params = round(base["params"] + after - before)
    return params if params > 0 else None


#: architectures whose samples are token sequences (an epoch may be counted in tokens)
TOKEN_ARCHITECTURES = ("transformer_encoder", "transformer_decoder", "rnn_seq2seq")


def _packed_count(merged: dict[str, Any]) -> bool:
    """Whether ``merged`` counts its epoch in tokens packed into sequences (a
    ``tokens_per_epoch`` and ``packed`` not false), which needs no sample count."""
    return bool(merged.get("tokens_per_epoch")) and merged.get("packed") is not False


def _epoch_counts(
    base: dict[str, Any], given: dict[str, Any], merged: dict[str, Any], prefix: str
) -> tuple[str, ...]:
    """The epoch rule (README, "What an epoch is"), applied to ``merged``; returns the notes.

    * ``tokens_per_sample`` given: ``tokens_per_epoch`` = samples × it (packing applies unless
      ``packed`` is false); a ``tokens_per_epoch`` given with it must agree within 1 % (the
      rounding of a mean written to three figures).
    * ``samples_per_epoch`` given (other than the preset's) without a token count: the
      preset's ``tokens_per_epoch`` counts the preset's own dataset, not the user's, so it is
      dropped and each sample counts as a full ``seq_len`` sequence (samples × seq_len,
      :func:`app.model.cost.epoch_plan`). The preset's ``packed`` goes with it (the
      answer then warns ``epoch_tokens_padded``: the count was assumed), unless the preset's
      samples are whole windows of a token stream (its tokens fill every sample: GPT-2 on
      OpenWebText, Transformer-XL on WikiText-103), where samples × seq_len is exact.
    * ``packed`` false with more real tokens than the samples' padded slots: the user's
      values contradict each other, a 400.

    E.g. llama3-8b-qlora (Alpaca, 92.4 tokens a sample) with 50,000 samples of 512 tokens:
    25,600,000 tokens, not the 4,620,000 that Alpaca's mean would give.

    Raises:
        WorkloadError: ``tokens_per_sample`` without a sample count or contradicting
            ``tokens_per_epoch``; real tokens that padded samples cannot hold.
    """
    notes: list[str] = []
    per_sample, tokens = given.get("tokens_per_sample"), given.get("tokens_per_epoch")
    samples = merged.get("samples_per_epoch")
    if per_sample is not None:
        if not samples:
            raise WorkloadError(
                f"{prefix}.samples_per_epoch",
                "required with tokens_per_sample (the epoch's tokens are samples × tokens "
                "per sample)",
            )
        counted = round(samples * per_sample)
        if tokens is not None and abs(tokens - counted) > 0.01 * tokens:
            raise WorkloadError(
                f"{prefix}.tokens_per_sample",
                f"{samples:,} samples × {per_sample:g} tokens = {counted:,} tokens, not the "
                f"{tokens:,} tokens_per_epoch given; give one of the two",
            )
        merged["tokens_per_epoch"] = tokens if tokens is not None else counted
    elif (
        tokens is None
        and given.get("samples_per_epoch") is not None
        and given["samples_per_epoch"] != base.get("samples_per_epoch")
        and base.get("tokens_per_epoch")
    ):
        old_tokens, old_samples = base["tokens_per_epoch"], base.get("samples_per_epoch") or 0
        merged.pop("tokens_per_epoch", None)
        windows = old_samples * (base.get("seq_len") or 0) <= old_tokens
        if not windows and given.get("packed") is None:
            merged.pop("packed", None)
        if not windows:
            mean = f" ({old_tokens / old_samples:,.1f} a sample)" if old_samples else ""
            notes.append(
                f"the preset's {old_tokens:,} tokens{mean} count its own dataset; for the "
                f"{samples:,} samples given each counts as a full {merged.get('seq_len') or 0:,}-"
                "token sequence: give tokens_per_sample or tokens_per_epoch for the real count"
            )
    seq_len, count = merged.get("seq_len"), merged.get("tokens_per_epoch")
    if (
        merged.get("packed") is False
        and count
        and samples
        and seq_len
        and count > samples * seq_len
    ):
        field = next(
            (k for k in ("tokens_per_sample", "tokens_per_epoch") if given.get(k) is not None),
            "samples_per_epoch",
        )
        raise WorkloadError(
            f"{prefix}.{field}",
            f"{count:,} real tokens do not fit {samples:,} samples padded to {seq_len:,} tokens "
            f"({samples * seq_len:,} slots); give packed true, a longer seq_len or more samples",
        )
    return tuple(notes)


def _same(a: Any, b: Any, key: str, architecture: Any = None) -> bool:
    if key == "lookup_params" and architecture != "transformer_encoder":
        # 0 is a decoder's or ViT's own default (no lookup-only tables); an encoder's
        # default is its vocab × hidden table, so there 0 and unset differ
        return (a or 0) == (b or 0)
    if key == "method":
        return (a or "full") == (b or "full")
    if key == "gradient_checkpointing":
        return bool(a) == bool(b)
    return bool(a == b)
