"""Goodput of a fixed set of probe runs equals the share counted by hand from docs/slo-events.md.

The class has TTFT objectives at 1 s (P95) and 2.5 s (P99) — a run must meet the tighter, 1 s —
e2e at 10 s and stall at 2 s. Nine runs, counted by hand:

| # | run | good? |
|---|---|---|
| 1 | answered right, TTFT 0.5 s, e2e 3 s, gaps ≤ 0.1 s | good |
| 2 | answered right, TTFT 1.2 s (under 2.5 s but over 1 s) | bad |
| 3 | answered right, TTFT 1 s, e2e 10 s, longest gap 2 s (each exactly at its limit) | good |
| 4 | answered right, e2e 11 s | bad |
| 5 | answered right, one 2.5 s gap | bad |
| 6 | wrong answer, fast | bad |
| 7 | timeout | bad |
| 8 | monitor_error (the prober crashed) | no event |
| 9 | answered right in one chunk (no gap, no TPOT): judged on what it has | good |

Goodput = 3 good of 8 events = 0.375, from the store's slices and from the exporter's counter.
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from monitor.exporter import Exporter
from monitor.model import Model, load_model
from monitor.probes.result import Gap, ProbeResult, Timings
from monitor.slo.slices import slices_from_probe
from tests.probes.conftest import write_config

SLOS = """\
      - {name: ttft-p99, sli: ttft, threshold: 2.5s, objective: 99, source: probes}
      - {name: e2e, sli: e2e, threshold: 10s, objective: 99, source: probes}
      - {name: stall, sli: stall, threshold: 2s, objective: 99, source: probes}
      - {name: goodput, sli: goodput, objective: 90, source: probes}
"""


def model(tmp_path: Path) -> Model:
    path = write_config(tmp_path / "m3mon.yaml", "http://127.0.0.1:9", kinds="[chat]")
    path.write_text(
        path.read_text().replace("threshold: 2.5s, objective: 95", "threshold: 1s, objective: 95")
    )
    path.write_text(path.read_text().replace("    slos:\n", "    slos:\n" + SLOS, 1))
    return load_model(path)


def gaps(*seconds: float) -> tuple[Gap, ...]:
    return tuple(Gap(0.5 + i, s, 1, i + 1) for i, s in enumerate(seconds))


def run(
    i: int, reason: str | None, ttft: float | None = 0.5, e2e: float = 3.0, g: tuple[Gap, ...] = ()
) -> ProbeResult:
    t = Timings(ttft=ttft, e2e=e2e, chunk_gaps=g, tpot=0.05 if g else None)
    return ProbeResult("sim", "small", "chat", 1000.0 + i, reason, t, finished_at=1000.0 + i + e2e)


RUNS = (
    run(1, None, g=gaps(0.1, 0.05)),
    run(2, None, ttft=1.2, g=gaps(0.1)),
    run(3, None, ttft=1.0, e2e=10.0, g=gaps(2.0, 0.1)),
    run(4, None, e2e=11.0, g=gaps(0.1)),
    run(5, None, g=gaps(0.1, 2.5, 0.1)),
    run(6, "wrong_answer", g=gaps(0.1)),
    run(7, "timeout", ttft=None, e2e=120.0),
    run(8, "monitor_error", ttft=None, e2e=0.1),
    run(9, None, ttft=0.3, e2e=0.4),
)


def test_goodput_of_fixed_runs_from_the_store_slices(tmp_path: Path) -> None:
    m = model(tmp_path)
    found = [s for r in RUNS for s in slices_from_probe(m, r) if s.slo_id == "small/goodput"]
    assert [s.good for s in found] == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert sum(s.good for s in found) / sum(s.total for s in found) == 0.375


def test_goodput_of_fixed_runs_from_the_exporter(tmp_path: Path) -> None:
    m = model(tmp_path)
    exporter = Exporter(m)
    exporter.probes.observe_all(RUNS)
    counts = {"true": 0.0, "false": 0.0}
    for family in text_string_to_metric_families(exporter.render().decode()):
        for s in family.samples:
            if s.name == "m3mon_probe_goodput_total" and s.labels["reason"] != "monitor_error":
                counts[s.labels["good"]] += s.value
    assert counts == {"true": 3.0, "false": 5.0}
