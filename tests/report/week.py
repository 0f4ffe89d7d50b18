"""A constructed week (2026-W48, UTC) written through the store's own ops, with hand-counted numbers.

Classes:

* ``chat``: availability 99 % from probes every 2 h over 30 days, three timeouts in the week
  before (none this week), which leaves 16.7 % of the budget: at risk; TTFT ≤ 2.5 s at 95 % from the server, hourly intervals of 100
  requests of which 97 are fast (this week only).
* ``agent``: availability 99.5 % and correctness 99 % from probes every 30 min over 30 days;
  an incident Wed 10:00–12:00 during which the 4 probes timed out (with hostile detail text).
* ``empty``: served by an endpoint that never reported anything: every number is "no data".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.store import DeploymentFingerprint, Store
from monitor.store.migrate import upgrade
from monitor.store.ops import alertmanager_op, deployment_op, endpoints_op, probe_op, signals_op, write_slices
from monitor.store.tables import ProbeResultRow, ScrapeIntervalRow

HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) | **bold**"
API_KEY = "sk-test-SECRETSECRETSECRET42"

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-a, base_url: "http://127.0.0.1:9", backend: vllm, model: MiniMaxAI/MiniMax-M3,
     classes: [chat, agent], api_key_env: M3MON_REPORT_TEST_KEY}
  - {name: ep-b, base_url: "http://127.0.0.1:10", backend: vllm, model: MiniMaxAI/MiniMax-M3, classes: [empty]}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99, source: probes}
      - {name: ttft-p95, sli: ttft, threshold: 2.5s, objective: 95, source: server}
  - name: agent
    max_context_tokens: 32768
    probes: [agent_session]
    slos:
      - {name: availability, sli: availability, objective: 99.5, source: probes}
      - {name: correctness, sli: correctness, objective: 99, source: probes}
  - name: empty
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99, source: probes}
storage: {url: "sqlite:///unused.db"}
report:
  recipients: [sre@example.com, product@example.com]
  timezone: UTC
  smtp: {host: 127.0.0.1, port: 25, sender: m3mon@example.com}
"""

WEEK = "2026-W48"
START = datetime(2026, 11, 23, tzinfo=UTC).timestamp()
END = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DAY = 86400.0
INCIDENT = (
    datetime(2026, 11, 25, 10, tzinfo=UTC).timestamp(),
    datetime(2026, 11, 25, 12, tzinfo=UTC).timestamp(),
)
CHANGE_AT = datetime(2026, 11, 26, 12, tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Week:
    model: Model
    url: str


def _probe(cls: str, kind: str, at: float, reason: str | None = None, detail: str = "") -> ProbeResult:
    timings = Timings(ttft=0.4, itl_mean=0.02, itl_samples=(0.02,) * 8, e2e=3.0, server_queue=0.05, server_prefill=0.3, server_decode=2.5,
                      network=0.05, tool_turnaround=(0.2, 0.3) if kind == "agent_session" else ())  # fmt: skip
    if reason is not None:
        timings = Timings()
    started = at - (timings.e2e or 0.0)  # an answered probe started its e2e before its events at `at`
    return ProbeResult("ep-a", cls, kind, started, reason, timings, detail=detail, finished_at=at)


def _interval(end: float) -> Signals:
    edges = (0.5, 1.0, 2.5, 5.0, float("inf"))
    ttft = Histogram(edges, (60.0, 90.0, 97.0, 99.0, 100.0), 110.0, 100.0)
    waiting = 7.0 if end == START + 50 * 3600 else 1.0
    kv = 0.87 if end == START + 50 * 3600 else 0.5
    eng = EngineSignals(finished={"stop": 100.0}, histograms={"ttft": ttft}, preemptions=1.0 if end < START + 4 * 3600 else 0.0,
                        waiting=waiting, kv_cache_usage=kv)  # fmt: skip
    return Signals(
        "ep-a", "vllm", "vllm-v1-engine", "MiniMaxAI/MiniMax-M3", end, end - 3600, False, {"0": eng}, eng
    )


def _alert(status: str) -> dict[str, object]:
    alert = {
        "status": status,
        "fingerprint": "abc123",
        "startsAt": "2026-11-25T10:00:00Z",
        "endsAt": "2026-11-25T12:00:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "labels": {
            "alertname": "M3SLOBurn",
            "class": "agent",
            "slo": "availability",
            "severity": "page",
            "api_key": API_KEY,
        },
        "annotations": {"summary": f"agent availability burning {HOSTILE} Bearer {API_KEY}"},
    }
    return {"version": "4", "status": status, "alerts": [alert]}


def build(tmp: Path) -> Week:
    """Write the config and the store; returns the model and the database URL."""
    cfg = tmp / "monitor.yaml"
    cfg.write_text(CONFIG)
    model = load_model(cfg)
    url = f"sqlite:///{tmp / 'week.db'}"
    upgrade(url)
    results = []
    for k in range(360):  # chat: every 2 h over the 30 days ending at the week's end
        at = END - k * 7200
        failed = at in (START - DAY, START - 2 * DAY, START - 3 * DAY)  # the week before
        results.append(_probe("chat", "chat", at, "timeout" if failed else None))
    for k in range(1440):  # agent: every 30 min over the 30 days
        at = END - k * 1800
        failed = INCIDENT[0] < at <= INCIDENT[1]
        detail = f"read timed out {HOSTILE} Bearer {API_KEY}" if failed else ""
        results.append(_probe("agent", "agent_session", at, "timeout" if failed else None, detail))
    probes = [probe_op(model, r) for r in results]
    scrapes = [signals_op(model, "ep-a", _interval(START + h * 3600)) for h in range(1, 169)]
    ops = [endpoints_op(model.endpoints), alertmanager_op(_alert("firing"), INCIDENT[0])]
    ops.append(alertmanager_op(_alert("resolved"), INCIDENT[1]))
    ops.append(
        deployment_op(
            "ep-a", DeploymentFingerprint(vllm_version="0.10.1", max_model_len=32768), START - 9 * DAY
        )
    )
    ops.append(
        deployment_op("ep-a", DeploymentFingerprint(vllm_version="0.11.0", max_model_len=32768), CHANGE_AT)
    )
    store = Store(url)
    try:
        store.apply(ops)
        with store.session() as session:  # bulk: the same rows and slices the per-result ops write
            session.execute(insert(ProbeResultRow), [o["row"] for o in probes])
            session.execute(insert(ScrapeIntervalRow), [o["row"] for o in scrapes])
            write_slices(session, [s for o in probes + scrapes for s in o["slices"]])
    finally:
        store.close()
    return Week(model, url)
