"""promtool unit tests of the SLO rules (``alerts/tests/slo.test.yml``): the pager against the store.

For one SLO of each kind the configuration has (probe availability, probe correctness, probe
latency, server availability, server latency), three event streams at the class's own probe
rate (server SLOs: a steady 20 requests a minute, with aborted requests that are no events):

* healthy for an hour (checked at minute 59), then half of the events bad;
* healthy but for one bad event at minute 61 (a quiet hour must not page on it).

The alerts expected at each check instant are what the store's evaluator
(:mod:`monitor.slo.evaluate`) says for the same events, so ``promtool test rules`` proves that the
rules and the stored evaluation agree on this configuration — rates, objectives, guards and all.
The project's own agreement suite checks both against an independent oracle.

Two more streams check the alerts the store has no evaluation of, from docs/slo-events.md §3:

* ``SLOMetricAbsent`` (first SLO of each source): the source stops at minute 10 (probes stop
  completing; a server pool's series go stale). It fires once nothing completed within
  max(10 min, 2 × probe interval + probe timeout) (server: the metric is absent), for 10 min:
  pending the minute before, firing from then on.
* ``SLOThresholdNotBucketEdge`` (first server latency SLO): the pool serves a histogram whose only
  finite edge is half the threshold (every request under it). :func:`monitor.slo.edges.is_edge`
  (the collector's and store's test) says the threshold is no edge, so the store counts no events:
  the alert fires from minute 5 (``for: 5m``) and no burn or budget alert fires.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monitor import conventions as cv
from monitor import events
from monitor.generate import notify
from monitor.generate import promql as q
from monitor.model import SLO, Model
from monitor.slo.edges import is_edge
from monitor.slo.evaluate import SLOEvaluation, burn_alerts, evaluate_counts
from monitor.slo.exhaustion import time_to_exhaustion

MINUTES = 70
CHECK_MINUTES = (59, 61, 62, 63, 65, 70)
SERVER_REQUESTS_PER_MINUTE = 20.0
FAMILIES = ("probe-counter", "probe-latency", "server-counter", "server-latency", "traffic-counter")
STOP = 10  # minute the source stops in the absent-metric stream
UNNAMED = "-scenario-"  # a traffic label value no SLO can name (names begin with a letter or digit)
ABSENT_FOR, NOT_EDGE_FOR = 10, 5  # minutes of the alerts' ``for:`` (docs/slo-events.md §3)
NOT_EDGE_MINUTES = 15  # length of the bucket-edge stream (short: promtool evaluates every rule)

#: Expected firing alerts -> alert-test entries (labels/annotations come from the rule objects; the
#: numbers a burn notification reports from the store's evaluation, :func:`figures`).
Expect = Callable[[str, SLO, notify.Figures], dict[str, Any]]


@dataclass(frozen=True)
class Stream:
    """Cumulative valid and bad events at each minute 0..MINUTES (events happen on the minute)."""

    name: str
    valid: tuple[int, ...]
    bad: tuple[int, ...]


def events_per_minute(model: Model, slo: SLO) -> float:
    if slo.source in ("server", "traffic"):
        return SERVER_REQUESTS_PER_MINUTE
    plan = model.request_class(slo.request_class).probe
    return len(plan.kinds) * 60.0 / plan.interval


def streams(rate: float) -> list[Stream]:
    valid = tuple(math.floor(rate * m) for m in range(MINUTES + 1))
    half = tuple(0 if m <= 60 else (valid[m] - valid[60] + 1) // 2 for m in range(MINUTES + 1))
    one = tuple(0 if m < 61 else 1 for m in range(MINUTES + 1))
    one_valid = tuple(v + b for v, b in zip(valid, one, strict=True))
    return [
        Stream("healthy for an hour, then 50 % bad", valid, half),
        Stream("one bad event in an hour", one_valid, one),
    ]


def family(slo: SLO) -> str:
    kind = "latency" if slo.is_latency else "counter"
    return f"{'probe' if slo.source == 'probes' else slo.source}-{kind}"


def expected_at(slo: SLO, stream: Stream, minute: int) -> SLOEvaluation:
    """The store's evaluation of ``slo`` over ``stream`` at ``minute``."""

    def counts(_: str, start: float, end: float) -> tuple[float, float]:
        lo = max(0, min(MINUTES, math.floor(start / 60)))
        hi = max(0, min(MINUTES, math.floor(end / 60)))
        valid, bad = stream.valid[hi] - stream.valid[lo], stream.bad[hi] - stream.bad[lo]
        return float(valid - bad), float(valid)

    return evaluate_counts(slo, minute * 60.0, counts)


def firing(slo: SLO, evaluation: SLOEvaluation) -> set[str]:
    names = {cv.ALERT_BURN_PAGE if a.severity == "page" else cv.ALERT_BURN_TICKET
             for a in burn_alerts(slo, evaluation.windows)}  # fmt: skip
    period = evaluation.window(slo.period_window)
    if period is not None and period.budget_remaining is not None and period.budget_remaining <= 0:
        names.add(cv.ALERT_BUDGET_EXHAUSTED)
    return names


def figures(slo: SLO, stream: Stream, minute: int, endpoint: str) -> notify.Figures:
    """What a burn notification at ``minute`` reports, from the store's evaluation of the same
    events (burn rates, budget, exhaustion) and the stream's bad events (endpoints)."""
    evaluation = expected_at(slo, stream, minute)
    out: dict[notify.Key, Any] = {}
    for w in evaluation.windows:
        out[("burn", w.window)] = w.burn_rate
    period = evaluation.window(slo.period_window)
    out[("budget",)] = (
        None if period is None or period.budget_remaining is None else 100 * period.budget_remaining
    )
    for window in cv.EXHAUSTION_WINDOWS:
        seconds = time_to_exhaustion(evaluation, window)
        out[("exhaustion", window)] = None if seconds is None else seconds / 3600
    for b in cv.BURN_ALERTS:  # the records begin at minute 0: a longer window counts from there
        back = minute - cv.window_seconds(b.long_window) // 60
        bad = stream.bad[minute] - (stream.bad[back] if back >= 0 else 0)
        out[("endpoints", b.long_window)] = ((endpoint, float(bad)),) if bad > 0 else ()
    return out


def _values(cumulative: tuple[int, ...]) -> str:
    return " ".join(str(v) for v in cumulative)


def _probe_series(model: Model, slo: SLO, stream: Stream) -> list[dict[str, str]]:
    endpoint = model.endpoints_for(slo.request_class)[0].name
    kind = model.request_class(slo.request_class).probe.kinds[0]
    base = [(cv.L_JOB, model.alerting.job_monitor), (cv.L_ENDPOINT, endpoint),
            (cv.L_CLASS, slo.request_class), (cv.L_KIND, kind)]  # fmt: skip
    good = tuple(v - b for v, b in zip(stream.valid, stream.bad, strict=True))
    rule = events.definition(slo)
    if rule is events.PROBE_GOODPUT:
        ok_labels, bad_labels = events.probe_labels(None, True), events.probe_labels(None, False)
        ok_labels.pop(cv.L_RESULT), bad_labels.pop(cv.L_RESULT)
        return [_series(rule.metric, [*base, *ok_labels.items()], good),
                _series(rule.metric, [*base, *bad_labels.items()], stream.bad)]  # fmt: skip
    if isinstance(rule, events.CounterEvents):
        bad_reason = next(r for r in cv.FAILURE_CATEGORIES if rule.is_bad(events.probe_labels(r)))
        ok, bad = events.probe_labels(None).items(), events.probe_labels(bad_reason).items()
        return [_series(cv.PROBE_TOTAL, [*base, *ok], good),
                _series(cv.PROBE_TOTAL, [*base, *bad], stream.bad)]  # fmt: skip
    selected = [(m.label, m.values[0]) for m in rule.select]
    return _histogram(rule.metric, [*base, *selected], rule.threshold, good, stream.valid)


def _traffic_series(model: Model, slo: SLO, stream: Stream) -> list[dict[str, str]]:
    """Real requests of the SLO's tenant and band; a dimension it does not scope takes a value no
    SLO of the class names (an unscoped SLO is tested first: it sees every request)."""
    endpoint = model.endpoints_for(slo.request_class)[0].name
    job = model.alerting.job_monitor
    base = [(cv.L_JOB, job), (cv.L_ENDPOINT, endpoint), (cv.L_CLASS, slo.request_class)]
    good = tuple(v - b for v, b in zip(stream.valid, stream.bad, strict=True))
    tenant, band = slo.tenant or UNNAMED, slo.priority or UNNAMED
    ok, bad = events.traffic_labels(tenant, band, True), events.traffic_labels(tenant, band, False)
    return [_series(cv.TRAFFIC_TOTAL, [*base, *ok.items()], good),
            _series(cv.TRAFFIC_TOTAL, [*base, *bad.items()], stream.bad)]  # fmt: skip


def _server_series(model: Model, slo: SLO, stream: Stream) -> list[dict[str, str]]:
    endpoint = model.endpoints_for(slo.request_class)[0].name
    base = [(cv.L_JOB, model.alerting.job_vllm), (cv.L_ENDPOINT, endpoint),
            (cv.L_MODEL, cv.M3_MODEL_ID), ("engine", "0")]  # fmt: skip
    good = tuple(v - b for v, b in zip(stream.valid, stream.bad, strict=True))
    rule = events.definition(slo)
    if isinstance(rule, events.CounterEvents):
        aborted = tuple(v // 10 for v in stream.valid)  # no events: aborts are not counted
        reason = cv.L_FINISHED_REASON
        return [_series(rule.metric, [*base, (reason, "stop")], good),
                _series(rule.metric, [*base, (reason, cv.FINISHED_BAD[0])], stream.bad),
                _series(rule.metric, [*base, (reason, cv.FINISHED_NOT_COUNTED[0])], aborted)]  # fmt: skip
    return _histogram(rule.metric, base, rule.threshold, good, stream.valid)


def _histogram(metric: str, base: list[tuple[str, str]], threshold: float,
               good: tuple[int, ...], total: tuple[int, ...]) -> list[dict[str, str]]:  # fmt: skip
    return [
        _series(f"{metric}_bucket", [*base, ("le", q.le_python_client(threshold))], good),
        _series(f"{metric}_bucket", [*base, ("le", "+Inf")], total),
        _series(f"{metric}_count", base, total),
    ]


def _series(metric: str, labels: list[tuple[str, str]], values: tuple[int, ...]) -> dict[str, str]:
    return {"series": metric + q.matchers((k, q.eq(v)) for k, v in labels), "values": _values(values)}


def scenario(model: Model, slo: SLO, stream: Stream, expect: Expect) -> dict[str, Any]:
    series = {"probes": _probe_series, "traffic": _traffic_series}.get(slo.source, _server_series)
    checks = []
    endpoint = model.endpoints_for(slo.request_class)[0].name
    for minute in CHECK_MINUTES:
        fired = firing(slo, expected_at(slo, stream, minute))
        shown = figures(slo, stream, minute, endpoint)
        for name in (cv.ALERT_BURN_PAGE, cv.ALERT_BURN_TICKET, cv.ALERT_BUDGET_EXHAUSTED):
            exp = [expect(name, slo, shown)] if name in fired else []
            checks.append({"eval_time": f"{minute}m", "alertname": name, "exp_alerts": exp})
    return {
        "name": f"{slo.id} ({family(slo)}): {stream.name}",
        "interval": "1m",
        "input_series": series(model, slo, stream),
        "alert_rule_test": checks,
    }


def _firing(name: str, slo: SLO, by: str = "") -> str:
    ids = f'alertname="{name}",alertstate="firing",{cv.L_CLASS}="{slo.request_class}",{cv.L_SLO}="{slo.name}"'
    return f"count{f' by ({by})' if by else ''} (ALERTS{{{ids}}})"


def _count_checks(expr: str, labels: str, first: int, minutes: tuple[int, ...]) -> list[dict[str, Any]]:
    """``expr`` (a count of firing alerts) is 1 from minute ``first`` on, else nothing."""
    fired = [{"labels": labels, "value": 1}]
    return [{"expr": expr, "eval_time": f"{m}m", "exp_samples": fired if m >= first else []} for m in minutes]


def absent_from(model: Model, slo: SLO) -> int:
    """First minute the absent condition holds after the source stops at STOP (docs §3)."""
    if slo.source in ("server", "traffic"):
        return STOP
    plan = model.request_class(slo.request_class).probe
    return STOP + math.ceil(max(600.0, 2 * plan.interval + plan.timeout) / 60)


def absent_scenario(model: Model, slo: SLO) -> dict[str, Any]:
    first = absent_from(model, slo) + ABSENT_FOR
    minutes = first + 2
    rate = events_per_minute(model, slo)
    # the last events at minute STOP (one more there, so that even a sparse class has one)
    valid = tuple(math.floor(rate * min(m, STOP)) + int(m >= STOP) for m in range(minutes + 1))
    stream = Stream("source stops", valid, (0,) * (minutes + 1))
    if slo.source == "probes":  # completed probes, whatever the SLI: the counter stops rising
        series = [_series(cv.PROBE_TOTAL, _completed_labels(model, slo), valid)]
    else:  # the pool's (traffic: the monitor's) series go stale at STOP (last sample the minute before)
        source = _traffic_series if slo.source == "traffic" else _server_series
        series = [{**s, "values": " ".join(s["values"].split()[:STOP]) + " stale"}
                  for s in source(model, slo, stream)]  # fmt: skip
    checks = _count_checks(
        _firing(cv.ALERT_METRIC_ABSENT, slo), "{}", first, (STOP, first - 1, first, minutes)
    )
    return {"name": f"{slo.id} ({family(slo)}): its source stops at minute {STOP}", "interval": "1m",
            "input_series": series, "promql_expr_test": checks}  # fmt: skip


def _completed_labels(model: Model, slo: SLO) -> list[tuple[str, str]]:
    endpoint = model.endpoints_for(slo.request_class)[0].name
    kind = model.request_class(slo.request_class).probe.kinds[0]
    ids = [(cv.L_JOB, model.alerting.job_monitor), (cv.L_ENDPOINT, endpoint), (cv.L_CLASS, slo.request_class)]
    return [*ids, (cv.L_KIND, kind), *events.probe_labels(None).items()]


def not_edge_scenario(model: Model, slo: SLO) -> dict[str, Any] | None:
    rule = events.definition(slo)
    if slo.source != "server" or not isinstance(rule, events.HistogramEvents) or not rule.per_pool:
        return None
    edge = rule.threshold / 2
    assert not is_edge((edge, math.inf), rule.threshold)  # the store reads no events from such a pool
    endpoint = model.endpoints_for(slo.request_class)[0].name
    base = [(cv.L_JOB, model.alerting.job_vllm), (cv.L_ENDPOINT, endpoint),
            (cv.L_MODEL, cv.M3_MODEL_ID), ("engine", "0")]  # fmt: skip
    total = tuple(math.floor(SERVER_REQUESTS_PER_MINUTE * m) for m in range(NOT_EDGE_MINUTES + 1))
    series = [_series(f"{rule.metric}_bucket", [*base, ("le", q.le_python_client(edge))], total),
              _series(f"{rule.metric}_bucket", [*base, ("le", "+Inf")], total),
              _series(f"{rule.metric}_count", base, total)]  # fmt: skip
    minutes = (NOT_EDGE_FOR - 1, NOT_EDGE_FOR, NOT_EDGE_FOR + 1, NOT_EDGE_MINUTES)
    checks = _count_checks(_firing(cv.ALERT_THRESHOLD_NOT_EDGE, slo, cv.L_ENDPOINT),
                           f'{{{cv.L_ENDPOINT}="{endpoint}"}}', NOT_EDGE_FOR, minutes)  # fmt: skip
    nothing = Stream("no events", (0,) * (MINUTES + 1), (0,) * (MINUTES + 1))
    quiet = [m for m in minutes if not firing(slo, expected_at(slo, nothing, m))]
    checks += [{"expr": _firing(name, slo), "eval_time": f"{m}m", "exp_samples": []} for m in quiet
               for name in (cv.ALERT_BURN_PAGE, cv.ALERT_BURN_TICKET, cv.ALERT_BUDGET_EXHAUSTED)]  # fmt: skip
    return {"name": f"{slo.id} ({family(slo)}): no bucket edge at the threshold, every request fast",
            "interval": "1m", "input_series": series, "promql_expr_test": checks}  # fmt: skip


def slo_tests(model: Model, request_class: str, rule_file: str, expect: Expect) -> dict[str, Any]:
    """The promtool test file of one class: its first SLO of each family, against ``rule_file``;
    the absent-metric stream for its first SLO of each source, the bucket-edge one for its first
    server latency SLO."""
    tests = []
    slos = model.request_class(request_class).slos
    for fam in FAMILIES:  # an unscoped traffic SLO first: it counts every request
        slo = min((s for s in slos if family(s) == fam), key=lambda s: (s.tenant, s.priority) != (None, None),
                  default=None)  # fmt: skip
        if slo is not None:
            tests += [scenario(model, slo, st, expect) for st in streams(events_per_minute(model, slo))]
    for source in ("probes", "server", "traffic"):
        slo = next((s for s in slos if s.source == source), None)
        if slo is not None:
            tests.append(absent_scenario(model, slo))
    edge = next((t for t in (not_edge_scenario(model, s) for s in slos) if t is not None), None)
    if edge is not None:
        tests.append(edge)
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}
