"""The weekly report's *Goodput* section: per class, the share of requests that met every latency
SLO of the class at once (:mod:`monitor.slo.goodput`), from probes and from real-traffic spans.

* **Probes**: runs started in ``(start, end]`` whose outcome was known by the report's end (as
  the latency section reads them), except ``monitor_error`` runs (no event, as the ``goodput`` SLI
  counts them); good = answered right and within every limit, client-side figures
  (:mod:`monitor.slo.probe_goodput`: network and proxy time included).
* **Real traffic**: stored server spans that ended in ``(start, end]``, except the spans of a
  probe's trace (a ``probe_results.trace_id``: those requests are the probes'), attributed and
  judged by :mod:`monitor.slo.span_goodput` (server-side figures: no network or proxy time).
  Spans no class could be given are counted by reason; failed spans (aborted, error, no first
  token: :func:`~monitor.slo.span_goodput.span_failure`) are bad and counted by reason. Token
  goodput = output tokens of good spans / output tokens of all spans of the class.

Not an SLI, but the same probe runs as the latency and failure sections: maintenance excluded as
the SLIs exclude it (a class's ``goodput`` SLO line is the SLI).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from monitor.events import MONITOR
from monitor.model import Model
from monitor.slo.goodput import GOODPUT_METRICS, RequestLatency, is_good, limits
from monitor.slo.span_goodput import FAILURES, UNATTRIBUTED, SpanJudge
from monitor.store.queries import real_traffic
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from monitor.traces.span import ServerSpan

P = ProbeResultRow
S = ServerSpanRow
SPAN_SOURCE = "OTLP spans, server-side"
PROBE_SOURCE = "probes, client-side"
_STALL: ColumnElement[float] = P.extra[("timings", "stall", "seconds")].as_float()
_PROBE_COLUMNS = (P.reason, P.ttft, P.tpot, P.itl_mean, P.e2e, P.server_queue, _STALL)
_SPAN_COLUMNS = (S.trace_id, S.span_id, S.name, S.start_time, S.end_time, S.queue, S.ttft, S.e2e,
                 S.prompt_tokens, S.completion_tokens, S.service_name, S.error_type,
                 S.finish_reason)  # fmt: skip


@dataclass(frozen=True)
class GoodputLine:
    """One class: its limits, probe goodput and real-traffic (span) goodput for the week."""

    request_class: str
    limits: tuple[tuple[str, float], ...]  # (metric, seconds) in GOODPUT_METRICS order
    not_from_spans: tuple[str, ...]  # limits a span cannot be judged on (e.g. stall)
    probe_runs: int
    probe_good: int
    spans: int
    span_good: int
    span_output_tokens: int
    span_good_output_tokens: int
    span_failed: tuple[tuple[str, int], ...] = ()  # (reason, spans) in FAILURES order, > 0 only

    @property
    def labelled_limits(self) -> tuple[tuple[str, float], ...]:
        return tuple((METRIC_LABELS[m], v) for m, v in self.limits)

    @property
    def probe_ratio(self) -> float | None:
        return self.probe_good / self.probe_runs if self.probe_runs else None

    @property
    def span_ratio(self) -> float | None:
        return self.span_good / self.spans if self.spans else None

    @property
    def token_ratio(self) -> float | None:
        return self.span_good_output_tokens / self.span_output_tokens if self.span_output_tokens else None


@dataclass(frozen=True)
class GoodputSection:
    lines: tuple[GoodputLine, ...] = ()
    unattributed: tuple[tuple[str, int], ...] = ()  # (reason, spans) in UNATTRIBUTED order, > 0 only
    probe_trace_spans: int = 0  # spans of probe traces, left to the probe column
    span_source: str = SPAN_SOURCE
    probe_source: str = PROBE_SOURCE

    @property
    def notes(self) -> list[str]:
        return notes(self)


def _probe_counts(model: Model, session: Session, in_week: tuple[Any, ...]) -> dict[str, tuple[int, int]]:
    """(good, runs) per class over the probe runs that are goodput events."""
    bounds = {c.name: limits(c.slos) for c in model.classes}
    counts = {name: [0, 0] for name in bounds}
    valid = P.reason.is_(None) | P.reason.not_in(sorted(MONITOR))
    q = select(P.request_class, *_PROBE_COLUMNS).where(*in_week, valid)
    for cls, reason, ttft, tpot, itl, e2e, queue, stall in session.execute(q):
        if cls not in counts:
            continue
        request = RequestLatency(reason is None, ttft, tpot, itl, e2e, queue, stall)
        counts[cls][0] += is_good(request, bounds[cls])
        counts[cls][1] += 1
    return {name: (c[0], c[1]) for name, c in counts.items()}


def _spans(session: Session, start: float, end: float) -> Iterator[ServerSpan]:
    q = select(*_SPAN_COLUMNS).where(*real_traffic(start, end))
    rows = session.connection().execution_options(stream_results=True, max_row_buffer=5000).execute(q)
    for row in rows:
        r: tuple[Any, ...] = tuple(row)
        yield ServerSpan(r[0], r[1], r[2], r[3], r[4], queue=r[5], ttft=r[6], e2e=r[7], prompt_tokens=r[8],
                         completion_tokens=r[9], service_name=r[10], error_type=r[11],
                         finish_reason=r[12])  # fmt: skip


def _probe_trace_spans(session: Session, start: float, end: float) -> int:
    probe_traces = select(P.trace_id).where(P.trace_id.is_not(None))
    q = select(func.count(S.id)).where(S.end_time > start, S.end_time <= end, S.trace_id.in_(probe_traces))
    return int(session.scalar(q) or 0)


def collect(
    model: Model, session: Session, start: float, end: float, in_week: tuple[Any, ...]
) -> GoodputSection:
    """The section over ``(start, end]``; ``in_week``: the probe-run filter of the latency section."""
    probes = _probe_counts(model, session, in_week)
    judge = SpanJudge(model)
    tally = judge.tally(_spans(session, start, end))
    lines = []
    for rc in model.classes:
        own, t = limits(rc.slos), tally.classes[rc.name]
        judged = judge.judged(rc.name)
        lines.append(GoodputLine(
            rc.name, tuple((m, own[m]) for m in GOODPUT_METRICS if m in own),
            tuple(m for m in GOODPUT_METRICS if m in own and m not in judged),
            probes[rc.name][1], probes[rc.name][0],
            t.spans, t.good, t.output_tokens, t.good_output_tokens,
            tuple((f, t.failed[f]) for f in FAILURES if t.failed.get(f)),
        ))  # fmt: skip
    unattributed = tuple((r, tally.unattributed[r]) for r in UNATTRIBUTED if tally.unattributed.get(r))
    return GoodputSection(tuple(lines), unattributed, _probe_trace_spans(session, start, end))


#: Metric names as the section shows them.
METRIC_LABELS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL (mean)", "e2e": "e2e",
                 "queue_time": "queue", "stall": "stall"}  # fmt: skip


def limits_text(line: GoodputLine, seconds: Callable[[float | None], str]) -> str:
    """``TTFT ≤ 1.00 s, e2e ≤ 10.00 s`` (``none: answered right`` without latency SLOs)."""
    if not line.limits:
        return "none (answered right)"
    return ", ".join(f"{METRIC_LABELS[m]} ≤ {seconds(v)}" for m, v in line.limits)


def failed_text(line: GoodputLine) -> str:
    """``aborted 3, error 1`` (``—`` when no span failed)."""
    return ", ".join(f"{reason} {n}" for reason, n in line.span_failed) or "—"


def notes(section: GoodputSection) -> list[str]:
    """The section's plain-text notes (where the real-traffic spans went)."""
    lost = "; ".join(f"{reason}: {n}" for reason, n in section.unattributed) or "none"
    return [
        f"Real traffic: {section.span_source} (arrival at the server to its last token: network and "
        "proxy time are not in it; the probe column includes them). Failed spans are never good: "
        "aborted (finish reason abort), error (error.type, an ERROR status or finish reason error), "
        "no first token. vLLM sends no span for a request it rejected or a client aborted.",
        f"Spans of probe traces left to the probe column: {section.probe_trace_spans}. "
        f"Spans with no class (not counted above): {lost}.",
    ]


def markdown(section: GoodputSection, escape: Callable[[object], str], table: Any, fmt: Any) -> list[str]:
    """Markdown lines; ``escape`` and ``table`` are the Markdown renderer's, ``fmt`` its
    :mod:`monitor.report.display` (its ``attainment``, ``count`` and ``seconds``)."""
    head = ["class", "limits (each request)", "probe runs", "probe goodput", "spans", "span goodput",
            "token goodput", "failed spans", "not judged from spans"]  # fmt: skip
    rows = [
        [escape(g.request_class), escape(limits_text(g, fmt.seconds)), fmt.count(g.probe_runs),
         fmt.attainment(g.probe_ratio), fmt.count(g.spans), fmt.attainment(g.span_ratio),
         fmt.attainment(g.token_ratio), escape(failed_text(g)), escape(", ".join(g.not_from_spans) or "—")]
        for g in section.lines
    ]  # fmt: skip
    out = ["## Goodput (every latency SLO at once)", "", *table(head, rows, (2, 3, 4, 5, 6))]
    for note in notes(section):
        out += [escape(note), ""]
    return out


def to_json(section: GoodputSection) -> dict[str, Any]:
    return {
        "classes": [
            {
                "class": g.request_class,
                "limits": {m: v for m, v in g.limits},
                "probes": {
                    "source": section.probe_source,
                    "runs": g.probe_runs,
                    "good": g.probe_good,
                    "ratio": g.probe_ratio,
                },
                "spans": {
                    "source": section.span_source,
                    "spans": g.spans,
                    "good": g.span_good,
                    "ratio": g.span_ratio,
                    "output_tokens": g.span_output_tokens,
                    "good_output_tokens": g.span_good_output_tokens,
                    "token_ratio": g.token_ratio,
                    "failed": {reason: n for reason, n in g.span_failed},
                    "not_judged": list(g.not_from_spans),
                },
            }
            for g in section.lines
        ],
        "unattributed_spans": {reason: n for reason, n in section.unattributed},
        "probe_trace_spans": section.probe_trace_spans,
    }
