"""``VLLMHealthyButProbesFailing``: the endpoint answers ``/health`` while its probes fail.

Its windows count only what was true when it happened. Probe runs are counted **per rule step**
(as the SLO events are, :mod:`monitor.generate.sli`), per endpoint and class:

* a cumulative record per target, endpoint and class of the runs (and failed runs) the monitor's
  ``m3mon_probe_total`` shows now, less :data:`NOT_COUNTED` (``monitor_error`` runs are the
  monitor's own bugs; ``connect_error`` means the endpoint answered nothing, /health included);
* a step record of what the cumulative record rose by since the previous step's reading (after a
  monitor restart: the value now), kept only when the endpoint's ``/health`` was up at every
  sample of the last :data:`HEALTHY_FOR` and no maintenance occurrence of the class on the
  endpoint overlaps the last :func:`maintenance_margin` (the class's probe timeout plus a minute:
  a probe that began in the maintenance may end after it). "Now" is the cumulative record of the
  same instant, as for the SLO steps, so a scrape landing between the two rules counts once; the
  counters are read only where the engine does not show this run's records at all (the group's
  first record, :data:`~monitor.conventions.PROBE_RUNS_EVALUATED_RECORD`, tells), so a target
  stale at the cumulative rule (a failed scrape) has no step now and the next step measures
  across, even when a scrape lands before the step.

The alert sums those step records over its windows. So the failures of a hard outage (``/health``
down) never count once the endpoint is back, a monitor restart changes no window (the first step
after it counts the new process's runs), and failures inside a finished maintenance are not
re-paged when it ends. Of the failures between an outage's start and the first ``/health`` check
that sees it (at most one check, 15 s) only those that are not refused connections count (streams
cut by the crash, a gateway's 503s); the alert's minimum of failures and its ratio keep them from
paging alone. Detection targets: :mod:`monitor.generate.detection`.
"""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert, Group, record
from monitor.generate.sli import boundary, rise, same_instant
from monitor.model import Model

# More than PROBE_FAILURE_RATIO of the endpoint's counted probes failed, and at least
# PROBE_FAILURES_MIN of them (one failed probe never pages), over PROBE_WINDOW; an endpoint with
# fewer than PROBE_SPARSE_BELOW counted runs in PROBE_WINDOW is judged over PROBE_SPARSE_WINDOW.
PROBE_FAILURE_RATIO = 0.25
PROBE_FAILURES_MIN = 3
PROBE_WINDOW = "5m"
PROBE_SPARSE_WINDOW = "30m"
PROBE_SPARSE_BELOW = 10
PROBE_FAILING_FOR = "1m"
#: A step's runs count when ``/health`` was up at every sample this far back.
HEALTHY_FOR = "1m"
#: The labels of one cumulative probe record: one monitor process, endpoint and class.
PROBE_TARGET = "job, instance, endpoint, class"
#: The windows hold every step record after ``t - W + WINDOW_TRIM`` (never the one at ``t - W``,
#: whatever the evaluation interval above 7 s; Prometheus 2 range selectors include their left end).
WINDOW_TRIM = 7


def _indent(text: str, by: str = "  ") -> str:
    return "\n".join(by + line for line in text.splitlines())


def maintenance_margin(model: Model, klass: str) -> int:
    """Seconds a step of ``klass`` looks back for a maintenance occurrence: the class's probe
    timeout + 1 min (a probe that began in the maintenance ends within its timeout). The longest
    timeout of every class (600 s for extended-context) blinded m3-interactive's alert for 11 min
    after each of its maintenances (live run, 2026-12-04: 50 % failures from 4 min after one never
    paged)."""
    return round(model.request_class(klass).probe.timeout) + 60


#: Runs this alert never counts: the monitor's own bugs, and refused connections — an endpoint that
#: refuses connections does not answer /health either (VLLMEndpointDown and the availability SLO
#: own that), and in an outage the monitor's /health check sees it up to one check (15 s) late.
NOT_COUNTED = (*sorted(cv.MONITOR_FAILURES), "connect_error")


def _runs(model: Model, *, failed: bool) -> str:
    pairs = [(cv.L_JOB, q.eq(model.alerting.job_monitor))]
    if failed:
        pairs.append((cv.L_RESULT, q.eq(cv.RESULT_FAILURE)))
    pairs.append((cv.L_REASON, q.not_regex(NOT_COUNTED)))
    return f"sum by ({PROBE_TARGET}) ({cv.PROBE_TOTAL}{q.matchers(pairs)})"


def cumulative(model: Model, *, failed: bool) -> str:
    """Per target, endpoint and class: probe runs (or failed runs) so far; failures 0, not absent."""
    runs = _runs(model, failed=False)
    return f"({_runs(model, failed=True)} or 0 * {runs})" if failed else runs


def _healthy(model: Model) -> str:
    health = f"{cv.HEALTH_UP}{q.monitor_selector(model.alerting)}"
    return f"min by ({cv.L_ENDPOINT}) (min_over_time({health}[{HEALTHY_FOR}])) == 1"


def _in_maintenance(model: Model) -> str:
    """One sample per endpoint and class with a maintenance occurrence in the class's margin."""
    spans = []
    for klass in model.classes:
        sel = q.monitor_selector(model.alerting, **{cv.L_CLASS: klass.name})
        since = f"time() - {maintenance_margin(model, klass.name)}"
        spans += [
            f"({boundary(end + sel)} > {since}) and ({boundary(start + sel)} < time())"
            for start, end in (
                (cv.MAINTENANCE_START, cv.MAINTENANCE_END),
                (cv.MAINTENANCE_PREVIOUS_START, cv.MAINTENANCE_PREVIOUS_END),
            )
        ]
    return f"count by ({cv.L_ENDPOINT}, {cv.L_CLASS}) (\n    " + "\n  or\n    ".join(spans) + "\n)"


def step(model: Model, *, failed: bool) -> str:
    """Per endpoint and class: runs (or failed runs) of this step that count (module docstring)."""
    name = cv.probe_runs_record("cumulative", failed=failed)
    before = f"last_over_time({name}[{cv.SCRAPE_GAP_LIMIT}] offset {cv.STEP_READ_OFFSET})"
    counters = cumulative(model, failed=failed)
    now = same_instant(name, "", counters, on=PROBE_TARGET, shown=cv.PROBE_RUNS_EVALUATED_RECORD)
    rose = rise(now, before, on=PROBE_TARGET)
    return (
        f"sum by ({cv.L_ENDPOINT}, {cv.L_CLASS}) (\n  {rose}\n)\n"
        f"and on ({cv.L_ENDPOINT})\n{_healthy(model)}\n"
        f"unless on ({cv.L_ENDPOINT}, {cv.L_CLASS})\n{_in_maintenance(model)}"
    )


def records(model: Model) -> tuple[dict[str, Any], ...]:
    """The group's instant first (every run writes it, so a step can tell the engine shows this
    run's records), then per kind the cumulative record and the step that reads it."""
    out = [record(cv.PROBE_RUNS_EVALUATED_RECORD, "vector(time())", {})]
    for failed in (False, True):
        now, rose = cumulative(model, failed=failed), step(model, failed=failed)
        out.append(record(cv.probe_runs_record("cumulative", failed=failed), now, {}))
        out.append(record(cv.probe_runs_record("step", failed=failed), rose, {}))
    return tuple(out)


def window_count(window: str, *, failed: bool) -> str:
    """Per endpoint: runs (or failed runs) of the steps in ``window`` that count."""
    trimmed = f"{cv.window_seconds(window) - WINDOW_TRIM}s"
    steps = cv.probe_runs_record("step", failed=failed)
    return f"sum by ({cv.L_ENDPOINT}) (sum_over_time({steps}[{trimmed}]))"


def _failing(window: str, sparse: bool) -> str:
    failed, ran = window_count(window, failed=True), window_count(window, failed=False)
    terms = [f"{failed}\n/\n{ran}\n> {q.num(PROBE_FAILURE_RATIO)}", f"{failed} >= {PROBE_FAILURES_MIN}"]
    if sparse:
        terms.append(f"{window_count(PROBE_WINDOW, failed=False)} < {PROBE_SPARSE_BELOW}")
    return "(\n" + _indent("\nand on (endpoint)\n".join(terms)) + "\n)"


def probes_failing_expr(model: Model) -> str:
    """The failed-probe ratio (the alert's value) of endpoints whose ``/health`` is up now.

    Judged over PROBE_WINDOW, or over PROBE_SPARSE_WINDOW for an endpoint with fewer than
    PROBE_SPARSE_BELOW counted runs in PROBE_WINDOW (one 5-minute round of two probes is no basis).
    """
    either = _indent(f"{_failing(PROBE_WINDOW, False)}\nor\n{_failing(PROBE_SPARSE_WINDOW, True)}")
    health = f"{cv.HEALTH_UP}{q.monitor_selector(model.alerting)}"
    return f"(\n{either}\n)\nand on (endpoint)\nmax by (endpoint) ({health}) == 1"


def probes_failing_alert(model: Model) -> Alert:
    return Alert(
        cv.ALERT_PROBES_FAILING,
        probes_failing_expr(model),
        "page",
        "{{ $labels.endpoint }} answers /health but synthetic probes fail",
        "/health returns 200 while {{ $value | humanizePercentage }} of the probes failed over the "
        f"last {PROBE_WINDOW} ({PROBE_SPARSE_WINDOW} for an endpoint probed less than "
        f"{PROBE_SPARSE_BELOW} times in {PROBE_WINDOW}), counting only probes that ran while "
        f"/health was up and outside maintenance: the server is up but not serving correct answers.",
        for_=PROBE_FAILING_FOR,
    )


def probe_groups(model: Model) -> list[Group]:
    """The step records and the alert that reads them, in one group (read at the same instant)."""
    return [Group("m3mon-operational-probes", records=records(model), alerts=(probes_failing_alert(model),))]
