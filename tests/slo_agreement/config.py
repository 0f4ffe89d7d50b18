"""A scenario as a real m3mon configuration file (``m3mon/v1``): one request class, its pools.

Each scenario is a request class named after it, served by one endpoint per pool
(``<scenario>-<pool>``); probes of the class run against the first pool. The same text feeds
``m3mon generate`` (all scenarios in one file) and the store path (one file per scenario).
Maintenance windows are ``maintenance:`` entries named ``<scenario>-<window>``, at T0 plus their
minutes (UTC, RFC 3339): a whole-class window as ``classes`` and ``duration``, a per-pool one as
``endpoints`` and ``end``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.slo_agreement.streams import Scenario, SLODef, Window

MODEL_ID = "MiniMaxAI/MiniMax-M3"
JOB_VLLM, JOB_MONITOR = "vllm", "m3mon"  # the configuration's defaults, which the rules select on
EXPORTER = "127.0.0.1:9464"
#: Where scenario time 0 is for the store (Unix seconds): 2026-01-05 00:00 UTC, a Monday.
T0 = 1_767_571_200.0


def _slo(scn: Scenario, s: SLODef | None = None) -> dict[str, Any]:
    s = s if s is not None else scn.slo
    out: dict[str, Any] = {
        "name": s.sli.replace("_", "-"),
        "sli": s.sli,
        "objective": float(s.objective),
        "period": f"{s.period_days}d",
        "source": s.source,
    }
    if s.threshold is not None:
        out["threshold"] = f"{float(s.threshold)}s"  # a latency is written with its unit
    if s.min_events is not None:
        out["min_events"] = s.min_events
    return out


def slo_name(scn: Scenario) -> str:
    return str(_slo(scn)["name"])


def base_url(scn: Scenario, pool: str) -> str:
    return f"http://{scn.endpoint(pool)}:8000"


def instance(scn: Scenario, pool: str) -> str:
    """The ``instance`` label Prometheus gives the pool's target (host:port of its metrics URL)."""
    return f"{scn.endpoint(pool)}:8000"


def _parts(scn: Scenario) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    endpoints = [
        {"name": scn.endpoint(p.name), "base_url": base_url(scn, p.name), "model": MODEL_ID,
         "classes": [scn.name], "scrape_interval": "60s"}
        for p in scn.pools
    ]  # fmt: skip
    klass = {
        "name": scn.name,
        "max_context_tokens": 32768,
        "probes": list(scn.kinds),
        "probe": {"interval": scn.probe_interval, "timeout": scn.probe_timeout, "jitter": 0.001},
        "slos": [_slo(scn), *(_slo(scn, limit) for limit in scn.limits)],
    }
    return endpoints, klass


def window_name(scn: Scenario, w: Window) -> str:
    return f"{scn.name}-{w.name}"


def _at(minute: int) -> str:
    return dt.datetime.fromtimestamp(T0 + minute * 60, tz=dt.UTC).isoformat()


def _maintenance(scn: Scenario, w: Window) -> dict[str, Any]:
    out: dict[str, Any] = {"name": window_name(scn, w), "start": _at(w.start)}
    if w.pools:
        out |= {"end": _at(w.end), "endpoints": [scn.endpoint(p) for p in w.pools]}
    else:
        out |= {"duration": f"{w.end - w.start}m", "classes": [scn.name]}
    return out | {"reason": f"agreement scenario {scn.name}"}


def config(scenarios: Sequence[Scenario], storage: Path | None = None) -> str:
    """The configuration text of ``scenarios`` (storage under ``storage`` when given)."""
    doc: dict[str, Any] = {"version": "m3mon/v1", "endpoints": [], "request_classes": []}
    for scn in scenarios:
        endpoints, klass = _parts(scn)
        doc["endpoints"] += endpoints
        doc["request_classes"].append(klass)
    windows = [_maintenance(scn, w) for scn in scenarios for w in scn.maintenance]
    if windows:
        doc["maintenance"] = windows
    if storage is not None:
        doc["storage"] = {
            "url": f"sqlite:///{storage / 'db' / 'm3mon.db'}",
            "buffer_dir": str(storage / "spool"),
        }
    doc["exporter"] = {"listen": EXPORTER}
    return yaml.safe_dump(doc, sort_keys=False)
