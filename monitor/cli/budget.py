"""``m3mon budget gate -c FILE --class C [--at TIME]``: may we deploy? (:mod:`monitor.slo.policy`)

Evaluates the class's SLOs from the store at ``--at`` (default now) and judges its error-budget
policy. Prints one line (``ok: …`` or ``frozen: …`` with every reason) and exits 0 when deploys
may go ahead, 1 when the policy freezes them (or the store cannot be read: a gate fails closed),
2 on bad usage, an unknown class or a bad configuration. A store with no event of the class, or
none newer than ``--fresh-within`` (default 1h) before ``--at``, freezes too: a monitor that
stopped writing leaves a budget that looks healthy forever. ``--allow-stale`` judges anyway.
"""

from __future__ import annotations

import argparse
from typing import Any

from monitor.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "budget", help="error-budget policy: the deploy gate", description="Error-budget policy checks."
    )
    actions = p.add_subparsers(dest="budget_command", metavar="ACTION", required=True)
    gate = actions.add_parser(
        "gate",
        help="exit 0 when the class's budget policy allows deploys, 1 when it freezes them",
        description="Judge a request class's error-budget policy from the store and print one line. Exit "
        "status 0: deploys may go ahead; 1: frozen (or the store is unreadable); 2: bad usage or config.",
    )
    gate.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    gate.add_argument("--class", dest="request_class", required=True, metavar="CLASS", help="request class")
    gate.add_argument("--at", metavar="TIME", help="ISO 8601 time (UTC unless it says) or Unix seconds")
    gate.add_argument(
        "--fresh-within",
        default="1h",
        metavar="D",
        help="freeze unless the class has an event newer than this before --at (default 1h)",
    )
    gate.add_argument(
        "--allow-stale", action="store_true", help="judge the budget even on a stale or empty store"
    )
    gate.set_defaults(func=run_gate)


def run_gate(args: argparse.Namespace) -> int:
    from monitor.cli.slo import parse_time
    from monitor.durations import parse_duration
    from monitor.model import load_model
    from monitor.slo.evaluate import evaluate_counts
    from monitor.slo.policy import policy_state, staleness
    from monitor.store import Store
    from monitor.store.counts import newest_event

    model = load_model(args.config)
    try:
        rc = model.request_class(args.request_class)
    except KeyError:
        known = ", ".join(c.name for c in model.classes)
        raise UsageError(f"--class: unknown request class {args.request_class!r}; known: {known}") from None
    try:
        fresh_within = parse_duration(args.fresh_within)
    except ValueError as exc:
        raise UsageError(f"--fresh-within: {exc}") from None
    at = parse_time(args.at)
    store = Store(model.storage.url)
    try:
        store.check_schema()
        with store.counter() as counts:
            evaluations = [evaluate_counts(slo, at, counts) for slo in rc.slos]
        with store.session() as s:
            newest = newest_event(s, [slo.id for slo in rc.slos], at)
    finally:
        store.close()
    stale = None if args.allow_stale else staleness(rc.name, newest, at, fresh_within)
    state = policy_state(rc, evaluations, stale)
    print(state.line())
    return 1 if state.frozen else 0
