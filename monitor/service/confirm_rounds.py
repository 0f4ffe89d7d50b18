"""Schedule confirmation probe rounds when a scrape shows the server refusing work
(:mod:`monitor.probes.confirm` says why and how many).

A scrape interval *refuses* when vLLM's ``admission_rejections_total`` grew or the server answered
429/503 (SGLang's exact codes; vLLM's grouped ``4xx`` also holds bad requests, so it is not read).
The rounds are the service's confirmation job (:meth:`~monitor.service.jobs.Jobs.confirm`) run at
fixed times, tracked under their own task (``probe:<class>:confirm``): their results are stored
for the verdict but are no SLI events, so the probe SLIs keep sampling at the configured rate.
Fleet mode has none: a slot's probes are claimed by one replica per slot, and extra rounds would
have no slot.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from monitor import conventions as cv
from monitor.model import Endpoint
from monitor.probes.confirm import Confirmations
from monitor.scrape.signals import Signals

log = logging.getLogger(__name__)

REFUSING_CODES = ("429", "503")


def refused(signals: Signals) -> bool:
    """Whether the interval holds refusals for load (module docstring)."""
    total = signals.total
    if total.admission_rejections is not None and total.admission_rejections > 0:
        return True
    return any(total.http_status.get(code, 0.0) > 0 for code in REFUSING_CODES)


def schedule(
    scheduler: AsyncIOScheduler,
    wrap: Any,
    probe: Any,
    confirmations: Confirmations,
    endpoint: Endpoint,
    now: float,
) -> list[str]:
    """Add the confirmation rounds of ``endpoint``'s classes that are due; returns their job ids.
    ``wrap`` is the service's :class:`~monitor.service.schedule.Tracked`, ``probe`` its confirmation
    job (called with the class)."""
    added = []
    for cls in confirmations.due(endpoint.classes, now):
        task = cv.confirm_task(cls)
        log.info("%s refuses requests: %d confirmation probe rounds of %s, %g s apart", endpoint.name,
                 confirmations.rounds, cls, confirmations.every)  # fmt: skip
        for k, at in enumerate(confirmations.times(now)):
            job_id = f"{task}:{k}"
            scheduler.add_job(wrap(task, probe), trigger="date", run_date=datetime.fromtimestamp(at, UTC),
                              args=[cls], id=job_id, name=task, replace_existing=True)  # fmt: skip
            added.append(job_id)
    return added
