"""``m3mon fleet plan -c FILE --shards N``: which shard owns which endpoint, and how even it is.

The assignment is Prometheus' ``hashmod`` of the endpoint name (:mod:`monitor.fleet.shard`), so
the table is also what a ``hashmod`` relabel rule with the same modulus keeps on each shard.
``--json`` prints ``{"shards": N, "assignment": {"0": [...], ...}, "balance": max/mean}``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "fleet",
        help="fleet mode: plan the hashmod assignment of endpoints to shards",
        description="Fleet mode (docs/fleet.md). `fleet plan` prints which shard owns each endpoint "
        "(hashmod of the endpoint name, as Prometheus computes it) and the balance: the largest "
        "shard over the mean shard size.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    plan = actions.add_parser("plan", help="print the endpoint assignment for N shards and its balance")
    plan.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    plan.add_argument("--shards", type=int, metavar="N", help="number of shards (default: fleet.shards)")
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from monitor.errors import UsageError
    from monitor.fleet.shard import assignment, balance
    from monitor.model import load_model

    model = load_model(args.config)
    shards = args.shards if args.shards is not None else model.fleet.shards
    if shards < 1:
        raise UsageError(f"--shards: expected a positive number, got {shards}")
    plan = assignment((e.name for e in model.endpoints), shards)
    if args.json:
        print(json.dumps({"shards": shards, "assignment": {str(k): v for k, v in plan.items()},
                          "balance": round(balance(plan), 3)}))  # fmt: skip
        return 0
    print(
        f"{len(model.endpoints)} endpoint(s) over {shards} shard(s) by hashmod(md5(endpoint name), {shards})"
    )
    for k, names in plan.items():
        print(f"  shard {k}/{shards}: {len(names):4d}  {', '.join(names)}")
    print(f"balance: largest shard / mean = {balance(plan):.2f} (1.00 is even)")
    return 0
