"""Fleet rules (group ``m3mon-fleet``): is every endpoint watched, does someone evaluate?

Generated only for a fleet configuration (``fleet.shards`` > 1 or ``fleet.monitors``). Every
replica exports ``m3mon_fleet_endpoint_owned{endpoint, shard} 1`` for the endpoints its shard
owns, and the pair's replicas export the same series but for ``instance``/``replica``:

* ``m3mon:fleet_endpoint_replicas`` counts the live replicas watching each endpoint, the pair
  collapsed to one series per endpoint (``count without (instance, replica)``): 2 is a healthy
  pair, 1 a pair that lost a replica (still watched).
* ``M3MonEndpointUnmonitored``: no live replica exports the endpoint at all (``absent()`` per
  configured endpoint): its whole shard is down. Static sharding does not move the endpoint to
  another shard, so its probes, scrapes and probe SLO events stop until a replica of the shard
  returns.
* ``M3MonNoEvaluator``: no replica holds the evaluator lock (or no replica is up).

Probe counters need no deduplication across a pair: a slot's probe runs on the one replica
that claimed it (:mod:`monitor.fleet.claims`), so ``sum`` over the pair counts it once.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.fleet.layout import FLEET_PROMETHEUS_PORT, fleet_layout
from monitor.generate import promql as q
from monitor.generate.prometheus_config import prometheus_config
from monitor.generate.rules import Alert, Group, dump_yaml, record, rule_file
from monitor.model import Model

#: Where the fleet's rules and the fleet Prometheus config are written (outside the core
#: Prometheus' ``rules/*.rules.yml`` glob: a single monitor exports no fleet metrics).
FLEET_RULES = "alerts/fleet/fleet.rules.yml"
FLEET_PROMETHEUS = "deploy/prometheus-fleet.yml"
UNMONITORED_FOR = "2m"
NO_EVALUATOR_FOR = "5m"


def is_fleet(model: Model) -> bool:
    return model.fleet.shards > 1 or bool(model.fleet.monitors)


def _unmonitored(model: Model) -> str:
    terms = [f"absent({cv.FLEET_ENDPOINT_OWNED}{q.monitor_selector(model.alerting, endpoint=e.name)})"
             for e in model.endpoints]  # fmt: skip
    return "\nor\n".join(terms)


def fleet_groups(model: Model, for_: tuple[str, str] = (UNMONITORED_FOR, NO_EVALUATOR_FOR)) -> list[Group]:
    """The ``m3mon-fleet`` group (empty list for a single replica). ``for_`` overrides the waits (tests)."""
    if not is_fleet(model):
        return []
    owned = cv.FLEET_ENDPOINT_OWNED + q.monitor_selector(model.alerting)
    evaluator = cv.FLEET_EVALUATOR + q.monitor_selector(model.alerting)
    replicas = record(
        "m3mon:fleet_endpoint_replicas", f"count without (instance, {cv.L_REPLICA}) ({owned})", {}
    )
    alerts = (
        Alert(
            cv.ALERT_ENDPOINT_UNMONITORED,
            _unmonitored(model),
            "page",
            "{{ $labels.endpoint }} is watched by no m3mon replica",
            "No live m3mon replica exports {{ $labels.endpoint }}: its shard is down. Static sharding "
            "does not move it; its probes and scrapes stopped and its probe SLOs see no events.",
            for_=for_[0],
        ),
        Alert(
            cv.ALERT_NO_EVALUATOR,
            f"max({evaluator}) < 1\nor\nabsent({evaluator})",
            "ticket",
            "No m3mon replica evaluates SLOs",
            "No replica holds the fleet's evaluator lock: stored evaluations, `m3mon slo status` and "
            "the report are stale. The Prometheus burn-rate alerts do not depend on it.",
            for_=for_[1],
        ),
    )
    return [Group("m3mon-fleet", records=(replicas,), alerts=alerts)]


def fleet_files(model: Model, banner: str) -> dict[str, str]:
    """The fleet rule file and the fleet Prometheus config, for the configured or the default layout."""
    fleet = fleet_layout(model)
    rules = ["/etc/prometheus/rules/*.rules.yml", "/etc/prometheus/rules/fleet/*.rules.yml"]
    config = prometheus_config(fleet, rules, monitors=fleet.fleet.monitors)
    config["global"]["external_labels"] = {"prometheus": f"fleet-{FLEET_PROMETHEUS_PORT}"}
    return {
        FLEET_RULES: rule_file(fleet_groups(fleet), model.alerting, banner),
        FLEET_PROMETHEUS: dump_yaml(config, banner),
    }
