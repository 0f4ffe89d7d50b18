"""Run a replay against one endpoint and keep it as evidence: fingerprint, profile digest, results.

:func:`execute` observes the deployment fingerprint (the collector's view of ``/metrics``,
``/version`` and ``/v1/models`` plus the config's deployment block, as the service stores it),
drives the replay and judges the class's SLO clauses; :func:`store` writes the run to
``replay_runs``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from monitor.errors import ScrapeError
from monitor.model import Endpoint, RequestClass
from monitor.probes.target import Target
from monitor.replay.clauses import Clause, all_hold, judge
from monitor.replay.driver import Load, Progress, Run, replay
from monitor.replay.profile import TrafficProfile
from monitor.replay.summary import ReplaySummary
from monitor.scrape import fingerprint, read
from monitor.store.fingerprint import DeploymentFingerprint
from monitor.store.replays import StoredRun, save_run
from monitor.store.store import Store


@dataclass(frozen=True)
class Evidence:
    """One replay run, reduced and judged, with what it ran against."""

    endpoint: str
    request_class: str
    load: Load
    profile_digest: str
    fingerprint: dict[str, Any]
    fingerprint_digest: str | None
    summary: ReplaySummary
    clauses: tuple[Clause, ...]
    started_at: float

    @property
    def meets_slos(self) -> bool | None:
        return all_hold(self.clauses)

    def to_dict(self) -> dict[str, Any]:
        summary = self.summary.to_dict()
        summary.pop("samples", None)
        return {
            "endpoint": self.endpoint,
            "class": self.request_class,
            "load": self.load.label,
            "profile_digest": self.profile_digest,
            "fingerprint_digest": self.fingerprint_digest,
            "fingerprint": self.fingerprint,
            "meets_slos": self.meets_slos,
            "clauses": [c.to_dict() for c in self.clauses],
            "summary": summary,
        }


async def observe_fingerprint(endpoint: Endpoint) -> tuple[dict[str, Any], str | None]:
    """The deployment fingerprint as the service stores it, plus whether speculative decoding runs
    (the page has draft-token counters); config facts only when ``/metrics`` cannot be read."""
    async with httpx.AsyncClient() as client:
        try:
            reading = await read(endpoint, client)
            fp = await fingerprint(endpoint, client, reading)
        except ScrapeError:
            stored = DeploymentFingerprint().with_config(endpoint.deployment)
            return {**stored.to_dict(), "spec_decoding": None}, None
    stored = DeploymentFingerprint(
        vllm_version=fp.version,
        max_model_len=fp.max_model_len,
        block_size=fp.block_size,
        kv_cache_dtype=fp.cache_dtype,
        prefix_caching=fp.enable_prefix_caching,
        gpu_memory_utilization=fp.gpu_memory_utilization,
    ).with_config(endpoint.deployment)
    spec = any(
        key[0] == "spec_draft_tokens"
        for engines in reading.models.values()
        for er in engines.values()
        for key in er.counters
    )
    return {**stored.to_dict(), "spec_decoding": spec}, stored.digest


def execute(
    endpoint: Endpoint,
    request_class: RequestClass,
    profile: TrafficProfile,
    load: Load,
    *,
    progress: Progress | None = None,
    seed: int = 0,
) -> Evidence:
    """Observe the fingerprint, replay ``profile`` under ``load`` and judge the class's SLOs."""
    fp, digest = asyncio.run(observe_fingerprint(endpoint))
    target = Target(endpoint, request_class)
    run: Run = asyncio.run(
        replay(target, profile, load, timeout=request_class.probe.timeout, seed=seed, progress=progress)
    )
    return Evidence(
        endpoint=endpoint.name,
        request_class=request_class.name,
        load=load,
        profile_digest=profile.digest,
        fingerprint=fp,
        fingerprint_digest=digest,
        summary=run.summary(request_class.slos),
        clauses=tuple(judge(run.outcomes, request_class.slos)),
        started_at=run.wall_start,
    )


def store(db: Store, evidence: Evidence) -> int:
    """Write ``evidence`` to ``replay_runs``; returns the run id."""
    load = evidence.load
    kind = "concurrency" if load.concurrency is not None else "rate"
    value = float(load.concurrency) if load.concurrency is not None else load.rate
    summary = evidence.summary.to_dict()
    summary["clauses"] = [c.to_dict() for c in evidence.clauses]
    run = StoredRun(
        0,
        evidence.endpoint,
        evidence.request_class,
        evidence.started_at,
        load.duration,
        kind,
        value,
        evidence.profile_digest,
        evidence.fingerprint_digest,
        evidence.fingerprint,
        evidence.meets_slos,
        summary,
    )
    with db.session() as s:
        return save_run(s, run)
