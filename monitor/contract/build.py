"""The operating contract per class, from the config and the stored evidence.

For each request class (the M3 guide's "production acceptance test"):

* **Context ceiling**: the class's ``max_context_tokens``, the pool's max-model-len, and the share
  of observed traffic (prompt + output) it covers (:mod:`monitor.contract.ceiling`). The KV-waste
  advice is the pool's (:func:`pool_need`): a pool's --max-model-len must fit every class it
  serves, so it is judged on the largest P99 of all the pool's traffic.
* **Warm capacity**: the highest replay load (arrival rate, or concurrency) of a stored run on the
  pool's current deployment at which every latency and availability SLO of the class held, and
  the lowest load at which one failed (the headroom bracket). Runs on other fingerprints are not
  evidence for this deployment; when every stored run is of an older deployment the contract
  says *stale evidence* and has no warm capacity (:func:`current_evidence`). Runs that measured
  no deployment (unreachable, fingerprint unknown: ``StoredRun.not_evidence``) are named in the
  notes and count for nothing (:func:`counted_runs`).
* **Precision and kernel path**: checkpoint, KV-cache dtype, tensor/expert parallel sizes, image,
  vLLM version, speculative decoding, block size — from the stored deployment fingerprint.
* **Percentiles to hold**: each latency SLO as "P95 TTFT ≤ 2.5 s", each availability SLO.
* **Runs**: the newest stored runs, ``m3mon replay``'s and imported peer results side by side, with
  their stored percentiles and whether the contract counts them (:mod:`monitor.contract.table`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.contract.ceiling import CeilingUse, PoolNeed, from_marginals, from_requests
from monitor.contract.table import RunFigures, run_table
from monitor.model import SLO, Endpoint, Model, RequestClass
from monitor.probes.timing import percentile
from monitor.replay.learn import histogram_lengths, observe
from monitor.store.queries import real_traffic
from monitor.store.replays import StoredRun, runs
from monitor.store.repos import DeploymentRepo
from monitor.store.tables import DeploymentRow, ServerSpanRow

#: Fingerprint fields shown as the precision and kernel path, in order, with their labels.
PATH_FIELDS = (
    ("checkpoint", "checkpoint"),
    ("kv_cache_dtype", "KV-cache dtype"),
    ("tensor_parallel_size", "tensor parallel"),
    ("expert_parallel_size", "expert parallel"),
    ("spec_decoding", "speculative decoding"),
    ("block_size", "block size"),
    ("vllm_version", "vLLM"),
    ("image_digest", "image"),
)
#: Deployment-history columns that describe the deployment (not its identity or lifetime).
DEPLOYMENT_FIELDS = (
    "checkpoint",
    "kv_cache_dtype",
    "tensor_parallel_size",
    "expert_parallel_size",
    "block_size",
    "vllm_version",
    "image_digest",
    "max_model_len",
)
LOOKBACK = 7 * 86400.0
#: Ignored runs named one by one in a contract's notes; beyond this many, the rest are counted.
NAMED_IGNORED = 5


@dataclass(frozen=True)
class Capacity:
    """Warm capacity of one class on one deployment, per load kind."""

    load_kind: str | None  # "rate" or "concurrency"; None without replay evidence
    holds_at: float | None  # highest load at which every SLO held
    fails_at: float | None  # lowest load above it at which one failed
    runs: int


@dataclass(frozen=True)
class ClassContract:
    name: str
    endpoint: str
    ceiling: CeilingUse
    capacity: Capacity
    path: dict[str, Any]
    fingerprint_digest: str | None
    objectives: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    evidence_fingerprint: dict[str, Any] | None = None  # as stored with the newest current run
    stale: str | None = None  # replay runs exist, none on the current deployment (current_evidence)
    runs: tuple[RunFigures, ...] = ()  # the newest stored runs, replay and imported, with percentiles
    runs_total: int = 0  # every stored run of the class on the endpoint (runs shows the newest)


def objective_text(slo: SLO) -> str:
    """``P95 TTFT ≤ 2.5 s`` for a latency SLO, ``availability ≥ 99.9 %`` otherwise."""
    pct = f"{slo.objective * 100:g}"
    if slo.threshold is not None:
        return f"P{pct} {slo.sli.upper().replace('_', ' ')} ≤ {slo.threshold:g} s ({slo.name}, {slo.source})"
    return f"{slo.sli} ≥ {pct} % ({slo.name}, {slo.source})"


def objective_texts(slos: Sequence[SLO]) -> tuple[str, ...]:
    """Each SLO's :func:`objective_text`; the SLOs declared per tenant or band once per declaration
    (``goodput ≥ 99 % (goodput per tenant and band: 101 SLOs, traffic)``), however many tenants."""
    out: dict[str, str] = {}
    scoped: dict[str, list[SLO]] = {}
    for s in slos:
        if s.tenant is None and s.priority is None:
            out[s.name] = objective_text(s)
        else:
            scoped.setdefault(s.declared, []).append(s)
            out.setdefault(s.declared, "")
    for name, group in scoped.items():
        pcts = sorted({f"{s.objective * 100:g}" for s in group}, key=float)
        per = " and ".join(w for w, on in (("tenant", group[0].tenant), ("band", group[0].priority)) if on)
        out[name] = f"{group[0].sli} ≥ {' / '.join(pcts)} % ({name} per {per}: {len(group)} SLOs, traffic)"
    return tuple(out.values())


def capacity_of(evidence: list[StoredRun]) -> Capacity:
    """Highest holding load and lowest failing load above it, of the most common load kind; at a
    load replayed more than once the latest run's verdict counts (evidence is oldest first)."""
    judged = [r for r in evidence if r.meets_slos is not None and r.load_value is not None]
    if not judged:
        return Capacity(None, None, None, len(evidence))
    kinds = [r.load_kind for r in judged]
    kind = max(set(kinds), key=kinds.count)
    latest = {r.load_value: bool(r.meets_slos) for r in judged if r.load_kind == kind}
    held = [load for load, ok in latest.items() if ok and load is not None]
    best = max(held) if held else None
    failed = [
        load for load, ok in latest.items() if not ok and load is not None and (best is None or load > best)
    ]
    return Capacity(kind, best, min(failed) if failed else None, len(evidence))


def _from_histograms(hists: dict[str, Any], ceiling: int, max_len: int | None) -> CeilingUse | None:
    p = histogram_lengths(hists["prompt_tokens"], max_len)
    o = histogram_lengths(hists["generation_tokens"], max_len)
    if p is None or o is None:
        return None
    qs = {50: 0.5, 95: 0.95, 99: 0.99, 100: 1.0}
    h = hists["prompt_tokens"]
    edges = [(float(e), c) for e, c in zip(h["edges"], h["counts"], strict=True) if e != "+Inf"]
    fit = [(e, c) for e, c in edges if e <= ceiling]
    coverage = fit[-1][1] / h["counts"][-1] if fit else None
    bound = not fit or fit[-1][0] != ceiling
    return from_marginals(
        {k: float(p.at(v)) for k, v in qs.items()},
        {k: float(o.at(v)) for k, v in qs.items()},
        coverage,
        ceiling,
        max_len,
        int(h["counts"][-1]),
        bound,
    )


def _populations(
    session: Session, model: Model, rc: RequestClass, max_len: int | None, end: float, endpoint: str
) -> list[CeilingUse]:
    """The class's context use on ``endpoint`` (that pool's traffic alone) from each population, the
    one the contract shows first: the pool's server histograms when the pool is dedicated to the
    class, then the class's probe runs of every kind on it."""
    obs = observe(session, model, rc.name, end - LOOKBACK, end, endpoint)
    out = []
    if "prompt_tokens" in obs.histograms and "generation_tokens" in obs.histograms:
        use = _from_histograms(obs.histograms, rc.max_context_tokens, max_len)
        if use is not None:
            out.append(dataclasses.replace(use, source=f"{endpoint}'s {use.source}"))
    kinds = ", ".join(sorted(obs.kinds)) or "none"
    source = f"probe runs of every kind ({kinds}; prompt + output tokens)"
    out.append(from_requests(obs.every, rc.max_context_tokens, max_len, source))
    return [dataclasses.replace(u, request_class=rc.name) for u in out]


def _span_totals(session: Session, endpoint: Endpoint, end: float) -> list[int]:
    """Prompt + output tokens of the pool's real-traffic spans of the lookback (both counts known;
    output at least 1, as :func:`monitor.replay.learn.observe` counts a probe run)."""
    S = ServerSpanRow
    q = select(S.prompt_tokens, S.completion_tokens).where(
        *real_traffic(end - LOOKBACK, end),
        S.service_name == endpoint.service_name,
        S.prompt_tokens.is_not(None),
        S.completion_tokens.is_not(None),
    )
    return [int(p) + max(1, int(o)) for p, o in session.execute(q) if p is not None and o is not None]


def pool_need(
    endpoint: Endpoint,
    uses: Sequence[CeilingUse],
    spans: Sequence[int],
    ceilings: Sequence[tuple[int, str]] = (),
) -> PoolNeed | None:
    """What ``endpoint``'s --max-model-len must hold: the largest P99 among the populations of its
    traffic — ``uses``, each class's it serves (every population, on this pool), and its
    real-traffic ``spans`` (owned by the pool's class when it serves one, else by no class) — and
    never less than the largest context ceiling of the classes it serves (``ceilings``: (tokens,
    class)). None without any traffic."""
    found = [(u.p99, u.request_class, f"{u.request_class}: {u.samples} samples from {u.source}")
             for u in uses if u.p99 is not None]  # fmt: skip
    p99 = percentile([float(t) for t in spans], 99)
    if p99 is not None:
        owner = endpoint.classes[0] if len(endpoint.classes) == 1 else None
        found.append((p99, owner, f"{len(spans)} real-traffic spans of the pool (prompt + output tokens)"))
    if not found:
        return None
    need, owner, population = max(found, key=lambda f: f[0])
    ceiling, whose = max(ceilings, default=(0, None))
    return PoolNeed(endpoint.name, need, owner, population, ceiling, whose)


@dataclass(frozen=True)
class CurrentEvidence:
    """Which stored runs are evidence for the current deployment of an endpoint."""

    digest: str | None  # the current deployment's fingerprint digest
    runs: list[StoredRun]  # the runs on it, oldest first
    stale: str | None  # set when runs exist but none is on the current deployment


def current_evidence(dep: DeploymentRow | None, evidence: list[StoredRun]) -> CurrentEvidence:
    """The current deployment is the most recent observation of the endpoint: the store's
    deployment history (its ``last_seen``) or the newest replay run (its start), whichever is
    later. Only runs with that fingerprint are evidence; when there are runs and none is on it,
    the evidence is stale (an older deployment's warm capacity says nothing about this one)."""
    newest = evidence[-1] if evidence else None
    if dep is not None and (newest is None or dep.last_seen >= newest.started_at):
        digest: str | None = dep.fingerprint
    else:
        digest = newest.fingerprint_digest if newest is not None else None
    current = [r for r in evidence if r.fingerprint_digest == digest]
    stale = None
    if newest is not None and not current:
        stale = (
            f"stale evidence: the newest replay run ({newest.id}) is of deployment "
            f"{(newest.fingerprint_digest or '-')[:12]}, not the current {(digest or '-')[:12]}; "
            "no run on the current deployment, so no warm capacity (replay it again)"
        )
    return CurrentEvidence(digest, current, stale)


def counted_runs(stored: list[StoredRun]) -> tuple[list[StoredRun], list[str]]:
    """The runs that are evidence, and one note per run that is not (the newest
    :data:`NAMED_IGNORED` named with their reason, older ones counted)."""
    ignored = [r for r in stored if r.not_evidence is not None]
    notes = [
        f"replay run {r.id} ({r.load_label}) not counted: {r.not_evidence}" for r in ignored[-NAMED_IGNORED:]
    ]
    if len(ignored) > NAMED_IGNORED:
        notes.insert(0, f"{len(ignored) - NAMED_IGNORED} older replay run(s) not counted (no evidence)")
    counted = [r for r in stored if r.not_evidence is None]
    notes += [f"imported run {r.id} ({r.load_label}) accepted at import as this endpoint's: {'; '.join(a)}"
              for r in counted if (a := accepted_foreign(r))]  # fmt: skip
    return counted, notes


def accepted_foreign(run: StoredRun) -> list[str]:
    """The foreign facts (another model, another address) accepted when ``run`` was imported."""
    source = run.summary.get("source")
    origin = source.get("origin") if isinstance(source, dict) else None
    accepted = origin.get("accepted_foreign") if isinstance(origin, dict) else None
    return [str(a) for a in accepted] if isinstance(accepted, list) else []


def _path(dep: DeploymentRow | None, ev: CurrentEvidence, endpoint: Endpoint) -> dict[str, Any]:
    """The current deployment's fingerprint: the newest current run's, the history row's fields
    when the row is the current deployment, the config's deployment block for what is unknown."""
    path: dict[str, Any] = dict(ev.runs[-1].fingerprint) if ev.runs else {}
    if dep is not None and dep.fingerprint == ev.digest:
        path.update({key: getattr(dep, key) for key in DEPLOYMENT_FIELDS})
    for key, value in (
        ("checkpoint", endpoint.deployment.checkpoint),
        ("image_digest", endpoint.deployment.image_digest),
        ("tensor_parallel_size", endpoint.deployment.tensor_parallel_size),
        ("expert_parallel_size", endpoint.deployment.expert_parallel_size),
    ):
        if path.get(key) is None:
            path[key] = value
    return path


def _class_contract(
    session: Session, model: Model, rc: RequestClass, end: float
) -> tuple[ClassContract, list[CeilingUse]]:
    """The class's contract (its pool's need not yet known), and its context use per population."""
    endpoint = model.endpoints_for(rc.name)[0]
    dep = DeploymentRepo(session).current(endpoint.name)
    stored = runs(session, rc.name, endpoint.name)
    evidence, notes = counted_runs(stored)
    ev = current_evidence(dep, evidence)
    path = _path(dep, ev, endpoint)
    max_len = path.get("max_model_len") or endpoint.deployment.max_model_len
    if ev.runs and len(ev.runs) < len(evidence):
        notes.append(f"{len(evidence) - len(ev.runs)} replay run(s) on other deployments not counted")
    uses = _populations(session, model, rc, max_len, end, endpoint.name)
    return ClassContract(
        rc.name,
        endpoint.name,
        uses[0],
        capacity_of(ev.runs),
        path,
        ev.digest,
        objective_texts(rc.slos),
        tuple(notes),
        dict(ev.runs[-1].fingerprint) if ev.runs else None,
        ev.stale,
        runs=run_table(stored, ev.digest),
        runs_total=len(stored),
    ), uses


def _pool_need(
    session: Session,
    model: Model,
    e: Endpoint,
    built: dict[str, tuple[ClassContract, list[CeilingUse]]],
    end: float,
) -> PoolNeed | None:
    """:func:`pool_need` of ``e`` from its own traffic: each class's use on this pool (a class on
    several pools is counted on each from that pool's probe runs and intervals alone)."""
    uses: list[CeilingUse] = []
    for c in e.classes:
        if c not in built:
            continue
        contract, on_first = built[c]
        uses += (
            on_first
            if contract.endpoint == e.name
            else _populations(session, model, model.request_class(c), e.deployment.max_model_len, end, e.name)
        )
    ceilings = [(model.request_class(c).max_context_tokens, c) for c in e.classes]
    return pool_need(e, uses, _span_totals(session, e, end), ceilings)


def build_contract(session: Session, model: Model, end: float) -> list[ClassContract]:
    """The contract of every class that has an endpoint, each with its pool's need (:func:`pool_need`)."""
    built = {
        rc.name: _class_contract(session, model, rc, end)
        for rc in model.classes
        if model.endpoints_for(rc.name)
    }
    needs = {e.name: _pool_need(session, model, e, built, end) for e in model.endpoints}
    return [
        dataclasses.replace(cc, ceiling=dataclasses.replace(cc.ceiling, pool=needs.get(cc.endpoint)))
        for cc, _ in built.values()
    ]
