"""Live vmalert pages within one evaluation of Prometheus, with its own records, and maintenance holds.

A page (the monitor's probe counters) is scraped by a real Prometheus every second. Prometheus
evaluates the generated SLO groups itself and remote-writes only the raw series to a real
VictoriaMetrics (its own records and ``ALERTS`` are dropped on the way), where a real vmalert
evaluates the same groups and writes its own records back: so each engine reads only what it
wrote, as in production. Both run the groups every :data:`INTERVAL` (the generated 1-minute
interval, shortened so the test takes a minute; the rules are otherwise unchanged).

Class ``c`` (99.9 % availability on endpoint ``e``): 20 probes a second, all good, then from the
onset all failing, with 2,000 failures at once at the onset (any step whose reading holds the
onset is far above the threshold, whatever the engine's phase). Class ``m`` (the same SLO on endpoint ``e2``) fails the same way inside a
maintenance occurrence the page publishes. Measured per engine from what it wrote, each sample stamped with its
evaluation's time: the first step record holding bad events and the first ``ALERTS`` sample of
the burn page (vmalert writes ``ALERTS`` to VictoriaMetrics too). Prometheus sees a record written earlier in the same run: 0 evaluations between
them. vmalert does not (docs/fleet.md): the alert reads the step records, so at most 1 (it was 3
when the alert read ratio records, which read window records, which read the step records). And
nothing pages or tickets for the class in maintenance, in either engine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor import conventions as cv
from monitor.generate.rules import rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import Model, load_model
from tests.support.exposition import serving
from tests.support.processes import running_process
from tests.support.prometheus import free_port, running_prometheus, wait_for
from tests.support.real import require_binary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

INTERVAL = 10  # seconds, both engines
PER_SECOND = 20
#: Failed probes that appear at the onset at once: any step whose reading holds the onset burns far
#: above the page threshold, so the first bad step is the one the alert must follow.
BURST = 2000
WARMUP = 4 * INTERVAL  # healthy evaluations before the onset: every step has a reading before it
SLO_ALERTS = (cv.ALERT_BURN_PAGE, cv.ALERT_BURN_TICKET, cv.ALERT_BUDGET_EXHAUSTED)


def _model(tmp: Path) -> Model:
    slo = "slos: [{name: availability, sli: availability, objective: 99.9}]"
    (tmp / "m.yaml").write_text(f"""version: m3mon/v1
endpoints:
  - {{name: e, base_url: "http://127.0.0.1:9", model: m, classes: [c]}}
  - {{name: e2, base_url: "http://127.0.0.1:9", model: m, classes: [m]}}
request_classes:
  - {{name: c, max_context_tokens: 32768, probes: [chat], {slo}}}
  - {{name: m, max_context_tokens: 32768, probes: [chat], {slo}}}
""")
    return load_model(tmp / "m.yaml")


@dataclasses.dataclass
class Page:
    """Probe counters growing at PER_SECOND from ``start``; failing from ``onset`` once set."""

    start: float = dataclasses.field(default_factory=time.time)
    onset: float | None = None
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def render(self) -> bytes:
        now = time.time()
        with self.lock:
            split = now if self.onset is None else min(now, self.onset)
        good, bad = PER_SECOND * (split - self.start), PER_SECOND * (now - split)
        bad += BURST if self.onset is not None and now >= self.onset else 0
        lines = []
        for endpoint, klass in (("e", "c"), ("e2", "m")):
            base = f'endpoint="{endpoint}",class="{klass}",kind="chat"'
            lines.append(f'{cv.PROBE_TOTAL}{{{base},result="success",reason="none"}} {int(good)}')
            lines.append(f'{cv.PROBE_TOTAL}{{{base},result="failure",reason="timeout"}} {int(bad)}')
        window = 'maintenance="w",class="m",endpoint="e2",whole_class="true",whole_endpoint="true"'
        lines.append(f"{cv.MAINTENANCE_START}{{{window}}} {self.start - 60:.0f}")
        lines.append(f"{cv.MAINTENANCE_END}{{{window}}} {self.start + 3600:.0f}")
        return ("\n".join(lines) + "\n").encode()


def _rules(model: Model) -> str:
    groups = [dataclasses.replace(g, interval=f"{INTERVAL}s") for g in slo_groups(model)]
    return rule_file(groups, model.alerting, "test")


def _prometheus(model: Model, target: str, rules: Path, vm_url: str) -> dict[str, Any]:
    job = {
        "job_name": model.alerting.job_monitor,
        "scrape_interval": "1s",
        "static_configs": [{"targets": [target]}],
    }
    own = {"source_labels": ["__name__"], "regex": "m3mon:.*|ALERTS.*", "action": "drop"}
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": f"{INTERVAL}s"},
        "rule_files": [str(rules)],
        "scrape_configs": [job],
        "remote_write": [{"url": f"{vm_url}/api/v1/write", "write_relabel_configs": [own],
                          "queue_config": {"batch_send_deadline": "500ms"}}],
    }  # fmt: skip


def _active(url: str, klass: str) -> dict[str, float]:
    """{alert name: activeAt (Unix seconds)} of the SLO alerts of ``klass`` that are firing."""
    alerts = httpx.get(f"{url}/api/v1/alerts", timeout=5).json()["data"]["alerts"] or []  # vmalert: null
    return {
        a["labels"]["alertname"]: dt.datetime.fromisoformat(a["activeAt"].replace("Z", "+00:00")).timestamp()
        for a in alerts
        if a["state"] == "firing"
        and a["labels"].get(cv.L_CLASS) == klass
        and a["labels"]["alertname"] in SLO_ALERTS
    }


#: The step record of class c, and its burn page as the engine records it (``ALERTS``). Prometheus
#: stamps both with the evaluation's time; vmalert stamps records with the time its queries are
#: aligned to (a multiple of the interval) and ``ALERTS`` with the evaluation's own time, up to one
#: interval later: whole evaluations between them are the floor of the difference.
BAD_STEP = f'{cv.slo_step_events_record("bad")}{{class="c"}}'
PAGED = f'ALERTS{{alertname="{cv.ALERT_BURN_PAGE}",alertstate="firing",class="c"}}'


def _first(url: str, selector: str, since: float) -> float:
    """Timestamp of the first raw sample of ``selector`` above 0 at or after ``since``."""
    body = httpx.get(f"{url}/api/v1/query", params={"query": f"{selector}[5m]"}, timeout=5).json()
    (series,) = body["data"]["result"]
    return min(float(t) for t, v in series["values"] if float(v) > 0 and float(t) >= since)


def test_vmalert_pages_within_one_evaluation_of_prometheus(tmp_path: Path) -> None:
    vm, vmalert = (
        require_binary("victoria-metrics", "/usr/bin/victoria-metrics"),
        require_binary("vmalert", "/usr/bin/vmalert"),
    )
    model, page = _model(tmp_path), Page()
    rules = tmp_path / "rules.yml"
    rules.write_text(_rules(model))
    vm_port, alert_port = free_port(), free_port()
    vm_url, vmalert_url = f"http://127.0.0.1:{vm_port}", f"http://127.0.0.1:{alert_port}"
    with (
        serving(page.render) as target,
        running_process([vm, f"-storageDataPath={tmp_path / 'vm'}", f"-httpListenAddr=127.0.0.1:{vm_port}",
                         "-search.latencyOffset=1s", "-search.disableCache", "-retentionPeriod=1d"],
                        tmp_path / "vm.log", f"{vm_url}/health"),
        running_prometheus(_prometheus(model, target, rules, vm_url), tmp_path) as prom,
        running_process([vmalert, f"-rule={rules}", f"-datasource.url={vm_url}", f"-remoteWrite.url={vm_url}",
                         f"-notifier.url=http://{target}", f"-httpListenAddr=127.0.0.1:{alert_port}"],
                        tmp_path / "vmalert.log", f"{vmalert_url}/health"),
    ):  # fmt: skip
        time.sleep(WARMUP)
        assert not _active(prom, "c") and not _active(vmalert_url, "c"), (
            "an SLO alert fired on healthy traffic"
        )
        with page.lock:
            page.onset = time.time()
        onset = page.onset
        prom_at = wait_for(
            lambda: _active(prom, "c").get(cv.ALERT_BURN_PAGE), 6 * INTERVAL, "Prometheus' page"
        )
        vm_at = wait_for(
            lambda: _active(vmalert_url, "c").get(cv.ALERT_BURN_PAGE), 8 * INTERVAL, "vmalert's page"
        )
        time.sleep(2 * INTERVAL)  # the class in maintenance has failed for several evaluations by now
        held = {"prometheus": _active(prom, "m"), "vmalert": _active(vmalert_url, "m")}
        prom_bad, vm_bad = _first(prom, BAD_STEP, onset), _first(vm_url, BAD_STEP, onset)
        prom_paged, vm_paged = _first(prom, PAGED, onset), _first(vm_url, PAGED, onset)
    prom_hops, vm_hops = (
        math.floor((p - b) / INTERVAL + 1e-6) for p, b in ((prom_paged, prom_bad), (vm_paged, vm_bad))
    )
    print(f"onset +{prom_bad - onset:.1f}s first bad step / +{prom_paged - onset:.1f}s page (Prometheus, "
          f"{prom_hops} evaluations), +{vm_bad - onset:.1f}s / +{vm_paged - onset:.1f}s (vmalert, {vm_hops})")  # fmt: skip
    assert prom_hops == 0, (prom_bad, prom_paged)
    assert vm_hops <= 1, f"vmalert paged {vm_hops} evaluations after its first bad step record"
    # the engines evaluate at their own phases (up to one interval apart) and vmalert reads VictoriaMetrics
    # through remote write: one hop, one phase and a few seconds of ingestion at most
    assert abs(vm_at - prom_at) <= 3 * INTERVAL, (vm_at - onset, prom_at - onset)
    assert held == {"prometheus": {}, "vmalert": {}}, held
