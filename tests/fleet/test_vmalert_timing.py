"""Live vmalert fires every SLO alert within one evaluation of Prometheus, with its own records, and
maintenance holds in both.

A page (the monitor's probe counters) is scraped by a real Prometheus every second. Prometheus
evaluates the generated SLO groups itself and remote-writes only the raw series to a real
VictoriaMetrics (its own records and ``ALERTS`` are dropped on the way), where a real vmalert
evaluates the same groups and writes its own records back: so each engine reads only what it
wrote, as in production. Both run the groups every :data:`INTERVAL` (the generated 1-minute
interval, shortened so the test takes a minute; the rules are otherwise unchanged).

Class ``c`` (99.9 % availability on endpoint ``e``): 20 probes a second, all good, then from the
onset all failing, with 2,000 failures at once at the onset (any step whose reading holds the
onset is far above the threshold, whatever the engine's phase). Class ``m`` (the same SLO on endpoint ``e2``) fails the same way inside a
maintenance occurrence the page publishes. The onset is placed in the middle of the larger gap
between the two engines' evaluation instants (read from their own record timestamps), so the
first evaluation of each engine after the onset sees it, whatever the phases and the ingestion
delay. Timed: the burn page, the burn ticket and ``SLOErrorBudgetExhausted`` (the burst is far
above every row's threshold and the whole budget, so each fires at the first bad step a rule
reads). Measured per engine from what it wrote, each sample stamped with its evaluation's time:
the first step record holding bad events and the first ``ALERTS`` sample of each alert (vmalert
writes ``ALERTS`` to VictoriaMetrics too), and the evaluations of that engine from the onset to
it. Prometheus sees a record written earlier in the same run: 0 evaluations between the step
record and every alert. vmalert does not (docs/fleet.md): every alert reads the step records, so
at most 1 — it was 2 for ``SLOErrorBudgetExhausted`` when it read the budget record, which read
the period's ratio record, which read the step records, and 3 for the page before that — and its
first fire is at most one of its evaluations after Prometheus' (in Prometheus' own evaluations
from the onset). And nothing is pending or firing for the class in maintenance at any time of the
run, in either engine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from monitor import conventions as cv
from monitor.generate.rules import rule_file
from monitor.generate.slo_rules import slo_groups
from monitor.model import Model, load_model
from tests.support import localhttp
from tests.support.exposition import serving
from tests.support.processes import running_process
from tests.support.prometheus import free_port, running_prometheus, wait_for
from tests.support.real import require_binary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

INTERVAL = 10  # seconds, both engines: every tolerance below is a number of these
PER_SECOND = 20
#: Failed probes that appear at the onset at once: any step whose reading holds the onset burns far
#: above the page threshold, so the first bad step is the one the alert must follow.
BURST = 2000
WARMUP = 4 * INTERVAL  # healthy evaluations before the onset: every step has a reading before it
#: The onset is at least this far from either engine's evaluation instants (half the larger gap between
#: them is at least a quarter interval): a scrape (1 s), remote write (0.5 s) and VictoriaMetrics'
#: latency offset (1 s) land before the next evaluation.
CLEARANCE = INTERVAL / 4
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
    alerts = localhttp.get(f"{url}/api/v1/alerts", timeout=5).json()["data"]["alerts"] or []  # vmalert: null
    return {
        a["labels"]["alertname"]: dt.datetime.fromisoformat(a["activeAt"].replace("Z", "+00:00")).timestamp()
        for a in alerts
        if a["state"] == "firing"
        and a["labels"].get(cv.L_CLASS) == klass
        and a["labels"]["alertname"] in SLO_ALERTS
    }


#: The step record of class c, and an alert as the engine records it (``ALERTS``). Prometheus stamps
#: both with the evaluation's time; vmalert stamps records with the time its queries are aligned to
#: (a multiple of the interval) and ``ALERTS`` with the evaluation's own time, up to one interval
#: later: whole evaluations between them are the floor of the difference.
BAD_STEP = f'{cv.slo_step_events_record("bad")}{{class="c"}}'
EVALUATED = f'{cv.SLO_META_OBJECTIVE_RECORD}{{class="c"}}'  # one sample per evaluation of the group


def _alerts(alert: str, klass: str = "c") -> str:
    return f'ALERTS{{alertname="{alert}",alertstate="firing",class="{klass}"}}'


def _samples(url: str, selector: str, window: str = "5m") -> list[tuple[float, float]]:
    body = localhttp.get(f"{url}/api/v1/query", params={"query": f"{selector}[{window}]"}, timeout=5).json()
    return [(float(t), float(v)) for series in body["data"]["result"] for t, v in series["values"]]


def _first(url: str, selector: str, since: float) -> float:
    """Timestamp of the first raw sample of ``selector`` above 0 at or after ``since``."""
    return min(t for t, v in _samples(url, selector) if v > 0 and t >= since)


def _phase(url: str) -> float:
    """Where in the interval the engine's evaluations fall, from its own records (seconds)."""
    stamps = [t % INTERVAL for t, _ in _samples(url, EVALUATED, "1m")]
    assert stamps, url
    return stamps[-1]


def _onset_after(now: float, phases: list[float]) -> float:
    """An instant after ``now`` in the middle of the larger gap between the engines' evaluations."""
    marks = sorted(p % INTERVAL for p in phases)
    gaps = [((b - a) % INTERVAL or INTERVAL, a) for a, b in zip(marks, [*marks[1:], marks[0]], strict=True)]
    size, start = max(gaps)
    assert size / 2 >= CLEARANCE
    base = math.floor(now / INTERVAL) * INTERVAL + start + size / 2
    while base <= now + 1:
        base += INTERVAL
    return base


def _evaluations(at: float, onset: float) -> int:
    """The engine's evaluations from the onset to the one stamped ``at`` (1: the first after it)."""
    return math.ceil((at - onset) / INTERVAL)


def test_vmalert_fires_every_slo_alert_within_one_evaluation_of_prometheus(tmp_path: Path) -> None:
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
        onset = _onset_after(time.time(), [_phase(prom), _phase(vm_url)])
        time.sleep(max(0.0, onset - time.time()))
        with page.lock:
            page.onset = onset
        fired: dict[str, dict[str, float]] = {"prometheus": {}, "vmalert": {}}
        for engine, url, within in (
            ("prometheus", prom, 3 * INTERVAL),
            ("vmalert", vmalert_url, 5 * INTERVAL),
        ):
            for alert in SLO_ALERTS:
                fired[engine][alert] = wait_for(
                    lambda u=url, a=alert: _active(u, "c").get(a), within, f"{engine}'s {alert}"
                )
        time.sleep(2 * INTERVAL)  # the class in maintenance has failed for several evaluations by now
        held = {"prometheus": _active(prom, "m"), "vmalert": _active(vmalert_url, "m")}
        ever = {  # any ALERTS sample of the class in maintenance (pending or firing) during the run
            engine: sorted({a for a in SLO_ALERTS for _ in _samples(url, _alerts(a, "m").replace(
                'alertstate="firing",', ""), "10m")})
            for engine, url in (("prometheus", prom), ("vmalert", vm_url))
        }  # fmt: skip
        bad = {"prometheus": _first(prom, BAD_STEP, onset), "vmalert": _first(vm_url, BAD_STEP, onset)}
        stamped = {
            engine: {a: _first(url, _alerts(a), onset) for a in SLO_ALERTS}
            for engine, url in (("prometheus", prom), ("vmalert", vm_url))
        }
    hops = {
        e: {a: math.floor((t - bad[e]) / INTERVAL + 1e-6) for a, t in stamped[e].items()} for e in stamped
    }
    # evaluations of the engine from the onset to the one that fired (vmalert's ALERTS stamps are not
    # on its query grid: counted from its first bad step, which is)
    evals = {e: {a: _evaluations(bad[e], onset) + hops[e][a] for a in SLO_ALERTS} for e in stamped}
    for alert in SLO_ALERTS:
        print(f"{alert}: Prometheus +{stamped['prometheus'][alert] - onset:.1f}s "
              f"(evaluation {evals['prometheus'][alert]}, {hops['prometheus'][alert]} after its first bad step "
              f"+{bad['prometheus'] - onset:.1f}s), vmalert +{stamped['vmalert'][alert] - onset:.1f}s "
              f"(evaluation {evals['vmalert'][alert]}, {hops['vmalert'][alert]} after its first bad step "
              f"+{bad['vmalert'] - onset:.1f}s); activeAt difference {fired['vmalert'][alert] - fired['prometheus'][alert]:.1f}s")  # fmt: skip
    assert all(v == 0 for v in hops["prometheus"].values()), hops
    assert all(v <= 1 for v in hops["vmalert"].values()), (
        f"vmalert: evaluations after its first bad step {hops}"
    )
    # each engine's first evaluation after the onset sees it (the onset sits CLEARANCE from both grids)
    assert {_evaluations(b, onset) for b in bad.values()} == {1}, (bad, onset)
    late = {a: evals["vmalert"][a] - evals["prometheus"][a] for a in SLO_ALERTS}
    assert all(d <= 1 for d in late.values()), f"vmalert's first fire, evaluations after Prometheus': {late}"
    assert held == {"prometheus": {}, "vmalert": {}}, held
    assert ever == {"prometheus": [], "vmalert": []}, f"alerts of the class in maintenance: {ever}"
