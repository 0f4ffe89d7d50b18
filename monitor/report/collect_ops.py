"""Operations facts for the report: deployment changes and capacity notes.

Deployment changes are the ``deployments`` rows first seen during the week, each compared with the
endpoint's row before it; the SLOs of the classes the endpoint serves are shown over the
:data:`DEPLOYMENT_WINDOW` before and after the change. Capacity comes from the week's
``scrape_intervals`` (intervals ending in ``(start, end]``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.model import Model
from monitor.report.data import Capacity, DeploymentChange, Period, SLOChange
from monitor.report.events import Windows
from monitor.report.redact import Redactor
from monitor.store.tables import DeploymentRow, ScrapeIntervalRow

#: Attainment is compared over this long before and after a deployment change (seconds).
DEPLOYMENT_WINDOW = 86400.0
#: Deployment facts compared between rows, in display order.
DEPLOYMENT_FIELDS = (
    "vllm_version",
    "image_digest",
    "checkpoint",
    "tensor_parallel_size",
    "expert_parallel_size",
    "max_model_len",
    "config_max_model_len",
    "block_size",
    "kv_cache_dtype",
    "config_kv_cache_dtype",
    "prefix_caching",
    "gpu_memory_utilization",
    "gpu_driver_version",
    "gpu_firmware_version",
    "gpu_model",
    "gpu_count",
)


def _text(value: object) -> str:
    """A setting as people read it: "—" when not recorded, "on"/"off" for a flag (never Python's
    ``None``/``True``/``False``)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _changes(
    before: DeploymentRow | None, after: DeploymentRow, red: Redactor
) -> tuple[tuple[str, str, str], ...]:
    out = []
    for name in DEPLOYMENT_FIELDS:
        old = getattr(before, name) if before is not None else None
        new = getattr(after, name)
        if old != new:
            out.append((name, red.text(_text(old)), red.text(_text(new))))
    return tuple(out)


def deployments(
    model: Model, session: Session, w: Windows, week: Period, red: Redactor, as_of: float | None = None
) -> tuple[DeploymentChange, ...]:
    """Deployment rows first seen in the week (up to ``as_of``), with what changed and the SLOs
    around the change (the window after it ends at ``as_of`` at the latest)."""
    d = DeploymentRow
    start = week.start.timestamp()
    end = as_of if as_of is not None else week.end.timestamp()
    q = select(d).where(d.first_seen > start, d.first_seen <= end).order_by(d.first_seen, d.id)
    out = []
    for row in session.scalars(q):
        prior = session.scalars(
            select(d)
            .where(d.endpoint == row.endpoint, d.first_seen < row.first_seen)
            .order_by(d.first_seen.desc(), d.id.desc())
            .limit(1)
        ).first()
        slos = []
        for ep in model.endpoints:
            if ep.name != row.endpoint:
                continue
            for cls in ep.classes:
                for slo in model.request_class(cls).slos:
                    before = w.result(slo, row.first_seen - DEPLOYMENT_WINDOW, row.first_seen)
                    after = w.result(slo, row.first_seen, min(end, row.first_seen + DEPLOYMENT_WINDOW))
                    slos.append(SLOChange(slo.id, before.attainment, after.attainment))
        at = datetime.fromtimestamp(row.first_seen, week.start.tzinfo)
        out.append(DeploymentChange(red.text(row.endpoint), at, _changes(prior, row, red), tuple(slos)))
    return tuple(out)


def capacity(
    model: Model, session: Session, week: Period, as_of: float | None = None
) -> tuple[Capacity, ...]:
    """Per endpoint: peak KV-cache use, preemptions, waiting queue (None where never reported), from
    the intervals ending in the week up to ``as_of``."""
    s = ScrapeIntervalRow
    end = as_of if as_of is not None else week.end.timestamp()
    q = (
        select(
            s.endpoint,
            func.count(s.id),
            func.max(s.kv_cache_usage),
            func.sum(s.preemptions),
            func.max(s.waiting),
            func.avg(s.waiting),
        )
        .where(s.end > week.start.timestamp(), s.end <= end)
        .group_by(s.endpoint)
    )
    rows = {r[0]: r for r in session.execute(q)}
    names = [e.name for e in model.endpoints] + sorted(set(rows) - {e.name for e in model.endpoints})
    out = []
    for name in names:
        r = rows.get(name)
        if r is None:
            out.append(Capacity(name, 0, None, None, None, None))
            continue
        vals = [None if v is None else float(v) for v in r[2:]]
        out.append(Capacity(name, int(r[1]), *vals))
    return tuple(out)
