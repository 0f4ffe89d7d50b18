"""Per tenant, where its real traffic's tail has another owner than its class's: the lines every
format prints under "Where the tail goes" and the JSON beside the bottleneck verdicts (computed
once by :mod:`monitor.bottleneck.tenants`, rendered here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.bottleneck.tenants import MIN_TENANT_REQUESTS, TenantOwner, TenantTails
from monitor.report import display
from monitor.report.tail import LABELS, NAMES
from monitor.slo import numbers


def reason(o: TenantOwner) -> str:
    """``chat / acme: prefill owns 71% of its P95+ TTFT (2.30 s), the class's tail is queue``."""
    theirs = LABELS.get(o.class_owner, o.class_owner) if o.class_owner else "not attributed"
    return (
        f"{o.request_class} / {o.tenant}: {LABELS.get(o.owner, o.owner)} owns {numbers.share(o.share)} "
        f"of its P95+ {NAMES[o.metric]} ({display.seconds(o.seconds)}), the class's tail is {theirs}"
    )


def _noun(n: int) -> str:
    return "tenant" if n == 1 else "tenants"


def lines(tails: Sequence[TenantTails]) -> tuple[str, ...]:
    """Per class: each differing tenant's reason, or one line saying none differs; then the tenants
    below the floor, counted."""
    out: list[str] = []
    for t in tails:
        judged = t.tenants - t.below_floor
        if t.differing:
            out += [reason(o) for o in t.differing]
        elif judged:
            out.append(
                f"{t.request_class}: the tail of each of {judged} {_noun(judged)} has the class's owner"
            )
        if t.below_floor:
            out.append(
                f"{t.request_class}: {t.below_floor} {_noun(t.below_floor)} with fewer than "
                f"{MIN_TENANT_REQUESTS} requests not judged"
            )
    return tuple(out)


def _owner_json(o: TenantOwner) -> dict[str, Any]:
    return {
        "tenant": o.tenant,
        "latency": o.metric,
        "band": "p95",
        "requests": o.requests,
        "owner": o.owner,
        "share": o.share,
        "seconds": o.seconds,
        "class_owner": o.class_owner,
    }


def to_json(tails: Sequence[TenantTails]) -> list[dict[str, Any]]:
    """Per class: the differing tenants (most owner seconds first), every judged one, the floor."""
    return [
        {
            "class": t.request_class,
            "differing": [_owner_json(o) for o in t.differing],
            "judged": [_owner_json(o) for o in t.judged],
            "tenants": t.tenants,
            "not_judged": t.below_floor,
            "min_requests": MIN_TENANT_REQUESTS,
        }
        for t in tails
    ]
