"""vmalert on VictoriaMetrics counts like Prometheus, maintenance included (issue 22 finding 7).

The generated SLO groups of unaligned worlds with maintenance windows (the hand-built
``window-end`` and ``skipped`` worlds, phase 7 s, and one seeded world with two pools and a window
on one of them) are evaluated by Debian's vmalert 1.79 in replay mode over the same samples
promtool reads (imported into a real VictoriaMetrics: the rule engine's records travel through
remote write and are read back by MetricsQL), with the real 1-minute group interval. At every
check minute each window's valid and bad counts must equal promtool's exactly, and lie within the
oracle's bounds; no SLO alert may fire in these worlds, which have no bad event outside
maintenance (or, for the seeded one, the oracle says when).

The records no longer use ``increase()`` (whose extrapolation VictoriaMetrics does not do), so
the two engines run the same arithmetic; what replay does not show is live vmalert's ordering
(a record of a group run is not visible to the next rule of the same run: docs/fleet.md).
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.model import load_model
from tests.slo_agreement.prometheus import metric_names
from tests.slo_agreement.unaligned import prometheus as prom
from tests.slo_agreement.unaligned.bounds import ALERTS, WINDOW_SECONDS, Oracle
from tests.slo_agreement.unaligned.config import config, slo_name
from tests.slo_agreement.unaligned.named import SKIPPED, WINDOW_END
from tests.slo_agreement.unaligned.sweep import Prepared, prepare
from tests.slo_agreement.unaligned.world import MINUTES, World, world
from tests.support import localhttp
from tests.support.processes import running_process
from tests.support.prometheus import free_port
from tests.support.real import require_binary

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(600)]


def _seeded() -> World:
    """The first seed whose world has two pools and a window on one of them."""
    return next(
        w for w in map(world, range(1, 400)) if len(w.pools) == 2 and any(x.pools for x in w.maintenance)
    )


WORLDS = [WINDOW_END, SKIPPED, _seeded()]


def _import_lines(w: World, base: float, workdir: Path, prepared: Prepared) -> str:
    """The samples promtool reads, on VictoriaMetrics' clock (``base`` is promtool's 0), as
    ``/api/v1/import`` JSON lines; staleness markers are left out (VictoriaMetrics has its own)."""
    (workdir / "m.yaml").write_text(config([w]))
    model = load_model(workdir / "m.yaml")
    rules = prom.world_rules(prepared.groups, w)
    lines = []
    for (name, labels), values in prom.timeline(w, model, metric_names(rules)).items():
        points = [(s, v) for s, v in enumerate(values) if isinstance(v, float)]
        shift = base if prom.TIMESTAMP_GAUGE.match(name) else 0.0
        lines.append(json.dumps({"metric": {"__name__": name, **dict(labels)},
                                 "values": [v + shift for _, v in points],
                                 "timestamps": [int((base + s) * 1000) for s, _ in points]}))  # fmt: skip
    return "\n".join(lines) + "\n"


def _replayed_group(worlds: list[World], base: float, prepared: Prepared) -> dict[str, Any]:
    """The worlds' SLO groups as one group, their rules interleaved (each world's k-th rule before
    anyone's (k+1)-th). vmalert's replay evaluates a group rule by rule over the whole range, and
    VictoriaMetrics takes a few seconds to make a rule's records searchable: interleaving puts
    every rule at least ``len(worlds)`` rule delays after the records it reads. (Live evaluation
    reads the previous step's records, a minute old.)"""
    lists = []
    for w in worlds:
        groups = prom.world_rules(prepared.groups, w, base)["groups"]
        (group,) = [g for g in groups if g["name"].startswith("m3mon-slo-")]
        lists.append(group["rules"])
    rules = [r for row in itertools.zip_longest(*lists) for r in row if r is not None]
    return {"name": "m3mon-slo-unaligned", "interval": "1m", "rules": rules}


def _model(w: World, tmp: Path) -> Any:
    (tmp / f"{w.name}.yaml").write_text(config([w]))
    return load_model(tmp / f"{w.name}.yaml")


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _counts(vm: str, w: World, at: float) -> dict[str, tuple[float, float]]:
    q = prom.counts_query(f'{{class="{w.name}",slo="{slo_name(w)}"}}')
    data = localhttp.get(
        f"{vm}/api/v1/query", params={"query": q, "time": at, "step": "1s"}, timeout=30
    ).json()
    return prom.window_counts([(r["metric"], float(r["value"][1])) for r in data["data"]["result"]])


def _fired(vm: str, w: World, start: float, end: float) -> list[str]:
    q = f'ALERTS{{alertstate="firing",class="{w.name}"}}'
    data = localhttp.get(f"{vm}/api/v1/query_range", params={"query": q, "start": start, "end": end, "step": "60s"},
                     timeout=30).json()  # fmt: skip
    return sorted({r["metric"]["alertname"] for r in data["data"]["result"]} & set(ALERTS))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    return prepare(WORLDS, tmp_path_factory.mktemp("vm-worlds"))


def test_vmalert_counts_like_prometheus_maintenance_included(
    prepared: Prepared, promtool: str, tmp_path: Path
) -> None:
    vm_bin = require_binary("victoria-metrics", "/usr/bin/victoria-metrics")
    vmalert = require_binary("vmalert", "/usr/bin/vmalert")
    base = math.floor((time.time() - MINUTES * 60 - 7200) / 3600) * 3600  # hours in the past, a whole hour
    port = free_port()
    vm = f"http://127.0.0.1:{port}"
    group = _replayed_group(WORLDS, base, prepared)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False))
    with running_process([vm_bin, f"-storageDataPath={tmp_path / 'vm'}", f"-httpListenAddr=127.0.0.1:{port}",
                          "-search.disableCache", "-retentionPeriod=100y", "-search.latencyOffset=0s"],
                         tmp_path / "vm.log", f"{vm}/health"):  # fmt: skip
        for w in WORLDS:
            (tmp_path / w.name).mkdir()
            body = _import_lines(w, base, tmp_path / w.name, prepared)
            assert localhttp.post(f"{vm}/api/v1/import", content=body, timeout=60).status_code == 204
        localhttp.get(f"{vm}/internal/force_flush", timeout=30)
        replay = [vmalert, f"-rule={tmp_path / 'rules.yml'}", f"-datasource.url={vm}", f"-remoteWrite.url={vm}",
                  f"-replay.timeFrom={_rfc3339(base)}", f"-replay.timeTo={_rfc3339(base + MINUTES * 60)}",
                  "-replay.rulesDelay=1s", "-remoteWrite.flushInterval=200ms", "-replay.disableProgressBar",
                  "-datasource.queryStep=1m",
                  f"-httpListenAddr=127.0.0.1:{free_port()}"]  # fmt: skip
        done = subprocess.run(replay, capture_output=True, text=True, timeout=540, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        localhttp.get(f"{vm}/internal/force_flush", timeout=30)
        time.sleep(2)
        problems = []
        for w in WORLDS:
            proc = prom.start(
                promtool, tmp_path / f"{w.name}-promtool", w, prepared.groups, _model(w, tmp_path)
            )
            expected = prom.finish(proc, w)
            oracle = Oracle(w, "prometheus")
            for m in (m for m in prom.checks() if m not in w.skipped):
                got = _counts(vm, w, base + m * 60)
                for window in WINDOW_SECONDS:
                    mine, theirs = got.get(window, (0.0, 0.0)), expected.counts[m].get(window, (0.0, 0.0))
                    (lo_v, lo_b), (hi_v, hi_b) = oracle.bounds(m * 60.0 + w.eval_offset, window)
                    if any(abs(a - b) > 1e-6 for a, b in zip(mine, theirs, strict=True)):
                        problems.append(f"{w.name} min {m} {window}: vmalert {mine}, promtool {theirs}")
                    if not (lo_v <= mine[0] <= hi_v and lo_b <= mine[1] <= hi_b):
                        problems.append(
                            f"{w.name} min {m} {window}: vmalert {mine} outside {(lo_v, lo_b)}..{(hi_v, hi_b)}"
                        )
            if oracle.clean():
                fired = _fired(vm, w, base, base + MINUTES * 60)
                if fired:
                    problems.append(
                        f"{w.name}: {fired} fired in vmalert with no bad event outside maintenance"
                    )
        assert not problems, "\n".join(problems[:30])
