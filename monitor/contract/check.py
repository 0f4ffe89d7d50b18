"""``m3mon contract --check``: the acceptance test — does the live endpoint hold each clause?

Per class, against the live endpoint:

1. **context ceiling**: the pool's live max-model-len is at least the class's ceiling.
2. **precision and kernel path**: the live deployment fingerprint equals the one the contract's
   evidence was measured on (else the changed fields are named).
3. **percentiles** (and so **warm capacity**): a short replay of the class's profile at the
   contract's warm capacity (or the profile's rate when none is established) meets every
   availability and latency SLO of the class.

Stale evidence (stored runs, none on the current deployment: :func:`monitor.contract.build.current_evidence`)
is missing evidence: clauses 2 and warm capacity are *not judged* (named, exit status unaffected)
and the replay runs at the profile's rate.

Each clause that does not hold is one line; the command exits 1 when there is any.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.contract.build import ClassContract
from monitor.contract.runs import Evidence, execute, observe_fingerprint
from monitor.model import Endpoint, RequestClass
from monitor.replay.driver import Load
from monitor.replay.profile import TrafficProfile

#: Fingerprint fields that are not a deployment dimension (observed, or derived).
_NOT_DIMENSIONS = ("spec_decoding",)


@dataclass(frozen=True)
class ClauseResult:
    request_class: str
    clause: str
    holds: bool | None  # None: could not be judged
    detail: str

    def line(self) -> str:
        verdict = {True: "holds", False: "FAILS", None: "not judged"}[self.holds]
        return f"{self.request_class}: {self.clause}: {verdict}: {self.detail}"


def changed_fields(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """``field before→after`` for every fingerprint field that differs."""
    keys = sorted(set(before) | set(after))
    return [f"{k} {before.get(k)}→{after.get(k)}" for k in keys if before.get(k) != after.get(k)]


def _load(cc: ClassContract, duration: float) -> Load:
    cap = cc.capacity
    if cap.holds_at is not None and cap.load_kind == "concurrency":
        return Load(duration, concurrency=int(cap.holds_at))
    return Load(duration, rate=cap.holds_at)


def check_class(
    cc: ClassContract,
    rc: RequestClass,
    endpoint: Endpoint,
    profile: TrafficProfile | None,
    contract_fingerprint: dict[str, object] | None,
    duration: float,
) -> tuple[list[ClauseResult], Evidence | None]:
    """Every clause of one class, judged live."""
    import asyncio

    out: list[ClauseResult] = []
    live, digest = asyncio.run(observe_fingerprint(endpoint))
    max_len = live.get("max_model_len")
    if isinstance(max_len, int):
        out.append(
            ClauseResult(
                rc.name,
                "context ceiling",
                max_len >= rc.max_context_tokens,
                f"pool max-model-len {max_len}, class ceiling {rc.max_context_tokens}",
            )
        )
    else:
        out.append(
            ClauseResult(rc.name, "context ceiling", None, "the pool's max-model-len is not observable")
        )
    if contract_fingerprint is not None and cc.fingerprint_digest is not None:
        diff = changed_fields(
            {k: v for k, v in contract_fingerprint.items() if k not in _NOT_DIMENSIONS},
            {k: v for k, v in live.items() if k not in _NOT_DIMENSIONS},
        )
        out.append(
            ClauseResult(
                rc.name,
                "precision and kernel path",
                not diff,
                "; ".join(diff) if diff else f"fingerprint {(digest or '-')[:12]} unchanged",
            )
        )
    else:
        out.append(
            ClauseResult(
                rc.name, "precision and kernel path", None, "no replay evidence on the current deployment"
            )
        )
    if cc.stale is not None:  # treated as no evidence: replay at the profile's own rate
        out.append(
            ClauseResult(rc.name, "warm capacity", None, f"{cc.stale}; replaying at the profile's rate")
        )
    if profile is None:
        out.append(
            ClauseResult(
                rc.name,
                "percentiles",
                False,
                "no traffic profile (give --profile CLASS=FILE, or store traffic to learn one)",
            )
        )
        return out, None
    evidence = execute(endpoint, rc, profile, _load(cc, duration))
    for c in evidence.clauses:
        got = "no events" if c.attained is None else f"{c.attained:.2%} of {c.total}"
        bound = f" ≤ {c.threshold:g} s" if c.threshold is not None else ""
        out.append(
            ClauseResult(
                rc.name,
                f"{c.slo} ({c.sli}{bound}, {c.objective:.2%}) at {evidence.load.label}",
                c.holds,
                f"{got} good",
            )
        )
    return out, evidence
