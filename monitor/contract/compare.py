"""``m3mon compare``: two deployments, or two replay runs, of one endpoint side by side.

A reference is ``run:ID`` (a stored replay run; a bare number means the same) or
``deployment:DIGEST`` (a prefix of a stored deployment fingerprint of the endpoint; ``deployment:``
alone is the current one, ``deployment:-1`` the one before it). What is compared:

* **What changed**: every fingerprint field that differs; for runs also the load, and the
  workload: two ``m3mon replay`` runs by their profile digests; a run imported from a peer file
  carries no m3mon profile (its stored digest is the file's), so a pair with one is compared on
  what both record — the measuring tool and the mean prompt and output tokens per completed
  request (:func:`workload_changes`). More than one changed dimension gets a warning: the guide's
  "change one dimension at a time" — a difference cannot be attributed to either.
* **Replay runs**: every P50/P95/P99 of TTFT, TPOT and e2e with the exceedance test's 95 % interval of the
  difference (:mod:`monitor.contract.stats`); ITL percentiles shown without a test (per-token
  samples are not stored); throughput and goodput; each SLO clause's attainment on the two
  runs with the two-proportion z-test.
* **Deployments**: each SLO's attainment over the endpoint's events during each deployment's
  lifetime, with the two-proportion z-test.

The verdicts are family-wise: Holm's correction over every tested row of the comparison holds
"beyond noise anywhere" to 5 % for two runs of one system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.contract.check import changed_fields
from monitor.contract.stats import Difference, holm, percentile_tests, two_proportions
from monitor.errors import UsageError
from monitor.model import Model
from monitor.store.replays import StoredRun, run_by_id
from monitor.store.tables import DeploymentRow, EventSliceRow

TESTED = ("ttft", "tpot", "e2e")
#: Mean request sizes of two runs of one workload differ by sampling: ``vllm bench serve``'s random
#: dataset (``--random-input-len 256``, 24 prompts, two seeds) gave 205 and 194 prompt tokens, 5.5 %
#: apart (tests/fixtures/peers). Imported runs' sizes further apart than this are a changed workload.
WORKLOAD_TOLERANCE = 0.10
QS = (50.0, 95.0, 99.0)


@dataclass
class Comparison:
    kind: str  # "runs" or "deployments"
    before: str
    after: str
    changed: list[str]
    rows: list[tuple[str, Difference]] = field(default_factory=list)  # (what, difference)
    notes: list[str] = field(default_factory=list)

    @property
    def warning(self) -> str | None:
        if len(self.changed) > 1:
            names = ", ".join(c.split(" ")[0] for c in self.changed)
            return (
                f"{len(self.changed)} dimensions changed at once ({names}): "
                "a difference cannot be attributed to one of them; change one dimension at a time"
            )
        return None


def _dims(fp: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fp.items() if k != "spec_decoding" or v is not None}


def _run(session: Session, ref: str, endpoint: str) -> StoredRun:
    text = ref.removeprefix("run:")
    if not text.isdigit():
        raise UsageError(f"expected run:ID or deployment:DIGEST, got {ref!r}")
    run = run_by_id(session, int(text))
    if run is None or run.endpoint != endpoint:
        raise UsageError(f"{ref}: no stored replay run {text} of endpoint {endpoint!r}")
    if run.not_evidence is not None:
        raise UsageError(
            f"{ref}: replay run {text} is no evidence ({run.not_evidence}); "
            "compare runs that measured the deployment"
        )
    return run


def compare_runs(session: Session, endpoint: str, before: str, after: str) -> Comparison:
    b, a = _run(session, before, endpoint), _run(session, after, endpoint)
    changed = changed_fields(_dims(b.fingerprint), _dims(a.fingerprint)) + workload_changes(b, a)
    if (b.load_kind, b.load_value) != (a.load_kind, a.load_value):
        changed.append(f"load {b.load_label}→{a.load_label}")
    cmp = Comparison("runs", f"run {b.id}", f"run {a.id}", changed)
    if _source(b) or _source(a):
        cmp.notes.append(
            "an imported run carries no m3mon profile: the workload is compared on the tool and the "
            "mean prompt and output tokens per completed request"
        )
    sb, sa = b.summary, a.summary
    for metric in TESTED:
        diffs = percentile_tests(_samples(sb, metric), _samples(sa, metric), QS)
        cmp.rows += [(f"{metric} p{q:g} (s)", diffs[q]) for q in QS]
    for q in QS:
        pb, pa = _itl(sb, q), _itl(sa, q)
        cmp.rows.append((f"itl p{q:g} (s)", Difference(pb, pa)))
    for key in ("request_throughput", "output_throughput", "goodput_ratio"):
        cmp.rows.append((key, Difference(sb.get(key), sa.get(key))))
    cmp.rows += clause_rows(sb.get("clauses", []), sa.get("clauses", []))
    if not changed and any(d.beyond_noise for _, d in cmp.rows):
        cmp.notes.append(
            "differences beyond noise with no recorded change: something outside the fingerprint, "
            "profile and load changed (other traffic on the pool, hardware, a fault)"
        )
    return cmp


def _source(run: StoredRun) -> dict[str, Any] | None:
    source = run.summary.get("source")
    return source if isinstance(source, dict) else None


def _samples(summary: dict[str, Any], metric: str) -> list[float]:
    samples = summary.get("samples")
    values = samples.get(metric) if isinstance(samples, dict) else None
    return list(values) if isinstance(values, list) else []


def _itl(summary: dict[str, Any], q: float) -> float | None:
    pct = summary.get("percentiles")
    itl = pct.get("itl") if isinstance(pct, dict) else None
    value = itl.get(f"p{q:g}") if isinstance(itl, dict) else None
    return float(value) if isinstance(value, int | float) else None


def sizes(run: StoredRun) -> tuple[float | None, float | None]:
    """Mean prompt and output tokens per completed request: an imported file's own figures (as its
    tool counts them), a replay's from its throughputs (the server's usage, over one duration)."""
    source = _source(run)
    if source is not None:
        return _number(source.get("prompt_tokens_mean")), _number(source.get("output_tokens_mean"))
    s = run.summary
    rate, out, total = (
        _number(s.get(k)) for k in ("request_throughput", "output_throughput", "total_token_throughput")
    )
    if rate is None or out is None or total is None or not rate:
        return None, None
    return (total - out) / rate, out / rate


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _tool(run: StoredRun) -> str:
    source = _source(run)
    if source is None:
        return "m3mon replay"
    return " ".join(str(x) for x in (source.get("tool"), source.get("version")) if x)


def workload_changes(b: StoredRun, a: StoredRun) -> list[str]:
    """What changed in the workload (module docstring): the profile digest of two replays; else the
    tool and each mean size more than :data:`WORKLOAD_TOLERANCE` apart (or unknown on a side)."""
    if _source(b) is None and _source(a) is None:
        same = b.profile_digest == a.profile_digest
        return [] if same else [f"profile {b.profile_digest[:12]}→{a.profile_digest[:12]}"]
    out = [] if _tool(b) == _tool(a) else [f"tool {_tool(b)}→{_tool(a)} (their definitions differ)"]
    for what, vb, va in zip(("prompt", "output"), sizes(b), sizes(a), strict=True):
        if vb is None or va is None:
            out.append(f"{what} tokens {_tokens(vb)}→{_tokens(va)} (mean per request; not recorded)")
        elif abs(va - vb) > WORKLOAD_TOLERANCE * max(vb, va):
            out.append(f"{what} tokens {vb:.0f}→{va:.0f} (mean per request)")
    return out


def _tokens(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def clause_rows(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[tuple[str, Difference]]:
    """Each SLO clause judged on both runs (by SLO name): attainment before/after with the
    two-proportion z-test on the runs' good/total events; a clause judged on one side only, or
    bounded from an imported file's quantiles (``good`` None), has no test."""
    b = {c["slo"]: c for c in before}
    a = {c["slo"]: c for c in after}
    rows = []
    for name in [*b, *(n for n in a if n not in b)]:
        cb, ca = b.get(name), a.get(name)
        objective = (cb or ca or {}).get("objective", 0.0)
        what = f"{name} attainment (objective {objective:.2%})"
        if cb is None or ca is None or cb.get("good") is None or ca.get("good") is None:
            rows.append((what, Difference((cb or {}).get("attained"), (ca or {}).get("attained"))))
            continue
        rows.append((what, two_proportions(cb["good"], cb["total"], ca["good"], ca["total"])))
    return rows


def _deployment(session: Session, ref: str, endpoint: str) -> tuple[DeploymentRow, float]:
    """The deployment row and the end of its lifetime (the next one's start, or its last_seen)."""
    rows = list(
        session.scalars(
            select(DeploymentRow)
            .where(DeploymentRow.endpoint == endpoint)
            .order_by(DeploymentRow.first_seen, DeploymentRow.id)
        )
    )
    if not rows:
        raise UsageError(f"{ref}: endpoint {endpoint!r} has no stored deployment fingerprints")
    key = ref.removeprefix("deployment:")
    if key in ("", "0"):
        idx = len(rows) - 1
    elif key.lstrip("-").isdigit() and key.startswith("-"):
        idx = len(rows) - 1 + int(key)
    else:
        found = [i for i, r in enumerate(rows) if r.fingerprint.startswith(key)]
        idx = found[-1] if found else -(10**9)
    if not 0 <= idx < len(rows):
        raise UsageError(f"{ref}: no such deployment of {endpoint!r} ({len(rows)} stored)")
    end = rows[idx + 1].first_seen if idx + 1 < len(rows) else rows[idx].last_seen
    return rows[idx], end


def _fp(row: DeploymentRow) -> dict[str, Any]:
    skip = ("id", "endpoint", "fingerprint", "first_seen", "last_seen")
    return {c.name: getattr(row, c.name) for c in DeploymentRow.__table__.columns if c.name not in skip}


def _counts(session: Session, slo_id: str, endpoint: str, start: float, end: float) -> tuple[float, float]:
    q = select(
        func.coalesce(func.sum(EventSliceRow.good), 0.0), func.coalesce(func.sum(EventSliceRow.total), 0.0)
    )
    q = q.where(
        EventSliceRow.slo_id == slo_id,
        EventSliceRow.endpoint == endpoint,
        EventSliceRow.end > start,
        EventSliceRow.end <= end,
        EventSliceRow.maintenance.is_(None),
    )
    good, total = session.execute(q).one()
    return float(good), float(total)


def compare_deployments(session: Session, model: Model, endpoint: str, before: str, after: str) -> Comparison:
    (b, b_end), (a, a_end) = _deployment(session, before, endpoint), _deployment(session, after, endpoint)
    cmp = Comparison(
        "deployments",
        f"deployment {b.fingerprint[:12]}",
        f"deployment {a.fingerprint[:12]}",
        changed_fields(_fp(b), _fp(a)),
    )
    classes = next((e.classes for e in model.endpoints if e.name == endpoint), ())
    for slo in (s for s in model.slos if s.request_class in classes):
        gb, tb = _counts(session, slo.id, endpoint, b.first_seen, b_end)
        ga, ta = _counts(session, slo.id, endpoint, a.first_seen, a_end)
        cmp.rows.append(
            (f"{slo.id} attainment (objective {slo.objective:.2%})", two_proportions(gb, tb, ga, ta))
        )
    cmp.notes.append("SLO events from raw slices still in the store (older ones may be pruned)")
    return cmp


def compare(session: Session, model: Model, endpoint: str, before: str, after: str) -> Comparison:
    """Compare two references of the same kind (module docstring), its verdicts family-wise."""
    kinds = {r.split(":", 1)[0] if ":" in r else "run" for r in (before, after)}
    if kinds == {"run"}:
        return family_wise(compare_runs(session, endpoint, before, after))
    if kinds == {"deployment"}:
        return family_wise(compare_deployments(session, model, endpoint, before, after))
    raise UsageError(
        "--before and --after must both be runs (run:ID) or both deployments (deployment:DIGEST)"
    )


def family_wise(cmp: Comparison) -> Comparison:
    """The comparison with Holm's correction over its tested rows (:func:`monitor.contract.stats.
    holm`), and a note saying so."""
    tested = sum(1 for _, d in cmp.rows if d.beyond_noise is not None)
    corrected = holm([d for _, d in cmp.rows])
    cmp.rows = [(what, d) for (what, _), d in zip(cmp.rows, corrected, strict=True)]
    if tested > 1:
        cmp.notes.append(
            f"verdicts hold 5 % per comparison over its {tested} tested rows (Holm's correction): two "
            "runs of one system read beyond noise somewhere at most 1 time in 20; the intervals are "
            "each row's own 95 %"
        )
    return cmp
