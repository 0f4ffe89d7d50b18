"""The unaligned sweep: worlds of many seeds through real Prometheus and the real store, against the oracle.

:func:`prepare` runs the real ``m3mon generate`` once over a configuration holding every world
and migrates one SQLite database each world copies; :func:`evaluate` runs one world both ways
(promtool in the background while the store path runs) and :func:`judge` holds the engines to
:mod:`tests.slo_agreement.unaligned.bounds`. ``python -m tests.slo_agreement.unaligned.sweep
SEEDS`` runs a sweep (``f<seed>``: with the monitor's faults, ``t<seed>``: those as real traffic
through a crash-looping monitor, ``--rules``: Prometheus only) and prints, per engine and measure, the largest disagreement with the
nominal count and the tolerance there, and every violation.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.model import load_model
from tests.slo_agreement.harness import generate_rules, migrated
from tests.slo_agreement.prometheus import load_groups
from tests.slo_agreement.unaligned import prometheus, store
from tests.slo_agreement.unaligned.bounds import ALERTS, WINDOW_SECONDS, Oracle
from tests.slo_agreement.unaligned.config import config
from tests.slo_agreement.unaligned.faults import with_faults
from tests.slo_agreement.unaligned.named import CRASH_LOOP, NAMED
from tests.slo_agreement.unaligned.prometheus import Counts, checks
from tests.slo_agreement.unaligned.traffic import traffic_world
from tests.slo_agreement.unaligned.world import World, world

#: Seeds the default test run covers (derandomized: the same worlds every run).
CI_SEEDS = tuple(range(1, 5))


def faulty(seed: int) -> World:
    """The world of ``seed`` with the monitor's own faults and a crash-looping pool mixed in."""
    return with_faults(world(seed), seed)


def traffic(seed: int) -> World:
    """The faulty world of ``seed`` (a server world) as a real-traffic world with a crash-looping
    monitor replica (:func:`~tests.slo_agreement.unaligned.traffic.traffic_world`)."""
    return traffic_world(faulty(seed), seed)


def traffic_seeds(n: int, start: int = 1) -> tuple[int, ...]:
    """The first ``n`` seeds from ``start`` whose world is a server world (real traffic is its requests)."""
    found = (s for s in itertools.count(start) if world(s).source == "server")
    return tuple(itertools.islice(found, n))


def named_world(name: str) -> World:
    """``17``: the world of seed 17; ``f17``: that world with faults (:func:`faulty`); ``t17``: as
    real traffic (:func:`traffic`); else a hand-built world of
    :data:`~tests.slo_agreement.unaligned.named.NAMED` (``crash-loop``)."""
    if name in {**NAMED, "crash-loop": CRASH_LOOP}:
        return {**NAMED, "crash-loop": CRASH_LOOP}[name]
    if name.startswith("t"):
        return traffic(int(name[1:]))
    return faulty(int(name[1:])) if name.startswith("f") else world(int(name))


@dataclass(frozen=True)
class Prepared:
    groups: list[dict[str, Any]]
    database: Path


def prepare(worlds: Sequence[World], workdir: Path) -> Prepared:
    """The rules the real ``m3mon generate`` writes for every world, and a migrated database."""
    rules = generate_rules(config(worlds), workdir)
    return Prepared(load_groups(rules), migrated(workdir))


def evaluate(
    w: World,
    prepared: Prepared,
    promtool: str,
    workdir: Path,
    engines: Sequence[str] = ("prometheus", "store"),
) -> dict[str, Counts]:
    (workdir / "cfg").mkdir(parents=True, exist_ok=True)
    (workdir / "cfg" / "m.yaml").write_text(config([w]))
    model = load_model(workdir / "cfg" / "m.yaml")
    proc = prometheus.start(promtool, workdir / "prometheus", w, prepared.groups, model)
    if "store" not in engines:
        return {"prometheus": prometheus.finish(proc, w)}
    try:
        stored = store.Run(w, workdir / "store", prepared.database).run()
    except BaseException:
        proc.kill()
        raise
    return {"prometheus": prometheus.finish(proc, w), "store": stored}


@dataclass
class Report:
    """What one or more worlds showed: violations, and per engine and measure the largest
    disagreement with the nominal count next to the tolerance at that point."""

    worlds: int = 0
    checks: int = 0
    violations: list[str] = field(default_factory=list)
    largest: dict[tuple[str, str], tuple[float, int, str]] = field(default_factory=dict)
    clean_worlds: int = 0
    kinds: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, engine: str, kind: str, text: str) -> None:
        """A violation: of the tolerance (``count``) or of a hard property (``alert``, ``stored``)."""
        self.violations.append(text)
        self.kinds[(engine, kind)] = self.kinds.get((engine, kind), 0) + 1

    def note(self, engine: str, measure: str, off: float, tolerance: int, where: str) -> None:
        if off > self.largest.get((engine, measure), (-1.0, 0, ""))[0]:
            self.largest[(engine, measure)] = (off, tolerance, where)

    def merge(self, other: Report) -> None:
        self.worlds += other.worlds
        self.checks += other.checks
        self.clean_worlds += other.clean_worlds
        self.violations += other.violations
        for key, n in other.kinds.items():
            self.kinds[key] = self.kinds.get(key, 0) + n
        for key, (off, tol, where) in other.largest.items():
            self.note(key[0], key[1], off, tol, where)


def _instant(w: World, engine: str, m: int) -> float:
    """Where minute ``m`` of an engine is on the world's clock (the rules run at their offset)."""
    return m * 60.0 + (w.eval_offset if engine == "prometheus" else 0.0)


def _counts(w: World, engine: str, got: Counts, oracle: Oracle, report: Report) -> None:
    for m in checks():
        if engine == "prometheus" and m in w.skipped:
            continue  # nothing was evaluated then (the records read are the minute before's)
        t = _instant(w, engine, m)
        for window in WINDOW_SECONDS:
            valid, bad = got.counts.get(m, {}).get(window, (0.0, 0.0))
            (lo_v, lo_b), (hi_v, hi_b) = oracle.bounds(t, window)
            nom_v, nom_b = oracle.nominal(t, window)
            where = f"world {w.seed} {engine} min {m} {window}"
            report.checks += 1
            for measure, value, lo, hi, nominal in (
                ("valid", valid, lo_v, hi_v, nom_v),
                ("bad", bad, lo_b, hi_b, nom_b),
            ):
                report.note(engine, measure, abs(value - nominal), hi - lo, where)
                if not lo - 1e-6 <= value <= hi + 1e-6:
                    report.add(
                        engine,
                        "count",
                        f"{where} {measure} {value:g} outside [{lo}, {hi}] (nominal {nominal})",
                    )


def _inverted(w: World, engine: str, got: Counts, report: Report) -> None:
    """The hard property bad <= valid: in every window at every check minute, and (the rules) in
    every window at every evaluation."""
    minutes = {m: [wd for wd, (v, b) in c.items() if b > v + 1e-6] for m, c in got.counts.items()}
    for m, windows in got.inverted.items():
        minutes[m] = sorted({*minutes.get(m, []), *windows})
    for m, windows in sorted(minutes.items()):
        if windows:
            report.add(engine, "inverted", f"world {w.seed} {engine} min {m}: more bad events than valid "
                                           f"in {', '.join(windows)}")  # fmt: skip


def judge(w: World, outcomes: dict[str, Counts], stored_total: float | None = None) -> Report:
    report = Report(worlds=1)
    for engine, got in outcomes.items():
        oracle = Oracle(w, engine)
        _counts(w, engine, got, oracle, report)
        _inverted(w, engine, got, report)
        if oracle.clean():
            fired = sorted({(m, a) for m, names in got.firing.items() for a in names if a in ALERTS})
            if fired:
                report.add(engine, "alert", f"world {w.seed} {engine}: {fired[0][1]} fired at min {fired[0][0]} "
                                            f"({len(fired)} alert-minutes) with no bad event outside maintenance")  # fmt: skip
    if Oracle(w, "store").clean():
        report.clean_worlds += 1
    if stored_total is not None and stored_total > Oracle(w, "store").happened():
        report.add("store", "stored", f"world {w.seed}: the store holds {stored_total:g} events where "
                                      f"{Oracle(w, 'store').happened()} happened outside maintenance")  # fmt: skip
    return report


def run(
    names: Sequence[str],
    promtool: str = "/usr/bin/promtool",
    engines: Sequence[str] = ("prometheus", "store"),
) -> Report:
    worlds = [named_world(n) for n in names]
    total = Report()
    with tempfile.TemporaryDirectory(prefix="m3mon-unaligned-", dir="/dev/shm") as tmp:
        prepared = prepare(worlds, Path(tmp))
        for w in worlds:
            outcomes = evaluate(w, prepared, promtool, Path(tmp) / w.name, engines)
            stored = store.stored_total(Path(tmp) / w.name / "store") if "store" in engines else None
            total.merge(judge(w, outcomes, stored))
    return total


def summary(report: Report) -> str:
    lines = [f"{report.worlds} worlds ({report.clean_worlds} with no bad event outside maintenance), "
             f"{report.checks} window checks, {len(report.violations)} violations"]  # fmt: skip
    for (engine, measure), (off, tol, where) in sorted(report.largest.items()):
        lines.append(
            f"  {engine:10} {measure:5}: largest |count - nominal| {off:g} (tolerance there {tol}; {where})"
        )
    if report.kinds:
        lines.append(
            "  violations by engine and kind: "
            + ", ".join(f"{e} {k} {n}" for (e, k), n in sorted(report.kinds.items()))
        )
    first = sorted(
        report.violations, key=lambda v: " fired " not in v and " holds " not in v and " more bad " not in v
    )  # hard ones first
    lines += [f"  VIOLATION {v}" for v in first[:40]]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``SEEDS...`` (``f7``: seed 7 with faults; ``--rules``: Prometheus only, no store path)."""
    names = [a for a in argv if not a.startswith("--")] or [str(s) for s in CI_SEEDS]
    report = run(names, engines=("prometheus",) if "--rules" in argv else ("prometheus", "store"))
    print(summary(report))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
