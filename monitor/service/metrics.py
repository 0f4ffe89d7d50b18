"""The service's metrics about itself: job runs, last successes, refused requests, reloads.

* ``m3mon_job_runs_total{task,result}``: every scheduled run by task (the scheduler's job id) and
  result (success, failure, skipped: the evaluation waited for the store);
* ``m3mon_job_last_success_timestamp_seconds{task}``: 0 until the task first succeeds;
* ``m3mon_job_start_delay_seconds{task}``: how late the task's last run started (0 until its first);
* ``m3mon_job_cpu_seconds_total{kind}``: CPU seconds by kind of work (:mod:`monitor.service.cpu`);
* ``m3mon_event_loop_lag_seconds``: how late the event loop ran its ticks (:mod:`monitor.service.loop_lag`);
* ``m3mon_receiver_rejected_total{receiver,reason}``: requests refused before anything was
  stored (unauthorized, too_large, invalid, unsupported);
* ``m3mon_config_reloads_total{result}``;
* ``m3mon_log_warnings_total{logger,kind}`` and ``m3mon_log_warnings_suppressed_total{logger,kind}``
  (:mod:`monitor.service.repeats`).

Every series of a planned task and every (receiver, reason) exists at 0 from the start, so
``increase()`` sees the first failure; :meth:`ServiceMetrics.plan` drops the series of tasks a
reload removed, so a removed probe class cannot look like probes that stopped.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor import conventions as cv
from monitor.service.cpu import JobCPU
from monitor.service.loop_lag import LoopLag
from monitor.service.repeats import REPEATS, RepeatCollector

RELOAD_RESULTS = ("success", "failure")


class ServiceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.runs = Counter(cv.JOB_RUNS.removesuffix("_total"), "Scheduled job runs by task and result.",
                            [cv.L_TASK, cv.L_RESULT], registry=registry)  # fmt: skip
        self.last_success = Gauge(
            cv.JOB_LAST_SUCCESS,
            "Unix time of the task's last successful run (0: none since the process started).",
            [cv.L_TASK],
            registry=registry,
        )
        self.start_delay = Gauge(
            cv.JOB_START_DELAY,
            "Seconds the task's last run started after its scheduled time (event-loop lag).",
            [cv.L_TASK],
            registry=registry,
        )
        self.cpu = JobCPU(registry)
        self.loop_lag = LoopLag(registry)
        self.rejected = Counter(
            cv.RECEIVER_REJECTED.removesuffix("_total"),
            "Requests refused before anything was stored, by receiver and reason.",
            [cv.L_RECEIVER, cv.L_REASON],
            registry=registry,
        )
        self.reloads = Counter(cv.CONFIG_RELOADS.removesuffix("_total"),
                               "Configuration reloads (SIGHUP, POST /-/reload) by result.",
                               [cv.L_RESULT], registry=registry)  # fmt: skip
        for receiver in cv.RECEIVERS:
            for reason in cv.REJECT_REASONS:
                self.rejected.labels(receiver, reason)
        for result in RELOAD_RESULTS:
            self.reloads.labels(result)
        self.tasks: set[str] = set()
        registry.register(RepeatCollector(REPEATS))

    def plan(self, tasks: Iterable[str]) -> None:
        """Create the series of ``tasks`` at 0 and remove those of tasks no longer scheduled."""
        wanted = set(tasks)
        for gone in self.tasks - wanted:
            self.last_success.remove(gone)
            self.start_delay.remove(gone)
            for result in cv.JOB_RESULTS:
                self.runs.remove(gone, result)
        for task in wanted - self.tasks:
            self.last_success.labels(task)
            self.start_delay.labels(task)
            for result in cv.JOB_RESULTS:
                self.runs.labels(task, result)
        self.tasks = wanted

    def ran(self, task: str, result: str, at: float) -> None:
        self.runs.labels(task, result).inc()
        if result == "success":
            self.last_success.labels(task).set(at)

    def started(self, task: str, delay: float) -> None:
        if task in self.tasks:  # a run submitted just before a reload removed its task
            self.start_delay.labels(task).set(max(0.0, delay))

    def reject(self, receiver: str, reason: str) -> None:
        self.rejected.labels(receiver, reason).inc()

    def reloaded(self, ok: bool) -> None:
        self.reloads.labels("success" if ok else "failure").inc()


def receiver_of(path: str) -> str:
    """The ``receiver`` label of a request path."""
    if path == "/alertmanager":
        return cv.RECEIVER_ALERTMANAGER
    if path == "/v1/traces":
        return cv.RECEIVER_OTLP
    return "exporter"
