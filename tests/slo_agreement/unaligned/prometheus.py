"""A world in real Prometheus: the generated rules under ``promtool test rules``, on a 1 s grid.

Every target (each pool, each monitor replica) is scraped at its own instants: the sample of a
scrape lands on its own second, a failed scrape writes a staleness marker for every series of the
target, as Prometheus does. promtool evaluates the rule groups on whole minutes; the world's
evaluation offset is put in by shifting every sample (and every published maintenance boundary,
a timestamp) that many seconds earlier, so promtool minute *m* is world instant m·60 + offset.
A skipped evaluation is the SLO group's recording rules answering nothing at that minute (a
copy of the rules, each expression ``… unless on () (vector(time()) == m·60)``): its records
have no sample then, as when Prometheus skips an iteration. Counts are read at every check
minute, summed from the step records over each window (:func:`counts_query`); ``ALERTS``
every minute.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from monitor.generate import windows as win
from monitor.model import Model
from tests.slo_agreement.exposition import Labels, parse
from tests.slo_agreement.prometheus import _mine, metric_names, parse_output
from tests.slo_agreement.series import STALE, Timeline, input_series
from tests.slo_agreement.unaligned.config import slo_name
from tests.slo_agreement.unaligned.pages import T0, MonitorPages, ServerPages, endpoint
from tests.slo_agreement.unaligned.world import MINUTES, REPLICAS, Schedule, World

WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d")
#: Gauges whose value is an instant (maintenance boundaries, a process's start): moved onto promtool's clock.
TIMESTAMP_GAUGE = re.compile(r"^(m3mon_maintenance_.*timestamp_seconds|process_start_time_seconds)$")
SECONDS = MINUTES * 60 + 60


@dataclass
class Counts:
    """One engine's view: (valid, bad) per window at check minutes, firing alerts each minute."""

    counts: dict[int, dict[str, tuple[float, float]]] = field(default_factory=dict)
    firing: dict[int, frozenset[str]] = field(default_factory=dict)
    inverted: dict[int, list[str]] = field(default_factory=dict)  # minute -> windows with bad > valid


def checks() -> list[int]:
    return list(range(5, MINUTES + 1, 5))


def world_rules(groups: list[dict[str, Any]], world: World, base: float = 0.0) -> dict[str, Any]:
    """The world's rules, its SLO group's records answering nothing at the skipped minutes
    (``base``: the rule engine's time of promtool's 0)."""
    names = [world.name, *(endpoint(world, p) for p in world.pools)]
    skip = " or ".join(f"vector(time()) == {base + m * 60:.0f}" for m in sorted(world.skipped))
    kept = []
    for group in groups:
        rules = [dict(r) for r in group["rules"] if _mine(r, world.name, names)]
        if skip and group["name"].startswith("m3mon-slo-"):
            for r in rules:
                if "record" in r:
                    r["expr"] = f"({r['expr']})\nunless on ()\n({skip})"
        if rules:
            kept.append({**group, "rules": rules})
    return {"groups": kept}


def _add(
    tl: Timeline, second: int, samples: list[tuple[str, Labels, float]], target: Labels, shift: float
) -> None:
    for name, labels, value in samples:
        if TIMESTAMP_GAUGE.match(name):
            value -= T0 + shift  # a published instant, on promtool's clock
        key = (name, tuple(sorted((*labels, *target))))
        tl.setdefault(key, [None] * SECONDS)[second] = value


def _scrapes(tl: Timeline, sched: Schedule, target: Labels, shift: float, page: Any) -> None:
    """Every scrape of one target: its samples, or staleness markers for its series when it fails."""
    mine: set[tuple[str, Labels]] = set()
    for i, t in enumerate(sched.times):
        second = round(t - shift)
        if not 0 <= second < SECONDS:
            continue
        if i in sched.failed:
            for key in mine:
                if tl[key][second] is None:
                    tl[key][second] = STALE
            continue
        samples = page(t)
        _add(tl, second, samples, target, shift)
        mine.update((n, tuple(sorted((*lab, *target)))) for n, lab, _ in samples)


def timeline(world: World, model: Model, wanted: set[str]) -> Timeline:
    tl: Timeline = {}
    shift = float(world.eval_offset)
    server = ServerPages(world)
    for pool in world.pools:
        ep = endpoint(world, pool)
        target: Labels = (("endpoint", ep), ("instance", f"{ep}:8000"), ("job", "vllm"))
        _scrapes(tl, world.prometheus[pool], target, shift,
                 lambda t, p=pool: [s for s in parse(server.text(p, t)) if s[0] in wanted])  # fmt: skip
    for replica in REPLICAS:
        pages = MonitorPages(world, model, replica, wanted)
        target = (("instance", f"monitor-{replica}:9464"), ("job", "m3mon"))
        _scrapes(
            tl, world.prometheus[f"monitor-{replica}"], target, shift, lambda t, pg=pages: parse(pg.text(t))
        )
    return tl


def _ids(world: World) -> str:
    return f'class="{world.name}",slo="{slo_name(world)}"'


def counts_query(sel: str) -> str:
    """Every window's valid and bad events, summed from the step records as every window's ratio
    is (:mod:`monitor.generate.windows`), labelled ``window`` and ``kind``; absent: none."""
    parts = [
        f'label_replace(label_replace({win.summed(kind, sel, w)}, "window", "{w}", "", ""), "kind", "{kind}", "", "")'
        for w in WINDOWS
        for kind in ("valid", "bad")
    ]
    return " or ".join(parts)


def inverted_query(sel: str) -> str:
    """Every window (labelled ``window``) whose bad events outnumber its valid ones; absent: none."""
    return " or ".join(
        f"label_replace({win.summed('bad', sel, w)} > ({win.summed('valid', sel, w)} or vector(0)), "
        f'"window", "{w}", "", "")'
        for w in WINDOWS
    )


def window_counts(samples: list[tuple[dict[str, str], float]]) -> dict[str, tuple[float, float]]:
    """(valid, bad) per window of :func:`counts_query`'s samples (0 where one is absent)."""
    windows: dict[str, list[float]] = {}
    for lab, value in samples:
        windows.setdefault(lab["window"], [0.0, 0.0])[lab["kind"] == "bad"] = value
    return {w: (v[0], v[1]) for w, v in windows.items()}


def test_file(world: World, tl: Timeline) -> dict[str, Any]:
    counts = counts_query("{" + _ids(world) + "}")
    alerts = f'ALERTS{{alertstate="firing",{_ids(world)}}}'
    every = [m for m in range(MINUTES + 1) if m not in world.skipped]
    queries = [(counts, m) for m in checks()] + [(alerts, m) for m in range(MINUTES + 1)]
    queries += [(inverted_query("{" + _ids(world) + "}"), m) for m in every]
    return {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1s", "input_series": input_series(tl),
                   "promql_expr_test": [{"expr": q, "eval_time": f"{m}m", "exp_samples": []} for q, m in queries]}],
    }  # fmt: skip


def start(
    promtool: str, workdir: Path, world: World, groups: list[dict[str, Any]], model: Model
) -> subprocess.Popen[str]:
    rules = world_rules(groups, world)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    tl = timeline(world, model, metric_names(rules))
    (workdir / "test.yml").write_text(yaml.safe_dump(test_file(world, tl), sort_keys=False, width=1 << 20))
    return subprocess.Popen([promtool, "test", "rules", "test.yml"], cwd=workdir, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


def finish(proc: subprocess.Popen[str], world: World, timeout: float = 300) -> Counts:
    output, _ = proc.communicate(timeout=timeout)
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and "FAILED:" not in output):
        raise AssertionError(f"promtool could not run world {world.seed}:\n{output[-3000:]}")
    got = parse_output(output)
    out = Counts()
    for (query, m), samples in got.items():
        if query.startswith("ALERTS"):
            out.firing[m] = frozenset(lab["alertname"] for lab, _ in samples)
            continue
        if query == inverted_query("{" + _ids(world) + "}"):
            out.inverted[m] = sorted(lab["window"] for lab, _ in samples)
            continue
        out.counts[m] = window_counts(samples)
    for m in checks():
        out.counts.setdefault(m, {})
    for m in range(MINUTES + 1):
        out.firing.setdefault(m, frozenset())
    return out
