"""The report's sections count one population: the week's probe runs outside maintenance.

One class, probed every 10 minutes through the week (and the one before), availability and
correctness SLOs. A 2-hour maintenance occurrence (Wed 10:00-12:00 UTC) covers the class: every
run that completes inside it fails with HTTP 503, as a pool under maintenance does. Outside it,
by hand: 3 timeouts and 2 wrong answers. The SLO lines come from the store's event slices, which
leave the maintenance runs out; the probe failures, latency and goodput sections read the probe
rows. Identities checked (issue 24, finding 3), each against the hand counts:

* failures by category: exactly the 3 timeouts and 2 wrong answers; no 503 is listed;
* the unanswered failures sum to availability's bad events, the wrong answers to correctness's;
* goodput's probe runs = availability's valid events; latency counts = answered runs.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from monitor.model import load_model
from monitor.probes.result import ProbeResult, Timings
from monitor.report.collect import collect
from monitor.report.periods import iso_week
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op

START = datetime(2026, 11, 23, tzinfo=UTC).timestamp()
END = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
MAINTENANCE = (
    datetime(2026, 11, 25, 10, tzinfo=UTC).timestamp(),
    datetime(2026, 11, 25, 12, tzinfo=UTC).timestamp(),
)
STEP = 600.0
TIMEOUTS = (START + 3 * 3600, START + 30 * 3600, START + 100 * 3600)
WRONG = (START + 50 * 3600, START + 140 * 3600)

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep, base_url: "http://127.0.0.1:9", model: MiniMaxAI/MiniMax-M3, classes: [c]}
request_classes:
  - name: c
    max_context_tokens: 32768
    probes: [chat]
    probe: {interval: 10m, timeout: 60s}
    slos:
      - {name: availability, sli: availability, objective: 99, source: probes}
      - {name: correctness, sli: correctness, objective: 99, source: probes}
maintenance:
  - {name: upgrade, start: "2026-11-25T10:00:00Z", duration: 2h, classes: [c], reason: kernel}
storage: {url: "sqlite:///unused.db"}
"""


def _run(at: float) -> ProbeResult:
    """The run whose outcome is known at ``at`` (its SLI events' instant)."""
    if MAINTENANCE[0] < at <= MAINTENANCE[1]:
        reason: str | None = "http_status"
    elif at in TIMEOUTS:
        reason = "timeout"
    else:
        reason = "wrong_answer" if at in WRONG else None
    answered = reason in (None, "wrong_answer")
    timings = Timings(ttft=0.4, e2e=2.0, itl_mean=0.02, itl_samples=(0.02,) * 4) if answered else Timings()
    return ProbeResult("ep", "c", "chat", at - 2.0, reason, timings, detail=reason or "", finished_at=at)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> object:
    tmp = tmp_path_factory.mktemp("populations")
    (tmp / "monitor.yaml").write_text(CONFIG)
    model = load_model(tmp / "monitor.yaml")
    url = f"sqlite:///{tmp / 'r.db'}"
    upgrade(url)
    runs = [_run(START - 7 * 86400 + k * STEP) for k in range(1, 2 * 7 * 144 + 1)]
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *(probe_op(model, r) for r in runs)])
        with store.session() as session:
            return collect(model, session, iso_week("2026-W48", UTC), datetime(2026, 11, 30, 9, tzinfo=UTC))
    finally:
        store.close()


def test_maintenance_runs_are_in_no_section(report: object) -> None:
    in_week = [START + k * STEP for k in range(1, 7 * 144 + 1)]
    outside = [t for t in in_week if not MAINTENANCE[0] < t <= MAINTENANCE[1]]
    assert len(in_week) - len(outside) == 12  # the 503s of the maintenance
    failures = {(f.category, f.count) for f in report.probe_failures}  # type: ignore[attr-defined]
    assert failures == {("timeout", 3), ("wrong_answer", 2)}
    (line,) = [c for c in report.classes if c.name == "c"]  # type: ignore[attr-defined]
    by_slo = {s.slo: s for s in line.slos}
    avail, correct = by_slo["availability"], by_slo["correctness"]
    assert (avail.total, avail.total - avail.good) == (len(outside), 3)
    assert (correct.total, correct.total - correct.good) == (len(outside) - 3, 2)
    (goodput,) = [g for g in report.goodput.lines if g.request_class == "c"]  # type: ignore[attr-defined]
    assert goodput.probe_runs == avail.total
    ttft = next(s for s in report.latency if s.request_class == "c" and s.kind == "ttft")  # type: ignore[attr-defined]
    assert ttft.count == correct.total
