"""Launch files for an offer: a SkyPilot task YAML or a dstack task configuration.

A file asks the launcher for that provider (its cloud or backend name), that instance type,
region, GPU × count, spot or on-demand, and a disk at least as large as the job needs
(:func:`app.model.cost.disk_needed_gb`: dataset + 16-bit weights + kept checkpoints), with
the job's estimate and budget as YAML comments. Which of our providers each launcher supports,
under what name, and whether it takes the provider's own instance-type names, is data:
``seed_data/launchers.csv``; the launchers' GPU names per catalog GPU are
``seed_data/launcher_gpus.csv`` (each row with its source). An offer of a provider neither
launcher supports raises :class:`LaunchError` (a 422 naming ``format``), never a file.

Formats (the launchers' own documents):

- SkyPilot task YAML (``sky launch task.yaml``): ``resources.cloud``, ``region``,
  ``instance_type``, ``accelerators`` (``NAME:COUNT``), ``use_spot``, ``disk_size`` (GB),
  https://docs.skypilot.co/en/latest/reference/yaml-spec.html
- dstack task configuration (``dstack apply -f task.dstack.yml``): ``backends``, ``regions``,
  ``instance_types``, ``spot_policy``, ``max_price`` (USD/hour), ``resources.gpu`` (name,
  memory range, count), ``resources.disk`` (``NGB..``: at least),
  https://dstack.ai/docs/reference/dstack.yml/task/
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from app.data.rows import LauncherGpuRow, LauncherRow, read_rows
from app.interface.schemas import EstimateOut, OfferOut

Format = Literal["skypilot", "dstack"]
FORMATS: tuple[Format, ...] = ("skypilot", "dstack")
#: How each launcher is called in messages.
LAUNCHER_NAMES = {"skypilot": "SkyPilot", "dstack": "dstack"}
#: File name suffix per launcher.
SUFFIX = {"skypilot": ".sky.yaml", "dstack": ".dstack.yml"}
#: Disk each launcher gives when none is asked, GB: SkyPilot ``disk_size`` defaults to 256
#: (docs.skypilot.co yaml-spec "disk_size: 256"); dstack ``resources.disk`` to ``100GB..``
#: (dstack 0.22.5 ResourcesSpec default ``{"size": {"min": 100.0}}``). A file never asks for
#: less than the default, so a small job does not shrink the machine's disk.
DEFAULT_DISK_GB = {"skypilot": 256, "dstack": 100}
#: GPU memory range written for dstack, as a fraction either side of the catalog's VRAM:
#: gpuhunt lists nominal sizes (B300 270) that differ a little from the catalog's (268.59 GiB).
MEMORY_SLACK = 0.03
#: A region or instance type is written only when it is a name (no spaces or parentheses):
#: listings like "all RunPod zones in the catalog" or "East Coast (NY2)" leave the launcher to
#: choose; "us-east-1 (use1-az5)" is region us-east-1.
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)(?: \(.*\))?$")
_NO_REGION = {"unspecified", "china", "global", "any"}


class LaunchError(ValueError):
    """No launch file for this offer and format: ``field`` (``format``) and the reason, with
    the HTTP status it maps to (422: the request is well formed, the offer cannot be
    launched that way)."""

    def __init__(self, field: str, reason: str, status: int = 422):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
        self.status = status


@dataclass(frozen=True, slots=True)
class Target:
    """How a launcher names one of our providers (``seed_data/launchers.csv``)."""

    provider: str
    launcher: str
    cloud: str
    instance_types: bool


@dataclass(frozen=True, slots=True)
class LaunchData:
    """The launchers' provider and GPU names."""

    targets: dict[tuple[str, str], Target]
    gpu_names: dict[tuple[str, str, str], str]

    def target(self, provider: str, launcher: str) -> Target | None:
        """The launcher's name for ``provider``, ``None`` when it does not support it."""
        return self.targets.get((provider, launcher))

    def gpu_name(self, gpu: str | None, launcher: str, provider: str) -> str | None:
        """The launcher's name for catalog GPU ``gpu`` (a provider's own row first)."""
        if gpu is None:
            return None
        return self.gpu_names.get((gpu, launcher, provider)) or self.gpu_names.get(
            (gpu, launcher, "")
        )

    def supporters(self, provider: str) -> list[str]:
        """The launchers that support ``provider``."""
        return [f for f in FORMATS if (provider, f) in self.targets]

    def clouds(self, launcher: str) -> list[str]:
        """Our providers the launcher supports, sorted."""
        return sorted(p for p, f in self.targets if f == launcher)


@functools.cache
def load_launch_data(seed_dir: Path) -> LaunchData:
    """``launchers.csv`` and ``launcher_gpus.csv`` of ``seed_dir``, read once per folder."""
    targets = {
        (r.provider, r.launcher): Target(r.provider, r.launcher, r.cloud, r.instance_types)
        for r in read_rows(seed_dir / "launchers.csv", LauncherRow)
    }
    names = {
        (r.gpu, r.launcher, r.provider): r.name
        for r in read_rows(seed_dir / "launcher_gpus.csv", LauncherGpuRow)
    }
    return LaunchData(targets, names)


@dataclass(frozen=True, slots=True)
class LaunchJob:
    """What a launch file states: the offer, its price in ``currency``, and for a workload
    its estimate, the disk it needs (GB) and the budget it was ranked under."""

    offer: OfferOut
    price_per_hour: float | None
    currency: str
    seen_on: str | None
    workload: dict[str, object] | None = None
    estimate: EstimateOut | None = None
    disk: dict[str, float] | None = None
    max_total_cost: float | None = None
    max_total_hours: float | None = None


@dataclass(frozen=True, slots=True)
class LaunchFile:
    """A rendered launch file."""

    filename: str
    media_type: str
    text: str


def name_or_none(text: str | None) -> str | None:
    """``text`` when it is a launcher-usable name (``us-east-1``, ``g5.2xlarge``; the part
    before a parenthesised remark); ``None`` for prose ("all RunPod zones ...")."""
    if not text:
        return None
    m = _NAME.match(text.strip())
    if not m or m.group(1).lower() in _NO_REGION:
        return None
    return m.group(1)


def disk_gb(job: LaunchJob, launcher: str) -> int:
    """Disk to ask for, whole GB: what the job needs (rounded up), at least the launcher's
    default (:data:`DEFAULT_DISK_GB`)."""
    needed = job.disk["needed_gb"] if job.disk else 0.0
    return max(math.ceil(needed), DEFAULT_DISK_GB[launcher])


def _count(n: float) -> int | float:
    return int(n) if float(n).is_integer() else n


def _fmt(v: float | None, digits: int = 4) -> str:
    return "—" if v is None else f"{v:.{digits}g}"


def _comments(job: LaunchJob, launcher: str, notes: list[str]) -> list[str]:
    o = job.offer
    price = (
        f"{job.price_per_hour:.4g} {job.currency}/h"
        if job.price_per_hour is not None
        else "no price listed"
    )
    lines = [
        f"{LAUNCHER_NAMES[launcher]} launch file written by gpucost for offer {o.id}",
        f"offer: {o.provider} {o.instance_type}, {o.gpu or o.gpu_name_raw} x "
        f"{_count(o.gpu_count)}, {o.billing}, region as listed: {o.region}",
        f"price: {price} (as listed: {o.price_per_hour} {o.currency}/h"
        + (f", seen {job.seen_on}" if job.seen_on else "")
        + f"; source {o.source})",
    ]
    e = job.estimate
    if e is not None and job.workload is not None:
        what = job.workload.get("preset") or "custom workload"
        lines += [
            f"job: {what}, {job.workload.get('epochs')} epoch(s), precision "
            f"{job.workload.get('precision')}, micro-batch {job.workload.get('micro_batch_size')}",
            f"estimate ({e.basis}): {_fmt(e.samples_per_s)} samples/s "
            f"({_fmt(e.samples_per_s_low)}-{_fmt(e.samples_per_s_high)}); epoch "
            f"{_fmt(e.epoch_hours)} h ({_fmt(e.epoch_hours_low)}-{_fmt(e.epoch_hours_high)}); "
            f"all epochs {_fmt(e.total_hours)} h",
            f"cost: {_fmt(e.cost_per_epoch)} {e.currency}/epoch "
            f"({_fmt(e.cost_per_epoch_low)}-{_fmt(e.cost_per_epoch_high)}); all epochs "
            f"{_fmt(e.total_cost)} {e.currency}",
            f"memory: peak {e.peak_memory_gib:.1f} GiB per GPU "
            f"({e.memory_utilization:.0%} of usable), OOM risk {e.oom_risk}",
        ]
        lines += [f"warning: {w.message}" for w in e.warnings]
    else:
        lines.append("no workload given: no estimate (add the job's fields to get one)")
    if job.disk:
        d = job.disk
        lines.append(
            f"disk: the job needs {d['needed_gb']:.1f} GB (dataset {d['dataset_gb']:.1f} + "
            f"model {d['model_gb']:.1f} + checkpoints {d['checkpoints_gb']:.1f}); asking "
            f"{disk_gb(job, launcher)} GB"
        )
    lines += _budget_lines(job)
    lines += notes
    lines.append("replace the run command with your training command")
    return [f"# {line}" for line in lines]


def _verdict(value: float | None, limit: float) -> str:
    if value is None:
        return ""
    return " (within)" if value <= limit else " (OVER)"


def _budget_lines(job: LaunchJob) -> list[str]:
    """The budget and deadline the job was ranked under, and whether the estimate (spot: the
    expected figures with interruptions) meets them."""
    e = job.estimate
    out = []
    if job.max_total_cost is not None:
        cost = (e.expected_total_cost or e.total_cost) if e is not None else None
        out.append(
            f"budget: max_total_cost {job.max_total_cost:g} {job.currency}"
            + _verdict(cost, job.max_total_cost)
        )
    if job.max_total_hours is not None:
        hours = (e.expected_total_hours or e.total_hours) if e is not None else None
        out.append(
            f"deadline: max_total_hours {job.max_total_hours:g}"
            + _verdict(hours, job.max_total_hours)
        )
    return out


def _memory_range(vram_gib: float | None) -> str | None:
    if not vram_gib:
        return None
    low = math.floor(vram_gib * (1 - MEMORY_SLACK))
    high = math.ceil(vram_gib * (1 + MEMORY_SLACK))
    return f"{low}GB..{high}GB"


def _skypilot(job: LaunchJob, t: Target, gpu: str | None, notes: list[str]) -> dict[str, Any]:
    o = job.offer
    resources: dict[str, Any] = {"cloud": t.cloud}
    if region := name_or_none(o.region):
        resources["region"] = region
    if t.instance_types and (itype := name_or_none(o.instance_type)):
        resources["instance_type"] = itype
    if gpu:
        resources["accelerators"] = f"{gpu}:{_count(o.gpu_count)}"
    resources["use_spot"] = o.billing == "spot"
    resources["disk_size"] = disk_gb(job, "skypilot")
    return {"name": f"gpucost-offer-{o.id}", "resources": resources, "run": "nvidia-smi"}


def _dstack(job: LaunchJob, t: Target, gpu: str | None, notes: list[str]) -> dict[str, Any]:
    o = job.offer
    conf: dict[str, Any] = {"type": "task", "name": f"gpucost-offer-{o.id}", "backends": [t.cloud]}
    if region := name_or_none(o.region):
        conf["regions"] = [region]
    if t.instance_types and (itype := name_or_none(o.instance_type)):
        conf["instance_types"] = [itype]
    conf["spot_policy"] = "spot" if o.billing == "spot" else "on-demand"
    if o.price_per_hour is not None and o.currency == "USD":
        # dstack's max_price is USD per hour; rounded up to the cent so the offer passes
        conf["max_price"] = math.ceil(o.price_per_hour * 100) / 100
    gpu_spec: dict[str, Any] = {}
    if gpu:
        gpu_spec["name"] = [gpu]
        if memory := _memory_range(o.vram_gib_per_gpu):
            gpu_spec["memory"] = memory
    gpu_spec["count"] = _count(o.gpu_count)
    conf["resources"] = {"gpu": gpu_spec, "disk": f"{disk_gb(job, 'dstack')}GB.."}
    conf["commands"] = ["nvidia-smi"]
    return conf


def render(job: LaunchJob, launcher: Format, data: LaunchData) -> LaunchFile:
    """The launch file of ``job`` for ``launcher``.

    Raises:
        LaunchError: the launcher does not support the offer's provider (the message names
            the launcher that does, if any), or the file could name neither the offer's
            instance type nor its GPU.
    """
    o = job.offer
    target = data.target(o.provider, launcher)
    if target is None:
        others = [f for f in data.supporters(o.provider) if f != launcher]
        if others:
            hint = f"; {LAUNCHER_NAMES[others[0]]} does: use format={others[0]}"
        else:
            hint = "; neither SkyPilot nor dstack supports it" + (
                f": rent it from the provider ({o.offer_url})" if o.offer_url else ""
            )
        raise LaunchError(
            "format",
            f"{LAUNCHER_NAMES[launcher]} does not support provider {o.provider!r} "
            f"(it supports {', '.join(data.clouds(launcher))}){hint}",
        )
    if launcher == "dstack" and not float(o.gpu_count).is_integer():
        raise LaunchError(
            "format",
            f"offer {o.id} is a slice of a GPU ({o.gpu_count:g}); dstack asks for whole GPUs "
            "(resources.gpu.count is an integer)"
            + (
                "; SkyPilot does: use format=skypilot"
                if data.target(o.provider, "skypilot")
                else ""
            ),
        )
    gpu = data.gpu_name(o.gpu, launcher, o.provider)
    notes: list[str] = []
    itype = name_or_none(o.instance_type) if target.instance_types else None
    if gpu is None:
        if itype is None:
            raise LaunchError(
                "format",
                f"cannot name offer {o.id}'s GPU ({o.gpu or o.gpu_name_raw}) or instance type "
                f"({o.instance_type}) for {LAUNCHER_NAMES[launcher]}",
            )
        notes.append(f"GPU {o.gpu or o.gpu_name_raw}: the instance type fixes it")
    if name_or_none(o.region) is None:
        notes.append(f"region {o.region!r} is not a region name: the launcher picks one")
    build = _skypilot if launcher == "skypilot" else _dstack
    body = yaml.safe_dump(
        build(job, target, gpu, notes), sort_keys=False, allow_unicode=True, width=1000
    )
    text = "\n".join(_comments(job, launcher, notes)) + "\n" + body
    return LaunchFile(f"gpucost-offer-{o.id}{SUFFIX[launcher]}", "application/yaml", text)


def launch_links(
    params: Mapping[str, str], offer_params: tuple[str, ...], seed_dir: Path
) -> Callable[[OfferOut], list[tuple[str, str]]]:
    """For the ranking page: ``links(offer)`` → ``[(format, href), ...]``, one per launcher
    that supports the offer's provider (``GET /v1/offers/{id}/launch`` with the page's
    workload, currency and budget); none for a provider no launcher supports."""
    from urllib.parse import urlencode

    data = load_launch_data(seed_dir)
    keys = (*offer_params, "max_total_cost", "max_total_hours")
    carried = [(k, params[k]) for k in keys if params.get(k)]

    def links(offer: OfferOut) -> list[tuple[str, str]]:
        return [
            (f, f"/v1/offers/{offer.id}/launch?" + urlencode([("format", f), *carried]))
            for f in data.supporters(offer.provider)
        ]

    return links
