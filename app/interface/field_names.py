"""Unknown request fields named with the field meant, and the names other tools give our
fields read as ours: one rule for bodies and query strings.

A request model forbids unknown fields (``extra="forbid"``), so a typo is a 400; the answer
says the field is unknown and, when one is close, which known field was meant: ``ram_gb``
→ ``ram_gib`` (:func:`difflib.get_close_matches`, cutoff 0.6 on its ratio 2·M / (len(a) +
len(b)), M the matching characters: ``ram_gb`` and ``ram_gib`` 2·6 / 13 = 0.92).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from app.model.types import unwrap_optional
from app.model.vocabulary import Precision

#: :func:`difflib.get_close_matches`' default: below it a name is no likely typo of another
CLOSE_ENOUGH = 0.6

#: A workload field's name in the tools people copy their settings from → ours. Keys are
#: lower case with ``_`` for ``-`` (Megatron's ``--micro-batch-size`` is ``micro_batch_size``).
#: Sources, seen 2026-12-05: transformers ``TrainingArguments``
#: (src/transformers/training_args.py) and model configs (``LlamaConfig``, ``GPT2Config``);
#: axolotl's config reference (docs/config.qmd: ``sequence_len``, ``lora_r``, ``num_epochs``);
#: LLaMA-Factory's ``DataArguments.cutoff_len``; TRL's ``SFTConfig.max_seq_length``;
#: torchtune's recipes (``max_seq_len``, ``enable_activation_checkpointing``); Megatron-LM's
#: arguments (megatron/training/arguments.py: ``--num-layers``, ``--seq-length``,
#: ``--num-query-groups``); nanoGPT's ``block_size``. Names meaning something else in some
#: tool (``batch_size``: per device in torchtune, global in others) are left out.
SYNONYMS: dict[str, str] = {
    "per_device_train_batch_size": "micro_batch_size",
    "micro_batch": "micro_batch_size",
    "gradient_accumulation_steps": "grad_accum_steps",
    "num_train_epochs": "epochs",
    "num_epochs": "epochs",
    "optim": "optimizer",
    "enable_activation_checkpointing": "gradient_checkpointing",
    "activation_checkpointing": "gradient_checkpointing",
    "lora_r": "lora_rank",
    "sequence_len": "seq_len",
    "seq_length": "seq_len",
    "max_seq_length": "seq_len",
    "max_seq_len": "seq_len",
    "cutoff_len": "seq_len",
    "block_size": "seq_len",
    "num_hidden_layers": "layers",
    "num_layers": "layers",
    "n_layer": "layers",
    "num_attention_heads": "heads",
    "n_head": "heads",
    "num_key_value_heads": "kv_heads",
    "num_query_groups": "kv_heads",
    "n_embd": "hidden_size",
    "intermediate_size": "ffn_hidden_size",
    "n_inner": "ffn_hidden_size",
}


#: Hugging Face ``TrainingArguments``' precision flags (``bf16=True``: autocast in bfloat16
#: with fp32 master weights; ``fp16=True`` the same in float16) → our field and its value.
FLAGS: dict[str, tuple[str, str]] = {
    "bf16": ("precision", "bf16_amp"),
    "fp16": ("precision", "fp16_amp"),
}


def _as_ours(key: str, value: Any, fields: set[str]) -> tuple[str, Any]:
    """``key: value`` as our field and value: a known field as it is, a :data:`SYNONYMS` name
    renamed, a true :data:`FLAGS` flag as its field's value; anything else as it is.

    Raises:
        ValueError: a :data:`FLAGS` flag set false (it names no precision)."""
    if key in fields:
        return key, value
    word = key.lower().lstrip("-").replace("-", "_")
    if word in FLAGS and FLAGS[word][0] in fields:
        if value is True or value == "true":
            return FLAGS[word]
        raise ValueError(f"{key}: {value!r} names no precision; give precision instead")
    name = SYNONYMS.get(word, key)
    return (name, value) if name in fields else (key, value)


def _same(name: str, a: Any, b: Any) -> bool:
    """Whether two values of field ``name`` say the same (a precision as any of its words:
    ``BF16-AMP`` is ``bf16_amp``)."""
    return bool(_word(name, a) == _word(name, b))


def _word(name: str, value: Any) -> Any:
    """``value`` as the member it names when ``name`` is ``precision`` and it names one."""
    if name == "precision" and isinstance(value, str):
        try:
            return Precision(value)
        except ValueError:
            return value
    return value


def our_names(given: Mapping[str, Any], known: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """``given`` with each key that is a :data:`SYNONYMS` name of a ``known`` field renamed
    to it (``gradient_accumulation_steps`` → ``grad_accum_steps``) and each true
    :data:`FLAGS` flag written as its field (``bf16: true`` → ``precision: bf16_amp``),
    other keys, known or not, as they are (an unknown one is refused later, by name); and
    why each field given under two names with different values is refused (``seq_len``
    2048 and ``max_seq_length`` 4096: ``seq_len and max_seq_length both give seq_len, with
    different values``; the first-written value is kept), or a flag set false."""
    fields = set(known)
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    clashes: list[str] = []
    for key, given_value in given.items():
        try:
            name, value = _as_ours(key, given_value, fields)
        except ValueError as exc:
            clashes.append(str(exc))
            continue
        if name in out and not _same(name, out[name], value):
            clashes.append(f"{written[name]} and {key} both give {name}, with different values")
            continue
        out.setdefault(name, value)
        written.setdefault(name, key)
    return out, clashes


def reason(error: Mapping[str, Any]) -> str:
    """One pydantic error (an item of ``errors()``) as a 400 gives its reason: a validator's
    ``ValueError`` as it was raised, whole (``'8x': must be a number of GPUs …``, not
    ``Value error, '8x': …``; a value the user wrote with `` - `` in it stays whole), and
    pydantic's own messages without what follows ``" - "`` (its context after the reason)."""
    raised = error.get("ctx", {}).get("error") if error.get("type") == "value_error" else None
    if raised is not None:
        return str(raised)
    return str(error["msg"]).removeprefix("Value error, ").split(" - ", maxsplit=1)[0]


def unknown_field(name: str, known: Iterable[str], what: str = "field") -> str:
    """Why ``name`` is refused: ``unknown field; did you mean ram_gib?`` (the nearest of
    ``known``), or ``unknown field`` when none is close."""
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=CLOSE_ENOUGH)
    return f"unknown {what}" + (f"; did you mean {near[0]}?" if near else "")


def model_at(model: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    """The request model holding the field at ``loc`` (a validation error's location, the
    field's own name last): ``EstimateRequest`` and ``("hardware", "ram_gb")`` →
    ``HardwareIn``; ``None`` when the path leaves the models (a list, a plain value)."""
    current: type[BaseModel] = model
    for part in loc[:-1]:
        info = current.model_fields.get(str(part))
        inner = unwrap_optional(info.annotation) if info is not None else None
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return None
        current = inner
    return current


def name_unknown_fields(model: type[BaseModel], errors: list[Any]) -> list[Any]:
    """Pydantic's ``errors()`` of ``model`` with each unknown field's message
    (``extra_forbidden``: "Extra inputs are not permitted") replaced by
    :func:`unknown_field` against the fields of the model it was sent to."""
    out = []
    for e in errors:
        holder = model_at(model, e.get("loc", ())) if e.get("type") == "extra_forbidden" else None
        if holder is not None and e["loc"]:
            name = str(e["loc"][-1])
            where = field_home(model, name, tuple(map(str, e["loc"][:-1])))
            msg = unknown_field(name, holder.model_fields) if where is None else where
            e = {**e, "msg": msg}
        out.append(e)
    return out


def field_home(model: type[BaseModel], name: str, sent_in: tuple[str, ...]) -> str | None:
    """Where ``name``, unknown in the part of ``model`` at ``sent_in``, is a field: the top
    level of the request or one of its parts (``workload``, ``hardware``, ``filters``):
    ``unknown field in hardware; price_per_hour goes at the top level of the request``.
    ``None`` when it is a field of none of them (or of the part it was sent in)."""
    here = ".".join(sent_in) or "the request"
    if sent_in and name in model.model_fields:
        return f"unknown field in {here}; {name} goes at the top level of the request"
    for part, info in model.model_fields.items():
        inner = unwrap_optional(info.annotation)
        nested = isinstance(inner, type) and issubclass(inner, BaseModel)
        if nested and (part,) != sent_in and name in inner.model_fields:
            return f"unknown field in {here}; {name} goes in {part} ({part}.{name})"
    return None


def detail_keys(extra: Sequence[Any]) -> str:
    """The keys of a 400's ``extra`` entries for its ``detail``, an unknown field with its
    message: ``workload.seq_len, hardware.ram_gb: unknown field; did you mean ram_gib?``."""
    return ", ".join(
        f"{e['key']}: {e['message']}"
        if str(e.get("message", "")).startswith("unknown field")
        else str(e["key"])
        for e in extra
        if isinstance(e, dict) and e.get("key")
    )
