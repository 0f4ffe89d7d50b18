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
* ``M3MonReplicaDown`` (ticket): one replica of a shard cannot be scraped while another is up;
  its partner probes every slot. ``M3MonMonitorDown`` pages only for a whole shard: the fleet
  Prometheus loads the pair-aware operational rules (:mod:`monitor.generate.fleet_operational`,
  ``alerts/fleet/operational.rules.yml``) instead of ``alerts/operational.rules.yml``.

Probe counters need no deduplication across a pair: a slot's probe runs on the one replica
that claimed it (:mod:`monitor.fleet.claims`), so ``sum`` over the pair counts it once.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.fleet.layout import FLEET_PROMETHEUS_PORT, fleet_layout
from monitor.generate import promql as q
from monitor.generate.fleet_operational import fleet_operational_groups, replica_down_expr
from monitor.generate.prometheus_config import prometheus_config
from monitor.generate.rules import Alert, Group, dump_yaml, record, rule_file
from monitor.model import Model

#: Where the fleet's rules and the fleet Prometheus config are written (outside the core
#: Prometheus' ``rules/*.rules.yml`` glob: a single monitor exports no fleet metrics).
FLEET_RULES = "alerts/fleet/fleet.rules.yml"
FLEET_OPERATIONAL = "alerts/fleet/operational.rules.yml"
FLEET_PROMETHEUS = "deploy/prometheus-fleet.yml"
#: The fleet Prometheus' rule files: the SLO rules, and the fleet directory (fleet rules and the
#: pair-aware operational rules) in place of the per-replica alerts/operational.rules.yml.
FLEET_RULE_FILES = ("/etc/prometheus/rules/slo-*.rules.yml", "/etc/prometheus/rules/fleet/*.rules.yml")
UNMONITORED_FOR = "2m"
NO_EVALUATOR_FOR = "5m"
REPLICA_DOWN_FOR = "5m"  # the single-replica M3MonMonitorDown's wait


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
        Alert(
            cv.ALERT_REPLICA_DOWN,
            replica_down_expr(model),
            "ticket",
            "m3mon replica {{ $labels.replica }} of shard {{ $labels.shard }} is down",
            "Prometheus cannot scrape {{ $labels.instance }}; the other replica of shard "
            "{{ $labels.shard }} is up and probes and scrapes every slot alone. One more loss pages.",
            for_=REPLICA_DOWN_FOR,
        ),
    )
    return [Group("m3mon-fleet", records=(replicas,), alerts=alerts)]


def fleet_files(model: Model, banner: str) -> dict[str, str]:
    """The fleet rule files and the fleet Prometheus config, for the configured or the default layout."""
    fleet = fleet_layout(model)
    config = prometheus_config(fleet, list(FLEET_RULE_FILES), monitors=fleet.fleet.monitors)
    config["global"]["external_labels"] = {"prometheus": f"fleet-{FLEET_PROMETHEUS_PORT}"}
    return {
        FLEET_RULES: rule_file(fleet_groups(fleet), model.alerting, banner),
        FLEET_OPERATIONAL: rule_file(fleet_operational_groups(fleet), model.alerting, banner),
        FLEET_PROMETHEUS: dump_yaml(config, banner),
    }
