"""The one GPU-name normaliser: maps any provider/benchmark label to a catalog GPU model.

Pure (no I/O). Built from the catalog rows (canonical name, aliases, VRAM, form factor) plus an
optional extra alias table (``seed_data/gpu_aliases.csv``). Matching, in order:

1. exact alias match on a normalised key (case, punctuation, vendor words, parenthesised
   remarks ignored; ``4090D`` ≡ ``4090 D``; ``4080S`` ≡ ``4080 SUPER``); an alias-table row
   whose label normalises to the bare name of a family of several models (Vultr's
   ``NVIDIA_A100`` → ``a100``) is one provider's spelling and matches that label as written
   (case and outer space aside), not every bare ``A100``;
2. otherwise the *family* of the name (the name with VRAM, form-factor and memory-type tokens
   removed, e.g. ``H100-80G-PCIe-NVLink`` → family ``h100``, form ``pcie``, VRAM 80);
3. within the candidates, keep the form factor asked for (from the name or from the offer's
   interconnect), then the VRAM nearest to the listed VRAM; ties go to the first catalog row.

Tokens that make a different GPU are kept: Ti, SUPER, D, NVL, Ada, PRO, Quadro (so A10 ≠ A10G,
L40 ≠ L40S, Quadro RTX 6000 ≠ RTX 6000 Ada). A listed VRAM far from the catalog VRAM (a 48 GB
memory-modded RTX 4090) still matches the family and is flagged ``vram_mismatch``; the offer
keeps its own VRAM. A listed VRAM that is the matched card's full memory written another way
(the driver's reading a little below the catalog size) is stored as the catalog size
(:func:`offer_vram`, the one rule of seed data and ingest).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: Relative VRAM difference above which a match is flagged (22.35 GiB A10G vs 24 GB is 7 %).
VRAM_TOLERANCE = 0.12

_DROP_WORDS = {"nvidia", "geforce", "tesla", "amd", "instinct", "gpu", "graphics"}
_FORM_WORDS = {"sxm": "sxm", "pcie": "pcie", "hgx": "sxm", "oam": "oam"}
_IGNORED_WORDS = {"nvlink", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7"}
_VRAM_RE = re.compile(r"\b(\d+(?:\.\d+)?)\s*(?:gb|gib|g)\b")
_SUFFIX_RE = re.compile(r"\b([a-z]*\d{4})(ti|d|s|ada|super)\b")


#: Listed VRAM ÷ the matched card's catalog VRAM inside which the listing is the card's full
#: memory, written another way: below 1 the driver-reported capacity (nvidia-smi total: a 48 GiB
#: L40S shows 46068 MiB = 0.94 with ECC, which reserves 1/16 of GDDR6; an 80 GiB H100 79.65 =
#: 0.996; an A10G/L4 22.35 of 24 = 0.93, the lowest reading in the seed data), above 1 the
#: marketed GB of the same stacks (gpuhunt's ``correct_gpu_memory_gib`` 7 % rule: "192 GB"
#: of a GB200's 186 GiB). 0.90 keeps a margin below the lowest reading yet far above a
#: different size of one family (H100 80 vs 96 GB is 0.83, A100 40 vs 80 GB 0.5).
FULL_CARD_BAND = (0.90, 1.07)


def stored_vram_gib(
    listed_gib: float | None, catalog_gib: float | None, gpu_count: float = 1
) -> float | None:
    """The VRAM per GPU an offer stores: the matched card's catalog size when the listing is
    that card's full memory (within :data:`FULL_CARD_BAND` of it), else the listing as is
    (2 decimals). The one rule of seed and ingest, so the same card has one VRAM everywhere.

    Args:
        listed_gib: VRAM per GPU as the provider lists it (GiB or GB), ``None`` when unlisted.
        catalog_gib: the matched catalog GPU's VRAM, GiB; ``None`` when nothing matched.
        gpu_count: GPUs of the offer. A slice (below 1) that lists its own share (3 GiB of an
            L4 at 1/8) keeps it; one that lists the whole card's reading gets the card's size
            (the share is taken from it later, :func:`app.model.memory.vram_per_gpu_gib`).
    """
    if listed_gib is None:
        return None
    if catalog_gib:
        low, high = FULL_CARD_BAND
        share = catalog_gib * gpu_count
        own_share = 0 < gpu_count < 1 and abs(listed_gib - share) < abs(listed_gib - catalog_gib)
        if low * catalog_gib <= listed_gib <= high * catalog_gib and not own_share:
            return float(catalog_gib)
    return round(listed_gib, 2)


def vram_note(
    name: str, listed_gib: float | None, catalog_gib: float | None, stored_gib: float | None
) -> str | None:
    """What :func:`stored_vram_gib` did, in words, when it replaced the listed figure (the raw
    listing stays visible here), else ``None``."""
    if listed_gib is None or catalog_gib is None or stored_gib != catalog_gib:
        return None
    if round(listed_gib, 2) == round(catalog_gib, 2):
        return None
    how = (
        "the driver-reported capacity"
        if listed_gib < catalog_gib
        else "the same memory in marketed units"
    )
    return (
        f"listed VRAM {listed_gib:g} GiB per GPU is {how} of the {name}'s "
        f"{catalog_gib:g} GiB; stored as {catalog_gib:g}"
    )


def mismatch_note(
    match: GpuMatch | None, listed_gib: float | None, catalog_gib: float | None
) -> str | None:
    """A listed VRAM far from the datasheet (kept as listed; :meth:`GpuNameNormaliser.match`
    flags it), in words, or ``None``."""
    if match is None or not match.vram_mismatch or listed_gib is None or catalog_gib is None:
        return None
    return (
        f"listed VRAM {listed_gib:g} GiB per GPU differs from the {match.canonical_name}'s "
        f"{catalog_gib:g} GiB datasheet size (kept as listed)"
    )


def offer_vram(
    identity: GpuIdentity, listed_gib: float | None, catalog_gib: float | None, gpu_count: float
) -> tuple[float | None, str | None]:
    """The VRAM per GPU (GiB) and the GPU note an offer stores, from what
    :meth:`GpuNameNormaliser.identify` concluded: the one rule of seed data
    (:mod:`app.db.seed`) and the nightly refresh (:mod:`app.db.ingest`).

    The VRAM is :func:`stored_vram_gib` of the listing against the matched card's
    ``catalog_gib``; the note joins what happened to the VRAM (replaced by the catalog size, or
    kept because it is far from it) and how the GPU was identified.
    """
    match = identity.match
    stored = stored_vram_gib(listed_gib, catalog_gib if match else None, gpu_count)
    vram_words = mismatch_note(match, listed_gib, catalog_gib) or (
        vram_note(match.canonical_name, listed_gib, catalog_gib, stored) if match else None
    )
    notes = [n for n in (vram_words, identity.note) if n]
    return stored, "; ".join(notes) or None


@dataclass(frozen=True, slots=True)
class CatalogGpu:
    """What the normaliser needs of a catalog row. ``form_factor`` as in the catalog."""

    canonical_name: str
    vram_gib: float
    form_factor: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GpuMatch:
    """Result of a match: the catalog name and how it was found."""

    canonical_name: str
    how: str  # "alias" | "family"
    vram_mismatch: bool = False


@dataclass(frozen=True, slots=True)
class ParsedName:
    """A label split into family, VRAM (GB as written) and form factor."""

    key: str
    family: str
    vram_gib: float | None
    form: str | None


#: A GPU count written into a GPU name, as listings title machines: ``8x H100``, ``8 x A100``,
#: ``H100 x8``, ``H100x8``, ``4×4090``, ``RTX A6000 x 2``. The count and the name apart (group 1
#: or 4 the count, up to three digits). A trailing ``x`` counts only after a space or a digit, so
#: the X of ``RTX 2080``, ``GTX 1080``, ``Radeon RX 7900`` or ``MI300X`` is never read as one.
_COUNT_IN_NAME = re.compile(
    r"^\s*(\d{1,3})\s*[x×*]\s*(\S.*?)\s*$|^\s*(.+?)(?:\s+|(?<=\d))[x×*]\s*(\d{1,3})\s*$", re.I
)


def count_in_name(raw: str) -> str:
    """What to write instead when ``raw`` (a name no catalog model has) holds a GPU count
    (:data:`_COUNT_IN_NAME`): ``": the count goes in gpu_count (8), the name alone in gpu
    ('H100')"``; ``""`` otherwise."""
    m = _COUNT_IN_NAME.match(raw)
    if m is None:
        return ""
    count, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    return f": the count goes in gpu_count ({int(count)}), the name alone in gpu ({name!r})"


def form_hint(interconnect: str | None) -> str | None:
    """The board form an offer's interconnect label implies, for :meth:`GpuNameNormaliser.match`:
    ``sxm`` for NVSwitch/SXM boards, ``pcie`` for PCIe, else ``None`` (``nvlink`` bridges exist
    on PCIe cards too)."""
    if interconnect in ("nvswitch", "sxm"):
        return "sxm"
    return "pcie" if interconnect == "pcie" else None


def normalise_key(raw: str) -> str:
    """Normalise a GPU label for comparison (see module docstring)."""
    s = raw.lower()
    s = re.sub(r"\([^)]*\)", " ", s)
    s = re.sub(r"[_\-/,:]+", " ", s)
    s = _SUFFIX_RE.sub(lambda m: f"{m.group(1)} {'super' if m.group(2) == 's' else m.group(2)}", s)
    words = [w for w in s.split() if w not in _DROP_WORDS]
    return " ".join(words)


def parse_name(raw: str) -> ParsedName:
    """Split ``raw`` into a family key, VRAM and form factor."""
    key = normalise_key(raw)
    vram: float | None = None
    m = _VRAM_RE.search(key)
    if m:
        vram = float(m.group(1))
    rest = _VRAM_RE.sub(" ", key)
    form: str | None = None
    family_words: list[str] = []
    for word in rest.split():
        base = re.sub(r"\d+$", "", word) if word.startswith("sxm") else word
        if base in _FORM_WORDS:
            form = _FORM_WORDS[base]
        elif word in _IGNORED_WORDS:
            continue
        else:
            family_words.append(word)
    return ParsedName(key=key, family=" ".join(family_words), vram_gib=vram, form=form)


def _family_variants(family: str) -> list[str]:
    """The family key, and without a leading ``rtx`` (``rtx a6000`` and ``a6000``)."""
    out = [family]
    words = family.split()
    if len(words) > 1 and words[0] == "rtx":
        out.append(" ".join(words[1:]))
    return out


class GpuNameNormaliser:
    """Map labels to catalog canonical names. Build once per catalog; ``match`` is pure."""

    def __init__(
        self,
        gpus: Iterable[CatalogGpu],
        extra_aliases: Mapping[str, str | Sequence[str]] | None = None,
    ):
        self._gpus: dict[str, CatalogGpu] = {}
        #: VRAM sizes (GB as written) a catalog or alias-table label records for a card that
        #: its datasheet does not have: memory-modified boards rented as such ("2080 Ti 22GB
        #: (memory mod, China)", "RTX 4090 48GB"), which :meth:`resolve_label` accepts
        self._mods: dict[str, list[float]] = {}
        #: normalised labels the alias table (a provider's spelling) decides
        self._table_keys: set[str] = set()
        self._order: dict[str, int] = {}
        self._alias: dict[str, list[str]] = {}
        self._family: dict[str, list[str]] = {}
        self._form: dict[str, str | None] = {}
        for i, gpu in enumerate(gpus):
            self._gpus[gpu.canonical_name] = gpu
            self._order[gpu.canonical_name] = i
            ff = (gpu.form_factor or "").lower()
            self._form[gpu.canonical_name] = ff if ff in ("sxm", "pcie", "oam") else None
            names = (gpu.canonical_name, *gpu.aliases)
            for name in names:
                self._add(self._alias, normalise_key(name), gpu.canonical_name)
                self._note_mod(name, gpu)
            for name in names:
                parsed = parse_name(name)
                vram_ok = parsed.vram_gib is None or _close(parsed.vram_gib, gpu.vram_gib)
                if parsed.family and vram_ok:
                    for fam in _family_variants(parsed.family):
                        self._add(self._family, fam, gpu.canonical_name)
        #: labels the alias table lists under several GPUs ("RTX 6000"): :meth:`identify`
        #: weighs them all; :meth:`match` keeps the first listed
        self._several: dict[str, list[str]] = {}
        #: alias-table labels that normalise to the bare name of a family of several models
        #: (Vultr's ``NVIDIA_A100`` → ``a100``): one provider's spelling, so they apply to that
        #: exact label (case and surrounding space aside), not to every label of the family
        self._exact: dict[str, list[str]] = {}
        for alias, canonicals in (extra_aliases or {}).items():
            listed = [canonicals] if isinstance(canonicals, str) else list(canonicals)
            known = [c for c in listed if c in self._gpus]
            if known:
                key = normalise_key(alias)
                if len(self._family.get(key, [])) > 1 and parse_name(alias).family == key:
                    self._exact[_exact_key(alias)] = known
                    continue
                self._alias[key] = known[:1]
                self._table_keys.add(key)
                for canonical in known:
                    self._note_mod(alias, self._gpus[canonical])
                if len(known) > 1:
                    self._several[key] = known

    def _note_mod(self, label: str, gpu: CatalogGpu) -> None:
        """Record the VRAM ``label`` states for ``gpu`` when its datasheet size is another
        (a memory-modified board, :attr:`_mods`)."""
        vram = parse_name(label).vram_gib
        if vram is not None and not _close(vram, gpu.vram_gib):
            sizes = self._mods.setdefault(gpu.canonical_name, [])
            if vram not in sizes:
                sizes.append(vram)

    @staticmethod
    def _add(index: dict[str, list[str]], key: str, name: str) -> None:
        if key:
            bucket = index.setdefault(key, [])
            if name not in bucket:
                bucket.append(name)

    @property
    def canonical_names(self) -> list[str]:
        """Catalog names in catalog order."""
        return list(self._gpus)

    def family_members(self, raw: str) -> list[str]:
        """Every catalog model of the family ``raw`` names that has the VRAM and form factor
        it names, if it names them, in catalog order.

        ``"A100"`` → all four A100s (PCIe and SXM4, 40 and 80 GB); ``"A100 80GB"`` → both
        80 GB forms; ``"H100 PCIe"`` → the PCIe one; ``"a100 sxm4 80gb"`` → one model. VRAM
        counts as the same within :data:`VRAM_TOLERANCE` (GB or GiB as written). ``[]`` when
        no family fits. Used by offer filters, where a family name means "any of them".
        """
        parsed = parse_name(raw)
        for fam in _family_variants(parsed.family):
            members = self._family.get(fam)
            if members:
                break
        else:
            return []
        if parsed.form is not None:
            members = [c for c in members if self._form[c] in (parsed.form, None)]
        if parsed.vram_gib is not None:
            vram = parsed.vram_gib
            members = [c for c in members if _close(vram, self._gpus[c].vram_gib)]
        return sorted(members, key=lambda c: self._order[c])

    def match(
        self, raw: str, *, vram_gib: float | None = None, form_hint: str | None = None
    ) -> GpuMatch | None:
        """Find the catalog GPU for ``raw``.

        Args:
            raw: the label as the provider or benchmark writes it.
            vram_gib: VRAM per GPU listed with the offer, if any (GiB or GB: the 12 % tolerance
                absorbs the difference).
            form_hint: ``sxm`` or ``pcie`` when the offer's interconnect implies it
                (NVSwitch/SXM boards → ``sxm``).

        Returns:
            The match, or ``None`` when no catalog family fits (the caller stores the raw name
            and reports it).
        """
        parsed = parse_name(raw)
        vram = vram_gib if vram_gib else parsed.vram_gib
        form = parsed.form or form_hint
        family: list[str] = []
        for fam in _family_variants(parsed.family):
            family = self._family.get(fam, [])
            if family:
                break
        candidates = self._exact.get(_exact_key(raw), [])[:1] or self._alias.get(parsed.key)
        how = "alias"
        if not candidates:
            candidates, how = family, "family"
        if not candidates:
            return None
        if how == "alias":
            # An exact alias already names the part; only the listed VRAM can contradict it
            # ("GH200 480GB" names CPU memory, not VRAM).
            vram = vram_gib or None
        chosen = self._choose(candidates, vram, form)
        mismatch = vram is not None and not _close(vram, self._gpus[chosen].vram_gib)
        wrong_form = form is not None and self._form[chosen] not in (None, form)
        if (mismatch or wrong_form) and family and how == "alias":
            alt = self._choose(family, vram, form)
            alt_mismatch = vram is not None and not _close(vram, self._gpus[alt].vram_gib)
            if not alt_mismatch or mismatch:
                chosen, how, mismatch = alt, "family", alt_mismatch
        return GpuMatch(canonical_name=chosen, how=how, vram_mismatch=mismatch)

    def identify(
        self,
        raw: str,
        *,
        vram_gib: float | None = None,
        form_hint: str | None = None,
        context: Iterable[str | None] = (),
        gpu_count: float = 1,
        conventions: bool = True,
    ) -> GpuIdentity:
        """Identify the GPU of an offer: a match, an ambiguity, or no match; never a guess.

        The candidates are the label's alias entries (``gpu_aliases.csv`` may list one label
        under several GPUs: "RTX 6000") and, for a bare family label ("H100", "A100"), every
        model of the family. They are narrowed, in order, by the form factor (from the label,
        ``form_hint`` or the context), by words that tell the candidates apart appearing in the
        context (instance type, the provider's own label: "ada", "sxm4", "nvl"), and by the
        VRAM (listed, or written in the label or the context: ``gpu_8x_a100_80gb_sxm4``).
        More than one candidate left is an ambiguity (RTX A6000 and RTX 6000 Ada share 48 GB).

        Args:
            raw: the provider's GPU label.
            vram_gib: VRAM per GPU as listed (GiB or GB; the 12 % tolerance absorbs the unit).
            form_hint: ``sxm``/``pcie`` implied by the interconnect (NVSwitch boards: ``sxm``).
            context: other strings naming the machine (instance type, provider label).
            gpu_count: GPUs of the offer. Below one (a slice of one card) the listed VRAM may be
                the whole card's or the slice's own memory (3 GiB of an L4); when only
                ``vram_gib / gpu_count`` fits a candidate, that is the card the slice is cut
                from, and no mismatch is flagged. The one rule for fractional GPUs of every
                provider, at seed and at ingest.
            conventions: whether the alias entries of a bare family name (catalog and
                ``gpu_aliases.csv`` rows recording how a provider or tool names a model:
                "A100", "V100") pick the model. True for offers (a provider's listing); False
                for a what-if GPU typed without a provider, where "A100" stays ambiguous.
        """
        parsed = parse_name(raw)
        ctx = [_instance_type_name(c) or parse_name(c) for c in context if c]
        ctx_words: set[str] = set()
        for c in ctx:
            ctx_words |= _words(c.key)
        ctx_words -= _words(parsed.key)  # the label's own words decide nothing here
        form = parsed.form or form_hint or next((c.form for c in ctx if c.form), None)
        family: list[str] = []
        for fam in _family_variants(parsed.family):
            family = self._family.get(fam, [])
            if family:
                break
        alias = list(
            self._exact.get(_exact_key(raw))
            or self._several.get(parsed.key)
            or self._alias.get(parsed.key, [])
        )
        if (
            not conventions
            and parsed.key in self._table_keys
            and parsed.key not in self._several  # listed under several GPUs: all of them
            and len(self._open(family, parsed)) > 1
        ):
            # an alias-table row is a provider's spelling ("A100-80GB" is SXM4 at Lambda and
            # AWS): a label typed without a provider that leaves several models open by its own
            # family, form and VRAM (A100 SXM4 or PCIe 80GB) is not settled by it
            alias = []
        if not conventions and len(family) > 1 and parsed.key in _family_variants(parsed.family):
            # a bare family name ("A100") names every model of the family; the alias entry
            # under it is a provider's convention (SkyPilot's "A100" = 40 GB, Vultr's
            # "NVIDIA_A100" = PCIe 80 GB), which a name given without a provider does not have
            alias = []
        pool = list(dict.fromkeys(alias + family))
        # a size in the context counts only when it is a candidate's ("2048gb" is host RAM)
        ctx_vram = next(
            (
                c.vram_gib
                for c in ctx
                if c.vram_gib and any(_close(c.vram_gib, self._gpus[g].vram_gib) for g in pool)
            ),
            None,
        )
        vram = vram_gib or parsed.vram_gib or ctx_vram
        if vram_gib and 0 < gpu_count < 1 and pool:
            card = vram_gib / gpu_count  # the slice listed its own memory?
            if not any(_close(vram_gib, self._gpus[c].vram_gib) for c in pool) and any(
                _close(card, self._gpus[c].vram_gib) for c in pool
            ):
                vram = card
        if not pool:
            return GpuIdentity(
                "none",
                note=f"GPU {raw!r} matches no catalog model: no specs or measurements to "
                "estimate from",
            )
        how: list[str] = []
        if form is not None and len(pool) > 1:
            same = [c for c in pool if self._form[c] in (form, None)]
            if same and len(same) < len(pool):
                pool = same
                how.append(f"form factor {form}")
        if len(pool) > 1:
            # a board generation the label writes tells models of one form apart ("V100 32GB
            # SXM2": the SXM2 card, not the SXM3 one)
            # (sizes aside: the VRAM step below weighs them as numbers)
            keys = {c: _board_words(normalise_key(c)) for c in pool}
            common = set.intersection(*keys.values())
            written = _board_words(parsed.key) - _words(parsed.family)  # sxm2, not v100
            told = [c for c in pool if (keys[c] - common) & written]
            if told and len(told) < len(pool):
                pool = told
                how.append("its label")
        if len(pool) > 1:
            keys = {c: _words(normalise_key(c)) for c in pool}
            common = set.intersection(*keys.values())
            told = [c for c in pool if (keys[c] - common) & ctx_words]
            if told and len(told) < len(pool):
                pool = told
                how.append("the instance's name")
        mismatch = False
        if vram is not None:
            fits = [c for c in pool if _close(vram, self._gpus[c].vram_gib)]
            if fits and len(fits) < len(pool):
                pool = fits
                how.append(f"VRAM {vram:g}")
            elif not fits:
                mismatch = True
                best = min(abs(self._gpus[c].vram_gib - vram) for c in pool)
                pool = [c for c in pool if abs(self._gpus[c].vram_gib - vram) == best]
        if len(pool) > 1 and any(c in alias for c in pool):
            pool = [c for c in pool if c in alias]  # the label's own alias entries first
            how.append("the alias table (seed_data/gpu_aliases.csv: what providers list it as)")
        candidates = sorted(dict.fromkeys(alias + family), key=lambda c: self._order[c])
        # what the label itself leaves open ("H100-SXM" never was an H100 PCIe): the note's
        # "could also be" list
        label_open = [
            c
            for c in candidates
            if (parsed.form is None or self._form[c] in (parsed.form, None))
            and (parsed.vram_gib is None or _close(parsed.vram_gib, self._gpus[c].vram_gib))
        ]
        if len(pool) > 1:
            return GpuIdentity(
                "ambiguous",
                candidates=tuple(sorted(pool, key=lambda c: self._order[c])),
                note=f"GPU {raw!r} is ambiguous: could be {' or '.join(sorted(pool))}; "
                "nothing in the listing tells them apart, so it is not guessed",
            )
        chosen = min(pool, key=lambda c: self._order[c])
        dropped = [c for c in label_open if c != chosen]
        note = _identify_note(raw, chosen, dropped, " and ".join(how) or "its label")
        return GpuIdentity(
            "match",
            GpuMatch(chosen, "alias" if chosen in alias else "family", mismatch),
            candidates=tuple(candidates),
            note=note,
        )

    def _open(self, candidates: list[str], parsed: ParsedName) -> list[str]:
        """The ``candidates`` a label's own form factor and VRAM leave open."""
        return [
            c
            for c in candidates
            if (parsed.form is None or self._form[c] in (parsed.form, None))
            and (parsed.vram_gib is None or _close(parsed.vram_gib, self._gpus[c].vram_gib))
        ]

    def resolve_label(
        self,
        raw: str,
        *,
        vram_gib: float | None = None,
        form_hint: str | None = None,
        gpu_count: float = 1,
    ) -> LabelGpu:
        """The GPU a label typed without a provider names (a what-if machine): the label rule
        of the README ("GPU labels"). The model and board form the label writes, and the VRAM
        it states (``4060-12GB``, ``3090-24G``, ``V100 32GB SXM2``), pick the catalog variant
        that has them (:meth:`identify` without the providers' conventions). A stated VRAM
        that no variant of the family has is the card's only where the catalog or the alias
        table records a memory-modified board of that size (``2080 Ti 22GB``, ``4090-48G``,
        ``3080-20G``): then that card with the stated VRAM; otherwise it is refused, naming
        the variants and their VRAM. ``vram_gib`` given apart from the label is an override
        (a slice, a modified card) and is never refused.

        Raises:
            LabelError: the label names no catalog model, leaves several open (the reason
                lists them), or states a VRAM no variant has.
        """
        # a size or board written in a remark counts too: Vast's "RTX 4090 (48 GB variant)",
        # Lambda's "A100 (40 GB SXM4)"
        remark = parse_name(" ".join(re.findall(r"\(([^)]*)\)", raw)))
        stated = parse_name(raw).vram_gib or remark.vram_gib
        identity = self.identify(
            raw,
            vram_gib=vram_gib or stated,
            form_hint=form_hint or remark.form,
            gpu_count=gpu_count,
            conventions=False,
        )
        if identity.status == "ambiguous":
            raise LabelError(
                f"GPU {raw!r} is ambiguous: could be {' or '.join(identity.candidates)}; "
                "name one of them",
                tuple(identity.candidates),
            )
        if identity.match is None:
            raise LabelError(f"unknown GPU {raw!r}{count_in_name(raw)}")
        chosen = identity.match.canonical_name
        if vram_gib or stated is None or not identity.match.vram_mismatch:
            return LabelGpu(chosen, None, identity.note)
        pool = list(identity.candidates) or [chosen]
        modded = [c for c in pool if any(_close(stated, v) for v in self._mods.get(c, ()))]
        if modded:
            card = min(modded, key=lambda c: self._order[c])
            note = (
                f"{raw!r}: a memory-modified {card} with {stated:g} GB (its datasheet "
                f"{self._gpus[card].vram_gib:g} GiB); the estimate uses the stated VRAM"
            )
            return LabelGpu(card, stated, note)
        sizes = ", ".join(f"{c} ({self._gpus[c].vram_gib:g} GB)" for c in pool)
        raise LabelError(
            f"GPU {raw!r} states {stated:g} GB, which no variant has: {sizes}; name one of "
            "them, or give vram_gib for a modified card"
        )

    def _choose(self, candidates: list[str], vram: float | None, form: str | None) -> str:
        pool = list(candidates)
        if form is not None:
            same_form = [c for c in pool if self._form[c] == form]
            pool = same_form or pool
        if vram is not None:
            best = min(abs(self._gpus[c].vram_gib - vram) for c in pool)
            pool = [c for c in pool if abs(self._gpus[c].vram_gib - vram) == best]
        return min(pool, key=lambda c: self._order[c])


@dataclass(frozen=True, slots=True)
class LabelGpu:
    """What :meth:`GpuNameNormaliser.resolve_label` resolved: the catalog model, the VRAM per
    GPU the label states when it is not the model's own (a memory-modified board, GB as
    written; ``None``: the catalog's), and a note in words (``None``: nothing to say)."""

    canonical_name: str
    vram_gib: float | None = None
    note: str | None = None


class LabelError(ValueError):
    """A GPU label that names no catalog model, several, or a VRAM none of them has;
    ``candidates`` are the catalog models an ambiguous label leaves open (else empty)."""

    def __init__(self, reason: str, candidates: tuple[str, ...] = ()):
        super().__init__(reason)
        self.candidates = candidates


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """What :meth:`GpuNameNormaliser.identify` concluded.

    ``status``: ``match`` (``match`` is set), ``ambiguous`` (``candidates`` lists the catalog
    GPUs the label and its context leave open; nothing is guessed) or ``none`` (no catalog
    family fits). ``note`` says in words what was resolved, how, or why not.
    """

    status: str
    match: GpuMatch | None = None
    candidates: tuple[str, ...] = ()
    note: str | None = None


#: Verda (DataCrunch) instance types: GPU count, model, then VRAM in GB with ``S`` for an SXM
#: board, then vCPUs (``1H100.80S.30V`` is "1x H100 SXM5 80GB", ../shared/docs/providers.md
#: §7.5; ``1H200.141S.44V`` is the H200 SXM5 141GB).
_VERDA_TYPE_RE = re.compile(r"^\d+[a-z0-9]+\.(\d+)s\.\d+v$")


def _exact_key(raw: str) -> str:
    """A label as written, for the alias table's provider spellings (case and outer space
    aside)."""
    return " ".join(raw.split()).lower()


#: Instance families built only on SXM boards (HGX, NVSwitch), whatever GPU count a size
#: rents, so their instance type settles an "H100" label's form factor:
#: * AWS EC2 P5 / P5e / P5en (``p5.4xlarge`` 1 GPU … ``p5.48xlarge`` 8): H100 / H200 on the
#:   8-GPU NVSwitch board. ../shared/docs/offers_public.md (interconnect: "``nvswitch`` for
#:   8-GPU SXM/HGX boards (p4d/p4de/p5/p5en/p6 …)") and ../shared/docs/providers.md §10 alias
#:   table (AWS GpuInfo ``H100`` of p5 is the ``H100-SXM`` 80 GB row); seen 2026-12-01.
#: * GCP A3 (``a3-highgpu-{1,2,4,8}g``, ``a3-megagpu-8g``, ``a3-edgegpu-8g``, ``a3-ultragpu-8g``):
#:   Google's GPU table (https://cloud.google.com/compute/docs/gpus, as reproduced in
#:   huggingface.co/spaces/Elfsong/gcp_allocator@3a1a5af app.py) gives the A3 H100 80GB as
#:   HBM3 at 3.35 TBps with NVLink full mesh at 900 GBps, the SXM5 part's figures (the PCIe
#:   card: 2.0 TB/s HBM2e, a 600 GB/s bridge); the current page names A3 Ultra's GPUs
#:   "NVIDIA H200 SXM"; providers.md §10 maps GCP's ``nvidia-h100-80gb`` to ``H100-SXM``.
_SXM_INSTANCE_FAMILIES = re.compile(r"^(?:p5(?:e|en)?\.[a-z0-9]+|a3-[a-z]+gpu-\d+g)$")


def _instance_type_name(text: str) -> ParsedName | None:
    """A context string that is an instance type whose naming scheme gives the board form and
    VRAM (:data:`_VERDA_TYPE_RE`) or the form alone (:data:`_SXM_INSTANCE_FAMILIES`), as a
    :class:`ParsedName`; ``None`` for any other text."""
    key = text.strip().lower()
    if _SXM_INSTANCE_FAMILIES.match(key):
        return ParsedName(key=key, family="", vram_gib=None, form="sxm")
    m = _VERDA_TYPE_RE.match(key)
    if not m:
        return None
    return ParsedName(key=key, family="", vram_gib=float(m.group(1)), form="sxm")


def _words(key: str) -> set[str]:
    return set(key.split())


def _board_words(key: str) -> set[str]:
    """The words of a normalised label but its sizes (``32gb``)."""
    return {w for w in key.split() if not _VRAM_RE.fullmatch(w)}


def _identify_note(raw: str, chosen: str, dropped: list[str], how: str) -> str | None:
    if not dropped:
        return None
    return f"{raw!r} could also be {', '.join(dropped)}; {chosen} by {how}"


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= VRAM_TOLERANCE * max(a, b)
