"""``m3mon probe -c FILE --once``: run one round of synthetic probes and print the verdicts.

Exit status: 0 when every probe succeeded, 1 when any failed through the service's fault, 2 on a
configuration error (including an unknown ``--class`` or ``--kind``), 3 when the only failures are
``monitor_error`` (a prober crashed: a bug in m3mon, the service's verdict is unknown). Any
``monitor_error`` also prints a line on stderr saying so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from monitor.conventions import MONITOR_FAILURES, PROBE_KINDS

#: Exit status when probes crashed inside the monitor and no probe failed through the service.
EXIT_MONITOR_ERROR = 3


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "probe",
        help="run synthetic streaming probes against the configured endpoints",
        description="Run one round of probes (every endpoint x request class x probe kind) and print a "
        "table of verdicts and client-side timings, or JSON lines. Exit status 0 when all succeed, "
        "1 when any probe failed through the service, 2 on a configuration error, 3 when the only "
        "failures are monitor_error (a prober crashed: a bug in m3mon, not the service).",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file (m3mon/v1)")
    p.add_argument("--once", action="store_true", help="run a single round and exit (required for now)")
    p.add_argument("--class", dest="classes", action="append", metavar="C", help="only this request class")
    p.add_argument("--kind", dest="kinds", action="append", choices=PROBE_KINDS, help="only this probe kind")
    p.add_argument("--json", action="store_true", help="print one JSON object per result")
    p.add_argument("--no-jitter", action="store_true", help="start every probe at once")
    p.set_defaults(func=run)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def table(results: Sequence[Any]) -> str:
    """A fixed-width table: one line per result, timings in milliseconds."""
    head = ("endpoint", "class", "kind", "verdict", "ttft", "ttft_ans", "itl_p50", "tpot", "e2e", "detail")
    rows = [head]
    for r in results:
        t = r.timings
        verdict = "ok" if r.ok else r.reason
        rows.append((r.endpoint, r.request_class, r.kind, verdict, _ms(t.ttft), _ms(t.ttft_answer),
                     _ms(t.itl_p50), _ms(t.tpot), _ms(t.e2e), r.detail[:80]))  # fmt: skip
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head) - 1)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in rows
    )


def run(args: argparse.Namespace) -> int:
    from monitor.cli.failures import warn_unset_keys
    from monitor.errors import ConfigError, ProbeError
    from monitor.model import load_model
    from monitor.probes.runner import run_round

    if not args.once:
        raise ConfigError(["m3mon probe: pass --once (scheduled probing runs inside the monitor service)"])
    model = load_model(args.config)
    try:
        results = asyncio.run(run_round(model, args.classes, args.kinds, jitter=not args.no_jitter))
    except ProbeError as exc:
        raise ConfigError([f"{args.config}: {exc}"]) from exc
    probed = {r.endpoint for r in results}
    warn_unset_keys("m3mon probe", (e for e in model.endpoints if e.name in probed))
    if args.json:
        for r in results:
            d = r.to_dict()
            d["timings"].pop("itl_samples", None)
            print(json.dumps(d, sort_keys=True))
    else:
        print(table(results))
    return exit_status(results)


def exit_status(results: Sequence[Any]) -> int:
    """0 all ok; 1 any service failure; 3 only monitor_error failures (announced on stderr)."""
    crashed = [r for r in results if r.reason in MONITOR_FAILURES]
    if crashed:
        message = (
            f"m3mon probe: {len(crashed)} probe(s) failed with monitor_error: a prober crashed, which is "
            "a bug in m3mon, not a service failure (the traceback is in the log)"
        )
        print(message, file=sys.stderr)
    if any(not r.ok and r.reason not in MONITOR_FAILURES for r in results):
        return 1
    return EXIT_MONITOR_ERROR if crashed else 0
