"""PromQL for each SLO's valid and bad events over a window, rendered from :mod:`monitor.events`.

The store counts the same events by applying the same definitions to each probe run and scrape
interval (:mod:`monitor.slo.slices`); docs/slo-events.md states them in words. Every expression
is a plain ``sum`` without labels of its own; the recording rules attach ``class``, ``slo`` and
``sli``. Counts are ``increase()`` of counters, so a window's ratio is Σbad / Σvalid over it.

* Counter events: valid = the increase of the series matching the valid matchers; bad = of those
  also matching the bad matchers. Bad series that do not exist yet count 0 while valid ones exist.
* Maintenance: :func:`maintenance_counts` records each step's events on endpoints inside a
  maintenance occurrence (``start < time() <= end`` from the monitor's published boundaries), each
  counter's rise since the last sample a step old (:func:`_step`); the window records subtract
  their sum over the window (docs/maintenance.md).
* Histogram events: per endpoint, valid = ``_count`` and bad = ``_count - _bucket{le=threshold}``,
  joined ``on (endpoint)`` so an endpoint whose histogram has no bucket at the threshold adds
  nothing to either (no data), never "every request slow". Layouts are never added up bucket by
  bucket: each endpoint is reduced to counts first.
"""

from __future__ import annotations

from collections.abc import Callable

from monitor import conventions as cv
from monitor import events
from monitor.generate import promql as q
from monitor.model import SLO, Model


def _matcher(m: events.Match) -> tuple[str, str]:
    return m.label, (q.not_regex(m.values) if m.negate else q.regex(m.values))


def base_matchers(model: Model, slo: SLO) -> list[tuple[str, str]]:
    """Which targets' series an SLO reads: the monitor's for probes, its class's pools for server."""
    if slo.source == "probes":
        return [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_CLASS, q.eq(slo.request_class))]
    return q.pool_matchers(model, slo)


#: The amount a counter series adds: over a window (``increase``) or over one rule step.
Amount = Callable[[str], str]


def _over(window: str) -> Amount:
    return lambda selector: f"increase({selector}[{window}])"


def _step(selector: str) -> str:
    """What ``selector`` added since the rule step before: the sample now less the last sample at
    least a step old (up to :data:`~monitor.conventions.MAINTENANCE_LOOKBACK` back, so a scrape
    gap's events land on the step that first sees them), or the value now after a counter reset.
    Successive steps add up exactly to the counter's rise, whatever the scrape times."""
    prev = f"last_over_time({selector}[{cv.MAINTENANCE_LOOKBACK}] offset {cv.SLO_RULE_INTERVAL})"
    rise = f"({selector} - {prev})"
    return f"({rise} >= 0\n  or\n  ({selector} and {rise} < 0))"


def _by_endpoint(selector: str, amount: Amount) -> str:
    return f"sum by ({cv.L_ENDPOINT}) ({amount(selector)})"


def _counter_events(
    base: list[tuple[str, str]], rule: events.CounterEvents, amount: Amount
) -> tuple[str, str]:
    valid_sel = rule.metric + q.matchers([*base, *map(_matcher, rule.valid)])
    bad_sel = rule.metric + q.matchers([*base, *map(_matcher, (*rule.valid, *rule.bad))])
    valid = _by_endpoint(valid_sel, amount)
    return f"(\n  {_by_endpoint(bad_sel, amount)}\n  or\n  0 * {valid}\n)", valid


def _histogram_events(
    base: list[tuple[str, str]], rule: events.HistogramEvents, amount: Amount
) -> tuple[str, str]:
    le = q.le_python_client(rule.threshold)
    base = [*base, *map(_matcher, rule.select)]
    count = _by_endpoint(f"{rule.metric}_count{q.matchers(base)}", amount)
    good = _by_endpoint(f"{rule.metric}_bucket{q.matchers([*base, ('le', q.eq(le))])}", amount)
    bad = f"(\n  {count}\n  - on ({cv.L_ENDPOINT})\n  {good}\n)"
    valid = f"(\n  {count}\n  and on ({cv.L_ENDPOINT})\n  {good}\n)"
    return bad, valid


def events_by_endpoint(model: Model, slo: SLO, amount: Amount) -> tuple[str, str]:
    """(bad, valid) PromQL for ``slo``'s events (each counter's ``amount``), one sample per endpoint."""
    rule = events.definition(slo)
    base = base_matchers(model, slo)
    if isinstance(rule, events.CounterEvents):
        return _counter_events(base, rule, amount)
    return _histogram_events(base, rule, amount)


def event_counts(model: Model, slo: SLO, window: str) -> tuple[str, str]:
    """(bad, valid) PromQL for ``slo``'s events over ``window``, before maintenance is taken out."""
    bad, valid = events_by_endpoint(model, slo, _over(window))
    return f"sum(\n  {bad}\n)", f"sum(\n  {valid}\n)"


def in_maintenance(model: Model, slo: SLO) -> str:
    """One sample per endpoint of ``slo``'s class while a maintenance occurrence holds ``time()``
    (start < time() <= end, from the boundaries the monitor publishes)."""
    sel = q.monitor_selector(model.alerting, **{cv.L_CLASS: slo.request_class})
    return f"({cv.MAINTENANCE_START}{sel} < time()\n  and\n  {cv.MAINTENANCE_END}{sel} >= time())"


def maintenance_counts(model: Model, slo: SLO) -> tuple[str, str]:
    """(bad, valid) PromQL for ``slo``'s events of the last rule step on endpoints in maintenance."""
    bad, valid = events_by_endpoint(model, slo, _step)
    held = in_maintenance(model, slo)
    bad, valid = (f"sum(\n  {x}\n  and on ({cv.L_ENDPOINT})\n  {held}\n)" for x in (bad, valid))
    return bad, valid


def error_ratio(model: Model, slo: SLO, window: str) -> str:
    """Σbad / Σvalid over ``window`` as one expression; nothing (not NaN) when there are no events."""
    bad, valid = event_counts(model, slo, window)
    return f"(\n{bad}\n)\n/\n(\n{valid}\n> 0)"


def activity_window(model: Model, slo: SLO) -> str:
    """How long a probe-sourced SLO may go without events before its metric counts as absent."""
    plan = model.request_class(slo.request_class).probe
    seconds = max(600.0, 2 * plan.interval + plan.timeout)
    return f"{round(seconds)}s"


def absent_condition(model: Model, slo: SLO) -> str:
    """True (a sample) when ``slo`` has no source data at all, for ``SLOMetricAbsent``."""
    rule = events.definition(slo)
    base = base_matchers(model, slo)
    if slo.source == "probes":
        completed = cv.PROBE_TOTAL + q.matchers([*base, *map(_matcher, events.PROBE_AVAILABILITY.valid)])
        window = activity_window(model, slo)
        return f"absent({completed})\nor\nsum(increase({completed}[{window}])) == 0"
    metric = rule.metric + ("_count" if isinstance(rule, events.HistogramEvents) else "")
    return f"absent({metric}{q.matchers(base)})"


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
