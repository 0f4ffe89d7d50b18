"""``m3mon replay -c FILE --class C --profile P --duration D [--rate R | --concurrency N] [--json]``.

Drives the class's endpoint with the traffic profile (streaming, prompts sized with the server's
tokenizer, real tool loops and images), prints throughput, P50/P95/P99 of TTFT, TPOT, ITL and
e2e, error categories, goodput and each SLO clause, and stores the run with the deployment
fingerprint and the profile's digest (docs/contract.md). Exit 0 when every judged clause holds,
1 when one does not, when the run is no evidence (the endpoint unreachable, its fingerprint
unknown, its deployment changed during the run, or its prompts on average more than 2 % off the
profile's sizes as the server counted them; stored as such, one line on stderr says why), or when
the store cannot be written; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="replay a class's traffic profile against its endpoint (benchmark; stored as evidence)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    p.add_argument("--class", dest="request_class", required=True, metavar="C", help="request class")
    p.add_argument("--profile", required=True, metavar="P", help="traffic profile YAML (m3mon-profile/v1)")
    p.add_argument("--duration", required=True, metavar="D", help="how long to send requests (30s, 5m)")
    load = p.add_mutually_exclusive_group()
    load.add_argument(
        "--rate", type=float, metavar="R", help="arrival rate, requests/s (default: the profile's)"
    )
    load.add_argument("--concurrency", type=int, metavar="N", help="N requests in flight, back to back")
    p.add_argument("--endpoint", metavar="E", help="endpoint (default: the first serving the class)")
    p.add_argument("--seed", type=int, default=0, help="seed of the request draws")
    p.add_argument("--no-store", action="store_true", help="do not store the run")
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")
    p.set_defaults(func=run)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.1f}"


def _sizing_warning(sizing: str, error: float | None) -> str | None:
    """The warning of a run whose prompts were not all sized to plan (some could not be, or the
    endpoint cannot measure them); beyond the tolerance on average the run is no evidence instead
    (:func:`monitor.contract.runs.evidence_problem`)."""
    from monitor.replay.sizing import MEASURED, TOLERANCE

    if sizing in ("", MEASURED):
        return None
    mean = "" if error is None else f"; mean size error {error:.1%}, within {TOLERANCE:.0%}"
    return f"warning: prompts not all sized to plan ({sizing}{mean})"


def render(d: dict[str, Any]) -> str:
    """The human summary of one run (``Evidence.to_dict()``)."""
    s = d["summary"]
    lines = [
        f"replay of {d['class']} on {d['endpoint']} at {d['load']}: {s['requests']} requests, "
        f"{s['succeeded']} ok, {s['duration']:.1f} s",
        f"throughput: {s['request_throughput']:.2f} req/s, {s['output_throughput']:.0f} output tok/s, "
        f"{s['total_token_throughput']:.0f} total tok/s",
        f"{'metric':<6} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'mean ms':>9}",
    ]
    for metric, q in s["percentiles"].items():
        lines.append(
            f"{metric:<6} {_ms(q['p50']):>9} {_ms(q['p95']):>9} {_ms(q['p99']):>9} {_ms(q['mean']):>9}"
        )
    ratio = s["goodput_ratio"]
    lines.append(
        f"goodput: {'-' if ratio is None else f'{ratio:.1%}'} of requests "
        f"({s['goodput_request_rate']:.2f} req/s, {s['goodput_token_rate']:.0f} tok/s) "
        f"within {s['goodput_limits']}"
    )
    lines.append("errors: " + (", ".join(f"{k} {v}" for k, v in s["errors"].items()) or "none"))
    error = s.get("prompt_token_error")
    sizing = s.get("prompt_sizing", "")
    lines.append(f"prompts: {sizing}; mean size error {'-' if error is None else f'{error:.1%}'}")
    warning = _sizing_warning(sizing, error)
    if warning and not d.get("not_evidence"):
        lines.append(warning)
    for c in d["clauses"]:
        verdict = {True: "holds", False: "FAILS", None: "no data"}[c["holds"]]
        got = "-" if c["attained"] is None else f"{c['attained']:.2%}"
        lines.append(
            f"slo {c['slo']}: {got} of {c['total']} events good, objective {c['objective']:.2%}: {verdict}"
        )
    lines.append(f"profile {d['profile_digest'][:12]}  fingerprint {(d['fingerprint_digest'] or '-')[:12]}")
    if d.get("not_evidence"):
        lines.append(f"not evidence: {d['not_evidence']} (stored as a failed run; the contract ignores it)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from monitor.cli.contract import class_and_endpoint
    from monitor.cli.failures import warn_unset_keys
    from monitor.config import parse_duration
    from monitor.contract.runs import execute, store
    from monitor.errors import UsageError
    from monitor.model import load_model
    from monitor.replay.driver import Load
    from monitor.replay.profile import load_profile
    from monitor.replay.progress import ProgressBar
    from monitor.store.store import Store

    model = load_model(args.config)
    rc, endpoint = class_and_endpoint(model, args.request_class, args.endpoint)
    try:
        duration = parse_duration(args.duration)
    except ValueError as exc:
        raise UsageError(f"--duration: {exc}") from None
    profile = load_profile(args.profile)
    if profile.request_class != rc.name:
        raise UsageError(
            f"--profile: {args.profile} is a profile of class {profile.request_class!r}, not {rc.name!r}"
        )
    if (args.rate is not None and args.rate <= 0) or (args.concurrency is not None and args.concurrency < 1):
        raise UsageError("--rate must be > 0 and --concurrency >= 1")
    db = None if args.no_store else Store(model.storage.url)
    if db is not None:
        db.check_schema()
    warn_unset_keys("m3mon replay", [endpoint])
    bar = ProgressBar.for_terminal(duration, args.json)
    try:
        try:
            load = Load(duration, args.rate, args.concurrency)
            evidence = execute(endpoint, rc, profile, load, progress=bar, seed=args.seed)
        finally:
            bar.close()
        doc = evidence.to_dict()
        if db is not None:
            doc["run_id"] = store(db, evidence)
    finally:
        if db is not None:
            db.close()
    print(json.dumps(doc, sort_keys=True) if args.json else render(doc))
    if evidence.not_evidence is not None:
        stored = f"stored as failed run {doc['run_id']}" if "run_id" in doc else "not stored"
        print(f"m3mon replay: not evidence: {evidence.not_evidence} ({stored})", file=sys.stderr)
        return 1
    return 0 if evidence.meets_slos is not False else 1
