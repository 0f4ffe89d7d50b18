"""PromQL for each SLO's valid and bad events, rendered from :mod:`monitor.events`.

The store counts the same events by applying the same definitions to each probe run and scrape
interval (:mod:`monitor.slo.slices`); docs/slo-events.md states them in words. Events are counted
**per rule step**, never with ``increase()`` (which extrapolates to the window's edges and so
invents events a window never held, and cannot be told which of them maintenance excluded):

* :func:`cumulative` — per target and endpoint (``job, instance, endpoint``), the valid and bad
  events its counters show now. The SLO group records it at every step.
* :func:`step_rises` — what a step adds: the cumulative valid and bad events now less the ones
  the previous step recorded (whichever step last ran, up to
  :data:`~monitor.conventions.SCRAPE_GAP_LIMIT` back), or both values now after a **restart** of
  the target. "Now" is the cumulative record of the step's own instant when the engine shows it
  (:func:`same_instant`), the counters only when it does not: a scrape committed between the two
  rules would otherwise count in this step and, measured from the older record, again in the next.
  A skipped evaluation loses nothing: the next step measures from the last recorded reading.
  Successive steps add up to exactly what the records rose by, whatever the scrape phases. A
  restart is one target's, never one counter's: valid and bad start over together, when the
  process now started after the samples the previous step read (``process_start_time_seconds``),
  or either sum fell, or bad rose more than valid (impossible within one process: each bad event
  is a valid one). So a step never holds more bad events than valid ones, whatever the restart
  pattern (docs/slo-events.md states the loss).
* :func:`step_in_maintenance` — per endpoint, whether the step's **span** (from the samples the
  previous step read to the samples read now) overlaps a maintenance occurrence, the current or
  next one or the one that ended last (from the boundaries the monitor publishes). An event is
  only known to lie inside that span, so a span that overlaps an occurrence is excluded whole,
  as the store excludes a scrape interval that overlaps one (docs/maintenance.md).

Counter events: valid = the series matching the valid matchers; bad = those also matching the
bad matchers (0 while no bad series exists). Histogram events: valid = ``_count`` of targets
whose histogram has a bucket at the threshold, bad = ``_count − _bucket{le=threshold}`` — a
target without the edge adds nothing (no data), never "every request slow".
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor import conventions as cv
from monitor import events
from monitor.generate import promql as q
from monitor.model import SLO, Model

#: The labels of one target's counters for one endpoint: the unit of counter resets.
TARGET = "job, instance, endpoint"


def _matcher(m: events.Match) -> tuple[str, str]:
    return m.label, (q.not_regex(m.values) if m.negate else q.regex(m.values))


def base_matchers(model: Model, slo: SLO) -> list[tuple[str, str]]:
    """Which targets' series an SLO reads: the monitor's for probes and traffic, its class's pools
    for server."""
    if slo.from_monitor:
        return [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_CLASS, q.eq(slo.request_class))]
    return q.pool_matchers(model, slo)


def ids(slo: SLO) -> str:
    """The selector body picking one SLO's own records."""
    return q.matchers([(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name))])


@dataclass(frozen=True)
class Cumulative:
    """Per target and endpoint: valid and bad events so far, and the series whose samples they read."""

    valid: str
    bad: str
    sampled: str  # a selector of the series read (their timestamps are the step's reading time)


def _counter(base: list[tuple[str, str]], rule: events.CounterEvents) -> Cumulative:
    valid_sel = rule.metric + q.matchers([*base, *map(_matcher, rule.valid)])
    bad_sel = rule.metric + q.matchers([*base, *map(_matcher, (*rule.valid, *rule.bad))])
    valid = f"sum by ({TARGET}) ({valid_sel})"
    return Cumulative(valid, f"(sum by ({TARGET}) ({bad_sel}) or 0 * {valid})", valid_sel)


def _histogram(base: list[tuple[str, str]], rule: events.HistogramEvents) -> Cumulative:
    le = q.le_python_client(rule.threshold)
    base = [*base, *map(_matcher, rule.select)]
    count_sel = f"{rule.metric}_count{q.matchers(base)}"
    count = f"sum by ({TARGET}) ({count_sel})"
    good = f"sum by ({TARGET}) ({rule.metric}_bucket{q.matchers([*base, ('le', q.eq(le))])})"
    return Cumulative(f"({count} and on ({TARGET}) {good})", f"({count} - on ({TARGET}) {good})", count_sel)


def cumulative(model: Model, slo: SLO) -> Cumulative:
    """``slo``'s cumulative valid and bad events per target and endpoint, as PromQL."""
    rule = events.definition(slo)
    base = base_matchers(model, slo)
    if isinstance(rule, events.CounterEvents):
        return _counter(base, rule)
    return _histogram(base, rule)


def previous(record_name: str, slo: SLO) -> str:
    """The value the previous step recorded (the latest sample strictly before this step)."""
    return f"last_over_time({record_name}{ids(slo)}[{cv.SCRAPE_GAP_LIMIT}] offset {cv.STEP_READ_OFFSET})"


def process_started(model: Model, slo: SLO) -> str:
    """Per job and instance: when the process whose counters the SLO reads started (its own clock):
    the monitor's for probe and real-traffic SLOs (it counts both), vLLM's for server SLOs."""
    job = model.alerting.job_monitor if slo.from_monitor else model.alerting.job_vllm
    return f"max by ({cv.L_JOB}, instance) ({cv.PROCESS_START_TIME}{q.matchers([(cv.L_JOB, q.eq(job))])})"


def restarted(model: Model, slo: SLO) -> str:
    """Per target and endpoint: a sample when the process now started after the samples the
    previous step read (that step's readings were of another process)."""
    return (
        f"({previous(cv.SLO_SAMPLED_RECORD, slo)}\n    < on ({cv.L_JOB}, instance) group_left ()\n"
        f"    {process_started(model, slo)})"
    )


def same_instant(
    record_name: str, selector: str, counters: str, on: str = TARGET, shown: str | None = None
) -> str:
    """Per ``on``: the value ``record_name`` (``selector`` picks its series) holds at this very
    instant, written by a rule of the same group run; ``counters`` (the same value read from the
    counters) where the engine does not show that record yet (vmalert writes records through remote
    write). A Prometheus group runs its rules in order at one timestamp, each rule's samples committed
    before the next rule's query.

    ``shown``: a record every run of the group writes before this rule, read at this instant. Where
    the engine shows it, the counters are never read: a target whose counters were stale at the
    cumulative rule has no value now (the next step measures across), not counters scraped since."""
    recorded = f"last_over_time({record_name}{selector}[{cv.STEP_SAME_INSTANT}])"
    if shown is not None:
        counters = f"({counters}\n    unless on () last_over_time({shown}[{cv.STEP_SAME_INSTANT}]))"
    return f"(sum by ({on}) ({recorded})\n    or on ({on})\n    {counters})"


def step_rises(model: Model, slo: SLO) -> dict[str, str]:
    """Per target and endpoint, valid and bad: the rise since the previous step's reading, or the
    value now when the target restarted (one process's counts, so bad <= valid either way).

    "Now" is the records of this instant (:func:`same_instant`); valid and bad are recorded by two
    rules, so a scrape committed between them can put one a scrape ahead of the other. The checks
    that compare the two kinds are kept safe from that: bad's rise is compared with the counters'
    valid rise (read after both records, and valid is recorded before bad, so within one process it
    is never the smaller), and a restart counts the values now only when both records equal the
    counters (one scrape of one process; otherwise the step counts nothing and the next step counts
    the new process from its records)."""
    c = cumulative(model, slo)
    counters = {"valid": c.valid, "bad": c.bad}
    shown = cv.SLO_META_OBJECTIVE_RECORD + ids(slo)
    now = {
        k: same_instant(cv.slo_cumulative_events_record(k), ids(slo), counters[k], shown=shown)
        for k in counters
    }
    before = {k: previous(cv.slo_cumulative_events_record(k), slo) for k in now}
    delta = {k: f"({now[k]} - on ({TARGET}) {before[k]})" for k in now}
    counted_valid = f"({c.valid} - on ({TARGET}) {before['valid']})"
    reset = (
        f"(\n    {delta['valid']} < 0\n  or\n    {delta['bad']} < 0\n"
        f"  or\n    {delta['bad']} > on ({TARGET}) {counted_valid}\n  or\n    {restarted(model, slo)}\n  )"
    )
    same = {k: f"({now[k]} == on ({TARGET}) {counters[k]})" for k in now}
    one_scrape = f"({same['valid']} and on ({TARGET}) {same['bad']})"
    return {
        k: f"({delta[k]}\n  unless on ({TARGET}) {reset}\n  or\n"
        f"  ({now[k]} and on ({TARGET}) {reset} and on ({TARGET}) {one_scrape}))"
        for k in now
    }


def rise(now: str, before: str, on: str = TARGET) -> str:
    """Per target and endpoint (the labels ``on``): ``now`` less ``before``, or ``now`` after a
    counter reset."""
    delta = f"({now} - on ({on}) {before})"
    return f"({delta} >= 0\n  or\n  ({now} and on ({on}) {delta} < 0))"


def sampled_at(c: Cumulative) -> str:
    """Per target and endpoint: when the samples this step reads were scraped."""
    return f"max by ({TARGET}) (timestamp({c.sampled}))"


def boundary(series: str) -> str:
    """A maintenance boundary gauge as the rules read it: its last value within
    :data:`~monitor.conventions.MAINTENANCE_MEMORY`, so a failed scrape of the monitor or a short
    restart does not end a maintenance (docs/maintenance.md)."""
    return f"last_over_time({series}[{cv.MAINTENANCE_MEMORY}])"


def _overlapping(start: str, end: str, since: str, until: str) -> str:
    """Occurrences ``(start, end]`` overlapping the per-endpoint span ``(since, until]``."""
    return (
        f"({end} > on ({cv.L_ENDPOINT}) group_left () {since})\n"
        f"    and\n    ({start} < on ({cv.L_ENDPOINT}) group_left () {until})"
    )


def step_in_maintenance(model: Model, slo: SLO) -> str:
    """One sample per endpoint whose step span overlaps a maintenance occurrence of the class.

    The span runs from the earliest sample the previous step read (of the targets counted now)
    to the latest sample read now.
    """
    c = cumulative(model, slo)
    since = f"min by ({cv.L_ENDPOINT}) ({previous(cv.SLO_SAMPLED_RECORD, slo)} and on ({TARGET}) {c.valid})"
    until = f"max by ({cv.L_ENDPOINT}) (timestamp({c.sampled}))"
    sel = q.monitor_selector(model.alerting, **{cv.L_CLASS: slo.request_class})
    start, end = boundary(cv.MAINTENANCE_START + sel), boundary(cv.MAINTENANCE_END + sel)
    current = _overlapping(start, end, since, until)
    start, end = boundary(cv.MAINTENANCE_PREVIOUS_START + sel), boundary(cv.MAINTENANCE_PREVIOUS_END + sel)
    ended = _overlapping(start, end, since, until)
    return f"count by ({cv.L_ENDPOINT}) (\n    {current}\n  or\n    {ended}\n)"


def step_events(model: Model, slo: SLO, kind: str) -> str:
    """``kind`` (valid/bad) events of this step outside maintenance."""
    per_endpoint = f"sum by ({cv.L_ENDPOINT}) (\n  {step_rises(model, slo)[kind]}\n)"
    return f"sum(\n  {per_endpoint}\n  unless on ({cv.L_ENDPOINT})\n  {step_in_maintenance(model, slo)}\n)"


def activity_seconds(model: Model, slo: SLO) -> float:
    """How long a probe-sourced SLO may go without events before its metric counts as absent."""
    plan = model.request_class(slo.request_class).probe
    return max(600.0, 2 * plan.interval + plan.timeout)


def activity_window(model: Model, slo: SLO) -> str:
    """:func:`activity_seconds` as a range (``600s``)."""
    return f"{round(activity_seconds(model, slo))}s"


def absent_condition(model: Model, slo: SLO) -> str:
    """True (a sample) when ``slo`` has no source data at all, for ``SLOMetricAbsent``."""
    rule = events.definition(slo)
    base = base_matchers(model, slo)
    if slo.source == "probes":
        completed = cv.PROBE_TOTAL + q.matchers([*base, *map(_matcher, events.PROBE_AVAILABILITY.valid)])
        window = activity_window(model, slo)
        return (
            f"absent({completed})\nor\n(\n  sum(increase({completed}[{window}])) == 0\n"
            f"  unless on ()\n  {_counted_since_start(model, completed, activity_seconds(model, slo))}\n)"
        )
    metric = rule.metric + ("_count" if isinstance(rule, events.HistogramEvents) else "")
    return f"absent({metric}{q.matchers(base)})"


def _counted_since_start(model: Model, completed: str, seconds: float) -> str:
    """A sample when a monitor that started within ``seconds`` has counted a probe since: one
    completed within the window. ``increase()`` cannot show it: a series first scraped at 1 (the
    class's first probe finished before the first scrape, as it does for a class probed every
    30 min) has no rise Prometheus sees, and a 30-min class would tick absent 10 min after every
    start until its second probe."""
    started = cv.PROCESS_START_TIME + q.monitor_selector(model.alerting)
    return (
        f"count(\n    sum by (instance) ({completed}) > 0\n"
        f"    and on (instance)\n    (time() - {started}) < {round(seconds)}\n  )"
    )


def threshold_not_edge(model: Model, slo: SLO) -> str | None:
    """Per endpoint: serves the SLI's histogram but has no bucket at the threshold (None: n/a)."""
    rule = events.definition(slo)
    if not isinstance(rule, events.HistogramEvents) or not rule.per_pool:
        return None
    base = base_matchers(model, slo)
    le = q.le_python_client(rule.threshold)
    by = f"count by ({cv.L_ENDPOINT})"
    served = f"{by} ({rule.metric}_count{q.matchers(base)})"
    edge = f"{by} ({rule.metric}_bucket{q.matchers([*base, ('le', q.eq(le))])})"
    return f"{served}\nunless on ({cv.L_ENDPOINT})\n{edge}"
