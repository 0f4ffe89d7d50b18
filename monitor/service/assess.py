"""The ``assess`` job: every class's bottleneck verdict, and the requests behind burning SLOs.

* Verdicts: from the store, the computation ``m3mon slo status`` and the report make
  (docs/bottleneck.md), published on the exporter. When the store cannot be read (or the writer
  found the database away: its evidence is in the spool) the classes' verdict series are withdrawn:
  no verdict rather than a stale one.
* Requests: for each SLO whose last evaluation holds bad events in its 1h window
  (``Jobs.burning``), its bad requests of the last :data:`REQUESTS_WINDOW` seconds (the burn page's
  short windows fit inside it), published for the burn notifications
  (:mod:`monitor.service.request_metrics`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from monitor.bottleneck.rules import Verdict
from monitor.service import request_metrics

if TYPE_CHECKING:
    from monitor.service.jobs import Jobs

log = logging.getLogger(__name__)
REQUESTS_WINDOW = 900.0


def assess(jobs: Jobs) -> tuple[Verdict, ...] | None:
    """Publish every class's verdict now (None: skipped, the database is away)."""
    from monitor.report.collect_bottleneck import verdicts

    if jobs.writer.database_away:
        withdraw(jobs)
        return None
    try:
        with jobs.store.session() as session:
            found = verdicts(jobs.model, session, jobs.clock())
    except SQLAlchemyError as exc:
        log.warning("bottleneck verdict: the store could not be read (%s); verdicts withdrawn", exc)
        withdraw(jobs)
        return ()
    for v in found:
        jobs.verdicts[v.request_class] = v
        jobs.exporter.bottleneck.publish(v)
    publish_requests(jobs)
    return found


def publish_requests(jobs: Jobs) -> None:
    """The bad requests behind each burning SLO."""
    from monitor.report.collect_requests import requests_behind

    now, burning = jobs.clock(), [s for s in jobs.model.slos if s.id in jobs.burning]
    with jobs.store.session() as session:
        for slo in burning:
            found = requests_behind(jobs.model, session, slo, now, REQUESTS_WINDOW, request_metrics.TOP)
            jobs.exporter.requests.publish(slo, [r for r in found if r.bad], jobs.model.alerting.trace_link)
    jobs.exporter.requests.forget_others({s.id for s in burning})


def withdraw(jobs: Jobs) -> None:
    for cls in list(jobs.verdicts):
        jobs.exporter.bottleneck.forget(cls)
    jobs.verdicts.clear()
