"""Confirmation rounds are diagnostic: a shedding endpoint's probe SLIs count the configured
rounds, however many confirmation rounds its refusals bring, while the verdict reads them all.

A real simulator with a queue of size 0 refuses every chat (429, ``admission_rejections_total``),
so every probe is a bad availability event; the service's own refusal hook (two scrapes around
``n`` rounds) schedules the confirmation rounds on its real APScheduler, whose jobs are then run
as the scheduler would run them, followed by ``m`` more rounds. The oracle is the schedule itself
(docs/slo-events.md: a probe SLI counts one event per scheduled run): ``n + m`` events in the
store's slices and window counts, in the exporter's ``m3mon_probe_total`` (read from its
exposition text) and in the report's failure counts; ``n + m + ROUNDS`` stored runs, every one
refused, in the bottleneck verdict's evidence.
"""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from monitor.model import load_model
from monitor.probes.confirm import ROUNDS
from monitor.report.collect_bottleneck import verdicts
from monitor.report.collect_probes import ProbeFacts
from monitor.report.data import Period
from monitor.report.redact import Redactor
from monitor.service.service import Service
from monitor.sim.harness import running_simulator
from monitor.store.migrate import upgrade
from tests.service.live import config_doc

pytestmark = pytest.mark.timeout(120)
FAST = {"decode_itl": 0.002, "prefill_overhead": 0.001, "jitter": 0.0}
CLS = "chat-32k"


def _samples(service: Service, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The exporter's samples of ``name``, by labels, parsed from its exposition text."""
    page = generate_latest(service.exporter.registry).decode()
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(page)
        for s in family.samples
        if s.name == name
    }


async def _run(service: Service, n: int, m: int) -> None:
    endpoint = service.model.endpoints[0]
    await service.jobs.scrape(endpoint)
    for _ in range(n):
        await service.jobs.probe(CLS, False)
    await service.jobs.scrape(endpoint)  # shows the rounds' refusals: confirmation rounds scheduled
    scheduled = service.scheduler.get_jobs()  # not started: what it would run, run here at once
    assert len(scheduled) == ROUNDS
    for job in scheduled:
        await job.func(*job.args)
    for _ in range(m):
        await service.jobs.probe(CLS, False)
    await service.jobs.close()


def _case(tmp: Path, base_url: str, n: int, m: int) -> None:
    doc = config_doc(tmp, 9464)
    doc["endpoints"][0]["base_url"] = base_url
    (tmp / "m.yaml").write_text(yaml.safe_dump(doc))
    model = load_model(tmp / "m.yaml")
    upgrade(model.storage.url)
    service = Service(model, send_reports=False)
    start = time.time()
    asyncio.run(_run(service, n, m))
    end = time.time() + 1.0
    slo = model.request_class(CLS).slos[0]
    engine = create_engine(model.storage.url, poolclass=NullPool)
    with engine.connect() as conn:
        bad, total = conn.execute(text("SELECT SUM(total - good), SUM(total) FROM event_slices WHERE slo_id = :s"),
                                  {"s": slo.id}).one()  # fmt: skip
        runs = conn.execute(text("SELECT COUNT(*) FROM probe_results WHERE status_code = 429")).scalar()
    engine.dispose()
    assert (bad, total) == (n + m, n + m)
    assert service.store.counts(slo.id, start - 60, end) == (0, n + m)
    counted = {k: v for k, v in _samples(service, "m3mon_probe_total").items() if (("class", CLS) in k)}
    assert sum(counted.values()) == n + m, counted
    tasks = {dict(k)["task"]: v for k, v in _samples(service, "m3mon_job_runs_total").items()}
    assert tasks.get(f"probe:{CLS}:confirm") == ROUNDS and tasks.get(f"probe:{CLS}", 0) == 0, tasks
    assert runs == n + m + ROUNDS
    with service.store.session() as session:
        period = Period("t", datetime.fromtimestamp(start - 60, UTC), datetime.fromtimestamp(end, UTC))
        failures = ProbeFacts(model, session, period, Redactor.for_model(model), end).failures()
        (verdict,) = verdicts(model, session, end)
    assert sum(f.count for f in failures) == n + m, failures
    evidence = verdict.evidence.to_json()
    assert evidence["runs"] == evidence["shed"] == n + m + ROUNDS, evidence


def test_confirmation_rounds_are_no_sli_events_but_feed_the_verdict(tmp_path: Path) -> None:
    rng = random.Random(41)
    cases = [(1, 0), *((rng.randint(1, 4), rng.randint(0, 4)) for _ in range(2))]
    with running_simulator(max_queue=0, **FAST) as sim:
        for k, (n, m) in enumerate(cases):
            (tmp_path / str(k)).mkdir()
            _case(tmp_path / str(k), sim.base_url, n, m)
