"""Each class's bottleneck verdict at an instant, read from the store — the one computation the
service's exporter, ``m3mon slo status`` and the report share (docs/bottleneck.md).

:func:`inputs` reads what :class:`~monitor.bottleneck.inputs.Inputs` holds for a class: the
answered probes of the tail window with their stages (the report's own samples: per-request
metrics, else the probe's trace spans), every probe run (retried? refused for load?), real
traffic from server spans, the scrape intervals of the class's endpoints (two recent windows:
the later one is evidence, the earlier one the prefix-hit and prompt-size baseline) and each GPU
of the GPU samples. :func:`verdicts` decides every class. The report reads its period with every
window set to the period (a week's evidence: a GPU saturated for a third of the week's samples
reads saturated, one saturated for an hour of it does not).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import (
    GPU_WINDOW,
    PEAK_WINDOW,
    RECENT,
    WINDOW,
    GpuPoint,
    Inputs,
    PoolPoint,
    ProbeRun,
    class_context,
    stored_histograms,
)
from monitor.bottleneck.rules import Verdict, decide
from monitor.bottleneck.tail import Sample
from monitor.bottleneck.traffic import by_trace, traffic_samples
from monitor.model import Model
from monitor.slo.span_goodput import SpanJudge
from monitor.store.tables import GpuSampleRow, ProbeResultRow, ScrapeIntervalRow

P, SI, G = ProbeResultRow, ScrapeIntervalRow, GpuSampleRow
#: HTTP answers that refuse work for load (and the probe retry reason that records one).
SHED_STATUS = (429, 503)
SHED_RETRY = "http_429"
#: Real traffic read per assessment: a uniform sample of this many traces of the recent window
#: (random trace ids; enough for a P95 band of 100), so a busy pool costs the service no more.
TRAFFIC_TRACES = 2000


def timing(name: str) -> ColumnElement[float]:
    """SQL for one of a probe's ``timings`` (seconds; None where the probe did not report it)."""
    column: ColumnElement[float] = P.extra[("timings", name)].as_float()
    return column


def _runs(session: Session, start: float, end: float, longest: float) -> dict[str, list[ProbeRun]]:
    """Every probe run completed in (start, end], per class (``longest``: the longest a run takes,
    so only runs started after ``start - longest`` are read)."""
    done = func.coalesce(P.extra["completed_at"].as_float(), P.started_at + func.coalesce(P.e2e, 0.0))
    q = select(P.request_class, done, timing("retry_seconds"), P.status_code, P.extra[("timings", "retries")])
    out: dict[str, list[ProbeRun]] = {}
    rows: Any = session.execute(q.where(P.started_at > start - longest, done > start, done <= end))
    for cls, at, retry, status, reasons in rows:
        why = reasons if isinstance(reasons, list) else []
        shed = status in SHED_STATUS or SHED_RETRY in why
        out.setdefault(cls, []).append(ProbeRun(float(at), bool(retry and retry > 0), shed))
    return out


def _statuses(raw: object) -> dict[str, float]:
    """A stored interval's HTTP answers by status (one stored in another shape: none)."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float)}


def _pool(session: Session, endpoints: Sequence[str], start: float, end: float) -> list[PoolPoint]:
    q = select(SI).where(SI.endpoint.in_(sorted(endpoints)), SI.end > start, SI.end <= end)
    return [
        PoolPoint(r.endpoint, r.end, r.requests, r.waiting, r.running, r.kv_cache_usage, r.preemptions,
                  r.admission_rejections, _statuses(r.http_status), r.prefix_cache_hit_rate,
                  stored_histograms(r.histograms or {}))
        for r in session.scalars(q.order_by(SI.end))
    ]  # fmt: skip


def _longest_run(model: Model) -> float:
    """The longest a probe run can take: its class's timeout for each attempt, and a minute of
    backoff and slack."""
    return max(
        (c.probe.timeout * (1 + c.probe.retry.max_retries) + 60.0 for c in model.classes), default=60.0
    )


def _running_peaks(session: Session, endpoints: Sequence[str], start: float, end: float) -> dict[str, float]:
    """The most requests each endpoint ran at once in (start, end]."""
    q = select(SI.endpoint, func.max(SI.running)).where(
        SI.endpoint.in_(sorted(endpoints)), SI.end > start, SI.end <= end
    )
    return {str(e): float(m) for e, m in session.execute(q.group_by(SI.endpoint)) if m is not None}


def _gpus(session: Session, endpoints: Sequence[str], start: float, end: float) -> list[GpuPoint]:
    q = select(G).where(G.endpoint.in_(sorted(endpoints)), G.time > start, G.time <= end)
    out = []
    for r in session.scalars(q.order_by(G.time)):
        if r.devices:
            for key, d in r.devices.items():
                values = {k: float(v) for k, v in d.items() if isinstance(v, int | float) and k != "gpu"}
                out.append(GpuPoint(r.endpoint, r.time, str(key), d.get("uuid"), values))
        else:  # a row written before per-GPU readings were stored: the endpoint's means, as one GPU
            means = {"sm_active": r.sm_active, "util": r.util, "tensor_active": r.tensor_active}
            values = {k: v for k, v in means.items() if v is not None}
            out.append(GpuPoint(r.endpoint, r.time, f"{r.endpoint}/mean", None, values))
    return out


def traffic(model: Model, session: Session, start: float, end: float) -> list[Sample]:
    """Real traffic's requests in ``(start, end]`` as the verdict reads them (a uniform sample of
    :data:`TRAFFIC_TRACES` traces), with their tenant labels."""
    from monitor.report.collect_traffic import spans_in

    judge = SpanJudge(model)
    # a probe's spans end within its timeout of its start: older probes cannot own these spans
    spans = spans_in(session, start, end, TRAFFIC_TRACES, start - _longest_run(model))
    return traffic_samples(by_trace(spans), lambda s: judge.request_class(s)[0])


def _probes(model: Model, session: Session, start: float, end: float) -> list[Sample]:
    from monitor.report.collect_probes import ProbeFacts
    from monitor.report.data import Period
    from monitor.report.redact import Redactor

    period = Period("verdict", datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC))
    return ProbeFacts(model, session, period, Redactor.for_model(model), end, diagnostic=True).samples()


def verdicts(
    model: Model,
    session: Session,
    end: float,
    window: float = WINDOW,
    recent: float = RECENT,
    probes: Sequence[Sample] | None = None,
    state: float = GPU_WINDOW,
) -> tuple[Verdict, ...]:
    """Each class's verdict at ``end`` (``probes``: the tail window's samples, when already read)."""
    start = end - window
    samples = list(probes) if probes is not None else _probes(model, session, start, end)
    runs = _runs(session, start, end, _longest_run(model))
    requests = traffic(model, session, end - recent, end)
    out = []
    for rc in model.classes:
        names = [e.name for e in model.endpoints_for(rc.name)]
        peaks = _running_peaks(session, names, end - max(PEAK_WINDOW, recent), end) if names else {}
        i = Inputs(
            request_class=rc.name,
            end=end,
            window=window,
            recent=recent,
            state=state,
            probes=tuple(s for s in samples if s.request_class == rc.name),
            traffic=tuple(s for s in requests if s.request_class == rc.name),
            runs=tuple(runs.get(rc.name, ())),
            pool=tuple(_pool(session, names, end - max(window, 2 * recent), end)) if names else (),
            gpus=tuple(_gpus(session, names, end - max(window, recent), end)) if names else (),
            running_peak=sum(peaks.values()) if peaks else None,
            running_peaks=peaks,
            **class_context(model, rc.name),  # type: ignore[arg-type]
        )
        out.append(decide(gather(i)))
    return tuple(out)
