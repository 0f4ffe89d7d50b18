"""The remote-write layout: a Prometheus remote-writes to one VictoriaMetrics, vmalert evaluates the
generated rules there, and they fire as they do in that Prometheus (Debian's victoria-metrics package).

Input: a page a live replica of a 2-shard fleet whose shard 1 is down would export
(``m3mon_fleet_endpoint_owned`` for shard 0's endpoints only, no evaluator), whose probes of one
endpoint fail half the time (5 successes and 5 timeouts a second) while its ``/health`` is up.
Rules: the fleet group, the SLO group of the class's availability SLO (99 %) and the operational
``VLLMHealthyButProbesFailing`` (its ``for`` dropped; every group evaluated each second). Expected, by hand from the rules'
definitions: ``M3MonEndpointUnmonitored`` for exactly shard 1's endpoints, ``M3MonNoEvaluator``,
``SLOErrorBudgetBurnPage`` (error ratio 0.5 > 14.4 x 0.01 on every window) and
``VLLMHealthyButProbesFailing`` for the failing endpoint (0.5 > 0.25, failures >= 3); in Prometheus
and in vmalert, and then the same whole firing set in both. Every generated rule file also loads
in vmalert (``-dryRun``).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from monitor import conventions as cv
from monitor.generate.fleet_rules import fleet_groups
from monitor.generate.operational_rules import operational_groups
from monitor.generate.rules import Group, rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import load_model
from tests.fleet.stack import prometheus_shard
from tests.support import localhttp
from tests.support.exposition import serving
from tests.support.processes import running_process
from tests.support.prometheus import free_port, running_prometheus, wait_for
from tests.support.real import require_binary

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]
ENDPOINTS = [f"pool-{i}" for i in range(6)]
LIVE = {e for e in ENDPOINTS if prometheus_shard(e, 2) == 0}
FAILING = sorted(LIVE)[0]
START = time.time()
BURN, PROBES = cv.ALERT_BURN_PAGE, cv.ALERT_PROBES_FAILING


def _page() -> bytes:
    lines = [f'{cv.FLEET_ENDPOINT_OWNED}{{endpoint="{e}",shard="0"}} 1' for e in sorted(LIVE)]
    runs = int((time.time() - START) * 5)  # 5 successes and 5 timeouts a second
    probe = f'{cv.PROBE_TOTAL}{{endpoint="{FAILING}",class="c",kind="chat",'
    lines += [
        f'{probe}result="{cv.RESULT_SUCCESS}",reason="{cv.REASON_NONE}"}} {runs}',
        f'{probe}result="{cv.RESULT_FAILURE}",reason="timeout"}} {runs}',
        f'{cv.HEALTH_UP}{{endpoint="{FAILING}"}} 1',
    ]
    return ("\n".join([*lines, f"{cv.FLEET_EVALUATOR} 0", ""])).encode()


def _rules(model: Any) -> str:
    """The fleet group, the class's SLO group (every second), and VLLMHealthyButProbesFailing without
    its ``for``."""
    (group,) = [g for g in operational_groups(model) if any(a.name == PROBES for a in g.alerts)]
    (probes,) = [a for a in group.alerts if a.name == PROBES]
    slo = [dataclasses.replace(g, interval="1s") for g in slo_groups(model, "c")]  # not once a minute
    groups = [*fleet_groups(model, ("0s", "0s")), *slo]
    groups.append(Group("probes", records=group.records, alerts=(dataclasses.replace(probes, for_=None),)))
    return rule_file(groups, model.alerting, "test")


def _model(tmp: Path) -> Any:
    eps = "".join(f"  - {{name: {e}, base_url: 'http://127.0.0.1:{9000 + i}', model: m, classes: [c]}}\n"
                  for i, e in enumerate(ENDPOINTS))  # fmt: skip
    (tmp / "m.yaml").write_text(f"""version: m3mon/v1
endpoints:
{eps}request_classes:
  - {{name: c, max_context_tokens: 32768, probes: [chat], slos: [{{name: availability, sli: availability, objective: 99}}]}}
fleet: {{shards: 2}}
""")
    return load_model(tmp / "m.yaml")


def test_every_generated_rule_file_loads_in_vmalert() -> None:
    vmalert = require_binary("vmalert", "/usr/bin/vmalert")
    files = sorted(str(p) for p in (ROOT / "alerts").rglob("*.rules.yml"))
    assert any("fleet" in f for f in files)
    done = subprocess.run(
        [vmalert, "-dryRun", *(f"-rule={f}" for f in files)], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_rules_fire_alike_in_prometheus_and_vmalert(tmp_path: Path) -> None:
    vm = require_binary("victoria-metrics", "/usr/bin/victoria-metrics")
    vmalert = require_binary("vmalert", "/usr/bin/vmalert")
    model = _model(tmp_path)
    rules = tmp_path / "rules.yml"
    rules.write_text(_rules(model))
    vm_port, alert_port = free_port(), free_port()
    vm_url, alerts = f"http://127.0.0.1:{vm_port}", f"http://127.0.0.1:{alert_port}/api/v1/alerts"
    with (
        serving(_page) as target,
        running_process([vm, f"-storageDataPath={tmp_path / 'vm'}", f"-httpListenAddr=127.0.0.1:{vm_port}",
                  "-search.latencyOffset=1s", "-search.disableCache", "-retentionPeriod=1d"], tmp_path / "vm.log", f"{vm_url}/health"),
        running_prometheus(_config(model, target, rules, vm_url), tmp_path) as prom,
        running_process([vmalert, f"-rule={rules}", f"-datasource.url={vm_url}", f"-remoteWrite.url={vm_url}", f"-notifier.url=http://{target}",
                  "-evaluationInterval=1s", f"-httpListenAddr=127.0.0.1:{alert_port}"],
                 tmp_path / "vmalert.log", f"http://127.0.0.1:{alert_port}/health"),
    ):  # fmt: skip
        expected = {(cv.ALERT_ENDPOINT_UNMONITORED, e) for e in ENDPOINTS if e not in LIVE}
        expected |= {(cv.ALERT_NO_EVALUATOR, ""), (BURN, ""), (PROBES, FAILING)}
        names = {n for n, _ in expected}

        def firing(url: str) -> set[tuple[str, str]]:
            return {a for a in _firing(url) if a[0] in names}

        wait_for(lambda: firing(f"{prom}/api/v1/alerts") == expected, 30, "Prometheus alerts")
        wait_for(lambda: firing(alerts) == expected, 45, "vmalert alerts")
        # and nothing else fires in one but not the other (e.g. the ticket burn alert, once enough events)
        wait_for(lambda: _firing(f"{prom}/api/v1/alerts") == _firing(alerts), 30, "the same firing set")


def _config(model: Any, target: str, rules: Path, vm_url: str) -> dict[str, Any]:
    job = {"job_name": model.alerting.job_monitor, "scrape_interval": "1s", "honor_labels": True,
           "static_configs": [{"targets": [target], "labels": {cv.L_SHARD: "0", cv.L_REPLICA: "a"}}]}  # fmt: skip
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [job],
        "remote_write": [{"url": f"{vm_url}/api/v1/write", "queue_config": {"batch_send_deadline": "500ms"}}],
    }


def _firing(url: str) -> set[tuple[str, str]]:
    alerts = localhttp.get(url, timeout=5).json()["data"]["alerts"]
    return {
        (a["labels"]["alertname"], a["labels"].get("endpoint", "")) for a in alerts if a["state"] == "firing"
    }
