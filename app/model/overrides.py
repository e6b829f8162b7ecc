"""What a field given over a preset moves, drops or contradicts (used by
:func:`app.model.job.resolve`).

Every function works on flat field dictionaries (API field names): ``base`` (the preset's
values, empty without a preset), ``given`` (what the client set) and ``merged`` (``given``
over ``base``, changed in place), and returns the notes that say what it did; a
contradiction raises :class:`~app.model.types.JobError` naming the field. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from app.model.shape import SHAPE_PARAM_FIELDS, shape_params
from app.model.types import JobError, Method, Workload
from app.model.vocabulary import Architecture, Family

Values = dict[str, Any]


def architecture_of(values: Mapping[str, Any]) -> Architecture | None:
    """The architecture a flat value set names; ``None`` when unset or not one."""
    try:
        return Architecture(values["architecture"])
    except (KeyError, ValueError):
        return None


def is_transformer(values: Mapping[str, Any]) -> bool:
    """Whether the flat values name a transformer (:attr:`Architecture.is_transformer`)."""
    return _arch_has(values, lambda a: a.is_transformer)


def _family(values: Mapping[str, Any]) -> Family | None:
    arch = architecture_of(values)
    return arch.family if arch is not None else None


def _method(values: Mapping[str, Any]) -> Any:
    return values.get("method", Method.FULL)


def _arch_has(values: Mapping[str, Any], rule: Callable[[Architecture], bool]) -> bool:
    """Whether the flat values name an architecture and ``rule`` holds for it."""
    arch = architecture_of(values)
    return arch is not None and rule(arch)


#: fields that mean nothing for some architectures / methods: (field, applies to it?, why);
#: checked in order (``method`` put back first, so a ``lora_rank`` with it goes too)
INAPPLICABLE: tuple[tuple[str, Any, str], ...] = (
    (
        "method",
        lambda m: _method(m) == Method.FULL or _arch_has(m, lambda a: a.takes_lora),
        "LoRA/QLoRA adapters are counted for transformers and diffusion UNets, not for a CNN, "
        "an RNN, a TTS model, a vocoder or a recommender",
    ),
    ("lora_rank", lambda m: _method(m) in (Method.LORA, Method.QLORA), "method is full"),
    (
        "image_size",
        lambda m: _arch_has(m, lambda a: a.takes_images),
        "not an image model",
    ),
    ("seq_len", lambda m: _family(m) != Family.CNN, "an image model without token sequences"),
    (
        "lookup_params",
        is_transformer,
        "not a transformer (only transformers' FLOPs are counted from parameters)",
    ),
)


def drop_inapplicable(base: Values, given: Values, merged: Values) -> tuple[str, ...]:
    """Put back the preset's value (none without a preset) of every given field that does
    not apply to the merged workload (:data:`INAPPLICABLE`: ``method`` lora or qlora on a
    CNN, an RNN or a recommender, ``lora_rank`` with method full, ``image_size`` on a
    language model, ``seq_len`` on a CNN or UNet), so it moves no figure and does not make
    the estimate depart from the preset's measurements; returns a note per field dropped."""
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


#: the per-sample counts a convolutional preset publishes at its own image size
PER_PIXEL_FIELDS = ("forward_gflops_per_sample", "forward_activations_per_sample")


def scale_per_pixel(base: Values, given: Values, merged: Values) -> None:
    """A preset's image size changed: convolutions cost and output per pixel, so a CNN's or
    UNet's published forward cost and activation count (:data:`PER_PIXEL_FIELDS`, unless
    given) scale with the image area; a ViT's published activation count holds at its own
    size only and is dropped (attention's token-by-token products do not scale with
    pixels: the per-layer formula takes over; ViT FLOPs follow from the token count)."""
    old_image, new_image = base.get("image_size"), merged.get("image_size")
    if not old_image or new_image == old_image:
        return
    if new_image and _family(merged) == Family.CNN:
        for name in PER_PIXEL_FIELDS:
            if base.get(name) and name not in given:
                merged[name] = base[name] * (new_image / old_image) ** 2
    if (
        architecture_of(merged) == Architecture.VIT
        and base.get("forward_activations_per_sample")
        and "forward_activations_per_sample" not in given
    ):
        merged.pop("forward_activations_per_sample")


def drop_stale_activations(base: Values, given: Values, merged: Values) -> tuple[str, ...]:
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


def _lookup_count(base: Values) -> tuple[int | None, bool]:
    """The preset's lookup-only parameters and whether they are implicit: its
    ``lookup_params``, else an encoder preset's token table, vocab × hidden (its default,
    :func:`app.model.flops.matmul_params`)."""
    count = base.get("lookup_params")
    implicit = (
        count is None
        and architecture_of(base) == Architecture.TRANSFORMER_ENCODER
        and bool(base.get("vocab_size"))
        and bool(base.get("hidden_size"))
    )
    if implicit:
        count = base["vocab_size"] * base["hidden_size"]
    return count, implicit


def _check_table_fits(merged: Values, changed: list[str], prefix: str) -> None:
    """An encoder's token table, vocab × hidden, must be fewer than its ``params``.

    Raises:
        JobError: ``{prefix}.{changed[0]}`` when it is not.
    """
    if merged.get("params") and merged.get("vocab_size") and merged.get("hidden_size"):
        table = merged["vocab_size"] * merged["hidden_size"]
        if table >= merged["params"]:
            raise JobError(
                f"{prefix}.{changed[0]}",
                f"the {merged['vocab_size']:,} × {merged['hidden_size']:,} token-embedding "
                f"table alone ({table:,}) is not fewer than the {merged['params']:,} "
                "parameters",
            )


def drop_stale_lookup(base: Values, given: Values, merged: Values, prefix: str) -> tuple[str, ...]:
    """A preset's ``lookup_params`` counts its own embedding and softmax tables. With
    ``architecture`` changed it is dropped from ``merged``; with ``vocab_size`` or
    ``hidden_size`` changed and no ``lookup_params`` given it is kept as it is, with or
    without a new ``params``, and a note asks for the model's own count: how a new model
    ties, splits or projects its tables no field tells, and a scaled guess would make the
    answer jump where it stops fitting inside ``params`` (kept, the FLOPs move smoothly with
    ``params`` and restating the preset's count changes nothing). Changing only ``layers``
    (and ``params``) keeps it silently: the tables stay the same. An encoder preset without
    the field counts its token table (:func:`_lookup_count`) and keeps that count the same
    way: a wider or larger-vocabulary encoder on the preset's parameters does not lose
    multiplied parameters to a table that grew. Returns the notes.

    Raises:
        JobError: ``{prefix}.params`` when a given ``params`` does not exceed the preset's
            lookup-only count; the changed field when an encoder's token table would not be
            fewer than its parameters.
    """
    count, implicit = _lookup_count(base)
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
        raise JobError(
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
    if implicit:
        _check_table_fits(merged, changed, prefix)
    merged["lookup_params"] = count
    shape = " × ".join(f"{k} {base[k]:,}" for k in ("vocab_size", "hidden_size") if base.get(k))
    tables = "token-embedding table" if implicit else "embedding and softmax-tail tables"
    return (
        f"the preset's {count:,} lookup-only parameters (its {tables} at {shape}) are kept "
        f"as they are with {' and '.join(changed)} changed: "
        "give lookup_params for your model's tables (0 when every parameter is multiplied "
        "per token)",
    )


def _count_text(value: Any) -> str:
    """A value for a note: integers grouped in thousands (8,030,261,248)."""
    return f"{value:,}" if isinstance(value, int) else str(value)


class _Mover:
    """Moves values in ``merged`` that the client did not give, noting each move."""

    def __init__(self, given: Values, merged: Values):
        self.given, self.merged = given, merged
        self.notes: list[str] = []

    def move(self, name: str, value: int, why: str) -> None:
        if self.given.get(name) is None and value != self.merged.get(name):
            old = _count_text(self.merged.get(name))
            self.notes.append(f"{name} {old} → {_count_text(value)}: {why}")
            self.merged[name] = value


def _follow_hidden(base: Values, mover: _Mover, prefix: str) -> None:
    """``hidden_size`` changed: ``heads`` keep the preset's head size, ``ffn_hidden_size``
    its ratio to ``hidden_size``.

    Raises:
        JobError: ``{prefix}.hidden_size`` that neither the head size nor the head count
            divides, with no ``heads`` given.
    """
    h0, h = base.get("hidden_size"), mover.merged.get("hidden_size")
    heads0 = base.get("heads")
    if not (h0 and h and h != h0 and heads0 and h0 % heads0 == 0):
        return
    size = h0 // heads0
    if h % size == 0:
        mover.move("heads", h // size, f"the preset's head size {size} kept at hidden_size {h}")
    elif mover.given.get("heads") is None and h % heads0:
        raise JobError(
            f"{prefix}.hidden_size",
            f"hidden_size {h} is neither a multiple of the preset's head size {size} nor "
            f"divisible by its {heads0} heads; give heads",
        )
    if base.get("ffn_hidden_size"):
        ratio = base["ffn_hidden_size"] / h0
        mover.move(
            "ffn_hidden_size",
            round(ratio * h),
            f"the preset's MLP ratio {ratio:g} × hidden_size kept",
        )


def _follow_heads(base: Values, mover: _Mover, prefix: str) -> None:
    """``heads`` changed (given or moved): ``kv_heads`` follow them on a multi-head preset;
    on a grouped-query one they stay while they divide them, else keep the group size.

    Raises:
        JobError: ``{prefix}.heads`` that neither the preset's key/value heads nor its group
            size divides, with no ``kv_heads`` given.
    """
    heads0, kv0 = base.get("heads"), base.get("kv_heads") or base.get("heads")
    heads, h = mover.merged.get("heads"), mover.merged.get("hidden_size")
    if not (heads0 and kv0 and heads and heads != heads0):
        return
    group = heads0 // kv0
    if kv0 == heads0:
        mover.move("kv_heads", heads, "multi-head attention: one key/value head per head")
    elif heads % kv0 and heads % group == 0:
        mover.move(
            "kv_heads", heads // group, f"the preset's {group} heads per key/value head kept"
        )
    elif heads % kv0 and mover.given.get("kv_heads") is None and not (h and h % heads):
        raise JobError(
            f"{prefix}.heads",
            f"{heads} heads are divisible neither by the preset's {kv0} key/value heads "
            f"nor by its {group} heads per key/value head; give kv_heads",
        )


def follow_shape(base: Values, given: Values, merged: Values, prefix: str) -> tuple[str, ...]:
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
      table or a preset's ``lookup_params``: :func:`drop_stale_lookup`).

    Raises:
        JobError: a given ``hidden_size`` or ``heads`` that no head count or key/value head
            count of the preset's kind fits (naming the given field).
    """
    if not is_transformer(base) or (
        given.get("architecture") not in (None, base.get("architecture"))
    ):
        return ()
    mover = _Mover(given, merged)
    _follow_hidden(base, mover, prefix)
    _follow_heads(base, mover, prefix)
    changed = [k for k in SHAPE_PARAM_FIELDS if merged.get(k) != base.get(k)]
    if given.get("params") is None and base.get("params") and changed:
        params = _shape_moved_params(base, merged)
        if params is not None:
            mover.move(
                "params",
                params,
                f"the preset's count with its {', '.join(changed)} changed "
                "(app/model/shape.py); give params for your model",
            )
    return tuple(mover.notes)


def _shape_job(values: Values) -> Workload:
    """A job of only the architecture and transformer shape of ``values`` (unset fields at
    their defaults), for :func:`~app.model.shape.shape_params`."""
    shape = {k: values[k] for k in SHAPE_PARAM_FIELDS if values.get(k) is not None}
    return Workload(architecture=Architecture(values["architecture"]), **shape)


def _shape_moved_params(base: Values, merged: Values) -> int | None:
    """The preset's ``params`` plus the count its changed shape adds or removes: the
    :func:`~app.model.shape.shape_params` form (plain or gated MLP, tied or untied
    embedding) nearest to the preset's own count, taken at both shapes; ``None`` when the
    shape is unknown or the count would not be positive."""
    old, new = _shape_job(base), _shape_job(merged)
    forms = [(g, u) for g in (False, True) for u in (False, True)]
    counts = [(shape_params(old, gated=g, untied=u), g, u) for g, u in forms]
    known = [(c, g, u) for c, g, u in counts if c is not None]
    if not known:
        return None
    _, gated, untied = min(known, key=lambda t: abs(t[0] - base["params"]))
    if (
        base.get("lookup_params") is not None
        or old.architecture == Architecture.TRANSFORMER_ENCODER
    ):
        # the preset's tables are lookup-only (its lookup_params, an encoder's token table)
        # and kept as they are (drop_stale_lookup): only the blocks move the count
        old, new = replace(old, vocab_size=0), replace(new, vocab_size=0)
    before = shape_params(old, gated=gated, untied=untied)
    after = shape_params(new, gated=gated, untied=untied)
    if before is None or after is None:
        return None
    params = round(base["params"] + after - before)
    return params if params > 0 else None


def _tokens_from_per_sample(given: Values, merged: Values, prefix: str) -> None:
    """``tokens_per_sample`` given: ``tokens_per_epoch`` = samples × it (a
    ``tokens_per_epoch`` given with it must agree within 1 %, the rounding of a mean written
    to three figures).

    Raises:
        JobError: no sample count, or a ``tokens_per_epoch`` that disagrees.
    """
    per_sample, tokens = given["tokens_per_sample"], given.get("tokens_per_epoch")
    samples = merged.get("samples_per_epoch")
    if not samples:
        raise JobError(
            f"{prefix}.samples_per_epoch",
            "required with tokens_per_sample (the epoch's tokens are samples × tokens per sample)",
        )
    counted = round(samples * per_sample)
    if tokens is not None and abs(tokens - counted) > 0.01 * tokens:
        raise JobError(
            f"{prefix}.tokens_per_sample",
            f"{samples:,} samples × {per_sample:g} tokens = {counted:,} tokens, not the "
            f"{tokens:,} tokens_per_epoch given; give one of the two",
        )
    merged["tokens_per_epoch"] = tokens if tokens is not None else counted


def _drop_preset_tokens(base: Values, given: Values, merged: Values) -> tuple[str, ...]:
    """A sample count given (other than the preset's) without a token count: the preset's
    ``tokens_per_epoch`` counts its own dataset, so it is dropped, and with it the preset's
    ``packed`` unless the preset's samples are whole windows of a token stream (its tokens
    fill every sample); returns the note."""
    if not (
        given.get("tokens_per_epoch") is None
        and given.get("samples_per_epoch") is not None
        and given["samples_per_epoch"] != base.get("samples_per_epoch")
        and base.get("tokens_per_epoch")
    ):
        return ()
    old_tokens, old_samples = base["tokens_per_epoch"], base.get("samples_per_epoch") or 0
    merged.pop("tokens_per_epoch", None)
    if old_samples * (base.get("seq_len") or 0) <= old_tokens:  # whole windows: exact
        return ()
    if given.get("packed") is None:
        merged.pop("packed", None)
    mean = f" ({old_tokens / old_samples:,.1f} a sample)" if old_samples else ""
    return (
        f"the preset's {old_tokens:,} tokens{mean} count its own dataset; for the "
        f"{merged.get('samples_per_epoch'):,} samples given each counts as a full "
        f"{merged.get('seq_len') or 0:,}-token sequence: give tokens_per_sample or "
        "tokens_per_epoch for the real count",
    )


def _check_padded_fit(given: Values, merged: Values, prefix: str) -> None:
    """``packed`` false: the real tokens must fit the samples' padded slots.

    Raises:
        JobError: more real tokens than samples × ``seq_len``, naming the token count given
            (else ``samples_per_epoch``).
    """
    samples, seq_len = merged.get("samples_per_epoch"), merged.get("seq_len")
    count = merged.get("tokens_per_epoch")
    if not (merged.get("packed") is False and count and samples and seq_len):
        return
    if count <= samples * seq_len:
        return
    field = next(
        (k for k in ("tokens_per_sample", "tokens_per_epoch") if given.get(k) is not None),
        "samples_per_epoch",
    )
    raise JobError(
        f"{prefix}.{field}",
        f"{count:,} real tokens do not fit {samples:,} samples padded to {seq_len:,} tokens "
        f"({samples * seq_len:,} slots); give packed true, a longer seq_len or more samples",
    )


def epoch_counts(base: Values, given: Values, merged: Values, prefix: str) -> tuple[str, ...]:
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
        JobError: ``tokens_per_sample`` without a sample count or contradicting
            ``tokens_per_epoch``; real tokens that padded samples cannot hold.
    """
    notes: tuple[str, ...] = ()
    if given.get("tokens_per_sample") is not None:
        _tokens_from_per_sample(given, merged, prefix)
    else:
        notes = _drop_preset_tokens(base, given, merged)
    _check_padded_fit(given, merged, prefix)
    return notes
