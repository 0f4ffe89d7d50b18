"""``m3mon check-config`` warns when a class's probes are too sparse for its burn-rate alerts.

Every expectation below is worked by hand from the definitions, not from the code under test:

* a class probed by K kinds on E endpoints every I seconds gives K × E events per round, so
  K × E × 3600 / I events per hour to each of its probe-sourced SLOs (itl aside);
* a window of L seconds holds floor(L / I) or ceil(L / I) rounds;
* burn factor f = budget share × period / long window (1h: 2 % × 720 h / 1 h = 14.4; 6h: 6;
  1d: 3; 3d: 1 at 30 days); the guard is N = ceil(1 / (f × (1 − objective)));
* the suggested interval is L / ceil(N / (K × E)), written as a config duration rounded down.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import parse_config
from monitor.model import build_model, load_model
from monitor.slo.volume import GuardFinding, ShortWindowFinding, findings

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "monitor.yaml"

# examples/monitor.yaml, class extended-context: kinds chat + long_prompt (K = 2), one endpoint
# (m3-extended), every 30m (I = 1800 s): 2 × 3600 / 1800 = 4 events per hour.
#
# availability, objective 99 % (budget 0.01), 30d:
#   page 1h/5m:  f = 14.4, f × budget = 0.144, N = ceil(6.94) = 7. The 1h window holds
#                3600 / 1800 = 2 rounds exactly = 4 events < 7: never fires. 4 rounds of 2 = 8 ≥ 7
#                per hour → I ≤ 3600 / 4 = 900 s = 15m. At 30m every 1h window holds 4 events:
#                min_events ≤ 4 would arm it, and then 1/4 = 0.25 > 0.144: one failure fires it.
#                (The brief's "17m" = 2 × 3600 / 7 s only meets 7 per hour on average: a 1h window
#                then holds 3 or 4 rounds = 6 or 8 events, so the guard holds about half the time.)
#   short 5m:    2 × 300 / 1800 = 0.33 events on average; a round lands in a given 5m window
#                300 / 1800 of the time, so it is empty 1 − 1/6 = 83 % of the time.
#   page 6h/30m: f = 6, N = ceil(1 / 0.06) = 17 ≤ 6 × 4 = 24 events: fine. 30m: 2 × 1800/1800 = 2.
#   ticket 1d/2h: f = 3, N = ceil(33.3) = 34 ≤ 96: fine. 3d/6h: f = 1, N = 100 ≤ 288: fine.
# ttft-p90, objective 90 % (budget 0.1): page 1h: 14.4 × 0.1 = 1.44 ≥ 1, N = 1 ≤ 4: fine; its 5m
#   window is the same 0.33 events on average.
# Every other class of the example has enough: repo-analysis-128k (2 kinds every 5m = 24/h, 99.5 %:
# N = ceil(1 / 0.072) = 14 ≤ 24 per 1h, 5m holds 2), multimodal (60/h, 99.5 %: 14 ≤ 60),
# agent (120/h), interactive-32k (480/h, 99.9 %: N = 70 ≤ 480).
EXAMPLE_WARNINGS = [
    "warning: extended-context/availability: 4 probe events per hour (2 kinds every 30m); the page "
    "alert (1h/5m, 14.4×) needs ≥ 7 events in its 1h window, which holds 4, so it can never fire; "
    "probe every 15m or less (4 rounds × 2 = 8 events in every 1h), or set min_events ≤ 4 (then one "
    "failed probe fires it)",
    "warning: extended-context/availability: 4 probe events per hour (2 kinds every 30m); the page "
    "alert (1h/5m, 14.4×) also needs events in its 5m short window, which holds 0.33 on average and is "
    "empty 83% of the time, so it can fire only just after a probe round; probe every 5m or less to "
    "put a round in every 5m window",
    "warning: extended-context/ttft-p90: 4 probe events per hour (2 kinds every 30m); the page "
    "alert (1h/5m, 14.4×) also needs events in its 5m short window, which holds 0.33 on average and is "
    "empty 83% of the time, so it can fire only just after a probe round; probe every 5m or less to "
    "put a round in every 5m window",
]


def findings_of(out: str) -> list[str]:
    """The lines after the summary (the summary's own lines are its header and indented rows)."""
    return [line for line in out.splitlines()[1:] if not line.startswith(" ")]


def config(tmp_path: Path, classes: str, endpoints: int = 1) -> Path:
    """A configuration with ``endpoints`` endpoints serving every class defined in ``classes``."""
    names = [line.split("name:", 1)[1].strip() for line in classes.splitlines() if "- name:" in line]
    eps = "".join(
        f"  - {{name: pool-{i}, base_url: 'http://127.0.0.1:{8000 + i}', model: m, classes: [{', '.join(names)}]}}\n"
        for i in range(endpoints)
    )
    path = tmp_path / "monitor.yaml"
    path.write_text(f"version: m3mon/v1\nendpoints:\n{eps}request_classes:\n{classes}")
    return path


def test_example_config_warns_about_the_extended_context_class(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{EXAMPLE}: valid m3mon/v1 configuration"
    assert findings_of(out) == EXAMPLE_WARNINGS
    assert out.rstrip("\n").splitlines()[-3:] == EXAMPLE_WARNINGS  # after the summary


def test_installed_command_prints_the_same_and_exits_0() -> None:
    m3mon = Path(sys.executable).with_name("m3mon")
    proc = subprocess.run(
        [str(m3mon), "check-config", str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert findings_of(proc.stdout) == EXAMPLE_WARNINGS
    assert proc.stderr == ""


def test_example_findings_are_structured() -> None:
    found = findings(load_model(EXAMPLE))
    guard = [f for f in found if isinstance(f, GuardFinding)]
    short = [f for f in found if isinstance(f, ShortWindowFinding)]
    assert [(f.slo.id, f.alert.long_window) for f in guard] == [("extended-context/availability", "1h")]
    g = guard[0]
    assert (g.needed, g.fewest, g.most, g.never_fires) == (7, 4, 4, True)
    assert (g.volume.kinds, g.volume.endpoints, g.volume.interval, g.volume.per_hour) == (2, 1, 1800.0, 4.0)
    assert (g.suggested_rounds, g.suggested_interval) == (4, 900.0)
    assert [(f.slo.id, f.alert.short_window) for f in short] == [
        ("extended-context/availability", "5m"),
        ("extended-context/ttft-p90", "5m"),
    ]
    assert short[0].average == pytest.approx(1 / 3)
    assert short[0].empty_share == pytest.approx(5 / 6)


def test_min_events_override_silences_the_guard_but_not_the_empty_short_window(tmp_path: Path) -> None:
    # The same class with min_events: 4: the 1h window holds exactly 4 ≥ 4, so no guard finding;
    # 6h/1d/3d need 4 too and hold 24/96/288. The 5m window still holds 0.33 on average.
    path = config(
        tmp_path,
        "  - name: extended\n    max_context_tokens: 524288\n    probes: [chat, long_prompt]\n"
        "    probe: {interval: 30m}\n    slos:\n"
        "      - {name: availability, sli: availability, objective: 99, min_events: 4}\n",
    )
    found = findings(load_model(path))
    assert [(type(f).__name__, f.alert.long_window) for f in found] == [("ShortWindowFinding", "1h")]


def test_partly_armed_window_and_28_day_factor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One kind every 8m (7.5 per hour), 99 % over 28d. 1h: f = 2 % × 672 h / 1 h = 13.44;
    # 13.44 × 0.01 = 0.1344; N = ceil(7.44) = 8. A 1h window holds floor(7.5) = 7 or ceil = 8
    # rounds of 1: armed only part of the time. 8 probes per hour → I ≤ 3600 / 8 = 450 s ("450s",
    # not a whole number of minutes). min_events ≤ 7: 1/7 = 0.143 > 0.1344, one failure fires it.
    # 6h: f = 5.6, N = ceil(1 / 0.056) = 18 ≤ 45. 1d: 2.8 → 36 ≤ 180. 3d: 0.9333 → 108 ≤ 540.
    # 5m: 300 / 480 = 0.625 events on average, empty 1 − 0.625 = 37.5 % → "38%" of the time.
    path = config(
        tmp_path,
        "  - name: batch\n    max_context_tokens: 32768\n    probes: [chat]\n"
        "    probe: {interval: 8m}\n    slos:\n"
        "      - {name: availability, sli: availability, objective: 99, period: 28d}\n",
    )
    assert main(["check-config", str(path)]) == 0
    assert findings_of(capsys.readouterr().out) == [
        "warning: batch/availability: 7.5 probe events per hour (1 kind every 8m); the page alert "
        "(1h/5m, 13.44×) needs ≥ 8 events in its 1h window, which holds 7 or 8, so it can fire only "
        "part of the time; probe every 450s or less (8 probes in every 1h), or set min_events ≤ 7 "
        "(then one failed probe fires it)",
        "warning: batch/availability: 7.5 probe events per hour (1 kind every 8m); the page alert "
        "(1h/5m, 13.44×) also needs events in its 5m short window, which holds 0.62 on average and is "
        "empty 38% of the time, so it can fire only just after a probe round; probe every 5m or less "
        "to put a round in every 5m window",
    ]


def test_hourly_probe_of_a_three_nines_slo_starves_every_condition(tmp_path: Path) -> None:
    # One kind every 1h, 99.9 % over 30d (budget 0.001):
    #   1h/5m   f 14.4 → N = ceil(69.4) = 70;  holds 1;  I ≤ 3600 / 70  = 51.4 s  → 51s
    #   6h/30m  f 6    → N = ceil(166.7) = 167; holds 6;  I ≤ 21600 / 167 = 129.3 s → 129s
    #   1d/2h   f 3    → N = ceil(333.3) = 334; holds 24; I ≤ 86400 / 334 = 258.7 s → 258s
    #   3d/6h   f 1    → N = 1000;              holds 72; I ≤ 259200 / 1000 = 259.2 s → 259s
    # Short windows: 5m 300/3600 = 0.083 and 30m 0.5 events on average (< 1); 2h holds 2, 6h 6.
    path = config(
        tmp_path,
        "  - name: rare\n    max_context_tokens: 32768\n    probes: [chat]\n"
        "    probe: {interval: 1h}\n    slos:\n"
        "      - {name: availability, sli: availability, objective: 99.9}\n",
    )
    found = findings(load_model(path))
    guard = [(f.alert.long_window, f.needed, f.fewest, f.most, round(f.suggested_interval, 1))
             for f in found if isinstance(f, GuardFinding)]  # fmt: skip
    assert guard == [
        ("1h", 70, 1, 1, 51.4),
        ("6h", 167, 6, 6, 129.3),
        ("1d", 334, 24, 24, 258.7),
        ("3d", 1000, 72, 72, 259.2),
    ]
    short = [(f.alert.short_window, round(f.average, 3)) for f in found if isinstance(f, ShortWindowFinding)]
    assert short == [("5m", 0.083), ("30m", 0.5)]


def test_endpoints_multiply_the_events_of_a_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The extended-context class on two endpoints: 2 kinds × 2 endpoints = 4 events every 30m,
    # 8 per hour. 1h holds 8 ≥ N = 7: no guard finding. 5m: 4 × 300 / 1800 = 0.67 on average,
    # empty 83 % of the time (a round lands in 1/6 of the 5m windows whatever its size).
    path = config(
        tmp_path,
        "  - name: extended\n    max_context_tokens: 524288\n    probes: [chat, long_prompt]\n"
        "    probe: {interval: 30m}\n    slos:\n"
        "      - {name: availability, sli: availability, objective: 99}\n",
        endpoints=2,
    )
    assert main(["check-config", str(path)]) == 0
    assert findings_of(capsys.readouterr().out) == [
        "warning: extended/availability: 8 probe events per hour (2 kinds × 2 endpoints every 30m); the "
        "page alert (1h/5m, 14.4×) also needs events in its 5m short window, which holds 0.67 on average "
        "and is empty 83% of the time, so it can fire only just after a probe round; probe every 5m or "
        "less to put a round in every 5m window",
    ]


def test_itl_and_server_slos_are_not_checked_for_probe_volume(tmp_path: Path) -> None:
    # Probe itl has one event per token gap (many per run); server SLOs count the pool's traffic.
    path = config(
        tmp_path,
        "  - name: sparse\n    max_context_tokens: 32768\n    probes: [chat]\n"
        "    probe: {interval: 1h}\n    slos:\n"
        "      - {name: itl, sli: itl, threshold: 100ms, objective: 99.9}\n"
        "      - {name: ttft, sli: ttft, threshold: 2.5s, objective: 99.9, source: server}\n"
        "      - {name: avail, sli: availability, objective: 99.9, source: server}\n",
    )
    assert findings(load_model(path)) == []


@pytest.mark.parametrize("sli", ["correctness", "ttft", "tpot", "e2e", "queue_time"])
def test_one_event_per_run_slis_get_the_same_guard_as_availability(sli: str) -> None:
    # 99 % with one kind every 30m: 2 events per hour, for every such SLI alike.
    # 1h: N = 7 > 2. 6h: N = ceil(1 / 0.06) = 17 > 12. 1d: 34 ≤ 48. 3d: 100 ≤ 144.
    threshold = "" if sli == "correctness" else ", threshold: 5s"
    spec = parse_config(
        "version: m3mon/v1\nendpoints:\n  - {name: p, base_url: 'http://127.0.0.1:1', model: m, classes: [c]}\n"
        "request_classes:\n  - name: c\n    max_context_tokens: 32768\n    probes: [chat]\n"
        f"    probe: {{interval: 30m}}\n    slos:\n      - {{name: s, sli: {sli}, objective: 99{threshold}}}\n"
    )
    guard = [f for f in findings(build_model(spec)) if isinstance(f, GuardFinding)]
    assert [(f.alert.long_window, f.needed, f.fewest) for f in guard] == [("1h", 7, 2), ("6h", 17, 12)]
