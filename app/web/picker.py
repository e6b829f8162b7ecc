"""The preset picker: presets grouped by kind, each with a short name and its recipe.

A preset's name says the model, then the task and the recipe it follows
(``Llama 3.1 8B QLoRA fine-tune, NF4 base (torchtune llama3_1/8B_qlora_single_device)``); the
picker shows the part before the first ``,`` or `` (`` as the name and the rest as a sub-line.
The kind comes from the architecture and the method (:func:`preset_kind`), so a new preset
lands in a group without a list to keep.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.web.i18n import N_

#: Groups in the order the picker shows them: key → heading.
KINDS = {
    "llm_finetune": N_("LLM fine-tune"),
    "llm_pretrain": N_("LLM pre-training"),
    "vision": N_("Vision"),
    "diffusion": N_("Diffusion"),
    "speech": N_("Speech"),
    "other": N_("Other"),
}
_ARCHITECTURE_KINDS = {
    "cnn": "vision",
    "vit": "vision",
    "diffusion_unet": "diffusion",
    "diffusion_transformer": "diffusion",
    "tts": "speech",
    "vocoder": "speech",
}
_TRANSFORMERS = ("transformer_decoder", "transformer_encoder")


def preset_kind(fields: Mapping[str, Any], name: str) -> str:
    """The picker group of a preset (a key of :data:`KINDS`): vision (CNN, ViT), diffusion,
    speech (TTS, vocoder); a transformer is a fine-tune when it trains adapters (LoRA,
    QLoRA) or its name says fine-tuning, else pre-training; anything else is ``other``."""
    architecture = str(fields.get("architecture") or "")
    if architecture in _ARCHITECTURE_KINDS:
        return _ARCHITECTURE_KINDS[architecture]
    if architecture in _TRANSFORMERS:
        adapters = str(fields.get("method") or "full") != "full"
        return "llm_finetune" if adapters or "fine-tun" in name.lower() else "llm_pretrain"
    return "other"


def split_name(name: str) -> tuple[str, str]:
    """(short name, recipe): the name up to the first ``, `` or `` (``, and the rest without
    its outer parentheses (``ResNet-50 v1.5`` / ``ImageNet-1k classification · NVIDIA DLE
    PyTorch recipe``)."""
    m = re.search(r",\s|\s\(", name)
    if m is None:
        return name, ""
    short, rest = name[: m.start()], name[m.start() :].lstrip(", ").strip()
    rest = re.sub(r"\s*\(([^()]*)\)\s*$", r" · \1", rest).strip(" ·")
    rest = re.sub(r"^\(([^()]*)\)", r"\1", rest)
    return short, rest


@dataclass(frozen=True, slots=True)
class PickerItem:
    """One preset in the picker: slug, short name, recipe sub-line, search text."""

    slug: str
    short: str
    recipe: str
    search: str


@dataclass(frozen=True, slots=True)
class PickerGroup:
    """A heading and its presets, in the catalog's order."""

    kind: str
    heading: str
    items: list[PickerItem]


def picker_groups(presets: Iterable[Any]) -> list[PickerGroup]:
    """The presets (objects with ``slug``, ``name``, ``fields``) grouped by :func:`preset_kind`
    in the order of :data:`KINDS`; empty groups left out."""
    grouped: dict[str, list[PickerItem]] = {k: [] for k in KINDS}
    for p in presets:
        short, recipe = split_name(p.name)
        search = f"{p.name} {p.slug}".lower()
        grouped[preset_kind(p.fields, p.name)].append(PickerItem(p.slug, short, recipe, search))
    return [PickerGroup(k, KINDS[k], items) for k, items in grouped.items() if items]


def short_name(name: str) -> str:
    """A preset's short name (:func:`split_name`)."""
    return split_name(name)[0]
