"""The service's jobs: scrape, health, probe, evaluate, prune, received spans — each small, isolated, logged.

:class:`Jobs` holds what the jobs share (model, HTTP client, exporter, buffered store writer and
the last reading per endpoint). A job never raises: a failure is logged and counted, and the
next run tries again. Database writes go through the :class:`~monitor.store.BufferedWriter`
in a worker thread, so an outage buffers instead of blocking the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

import httpx

from monitor import conventions as cv
from monitor.bottleneck.rules import Verdict
from monitor.errors import ScrapeError
from monitor.exporter import Exporter
from monitor.fleet.claims import SlotKey, claim, slot_of
from monitor.fleet.role import FleetRole
from monitor.model import Endpoint, Model
from monitor.origins import OriginPools
from monitor.probes.result import ProbeResult
from monitor.probes.runner import PlannedProbe, plan_round, run_round
from monitor.probes.tracing import is_probe_trace
from monitor.probes.wire import probe_client
from monitor.scrape import Reading, collect, fingerprint
from monitor.scrape.signals import Signals
from monitor.service.confirm_rounds import refused
from monitor.service.drift_watch import DriftWatch
from monitor.service.gpu_jobs import GpuScrapes
from monitor.slo.due import SETTLE, STEP, evaluate_due
from monitor.slo.evaluate import SLOEvaluation
from monitor.slo.traffic import TrafficJudge, Verdicts, traffic_slices
from monitor.slo.windows import align
from monitor.store import BufferedWriter, DeploymentFingerprint, Store
from monitor.store.ops import (
    alertmanager_op,
    deployment_op,
    endpoints_op,
    gpu_op,
    probe_op,
    slices_op,
    spans_op,
)
from monitor.store.readings import reading_op
from monitor.traces import ServerSpan
from monitor.traces.span import TenantKeys

log = logging.getLogger(__name__)

#: Re-read the deployment fingerprint (/version, /v1/models) every this many scrapes.
FINGERPRINT_EVERY = 20
#: Fleet mode: an evaluator whose store writes have failed this long (or for LOCK_GIVE_UP_STEPS
#: evaluation steps, if that is shorter) gives up the evaluator lock.
LOCK_GIVE_UP = 30.0
LOCK_GIVE_UP_STEPS = 3
#: An SLO's requests are published while its last evaluation's 1h window holds bad events
#: (:mod:`monitor.service.assess`).
REQUESTS_BURNING_WINDOW = "1h"


class Skipped:
    """What a job returns when it had to skip its work (counted as ``result="skipped"``)."""


SKIPPED: Final = Skipped()


class Jobs:
    """The state the scheduled jobs share, and the jobs themselves."""

    def __init__(
        self,
        model: Model,
        store: Store,
        exporter: Exporter,
        clock: Callable[[], float] = time.time,
        evaluation_step: float = STEP,
    ) -> None:
        self.model = model
        self.evaluation_step = evaluation_step
        self.evaluated_step: float | None = None  # the last aligned step fully evaluated
        #: SLO id -> instant of the evaluation its gauges show (None: read them from the store)
        self.published: dict[str, float] | None = None
        self.store = store
        self.exporter = exporter
        self.clock = clock
        self.writer = BufferedWriter(
            store,
            model.storage.buffer_dir,
            model.storage.buffer_max_items,
            metrics=exporter.store,
            model=lambda: self.model,
        )
        # scrapes and health checks: one pool per endpoint, so no request scans the whole fleet's
        limits = httpx.Limits(max_connections=None)
        pools = OriginPools(lambda: httpx.AsyncHTTPTransport(limits=limits))
        self.client = httpx.AsyncClient(transport=pools, limits=limits, follow_redirects=False)
        # Probes read SSE through a client whose connections stamp each chunk's kernel arrival time.
        self.probe_client = probe_client()
        # O(1) per endpoint: the last reading and a scrape count; probe outcomes only as counts
        self.readings: dict[str, Reading] = {}
        self.scrapes: dict[str, int] = {}
        #: GPU telemetry of endpoints with a GPU exporter; ``self.gpu.signals`` is what a verdict reads
        self.gpu = GpuScrapes(self.client, exporter.gpu)
        #: what each endpoint's rules, SLOs and dashboards read, against its last page
        self.drift = DriftWatch(exporter.scrape)
        self.probe_outcomes: Counter[str] = Counter()  # reason (or "ok") -> runs
        #: each class's bottleneck verdict at the last assessment (computed from the store)
        self.verdicts: dict[str, Verdict] = {}
        self.last_evaluation: float | None = None  # clock() of the last completed evaluation
        self.fleet: FleetRole | None = None  # fleet mode: shard, replica, evaluator lock
        #: called with an endpoint whose latest scrape interval refused requests for load
        #: (monitor.service.confirm_rounds): the service schedules confirmation probe rounds
        self.on_refused: Callable[[Endpoint], object] | None = None
        self.evaluator = False  # fleet mode: held the evaluator lock at the last evaluate run
        #: judges received spans for the ``source: traffic`` SLOs (its tenant labels live as long)
        self.traffic = TrafficJudge(model)
        self.traffic_at = -math.inf  # arrival time of the last batch's traffic slices
        #: SLOs whose last evaluation holds bad events in its 1h window: their requests are published
        self.burning: set[str] = set()

    def apply(self, model: Model) -> None:
        """Use a reloaded model from the next run on; forget readings of endpoints that changed."""
        kept = {e.name: e for e in model.endpoints}
        for name in list(self.readings):
            old = next((e for e in self.model.endpoints if e.name == name), None)
            new = kept.get(name)
            if new is None or old is None or (old.metrics_url, old.backend) != (new.metrics_url, new.backend):
                self.readings.pop(name, None)
                self.scrapes.pop(name, None)
        for name in list(self.gpu.readings):
            old = next((e for e in self.model.endpoints if e.name == name), None)
            new = kept.get(name)
            if new is None or old is None or old.gpu_exporter != new.gpu_exporter:
                self.gpu.forget(name)
        self.drift.apply(model)
        same_tenants = model.traffic == self.model.traffic
        self.traffic = TrafficJudge(model, self.traffic.tenants if same_tenants else None)
        for gone in set(self.verdicts) - {c.name for c in model.classes}:
            del self.verdicts[gone]
            self.exporter.bottleneck.forget(gone)
        self.model = model

    async def close(self) -> None:
        await self.client.aclose()
        await self.probe_client.aclose()
        await asyncio.to_thread(self.writer.flush)

    async def write(self, op: dict[str, object]) -> None:
        await asyncio.to_thread(self.exporter.service.cpu.call, "write", self.writer.submit, op)

    async def register_endpoints(self) -> None:
        await self.write(endpoints_op(self.model.endpoints))

    # --- collector ------------------------------------------------------------------------

    async def scrape(self, endpoint: Endpoint) -> Signals | None:
        """Scrape one endpoint and store its reading; the store derives the interval since the
        endpoint's previous stored reading (:mod:`monitor.store.readings`), whichever replica of a
        pair wrote it. Returns the interval since this replica's previous good scrape (None for
        its first or a failed one). The endpoint's GPU exporter, if any, is scraped alongside."""
        if endpoint.gpu_exporter is None:
            signals = await self._scrape_engine(endpoint)
        else:
            signals, gpu = await asyncio.gather(self._scrape_engine(endpoint), self.gpu.scrape(endpoint))
            if gpu is not None:
                await self.write(gpu_op(gpu))
        if self.on_refused is not None and isinstance(signals, Signals) and refused(signals):
            self.on_refused(endpoint)
        return signals

    async def _scrape_engine(self, endpoint: Endpoint) -> Signals | None:
        started = time.monotonic()
        self.exporter.scrape.start(endpoint.name)
        try:
            reading, signals = await collect(endpoint, self.client, self.readings.get(endpoint.name))
        except ScrapeError as exc:
            self.exporter.scrape.observe(endpoint.name, time.monotonic() - started, exc.reason)
            log.warning("scrape %s failed: %s", endpoint.name, exc, extra={"kind": "scrape_failed"})
            return None
        self.exporter.scrape.observe(endpoint.name, time.monotonic() - started)
        first = endpoint.name not in self.readings
        self.readings[endpoint.name] = reading
        await self.drift.observe(self.model, endpoint, reading)
        count = self.scrapes[endpoint.name] = self.scrapes.get(endpoint.name, 0) + 1
        if count % FINGERPRINT_EVERY == 1:
            await self.gpu.first(endpoint.name)  # the fingerprint carries the GPU driver version
            await self._fingerprint(endpoint, reading)
        slot = slot_of(reading.time, endpoint.scrape_interval) if self.fleet else None
        replica = self.fleet.replica if self.fleet is not None else None
        await self.write(reading_op(endpoint.name, reading, slot, replica))
        if not first and isinstance(signals, Signals):
            residency = signals.total.kv_residency
            share = residency.eviction_before_reuse if residency is not None else None
            self.exporter.gpu.set_eviction_before_reuse(endpoint.name, share)
        return None if first else signals

    async def _fingerprint(self, endpoint: Endpoint, reading: Reading) -> None:
        fp = await fingerprint(endpoint, self.client, reading)
        fp = fp.with_gpu(self.gpu.readings.get(endpoint.name))
        self.exporter.scrape.set_fingerprint(endpoint.name, fp)
        for warning in fp.warnings:
            log.warning("%s: %s", endpoint.name, warning, extra={"kind": "fingerprint"})
        stored = DeploymentFingerprint.observed(fp, endpoint.deployment)
        await self.write(deployment_op(endpoint.name, stored, self.clock()))

    async def health(self, endpoint: Endpoint) -> bool:
        """``GET /health``: 200 means healthy (vLLM answers 503 while loading or dead)."""
        try:
            response = await self.client.get(endpoint.base_url + "/health", timeout=5.0)
            ok = response.status_code == 200
        except httpx.HTTPError:
            ok = False
        self.exporter.health_up.labels(endpoint.name).set(1 if ok else 0)
        return ok

    # --- probes ---------------------------------------------------------------------------

    async def probe(self, class_name: str, jitter: bool = True) -> list[ProbeResult]:
        """One round of the class's probes; results go to the exporter and the store.

        Fleet mode: the round is slot ``floor(now / interval)``; only the probes whose slot this
        replica claimed run (:mod:`monitor.fleet.claims`), each stored with its slot.
        """
        slot, only = None, None
        if self.fleet is not None:
            slot = slot_of(self.clock(), self.model.request_class(class_name).probe.interval)
            only = await self._claimed(class_name, slot)

        async def record(result: ProbeResult) -> None:
            await self._record(result, slot)

        results = await run_round(self.model, [class_name], client=self.probe_client, jitter=jitter,
                                  metrics=self.exporter.probes, on_result=record, only=only)  # fmt: skip
        self.probe_outcomes.update("ok" if r.ok else (r.reason or "unknown") for r in results)
        return results

    async def confirm(self, class_name: str) -> list[ProbeResult]:
        """One confirmation round of the class (:mod:`monitor.probes.confirm`), without jitter: its
        results are stored for the bottleneck verdict and are no SLI events (no slices, no exporter
        probe family: :attr:`ProbeResult.sli_event`)."""
        return await run_round(self.model, [class_name], client=self.probe_client, jitter=False,
                               metrics=self.exporter.probes, on_result=self._record,
                               purpose=cv.PURPOSE_CONFIRM)  # fmt: skip

    def assess(self) -> tuple[Verdict, ...] | Skipped:
        """Every class's bottleneck verdict, and the requests behind burning SLOs
        (:mod:`monitor.service.assess`)."""
        from monitor.service.assess import assess

        found = assess(self)
        return SKIPPED if found is None else found

    async def _claimed(self, class_name: str, slot: int) -> Callable[[PlannedProbe], bool] | None:
        assert self.fleet is not None
        keys: list[SlotKey] = [(p.target.endpoint.name, class_name, p.spec.kind, slot)
                               for p in plan_round(self.model, [class_name])]  # fmt: skip
        won = await asyncio.to_thread(claim, self.store, keys, self.fleet.replica, self.clock())
        if self.fleet.metrics is not None:
            m = self.fleet.metrics.claims
            if won is None:
                m.labels("unavailable").inc(len(keys))
            else:
                m.labels("won").inc(len(won))
                m.labels("lost").inc(len(keys) - len(won))
        if won is None:
            return None
        return lambda p: (p.target.endpoint.name, class_name, p.spec.kind, slot) in won

    async def _record(self, result: ProbeResult, slot: int | None = None) -> None:
        """Store one probe result as soon as it is known (see :func:`run_round`)."""
        await self.write(probe_op(self.model, result, slot))
        if not result.ok:
            log.info("probe %s/%s/%s failed: %s %s", result.endpoint, result.request_class,
                     result.kind, result.reason, result.detail)  # fmt: skip

    # --- evaluation and upkeep ------------------------------------------------------------

    def evaluate(self) -> int | Skipped:
        """Replay any backlog, evaluate every due step (and again every step a late write changed),
        refresh the SLO gauges (runs in a thread).

        A step is evaluated once the store holds its events: this replica's spool holds none
        before it, and in a fleet neither does any live replica's (or
        :data:`monitor.store.progress.FINAL_STEPS` steps passed: a later write re-evaluates it).
        """
        self.writer.flush()
        if self.writer.database_away:
            self._cannot_write()
            return SKIPPED  # the database takes no writes now: nothing could be read or stored
        # results completed just before a step may still be on their way to the store, and steps
        # at or after the oldest spooled event wait for its replay; unrelated backlog does not block
        now = self.writer.complete_until(self.clock() - min(SETTLE, self.evaluation_step / 2))
        if self.fleet is not None:
            self.store.report_progress(self.fleet.replica, now, self.clock())
            if not self._evaluator():
                self.store.forget_running()  # a standby reads no steps: its running sums would go stale
                self.published = None
                self.exporter.slo.update(self.store.latest_evaluations(self.clock()))
                self.last_evaluation = self.clock()  # a standby's job is done: it is not the evaluator
                return 0
            now = self.store.fleet_complete_until(self.clock(), now, self.evaluation_step)
        step = align(now, self.evaluation_step)
        if step == self.evaluated_step and not self.store.any_dirty():
            self.last_evaluation = self.clock()
            return 0  # this step is done; nothing new is due until the next boundary
        done = evaluate_due(self.store, self.model, now, step=self.evaluation_step)
        self._publish(done, now)
        self.evaluated_step = step
        self.last_evaluation = self.clock()
        return len(done)

    def _publish(self, done: Sequence[SLOEvaluation], now: float) -> None:
        """Set the SLO gauges from what was just evaluated: an SLO's newest evaluation only (a step
        evaluated again after a late write may be older); from the store on the first run."""
        if self.published is None:
            fresh = self.store.latest_evaluations(now)
            self.published = {}
        else:
            fresh = [e for e in done if e.evaluated_at >= self.published.get(e.slo_id, -math.inf)]
        for e in fresh:
            self.published[e.slo_id] = max(e.evaluated_at, self.published.get(e.slo_id, -math.inf))
            hour = e.window(REQUESTS_BURNING_WINDOW)
            if hour is not None and hour.total > hour.good:
                self.burning.add(e.slo_id)
            else:
                self.burning.discard(e.slo_id)
        self.exporter.slo.update(fresh)

    def _cannot_write(self) -> None:
        """Fleet: an evaluator whose writes have failed for :data:`LOCK_GIVE_UP` seconds (or three
        evaluation steps, if shorter) releases the evaluator lock at its next evaluate run, so a
        standby that can write takes over (``M3MonNoEvaluator`` fires if none can). While its
        writes fail it does not try to take the lock again."""
        if self.fleet is None or not self.evaluator:
            return
        since = self.writer.away_since
        limit = min(LOCK_GIVE_UP, LOCK_GIVE_UP_STEPS * self.evaluation_step)
        if since is None or time.monotonic() - since < limit:
            return
        log.warning("store writes failing for %.0f s: giving up the evaluator lock", time.monotonic() - since)
        self.fleet.lock.give_up()
        self.evaluator = False
        if self.fleet.metrics is not None:
            self.fleet.metrics.evaluator.set(0)

    def _evaluator(self) -> bool:
        assert self.fleet is not None
        held = self.evaluator = self.fleet.lock.held()
        if self.fleet.metrics is not None:
            self.fleet.metrics.evaluator.set(1 if held else 0)
        return held

    def prune(self) -> None:
        if self.fleet is not None and not self.evaluator:
            return  # in a fleet only the evaluator prunes: one pass, not one per replica
        if not self.writer.backlog:
            pruned = self.store.prune(self.clock(), self.model.storage.retention)
            log.info("retention: %s", pruned)

    async def alertmanager(self, payload: dict[str, object]) -> None:
        await self.write(alertmanager_op(payload, self.clock()))

    def span_keys(self) -> TenantKeys:
        """The span attributes a request's tenant and priority are read from."""
        t = self.model.traffic
        return TenantKeys(t.tenant_attributes, t.priority_attribute)

    async def spans(self, spans: Sequence[ServerSpan]) -> None:
        """Store the ``llm_request`` spans of one OTLP request (through the buffered writer)."""
        if spans:
            found = self.traffic.verdicts(spans, is_probe_trace)
            await self.write(spans_op(found.spans))  # with the tenant label each request was counted under
            await self._traffic(found)

    async def _traffic(self, found: Verdicts) -> None:
        """Count the judged real requests and store their traffic SLO slices, both at this arrival
        instant (:mod:`monitor.slo.traffic`)."""
        judged, metrics, t = found.judged, self.exporter.traffic, self.traffic.tenants
        metrics.observe(((j.endpoint, j.request_class, j.labels) for j in judged), found.unrouted)
        metrics.tenants(self.model.traffic.tenant_cap, t.labels_in_use, len(t.folded_ids), t.folded_requests)
        self.traffic_at = at = max(self.clock(), self.traffic_at + 1e-6)  # one batch, one slice key
        slices = traffic_slices(self.model, judged, at)
        if slices:
            await self.write(slices_op(slices))
