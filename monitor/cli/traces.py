"""``m3mon traces -c FILE --slo CLASS/SLO [--at TIME] [--window 15m] [--limit 10] [--json]``: the
requests behind an SLO at a time (:mod:`monitor.report.collect_requests`).

From an alert to its requests in one step: the failed and slowest requests of the SLO's events in
the window ending at ``--at`` (default now; a burn page's start time), bad ones first, each with its
trace id (a link when ``alerting.trace_url`` is set) and where its time went. Exit 0 (also when the
window holds no request: it says so), 1 when the store cannot be read, 2 on bad usage or config.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from monitor.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "traces",
        help="the failed and slowest requests behind an SLO at a time, with trace ids and stages",
        description="List the requests behind an SLO's events in a window: bad ones first, then the "
        "slowest, each with its trace id and stage breakdown. Exit 0, 1 when the store cannot be read, "
        "2 on bad usage.",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    p.add_argument("--slo", required=True, metavar="CLASS/SLO", help="the SLO, as its alerts name it")
    p.add_argument("--at", metavar="TIME", help="window end: ISO 8601 (UTC unless it says) or Unix seconds")
    p.add_argument("--window", default="15m", metavar="D", help="window length before --at (default 15m)")
    p.add_argument("--limit", type=int, default=10, metavar="N", help="requests listed (default 10)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.cli.slo import parse_time
    from monitor.durations import parse_duration
    from monitor.model import load_model
    from monitor.report.collect_requests import STAGE_ORDER, requests_behind
    from monitor.store import Store

    model = load_model(args.config)
    slo = _slo(model, args.slo)
    try:
        window = parse_duration(args.window)
    except ValueError as exc:
        raise UsageError(f"--window: {exc}") from None
    if args.limit < 1:
        raise UsageError(f"--limit: must be at least 1, got {args.limit}")
    at = parse_time(args.at)
    store = Store(model.storage.url)
    try:
        store.check_schema()
        with store.session() as s:
            found = requests_behind(model, s, slo, at, window, args.limit)
    finally:
        store.close()
    link = model.alerting.trace_link
    if args.json:
        doc = {
            "slo": slo.id,
            "at": at,
            "window": window,
            "requests": [r.as_json(link(r.trace_id)) for r in found],
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"{slo.id}: {len(found)} request(s) in the {args.window} before {_iso(at)} ({slo.source}; bad first)"
    )
    for r in found:
        stages = " ".join(f"{k} {_seconds(r.stages[k])}" for k in STAGE_ORDER if k in r.stages)
        value = _seconds(r.value) if r.value is not None else "-"
        mark = "BAD " if r.bad else "ok  "
        where = f"{r.endpoint or '?'} {r.kind or ''}".strip()
        print(f"  {mark}{_iso(r.at)}  {where}  {r.outcome}  {slo.sli} {value}  trace {r.trace_id or '-'}")
        if stages:
            print(f"      {stages}")
        if (url := link(r.trace_id)) is not None:
            print(f"      {url}")
    return 0


def _slo(model: Any, name: str) -> Any:
    cls, _, slo_name = name.partition("/")
    for rc in model.classes:
        for slo in rc.slos:
            if rc.name == cls and slo.name == slo_name:
                return slo
    known = ", ".join(s.id for rc in model.classes for s in rc.slos)
    raise UsageError(f"--slo: unknown SLO {name!r}; known: {known}")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(v: float) -> str:
    return f"{0.0 if abs(v) < 0.0005 else v:.3f}s"  # never "-0.000s"
