"""Where a class's request time goes: queue, prefill, decode, network and tool turnaround.

Each part is a mean seconds per request, and the report says where it came from:

* ``per-request metrics``: the probe's own server view (vLLM ``--enable-per-request-metrics``);
* ``OTLP spans``: the vLLM ``llm_request`` span of the probe's trace (its earliest), for probes
  without their own view; network is then client TTFT − the span's TTFT;
* ``server histograms (POOL)``: when no probe of the class has a server view, queue, prefill and
  decode are the means of the pool's histograms over the period (``sum / count`` of every scrape
  interval of the endpoints serving the class): all of the pool's traffic, not only the probes.
  They are a row of their own, counted in the pool's requests, beside the row of the probes' own
  parts (retries, tool turnaround) counted in probes: one row, one population.
  When the pool serves other classes too, the label and the breakdown's ``population`` say so
  (``server histograms (POOL, shared with B)``): those means are not this class's requests — the
  report once drew "10 s per probe request" from a pool whose own probes took 0.8 s;
* ``probe timings``: tool turnaround, the sum of a probe's tool rounds; retries, the time before
  the probe's final attempt (its retry policy, docs/probes.md), plus a gateway's retries when the
  span view shows failed attempts (then ``OTLP spans + probe timings``);
* tokenization (the API server's preprocessing) comes only from spans (``ttft − queue −
  prefill`` of vLLM's span, :mod:`monitor.traces.stages`): with per-request metrics it is inside
  network.

A part is "no data" only when none of these has it. The same parts are also averaged per step of
the report's time series (:class:`~monitor.report.latency_data.BreakdownSeries`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from monitor.bottleneck.tail import SOURCE_METRICS, SOURCE_SPANS, Sample
from monitor.model import Model
from monitor.report.latency_data import BREAKDOWN_PARTS, Breakdown, BreakdownPoint, BreakdownSeries
from monitor.store.tables import ScrapeIntervalRow

SERVER_PARTS = ("queue", "prefill", "decode")
#: Parts the probe measures itself (its retries, its tool rounds), whatever its server view.
PROBE_PARTS = ("tool_turnaround", "retry")
SOURCE_TIMINGS = "probe timings"
SI = ScrapeIntervalRow


def _hist(name: str, field_: str) -> ColumnElement[float]:
    column: ColumnElement[float] = SI.histograms[(name, field_)].as_float()
    return column


@dataclass
class _Sums:
    """Sums and counts per part (probes, or histogram observations), and the sources seen."""

    count: int = 0
    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    sources: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, part: str, total: float, n: float, source: str) -> None:
        self.sums[part] += total
        self.counts[part] += n
        self.sources[part].add(source)

    def means(self) -> tuple[tuple[str, float | None], ...]:
        return tuple(
            (p, self.sums[p] / self.counts[p] if self.counts[p] > 0 else None) for p in BREAKDOWN_PARTS
        )

    def source_names(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((p, " + ".join(sorted(self.sources[p])) or None) for p in BREAKDOWN_PARTS)


def _add_sample(acc: _Sums, s: Sample) -> None:
    acc.count += 1
    for part, value in s.parts.items():
        source = SOURCE_TIMINGS if part in PROBE_PARTS else s.view
        acc.add(part, value, 1.0, source or SOURCE_METRICS)
        if part == "retry" and s.gateway_retry:  # a gateway's retries, read from the trace's spans
            acc.sources[part].add(SOURCE_SPANS)


class PoolHistograms:
    """Queue, prefill and decode sums/counts of the pools' scrape intervals ending in ``(start, end]``."""

    def __init__(self, session: Session, endpoints: Iterable[str], start: float, end: float) -> None:
        self.rows: list[tuple[str, float, Sequence[float | None]]] = []
        if not endpoints:
            return
        cols = [_hist(p, f) for p in SERVER_PARTS for f in ("sum", "count")]
        q = select(SI.endpoint, SI.end, *cols).where(
            SI.endpoint.in_(sorted(set(endpoints))), SI.end > start, SI.end <= end
        )
        self.rows = [(str(r[0]), float(r[1]), r[2:]) for r in session.execute(q.order_by(SI.end))]

    def add(
        self,
        acc: _Sums,
        endpoints: Sequence[str],
        lo: float = float("-inf"),
        hi: float = float("inf"),
        shared: Sequence[str] = (),
    ) -> None:
        also = f", shared with {', '.join(shared)}" if shared else ""
        label = f"server histograms ({', '.join(endpoints)}{also})"
        for endpoint, end, values in self.rows:
            if endpoint in endpoints and lo < end <= hi:
                for i, part in enumerate(SERVER_PARTS):
                    total, n = values[2 * i], values[2 * i + 1]
                    if total is not None and n:
                        acc.add(part, float(total), float(n), label)


def needs_pool(samples: Sequence[Sample], cls: str) -> bool:
    return not any(s.request_class == cls and s.view is not None for s in samples)


def sharing(model: Model, cls: str) -> tuple[str, ...]:
    """The other classes served by the endpoints of ``cls`` (empty for a class owning its pool)."""
    rc = model.request_class(cls)
    if rc.dedicated_pool:
        return ()
    return tuple(sorted({c for e in model.endpoints_for(cls) for c in e.classes} - {cls}))


#: The population of a breakdown row over the class's probes.
PROBE_REQUESTS = "probe requests"


def population(model: Model, samples: Sequence[Sample], cls: str) -> str:
    """Whose requests a class's breakdown means are over."""
    if not needs_pool(samples, cls):
        return PROBE_REQUESTS
    names = ", ".join(e.name for e in model.endpoints_for(cls))
    shared = sharing(model, cls)
    if shared:
        return f"all requests of {names} (shared with {', '.join(shared)}: not this class's requests alone)"
    return f"all requests of {names} (the class's own pool)"


def breakdowns(model: Model, samples: Sequence[Sample], pools: PoolHistograms) -> tuple[Breakdown, ...]:
    """Each configured class's breakdown over the whole period."""
    out = []
    for rc in model.classes:
        acc = _Sums()
        for s in samples:
            if s.request_class == rc.name:
                _add_sample(acc, s)
        if needs_pool(samples, rc.name):
            pool = _Sums()
            pools.add(pool, [e.name for e in model.endpoints_for(rc.name)], shared=sharing(model, rc.name))
            pool.count = round(max((pool.counts[p] for p in SERVER_PARTS), default=0.0))
            if pool.count:
                whose = population(model, samples, rc.name)
                out.append(Breakdown(rc.name, pool.count, pool.means(), pool.source_names(), whose))
        out.append(Breakdown(rc.name, acc.count, acc.means(), acc.source_names(), PROBE_REQUESTS))
    return tuple(out)


def breakdown_series(
    model: Model, samples: Sequence[Sample], pools: PoolHistograms, points: Sequence[float], tz: object
) -> tuple[BreakdownSeries, ...]:
    """Each class's breakdown per step ``(points[i-1], points[i]]`` (every part None: no data)."""
    out = []
    for rc in model.classes:
        steps = [_Sums() for _ in points]
        for s in samples:
            i = bisect_left(points, s.at)
            if s.request_class == rc.name and 0 < i < len(points):
                _add_sample(steps[i], s)
        if needs_pool(samples, rc.name):
            names = [e.name for e in model.endpoints_for(rc.name)]
            for i in range(1, len(points)):
                pools.add(steps[i], names, points[i - 1], points[i], sharing(model, rc.name))
        kept = [
            BreakdownPoint(datetime.fromtimestamp(points[i], tz), acc.count, acc.means())  # type: ignore[arg-type]
            for i, acc in enumerate(steps)
            if i > 0
        ]
        out.append(BreakdownSeries(rc.name, tuple(kept)))
    return tuple(out)
