"""Store a peer file's runs as ``replay_runs`` rows, under the replay's evidence rules.

The deployment fingerprint is observed from the endpoint **at import time** (its ``/metrics``,
``/version`` and ``/v1/models`` with the config's deployment block:
:func:`monitor.contract.runs.observe_fingerprint`, as for ``m3mon replay``). A run is no
evidence of a deployment's capacity (``summary.not_evidence``; stored, named by the contract,
never counted) when:

* the fingerprint cannot be observed now (the endpoint is unreachable): nothing says what the
  file measured;
* no request completed;
* the store's deployment history knows the deployment in force when the run started and it is
  not the one observed now: the deployment changed between the benchmark and the import.

A file already imported (same endpoint, class and start) is refused, nothing stored.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from monitor.contract.peers.detect import PeerFile
from monitor.contract.peers.judge import PeerClause, all_hold, judge_peer
from monitor.contract.peers.model import PeerRun, Quantiles
from monitor.contract.runs import observe_fingerprint
from monitor.errors import UsageError
from monitor.model import Endpoint, RequestClass
from monitor.probes.timing import percentile
from monitor.replay.summary import QUANTILES
from monitor.store.replays import StoredRun, runs, save_run
from monitor.store.repos import DeploymentRepo
from monitor.store.store import Store


@dataclass(frozen=True)
class Imported:
    """One stored peer run."""

    run_id: int
    run: PeerRun
    clauses: list[PeerClause]
    not_evidence: str | None

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


def summary(peer: PeerFile, run: PeerRun, clauses: list[PeerClause], why: str | None) -> dict[str, Any]:
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
        },
    }  # fmt: skip
    if why is not None:
        out["not_evidence"] = why
    return out


def import_file(db: Store, peer: PeerFile, endpoint: Endpoint, rc: RequestClass) -> list[Imported]:
    """Observe the fingerprint once, then judge and store every run of ``peer``."""
    fp, digest = asyncio.run(observe_fingerprint(endpoint))
    out: list[Imported] = []
    with db.session() as s:
        taken = {r.started_at: r.id for r in runs(s, rc.name, endpoint.name)}
        for run in peer.runs:
            if run.started_at in taken:
                raise UsageError(
                    f"{peer.path}: already imported as run {taken[run.started_at]} "
                    f"({endpoint.name}, {rc.name}, same start); nothing stored"
                )
        for run in peer.runs:
            clauses = judge_peer(run, rc.slos)
            why = evidence_problem(s, endpoint.name, digest, run)
            row = StoredRun(
                0, endpoint.name, rc.name, run.started_at, run.duration, run.load_kind, run.load_value,
                peer.sha256, digest, fp, all_hold(clauses), summary(peer, run, clauses, why),
            )  # fmt: skip
            out.append(Imported(save_run(s, row), run, clauses, why))
    return out
