"""Reference-data listings: the GPU catalog and the measured benchmarks, searchable."""

from __future__ import annotations

from typing import Any

from sqlalchemy import String, cast, func, or_, select
from sqlalchemy.orm import Session

from app.db.models import GpuModel, ThroughputBenchmark
from app.services.offers import FilterError
from app.services.reference import ReferenceData


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_gpus(session: Session, ref: ReferenceData, q: str | None = None) -> list[dict[str, Any]]:
    """Catalog rows (every column) by id; ``q`` keeps GPUs whose name, alias, vendor,
    architecture or market contains it (case-insensitive), or whose name ``q`` resolves to.
    """
    rows = list(session.scalars(select(GpuModel).order_by(GpuModel.id)))
    out = [{c.name: getattr(g, c.name) for c in GpuModel.__table__.columns} for g in rows]
    if not q or not q.strip():
        return out
    needle = q.strip().lower()
    resolved = ref.resolve_gpu(q.strip())

    def hit(g: dict[str, Any]) -> bool:
        if g["canonical_name"] == resolved:
            return True
        fields = [
            g["canonical_name"],
            g["vendor"],
            g["architecture"],
            g["market"] or "",
            *(g["aliases"] or []),
        ]
        return any(needle in str(f).lower() for f in fields)

    return [g for g in out if hit(g)]


def search_benchmarks(
    session: Session,
    ref: ReferenceData,
    *,
    gpu: str | None = None,
    workload: str | None = None,
    q: str | None = None,
    ids: list[int] | None = None,
    status: str | None = None,
    limit: int = 500,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """Measured throughput rows by id, filtered; returns (page of rows, total matching).

    ``gpu`` is any catalog name or alias, or a family name standing for every model of the
    family it fits (:meth:`ReferenceData.resolve_gpu_filter`: ``A100 80GB``); ``workload`` a
    benchmark label (e.g. "ResNet-50 v1.5") or a preset slug, which selects the labels that
    preset stands for;
    ``q`` a case-insensitive substring of the label, task, GPU as published, framework,
    precision or source; ``ids`` selects measurements by id (those an estimate cites);
    ``status`` ``accepted`` or ``held`` (submitted rows held for review). Each row gains ``gpu``
    (canonical name), ``throughput_per_gpu`` and ``submitted`` (sent by ``gpucost bench``).

    Raises:
        FilterError: unknown GPU.
    """
    stmt = select(ThroughputBenchmark)
    if gpu:
        names = ref.resolve_gpu_filter(gpu)
        if not names:
            raise FilterError("gpu", f"unknown GPU {gpu!r}")
        stmt = stmt.where(
            ThroughputBenchmark.gpu_model_id.in_([ref.gpu_ids_by_name[n] for n in names])
        )
    if workload:
        labels = (
            list(ref.presets[workload].benchmark_workloads)
            if workload in ref.presets
            else [workload]
        )
        stmt = stmt.where(ThroughputBenchmark.workload.in_(labels))
    if ids:
        stmt = stmt.where(ThroughputBenchmark.id.in_(ids))
    if status:
        stmt = stmt.where(ThroughputBenchmark.status == status)
    if q and q.strip():
        pattern = _like(q.strip())
        stmt = stmt.where(
            or_(
                *(
                    func.lower(cast(col, String)).like(pattern, escape="\\")
                    for col in (
                        ThroughputBenchmark.workload,
                        ThroughputBenchmark.task,
                        ThroughputBenchmark.gpu_label,
                        ThroughputBenchmark.framework,
                        ThroughputBenchmark.precision_label,
                        ThroughputBenchmark.source,
                        ThroughputBenchmark.source_ref,
                    )
                )
            )
        )
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = session.scalars(stmt.order_by(ThroughputBenchmark.id).offset(offset).limit(limit))
    items = []
    for b in rows:
        item = {c.name: getattr(b, c.name) for c in ThroughputBenchmark.__table__.columns}
        item["gpu"] = ref.gpu_names_by_id.get(b.gpu_model_id) if b.gpu_model_id else None
        item["throughput_per_gpu"] = b.throughput_total / b.gpu_count
        item["submitted"] = b.source == "submitted"
        items.append(item)
    return items, total


def benchmark_labels(session: Session) -> list[str]:
    """The distinct workload labels of the measurements, sorted."""
    return sorted(session.scalars(select(ThroughputBenchmark.workload).distinct()))
