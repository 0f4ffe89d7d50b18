"""A scrape committed between a group's cumulative and step rules counts once (a real Prometheus).

Prometheus stamps a scrape's samples with its start and commits them when the answer is parsed, so
one can land between two rules of one group run. A slow target (it answers 0-0.6 s late, at
random) keeps scrapes in flight across rule evaluations; every scrape it serves raises its probe
counters. The SLO group and the probe-runs group are the generated ones (their rules' expressions
as generated, every evaluation 1 s apart), with one slow recording rule put in front of each step
record to widen the gap. The oracle is the target's own count of what it served: after the
counters stop rising, the step records of the whole run add up to exactly the rise served, never
more.

The second test makes the race certain for the case a failed scrape opens: the target fails every
second scrape (its series go stale), and answers the next one halfway through the slow rule before
one step record (each of both groups in turn, timed from the rules API), so that step's cumulative
rule saw the target stale and the step sees the new scrape. A step that then reads the counters
counts the scrape, and the next step, measuring from the record before the failure, counts it again.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor import conventions as cv
from monitor import events
from monitor.config import parse_config
from monitor.generate.probe_rules import probe_groups
from monitor.generate.rules import Group
from monitor.generate.slo_rules import slo_groups
from monitor.model import Model, build_model
from tests.support import localhttp
from tests.support.exposition import serving
from tests.support.prometheus import query, running_prometheus, wait_for

pytestmark = [pytest.mark.real, pytest.mark.slow]

CONFIG = """\
version: m3mon/v1
endpoints:
  - name: m3-race
    base_url: http://127.0.0.1:9
    backend: vllm
    model: MiniMaxAI/MiniMax-M3
    classes: [interactive]
request_classes:
  - name: interactive
    max_context_tokens: 32768
    probes: [chat]
    probe: {interval: 30s, timeout: 60s}
    slos:
      - {name: availability, sli: availability, objective: 99.9, source: probes}
"""
#: About a quarter of a second of query work at every evaluation (a subquery of 172,800 steps).
SLOW = {"record": "race:slow", "expr": "count_over_time(vector(1)[2d:1s])"}
RISING_FOR = 15.0
STUMBLING_FOR = 40.0


class Target:
    """The monitor's probe counters of one endpoint and class, raised by every scrape while rising."""

    def __init__(self, model: Model) -> None:
        self.job = model.alerting.job_monitor
        self.counts = {"success": 10, "timeout": 5}  # runs that succeeded, runs that timed out
        self.rising = False
        self.lock = threading.Lock()
        self.started = time.time() - 100

    def page(self) -> bytes:
        with self.lock:
            if self.rising:
                self.counts = {k: v + 1 for k, v in self.counts.items()}
            counts = dict(self.counts)
        time.sleep(random.uniform(0.0, 0.6))  # the scrape is in flight meanwhile
        lines = [f"{cv.PROCESS_START_TIME} {self.started}",
                 f'{cv.HEALTH_UP}{{endpoint="m3-race"}} 1']  # fmt: skip
        for reason, count in counts.items():
            outcome = events.probe_labels(None if reason == "success" else reason)
            labels = {cv.L_ENDPOINT: "m3-race", cv.L_CLASS: "interactive", cv.L_KIND: "chat", **outcome}
            body = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(f"{cv.PROBE_TOTAL}{{{body}}} {count}")
        return ("\n".join(lines) + "\n").encode()


def _widened(group: Group, model: Model) -> dict[str, Any]:
    """The group as generated, evaluated every second, with a slow rule before each step record."""
    rendered = group.render(model.alerting)
    rules: list[dict[str, Any]] = []
    for rule in rendered["rules"]:
        if rule.get("record", "").endswith(":step"):
            rules.append(SLOW)
        rules.append(rule)
    return {**rendered, "interval": "1s", "rules": rules}


def _total(url: str, expr: str) -> float:
    result = query(url, expr)
    return float(result[0]["value"][1]) if result else float("nan")


def test_the_step_records_add_up_to_what_the_target_served_never_more(tmp_path: Path) -> None:
    model = build_model(parse_config(CONFIG, "monitor.yaml"))
    got, served = _counted(tmp_path, model, Target(model), {"scrape_interval": "1s", "scrape_timeout": "1s"},
                           RISING_FOR)  # fmt: skip
    assert served["probe runs"] >= 10, f"the target served {served['probe runs']} runs in {RISING_FOR}s"
    assert got == served, f"step records {got}, served {served}"


#: What the step records of the whole run add up to, per kind.
SUMS = {
    "slo valid": f"sum(sum_over_time({cv.slo_step_events_record('valid')}[10m]))",
    "slo bad": f"sum(sum_over_time({cv.slo_step_events_record('bad')}[10m]))",
    "probe runs": f"sum(sum_over_time({cv.probe_runs_record('step', failed=False)}[10m]))",
    "failed probe runs": f"sum(sum_over_time({cv.probe_runs_record('step', failed=True)}[10m]))",
}


def _counted(
    tmp_path: Path,
    model: Model,
    target: Target,
    scrape: dict[str, str],
    seconds: float,
    arm: Callable[[str], None] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """The generated groups (widened) in a real Prometheus scraping ``target``; ``arm(url)`` runs once
    every step record exists, then the target's counters rise for ``seconds``. Returns what the step
    records add up to and what the target served, per kind."""
    groups = [_widened(g, model) for g in (*slo_groups(model), *probe_groups(model))]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups}))
    config: dict[str, Any] = {
        "global": {**scrape, "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yml")],
        "scrape_configs": [{"job_name": model.alerting.job_monitor, "static_configs": [{"targets": []}]}],
    }
    with serving(target.page) as address:
        config["scrape_configs"][0]["static_configs"][0]["targets"] = [address]
        with running_prometheus(config, tmp_path) as url:
            wait_for(lambda: all(query(url, e) for e in SUMS.values()), 30, "every step record")
            if arm is not None:
                arm(url)
            with target.lock:
                start, target.rising = dict(target.counts), True
            time.sleep(seconds)
            with target.lock:
                end, target.rising = dict(target.counts), False
            final = f"sum({cv.slo_cumulative_events_record('valid')})"
            wait_for(lambda: _total(url, final) == sum(end.values()), 15, "the last reading's record")
            time.sleep(3)  # the steps after it
            got = {what: _total(url, expr) for what, expr in SUMS.items()}
    runs = sum(end.values()) - sum(start.values())
    failed = end["timeout"] - start["timeout"]
    return got, {"slo valid": runs, "slo bad": failed, "probe runs": runs, "failed probe runs": failed}


def _clock(rfc3339: str) -> float:
    """Seconds since midnight of an RFC 3339 instant (nanoseconds kept)."""
    m = re.search(r"T(\d+):(\d+):(\d+)(?:\.(\d+))?", rfc3339)
    assert m, rfc3339
    return int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]) + float("0." + (m[4] or "0"))


def _gaps(url: str) -> list[tuple[float, float]]:
    """Per step record of every group: (the group's evaluation phase within the second, how long
    after the group's instant the slow rule before that step is halfway done). A scrape committed
    then lands after the step's cumulative rule and before the step."""
    groups = localhttp.get(f"{url}/api/v1/rules", params={"type": "record"}, timeout=10).json()["data"][
        "groups"
    ]
    out = []
    for g in groups:
        if g["lastEvaluation"].startswith("0001"):
            return []  # not evaluated yet
        instant = _clock(g["lastEvaluation"])
        for slow, step in itertools.pairwise(g["rules"]):
            if slow["name"] == SLOW["record"] and step["name"].endswith(":step"):
                offset = (_clock(slow["lastEvaluation"]) - instant) % 1.0 + slow["evaluationTime"] / 2
                out.append((instant % 1.0, offset))
    return out


class StumblingTarget(Target):
    """A target whose every second scrape while rising fails (a page Prometheus cannot parse: the
    scrape fails and its series go stale), and whose next scrape is answered halfway through the
    slow rule before one step record (each step record of each group in turn): that step's
    cumulative rule saw the target stale, the step sees the scrape, stamped before the instant."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.gaps: list[tuple[float, float]] = []
        self.scrapes = 0
        self.failed = False
        self.held = 0

    def page(self) -> bytes:
        arrived = time.time()
        with self.lock:
            failed, self.failed = self.failed, False
            if self.rising:
                self.scrapes += 1
                if self.scrapes % 2 == 0:
                    self.failed = True
                    return b"# stumbling\nnot a metric page {\n"
                self.counts = {k: v + 1 for k, v in self.counts.items()}
            counts = dict(self.counts)
            gap = self.gaps[self.held % len(self.gaps)] if failed and self.gaps and self.rising else None
            self.held += gap is not None
        if gap is not None:
            phase, offset = gap
            instant = math.floor(arrived) + phase
            instant += math.ceil(arrived + 0.05 - instant)  # the group's next instant after this scrape's
            time.sleep(max(0.0, instant + offset - time.time()))
        lines = [f"{cv.PROCESS_START_TIME} {self.started}", f'{cv.HEALTH_UP}{{endpoint="m3-race"}} 1']
        for reason, count in counts.items():
            outcome = events.probe_labels(None if reason == "success" else reason)
            labels = {cv.L_ENDPOINT: "m3-race", cv.L_CLASS: "interactive", cv.L_KIND: "chat", **outcome}
            body = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(f"{cv.PROBE_TOTAL}{{{body}}} {count}")
        return ("\n".join(lines) + "\n").encode()


def test_a_target_stale_at_the_cumulative_rule_and_scraped_before_the_step_counts_once(
    tmp_path: Path,
) -> None:
    """A failed scrape leaves the target stale; the next scrape is committed between the cumulative
    and the step rules of one group run. The step must not count it from the counters (the next
    step, measuring from the record before the failure, counts it again): every step record adds up
    to what the target served. Scrapes every 3 s (a held answer comes within 2 s, before the
    timeout), evaluations every second."""
    model = build_model(parse_config(CONFIG, "monitor.yaml"))
    target = StumblingTarget(model)

    def arm(url: str) -> None:
        gaps = wait_for(lambda: _gaps(url), 15, "every group's timing")
        with target.lock:
            target.gaps = gaps

    scrape = {"scrape_interval": "3s", "scrape_timeout": "2800ms"}
    got, served = _counted(tmp_path, model, target, scrape, STUMBLING_FOR, arm)
    gaps = target.gaps
    assert len(gaps) == 4 and target.held >= len(gaps), f"{target.held} scrapes held for {gaps}"
    assert got == served, f"step records {got}, served {served} ({target.held} held scrapes)"
