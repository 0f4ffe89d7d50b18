"""``m3mon compare -c FILE --endpoint E --before REF --after REF [--json]``: one change at a time.

REF is ``run:ID`` (a stored replay run) or ``deployment:DIGEST`` (a stored deployment
fingerprint; ``deployment:`` the current one, ``deployment:-1`` the one before). Prints what
changed, each replay percentile or SLO before/after with the difference and whether it is beyond
noise (an exact exceedance test for percentiles, two-proportion z-test for SLOs; docs/contract.md),
and warns when more than one dimension changed at once.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="compare two replay runs or two deployments of one endpoint",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    p.add_argument("--endpoint", required=True, metavar="E", help="endpoint name")
    p.add_argument("--before", required=True, metavar="REF", help="run:ID or deployment:DIGEST")
    p.add_argument("--after", required=True, metavar="REF", help="run:ID or deployment:DIGEST")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def render(cmp: Any) -> str:
    lines = [f"compare {cmp.before} → {cmp.after}"]
    lines.append("changed: " + ("; ".join(cmp.changed) if cmp.changed else "nothing"))
    if cmp.warning:
        lines.append(f"WARNING: {cmp.warning}")
    lines.append(f"{'what':<56} {'before':>10} {'after':>10} {'diff':>10}  95% interval / verdict")
    for what, d in cmp.rows:
        if d.beyond_noise is None:
            verdict = d.why_no_verdict
        else:
            verdict = (
                f"[{_num(d.low)}, {_num(d.high)}] {'BEYOND NOISE' if d.beyond_noise else 'within noise'}"
            )
        lines.append(f"{what:<56} {_num(d.before):>10} {_num(d.after):>10} {_num(d.delta):>10}  {verdict}")
    lines += [f"note: {n}" for n in cmp.notes]
    return "\n".join(lines)


def to_json(cmp: Any) -> dict[str, Any]:
    rows = [
        {
            "what": w,
            "before": d.before,
            "after": d.after,
            "delta": d.delta,
            "low": d.low,
            "high": d.high,
            "beyond_noise": d.beyond_noise,
            "why_no_verdict": None if d.beyond_noise is not None else d.why_no_verdict,
        }
        for w, d in cmp.rows
    ]
    return {
        "kind": cmp.kind,
        "before": cmp.before,
        "after": cmp.after,
        "changed": cmp.changed,
        "warning": cmp.warning,
        "rows": rows,
        "notes": cmp.notes,
    }


def run(args: argparse.Namespace) -> int:
    from monitor.contract.compare import compare
    from monitor.errors import ConfigError
    from monitor.model import load_model
    from monitor.store.store import Store

    model = load_model(args.config)
    if args.endpoint not in {e.name for e in model.endpoints}:
        known = ", ".join(e.name for e in model.endpoints)
        raise ConfigError([f"--endpoint: unknown endpoint {args.endpoint!r}; known: {known}"])
    db = Store(model.storage.url)
    try:
        db.check_schema()
        with db.session() as s:
            cmp = compare(s, model, args.endpoint, args.before, args.after)
    finally:
        db.close()
    print(json.dumps(to_json(cmp), sort_keys=True) if args.json else render(cmp))
    return 0
