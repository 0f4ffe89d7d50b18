"""Run a replay against one endpoint and keep it as evidence: fingerprint, profile digest, results.

:func:`execute` observes the deployment fingerprint (the collector's view of ``/metrics``,
``/version`` and ``/v1/models`` plus the config's deployment block, as the service stores it)
before and after the run, drives the replay and judges the class's SLO clauses; :func:`store`
writes the run to ``replay_runs``.

A run is **evidence** of a deployment's capacity only when it measured that deployment with the
profile's requests (:func:`evidence_problem`): its fingerprint was observed, at least one request
reached the server, the deployment did not change while it ran, and the served prompts (the
server's own count) are on average within :data:`monitor.replay.sizing.TOLERANCE` of their
planned sizes. A run that fails these is still stored
(``summary.not_evidence`` says why, ``m3mon contract`` names it) but never moves the warm
capacity, the current deployment or the kernel path: a replay against a dead pool measures the
network, not the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import httpx

from monitor.errors import ScrapeError
from monitor.model import Endpoint, RequestClass
from monitor.probes.target import Target
from monitor.replay.clauses import Clause, all_hold, judge
from monitor.replay.driver import Load, Progress, Run, replay
from monitor.replay.profile import TrafficProfile
from monitor.replay.sizing import TOLERANCE
from monitor.replay.summary import ReplaySummary
from monitor.scrape import fingerprint, read
from monitor.service.gpu_jobs import read_gpu
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
    not_evidence: str | None = None  # why the run says nothing about the deployment (evidence_problem)

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
            "not_evidence": self.not_evidence,
            "clauses": [c.to_dict() for c in self.clauses],
            "summary": summary,
        }


async def observe_fingerprint(endpoint: Endpoint) -> tuple[dict[str, Any], str | None]:
    """The deployment fingerprint as the service stores it, plus whether speculative decoding runs
    (the page has draft-token counters); config facts only when ``/metrics`` cannot be read."""
    fp, digest, _ = await observe_deployment(endpoint)
    return fp, digest


async def observe_deployment(endpoint: Endpoint) -> tuple[dict[str, Any], str | None, str | None]:
    """:func:`observe_fingerprint`'s fingerprint and digest, and the model id the endpoint serves
    (``/v1/models``, else its page; None when ``/metrics`` cannot be read)."""
    async with httpx.AsyncClient() as client:
        try:
            reading = await read(endpoint, client)
            fp = await fingerprint(endpoint, client, reading)
        except ScrapeError:
            stored = DeploymentFingerprint().with_config(endpoint.deployment)
            return {**stored.to_dict(), "spec_decoding": None}, None, None
        if endpoint.gpu_exporter is not None:  # its driver and firmware are part of the deployment
            with contextlib.suppress(ScrapeError):  # GPU facts unknown: the digest is without them
                fp = fp.with_gpu(await read_gpu(client, endpoint.gpu_exporter))
    stored = DeploymentFingerprint.observed(fp, endpoint.deployment)
    spec = any(
        key[0] == "spec_draft_tokens"
        for engines in reading.models.values()
        for er in engines.values()
        for key in er.counters
    )
    return {**stored.to_dict(), "spec_decoding": spec}, stored.digest, fp.model


def evidence_problem(
    endpoint: str, before: str | None, after: str | None, summary: ReplaySummary
) -> str | None:
    """Why a run with fingerprint digests ``before``/``after`` the load and ``summary`` is no
    evidence of a deployment's capacity; None when it is. A deployment that fails *under* the load
    (requests reached it, then it stopped answering) is evidence: that load failed there."""
    if before is None:
        return f"the deployment fingerprint was not observable (/metrics of {endpoint} could not be read)"
    if summary.requests == 0:
        return "no request was sent"
    connect = summary.errors.get("connect_error", 0)
    if connect == summary.requests:
        return f"no request reached the endpoint ({connect} connect errors)"
    if after is not None and after != before:
        return f"the deployment changed during the run (fingerprint {before[:12]}→{after[:12]})"
    error = summary.prompt_token_error
    if error is not None and error > TOLERANCE:
        return (
            f"prompt sizes {error:.1%} off the profile's as the server counted them "
            f"(tolerance {TOLERANCE:.0%}; {summary.prompt_sizing})"
        )
    return None


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
    _, after = asyncio.run(observe_fingerprint(endpoint))
    summary = run.summary(request_class.slos)
    return Evidence(
        endpoint=endpoint.name,
        request_class=request_class.name,
        load=load,
        profile_digest=profile.digest,
        fingerprint=fp,
        fingerprint_digest=digest,
        summary=summary,
        clauses=tuple(judge(run.outcomes, request_class.slos)),
        started_at=run.wall_start,
        not_evidence=evidence_problem(endpoint.name, digest, after, summary),
    )


def store(db: Store, evidence: Evidence) -> int:
    """Write ``evidence`` to ``replay_runs``; returns the run id."""
    load = evidence.load
    kind = "concurrency" if load.concurrency is not None else "rate"
    value = float(load.concurrency) if load.concurrency is not None else load.rate
    summary = evidence.summary.to_dict()
    summary["clauses"] = [c.to_dict() for c in evidence.clauses]
    if evidence.not_evidence is not None:
        summary["not_evidence"] = evidence.not_evidence
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
