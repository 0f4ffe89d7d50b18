"""Store a peer file's runs as ``replay_runs`` rows, under the replay's evidence rules.

The deployment fingerprint is observed from the endpoint **at import time** (its ``/metrics``,
``/version`` and ``/v1/models`` with the config's deployment block:
:func:`monitor.contract.runs.observe_fingerprint`, as for ``m3mon replay``). A run is no
evidence of a deployment's capacity (``summary.not_evidence``; stored, named by the contract,
never counted) when:

* the fingerprint cannot be observed now (the endpoint is unreachable): nothing says what the
  file measured;
* no request completed;
* more than :data:`MAX_FAILED_SHARE` of its requests failed: the files do not say why a request
  failed (an overloaded server, a wrong model name or API key, a gateway's 429, a client timeout
  all read "failed"), so a run made mostly of failures measured them, not the deployment at
  that load. Below the share every failed request is a bad event of every clause
  (:mod:`~monitor.contract.peers.judge`), and a latency objective of 95 % or more cannot hold
  above it anyway: the share only decides whether such a run marks a failing load or nothing;
* the store's deployment history knows the deployment in force when the run started and it is
  not the one observed now: the deployment changed between the benchmark and the import.

Refused, nothing stored (exit 2): a file already imported (same endpoint, class and start), and a
run whose model or target is not the endpoint's unless accepted (:mod:`~monitor.contract.peers.origin`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from monitor.contract.peers.detect import PeerFile
from monitor.contract.peers.judge import PeerClause, all_hold, judge_peer
from monitor.contract.peers.model import PeerRun, Quantiles
from monitor.contract.peers.origin import Identity, Mismatch, mismatches, record
from monitor.contract.runs import observe_deployment
from monitor.errors import UsageError
from monitor.model import Endpoint, RequestClass
from monitor.probes.timing import percentile
from monitor.replay.summary import QUANTILES
from monitor.store.replays import StoredRun, runs, save_run
from monitor.store.repos import DeploymentRepo
from monitor.store.store import Store

#: More failed requests than this share of those that ended (completed + failed): not evidence.
MAX_FAILED_SHARE = 0.05


@dataclass(frozen=True)
class Imported:
    """One stored peer run."""

    run_id: int
    run: PeerRun
    clauses: list[PeerClause]
    not_evidence: str | None
    accepted: tuple[str, ...] = ()  # foreign facts the operator accepted (origin.Mismatch texts)

    @property
    def meets_slos(self) -> bool | None:
        return all_hold(self.clauses)


def evidence_problem(session: Session, endpoint: str, digest: str | None, run: PeerRun) -> str | None:
    """Why ``run`` (with the fingerprint ``digest`` observed at import) is no evidence; None if it is."""
    if digest is None:
        return (
            "the deployment fingerprint was not observable at import time "
            f"(/metrics of {endpoint} could not be read)"
        )
    if run.completed == 0:
        return f"no request completed ({run.failed} failed)"
    ended = run.completed + run.failed
    if run.failed > MAX_FAILED_SHARE * ended:
        return (
            f"{run.failed} of {ended} requests failed ({run.failed / ended:.1%}, more than "
            f"{MAX_FAILED_SHARE:.0%}): the run measured its failures, not the deployment at that load"
        )
    before = [r for r in DeploymentRepo(session).history(endpoint) if r.first_seen <= run.started_at]
    if before and before[-1].fingerprint != digest:
        return (
            f"the deployment changed after the run: {before[-1].fingerprint[:12]} was running when it "
            f"started, {digest[:12]} at import"
        )
    return None


def _percentiles(run: PeerRun) -> dict[str, dict[str, float | None]]:
    """P50/P95/P99 and mean per metric, m3mon's nearest rank over per-request values; else the
    file's own figures where it defines the metric as m3mon does (its quantiles with a count)."""
    out: dict[str, dict[str, float | None]] = {}
    for metric in ("ttft", "tpot", "itl", "e2e"):
        values = run.samples.get(metric)
        q = run.quantiles.get(metric)
        if values:
            out[metric] = {f"p{p}": percentile(values, p) for p in QUANTILES}
            out[metric]["mean"] = sum(values) / len(values)
        elif q is not None and q.count:
            out[metric] = {f"p{p}": q.points.get(float(p)) for p in QUANTILES}
            out[metric]["mean"] = q.mean
    return out


def _quantiles(q: Quantiles) -> dict[str, Any]:
    points = {f"{p:g}": v for p, v in sorted(q.points.items())}
    return {"count": q.count, "method": q.method, "points": points, "mean": q.mean, "min": q.minimum,
            "max": q.maximum}  # fmt: skip


def summary(
    peer: PeerFile,
    run: PeerRun,
    clauses: list[PeerClause],
    why: str | None,
    origin: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The stored summary: a replay summary's fields, plus where it came from."""
    out: dict[str, Any] = {
        "requests": run.completed + run.failed, "succeeded": run.completed, "duration": run.duration,
        "request_throughput": run.request_throughput, "output_throughput": run.output_throughput,
        "total_token_throughput": run.total_token_throughput, "percentiles": _percentiles(run),
        "errors": {"failed": run.failed} if run.failed else {}, "goodput_ratio": None,
        "prompt_token_error": None, "prompt_sizing": f"as {run.tool} sized them (imported)",
        "samples": {k: v for k, v in run.samples.items() if k in ("ttft", "tpot", "e2e")},
        "clauses": [c.to_dict() for c in clauses],
        "source": {
            "tool": run.tool, "version": run.version, "file": peer.path, "sha256": peer.sha256,
            "basis": run.basis, "model": run.model, "target": run.target, "incomplete": run.incomplete,
            "prompt_tokens_mean": run.prompt_tokens, "output_tokens_mean": run.output_tokens,
            "notes": list(run.notes),
            "quantiles": {m: _quantiles(q) for m, q in run.quantiles.items()},
            "origin": origin,
        },
    }  # fmt: skip
    if why is not None:
        out["not_evidence"] = why
    return out


@dataclass(frozen=True)
class Observed:
    """The endpoint as observed once, at import: fingerprint, digest and identity."""

    fingerprint: dict[str, Any]
    digest: str | None
    identity: Identity

    @classmethod
    def now(cls, endpoint: Endpoint) -> Observed:
        fp, digest, served = asyncio.run(observe_deployment(endpoint))
        return cls(fp, digest, Identity.of(endpoint, served))


def admit(peer: PeerFile, who: Identity, accept: frozenset[str]) -> list[list[Mismatch]]:
    """Per run of ``peer``, its foreign facts the operator accepted (``accept``: "model",
    "target"); a UsageError naming the first one not accepted (nothing is stored then)."""
    out = []
    for run in peer.runs:
        found = mismatches(run, who)
        for m in found:
            if m.kind not in accept:
                raise UsageError(
                    f"{peer.path}: the run measured {m.text}; nothing stored "
                    f"(--accept-foreign-{m.kind} to import it as {who.endpoint}'s anyway)"
                )
        out.append(found)
    return out


def import_file(
    db: Store,
    peer: PeerFile,
    endpoint: Endpoint,
    rc: RequestClass,
    seen: Observed,
    accepted: list[list[Mismatch]],
) -> list[Imported]:
    """Judge and store every run of ``peer`` (admitted: ``accepted`` from :func:`admit`)."""
    out: list[Imported] = []
    with db.session() as s:
        taken = {r.started_at: r.id for r in runs(s, rc.name, endpoint.name)}
        for run in peer.runs:
            if run.started_at in taken:
                raise UsageError(
                    f"{peer.path}: already imported as run {taken[run.started_at]} "
                    f"({endpoint.name}, {rc.name}, same start); nothing stored"
                )
        for run, foreign in zip(peer.runs, accepted, strict=True):
            clauses = judge_peer(run, rc.slos)
            why = evidence_problem(s, endpoint.name, seen.digest, run)
            origin = record(run, seen.identity, foreign)
            row = StoredRun(
                0, endpoint.name, rc.name, run.started_at, run.duration, run.load_kind, run.load_value,
                peer.sha256, seen.digest, seen.fingerprint, all_hold(clauses),
                summary(peer, run, clauses, why, origin),
            )  # fmt: skip
            out.append(Imported(save_run(s, row), run, clauses, why, tuple(m.text for m in foreign)))
    return out
