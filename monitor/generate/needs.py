"""What each endpoint's consumers read from its page: the engine families named by the generated
rules of the SLOs it serves, by the operational rules, and by the dashboards (the drift guard's
needs, :mod:`monitor.scrape.drift`).

The needs are read from the generated expressions themselves (every ``vllm:…`` / ``sglang:…`` name
in them, a histogram's ``_bucket``/``_sum``/``_count`` read as its family), so they are exactly
what the files ask Prometheus for — nothing to keep in step by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from monitor.generate.dashboards import all_dashboards
from monitor.generate.maintenance_rules import maintenance_groups
from monitor.generate.operational_rules import operational_groups
from monitor.generate.rules import Group
from monitor.generate.slo_rules import alerts, recording_rules
from monitor.model import Endpoint, Model
from monitor.scrape.drift import Need

_FAMILY = re.compile(r"\b((?:vllm|sglang):[a-zA-Z0-9_:]+)")
_SUFFIXES = ("_bucket", "_sum", "_count")


def families_in(text: str) -> set[str]:
    """The engine families ``text`` (PromQL, dashboard JSON) reads."""
    out = set()
    for name in _FAMILY.findall(text):
        out.add(next((name[: -len(x)] for x in _SUFFIXES if name.endswith(x)), name))
    return out


def _group_text(groups: Iterable[Group]) -> Iterable[tuple[str, str]]:
    for g in groups:
        for r in g.records:
            yield f"rule {r['record']}", str(r["expr"])
        for a in g.alerts:
            yield f"alert {a.name}", a.expr


def _slo_users(model: Model, endpoint: Endpoint) -> Iterable[tuple[str, str]]:
    for slo in model.slos:
        if slo.source == "server" and slo.request_class in endpoint.classes:
            text = " ".join(t for _, t in _group_text([recording_rules(model, slo)]))
            text += " ".join(a.expr for a in alerts(model, slo))
            yield f"SLO {slo.id}", text


def _shared_users(model: Model) -> list[tuple[str, str]]:
    """Consumers every endpoint has: the operational rules and the dashboards."""
    out = list(_group_text(operational_groups(model) + maintenance_groups(model)))
    for d in all_dashboards(model).values():
        out.append((f"dashboard {d.get('title', d.get('uid', '?'))}", json.dumps(d)))
    return out


def _needs(endpoint: Endpoint, users_text: Iterable[tuple[str, str]]) -> tuple[Need, ...]:
    prefix = "sglang:" if endpoint.backend == "sglang" else "vllm:"
    users: dict[str, list[str]] = {}
    for user, text in users_text:
        for family in sorted(families_in(text)):
            if family.startswith(prefix) and user not in users.setdefault(family, []):
                users[family].append(user)
    return tuple(Need(f, tuple(u)) for f, u in sorted(users.items()))


def needs(model: Model, endpoint: Endpoint) -> tuple[Need, ...]:
    """Each family ``endpoint``'s consumers read, with who reads it (its SLOs' rules, then the
    operational rules and the dashboards), for the endpoint's backend's prefix only."""
    return _needs(endpoint, [*_slo_users(model, endpoint), *_shared_users(model)])


def all_needs(model: Model) -> dict[str, tuple[Need, ...]]:
    """:func:`needs` of every endpoint, the shared consumers generated once."""
    shared = _shared_users(model)
    return {e.name: _needs(e, [*_slo_users(model, e), *shared]) for e in model.endpoints}
