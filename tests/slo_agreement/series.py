"""A scenario's scrapes as promtool input series, one sample per whole minute.

The monitor's exporter is the real one (:class:`monitor.probes.metrics.ProbeMetrics` on a fresh
registry, rendered with ``generate_latest``): at minute *m* it has observed every probe run that
completed at or before *m*·60 s. vLLM pools are the hand-written pages of
:mod:`tests.slo_agreement.exposition`. Each page is parsed and given the target labels the
generated scrape configuration sets (``job``, ``instance``, and ``endpoint`` on vLLM targets).
A series that leaves a page gets a staleness marker, as Prometheus writes one.

A pool's ``process_start_time_seconds`` is moved onto promtool's clock (the store's T0 is 0): the
rules compare it with the scrape timestamps. Maintenance windows are the gauges the monitor's
exporter publishes (docs/maintenance.md), written here from that definition: per window and covered (class, endpoint), the start and end
of the occurrence holding the instant, else of the next one, absent once none remains; and the
start and end of the occurrence that ended last, for an hour after its end. Times
are promtool's, where scenario time 0 is 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, generate_latest

from monitor.model import Model
from monitor.probes.metrics import ProbeMetrics
from monitor.slo.probe_goodput import judge
from tests.slo_agreement.config import EXPORTER, JOB_MONITOR, JOB_VLLM, T0, instance, window_name
from tests.slo_agreement.exposition import Labels, Pages, Sample, parse
from tests.slo_agreement.probe_results import Results
from tests.slo_agreement.streams import Scenario, Window

STALE = "stale"
Value = float | str | None  # a number, STALE, or None (no sample)
Timeline = dict[tuple[str, Labels], list[Value]]
MAINTENANCE_START = "m3mon_maintenance_start_timestamp_seconds"
MAINTENANCE_END = "m3mon_maintenance_end_timestamp_seconds"
PREVIOUS_START = "m3mon_maintenance_previous_start_timestamp_seconds"
PREVIOUS_END = "m3mon_maintenance_previous_end_timestamp_seconds"
PROCESS_START = "process_start_time_seconds"


def _monitor_pages(model: Model, results: Results, minutes: int, wanted: set[str]) -> list[list[Sample]]:
    """The exporter's page at every minute, restricted to ``wanted`` names as ``/metrics?name[]=`` is."""
    registry = CollectorRegistry()
    metrics = ProbeMetrics.for_model(registry, model, judge(model))
    view = registry.restricted_registry(wanted)
    i, pages = 0, []
    last: list[Sample] | None = None
    for m in range(minutes + 1):
        seen = i
        while i < len(results) and results[i][0] <= m * 60:
            metrics.observe(results[i][1])
            i += 1
        if last is None or i != seen:
            last = parse(generate_latest(view).decode())
        pages.append(last)
    return pages


def _add(timeline: Timeline, minutes: int, m: int, samples: Iterable[Sample], target: Labels) -> None:
    for name, labels, value in samples:
        key = (name, tuple(sorted((*labels, *target))))
        timeline.setdefault(key, [None] * (minutes + 1))[m] = value


def timeline(model: Model, scn: Scenario, results: Results, pages: Pages, wanted: set[str]) -> Timeline:
    """Every series Prometheus would hold, by minute (of the metric names in ``wanted``)."""
    out: Timeline = {}
    if scn.slo.source == "probes":
        monitor: Labels = (("instance", EXPORTER), ("job", JOB_MONITOR))
        for m, samples in enumerate(_monitor_pages(model, results, scn.minutes, wanted)):
            _add(out, scn.minutes, m, samples, monitor)
    for pool, texts in pages.items():
        vllm: Labels = (
            ("endpoint", scn.endpoint(pool)),
            ("instance", instance(scn, pool)),
            ("job", JOB_VLLM),
        )
        for m, text in enumerate(texts):
            if text is not None:
                _add(out, scn.minutes, m, (_on_clock(s) for s in parse(text) if s[0] in wanted), vllm)
    for w in scn.maintenance:
        _maintenance(out, scn, w, wanted)
    for values in out.values():
        _mark_stale(values)
    return out


def _on_clock(sample: Sample) -> Sample:
    """A page's sample with its published instant (``process_start_time_seconds``) on promtool's
    clock, where the store's T0 is 0."""
    name, labels, value = sample
    return (name, labels, value - T0) if name == PROCESS_START else sample


def _maintenance(timeline: Timeline, scn: Scenario, w: Window, wanted: set[str]) -> None:
    """The window's gauges per covered endpoint (one class each): the only occurrence as current or
    next until its end, then as the one that ended last for an hour."""
    pools = w.pools or tuple(p.name for p in scn.pools)
    whole_class = str(set(pools) == {p.name for p in scn.pools}).lower()
    for pool in pools:
        target: Labels = (("class", scn.name), ("endpoint", scn.endpoint(pool)), ("instance", EXPORTER),
                          ("job", JOB_MONITOR), ("maintenance", window_name(scn, w)),
                          ("whole_class", whole_class), ("whole_endpoint", "true"))  # fmt: skip
        published = ((MAINTENANCE_START, MAINTENANCE_END, range(min(w.end, scn.minutes) + 1)),
                     (PREVIOUS_START, PREVIOUS_END, range(w.end + 1, min(w.end + 60, scn.minutes) + 1)))  # fmt: skip
        down = range(*scn.monitor_down) if scn.monitor_down is not None else range(0)
        for start_name, end_name, minutes in published:
            for name, value in ((start_name, w.start * 60.0), (end_name, w.end * 60.0)):
                if name in wanted:
                    for m in (m for m in minutes if m not in down):
                        _add(timeline, scn.minutes, m, [(name, (), value)], target)


def _mark_stale(values: list[Value]) -> None:
    for m in range(1, len(values)):
        if values[m] is None and values[m - 1] not in (None, STALE):
            values[m] = STALE


def _number(v: float) -> str:
    return repr(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)


def encode(values: list[Value]) -> str:
    """promtool's expanding notation: ``a+bxn`` (n+1 values), ``_xn`` (n gaps), ``stale``."""
    parts, i = [], 0
    while i < len(values):
        v = values[i]
        j = i + 1
        if v is None:
            while j < len(values) and values[j] is None:
                j += 1
            parts.append(f"_x{j - i}" if j - i > 1 else "_")
        elif isinstance(v, str):
            parts.append(v)
        else:
            step = _step(values, i)
            while j < len(values) and isinstance(values[j], float) and values[j] == v + step * (j - i):
                j += 1
            parts.append(_run(v, step, j - i - 1))
        i = j
    return " ".join(parts)


def _step(values: list[Value], i: int) -> float:
    """The constant increment to try from ``i``: exact for integers, 0 (repeat) otherwise."""
    v, nxt = values[i], values[i + 1] if i + 1 < len(values) else None
    if isinstance(v, float) and isinstance(nxt, float) and v.is_integer() and nxt.is_integer():
        return nxt - v
    return 0.0


def _run(start: float, step: float, n: int) -> str:
    if n == 0:
        return _number(start)
    sign = "-" if step < 0 else "+"
    return f"{_number(start)}{sign}{_number(abs(step))}x{n}"


def selector(name: str, labels: Labels) -> str:
    assert not any(re.search(r'["\\\n]', v) for _, v in labels), labels
    body = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{name}{{{body}}}"


def input_series(tl: Timeline) -> list[dict[str, str]]:
    """promtool ``input_series``."""
    return [
        {"series": selector(name, labels), "values": encode(values)}
        for (name, labels), values in sorted(tl.items())
    ]
