"""The monitor's alerts about itself (group ``m3mon-self``): is it evaluating, probing, receiving?

They read the service's own metrics (:mod:`monitor.service.metrics`):

* ``M3MonEvaluationStale``: the ``evaluate`` task has not succeeded for EVALUATION_STALE_AFTER
  seconds. Its job runs every 15 s (or every evaluation step when that is shorter) and succeeds
  even when no step is due, so five minutes without a success means SLO evaluation stopped.
* ``M3MonProbesNotRunning``: a class's probe task has not completed a round for
  max(10m, 2 × interval + timeout), the same allowance ``SLOMetricAbsent`` gives its probes.
* ``M3MonReceiverRejecting``: ``/alertmanager`` or ``/v1/traces`` refused at least
  RECEIVER_REJECTIONS requests in RECEIVER_WINDOW: a sender (Alertmanager, vLLM) whose password,
  payload or encoding is wrong, whose data is lost. One or two stray requests never fire.
* ``M3MonEventLoopBlocked``: the service's event loop was late by LOOP_BLOCKED_SECONDS or more in
  all over LOOP_WINDOW (``m3mon_event_loop_lag_seconds_sum``): one long hold or a steady
  starvation. Probe rounds, their timeouts, scrapes and the exporter waited that long; a few
  seconds of collector pauses never fire.

Ages are counted from the later of the task's last success and the process start
(``process_start_time_seconds``), so a monitor that just (re)started and has not finished its
first round yet is not stale; the last-success series is 0 until the first success.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate.rules import Alert
from monitor.model import Model

EVALUATION_STALE_AFTER = 300  # seconds without a successful evaluate run
PROBES_STALE_MIN = 600  # seconds; per class max(this, 2 × interval + timeout)
RECEIVER_WINDOW = "10m"
RECEIVER_REJECTIONS = 3
LOOP_WINDOW = "10m"
LOOP_BLOCKED_SECONDS = 30  # 5 % of LOOP_WINDOW


def probes_stale_after(model: Model, request_class: str) -> int:
    """Seconds a class's probe task may go without completing a round."""
    plan = model.request_class(request_class).probe
    return round(max(PROBES_STALE_MIN, 2 * plan.interval + plan.timeout))


def task_age(model: Model, task: str) -> str:
    """Seconds since ``task`` last succeeded, or since the process started if that is later."""
    success = cv.JOB_LAST_SUCCESS + q.monitor_selector(model.alerting, **{cv.L_TASK: task})
    started = cv.PROCESS_START_TIME + q.monitor_selector(model.alerting)
    return f"time() - max by (job, instance) ({success} or {started})"


def _probes_not_running(model: Model) -> str:
    terms = [
        f'label_replace({task_age(model, cv.probe_task(c.name))}, "{cv.L_CLASS}", "{c.name}", "", "")\n'
        f"  > {probes_stale_after(model, c.name)}"
        for c in model.classes
    ]
    return "\nor\n".join(terms)


def self_alerts(model: Model) -> list[Alert]:
    rejected = cv.RECEIVER_REJECTED + q.matchers(
        [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_RECEIVER, q.regex(cv.RECEIVERS))]
    )
    lag_sum = f"{cv.EVENT_LOOP_LAG}_sum" + q.monitor_selector(model.alerting)
    return [
        Alert(
            cv.ALERT_EVALUATION_STALE,
            f"{task_age(model, cv.TASK_EVALUATE)} > {EVALUATION_STALE_AFTER}",
            "ticket",
            "m3mon has not evaluated SLOs for {{ $value | humanizeDuration }}",
            "The monitor's evaluate task on {{ $labels.instance }} has not completed for "
            "{{ $value | humanizeDuration }}: stored evaluations, the monitor's SLO gauges, "
            "`m3mon slo status` and the weekly report are stale. The Prometheus burn-rate alerts "
            "do not depend on it.",
        ),
        Alert(
            cv.ALERT_PROBES_NOT_RUNNING,
            _probes_not_running(model),
            "ticket",
            "m3mon's {{ $labels.class }} probes have not run for {{ $value | humanizeDuration }}",
            "No probe round of class {{ $labels.class }} completed on {{ $labels.instance }} for "
            "{{ $value | humanizeDuration }}: the class's probe SLOs see no events and cannot alert.",
        ),
        Alert(
            cv.ALERT_RECEIVER_REJECTING,
            f"sum by (job, instance, receiver, reason) (increase({rejected}[{RECEIVER_WINDOW}]))\n"
            f">= {RECEIVER_REJECTIONS}",
            "ticket",
            "m3mon's {{ $labels.receiver }} receiver refuses requests ({{ $labels.reason }})",
            '{{ printf "%.0f" $value }} requests to the {{ $labels.receiver }} receiver on '
            "{{ $labels.instance }} were refused ({{ $labels.reason }}) in the last "
            f"{RECEIVER_WINDOW}; what they carried (incidents or request spans) is lost.",
        ),
        Alert(
            cv.ALERT_EVENT_LOOP_BLOCKED,
            f"sum by (job, instance) (increase({lag_sum}[{LOOP_WINDOW}]))\n>= {LOOP_BLOCKED_SECONDS}",
            "ticket",
            "m3mon's event loop was held for {{ $value | humanizeDuration }} in the last " + LOOP_WINDOW,
            "The monitor on {{ $labels.instance }} ran its work {{ $value | humanizeDuration }} late in "
            f"all over the last {LOOP_WINDOW}: probe rounds and their timeouts, scrapes and exporter "
            "requests waited that long (probe latencies are kernel-stamped and stay right; what a round "
            "counts and when does not).",
        ),
        Alert(
            cv.ALERT_METRIC_FAMILY_GONE,
            _family_gone(model),
            "ticket",
            "{{ $labels.endpoint }} no longer serves {{ $labels.family }}, which the monitor's rules or "
            "dashboards read",
            "{{ $labels.family }} was on {{ $labels.endpoint }}'s page in the last "
            f"{cv.METRIC_FAMILY_MEMORY} and is not now ({{{{ $labels.status }}}}"
            "{{ if $labels.replacement }}; the page serves {{ $labels.replacement }} instead{{ end }}): the "
            "SLOs, alerts and panels that read it get no data. `m3mon check-config monitor.yaml --metrics "
            "{{ $labels.endpoint }}=<its /metrics URL>` says which and why.",
        ),
    ]


def _family_gone(model: Model) -> str:
    """A needed family served (1) within the memory and not (0) now: a deployment renamed, hid or
    dropped it. A family never served, or a monitor that restarted, does not fire it."""
    served = cv.METRIC_FAMILY_SERVED + q.monitor_selector(model.alerting)
    by = f"job, instance, {cv.L_ENDPOINT}, {cv.L_FAMILY}"
    return (
        f"max by ({by}, {cv.L_STATUS}, {cv.L_REPLACEMENT}) ({served} == 0)\n"
        f"and on ({by})\n"
        f"max by ({by}) (max_over_time({served}[{cv.METRIC_FAMILY_MEMORY}])) == 1"
    )
