"""A world as a real m3mon configuration (``m3mon/v1``): one class, its pools, its windows.

The class is named after the world (``u<seed>``; a real-traffic world's ``t<seed>``), served by one endpoint per pool
(``u<seed>-<pool>``, scrape interval as the world's); its one SLO is the world's. Maintenance
windows are ``maintenance:`` entries named ``u<seed>-<window>`` at T0 plus their seconds (UTC):
the whole class as ``classes``, one pool as ``endpoints``. The same text feeds ``m3mon generate``
(every world of a sweep in one file) and each replica of the store path (its own spool).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.slo_agreement.unaligned.pages import MODEL_ID, T0, endpoint
from tests.slo_agreement.unaligned.world import World


def slo_name(world: World) -> str:
    return f"{world.source}-{world.sli}"


def _slo(world: World) -> dict[str, Any]:
    out: dict[str, Any] = {"name": slo_name(world), "sli": world.sli, "objective": float(world.objective),
                           "period": "30d", "source": world.source}  # fmt: skip
    if world.threshold is not None:
        out["threshold"] = f"{float(world.threshold)}s"  # a latency is written with its unit
    return out


def _at(seconds: float) -> str:
    return dt.datetime.fromtimestamp(T0 + seconds, tz=dt.UTC).isoformat()


def _parts(world: World) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    endpoints = [
        {"name": endpoint(world, p), "base_url": f"http://{endpoint(world, p)}:8000", "model": MODEL_ID,
         "classes": [world.name], "scrape_interval": f"{world.interval[p]:g}s"}
        for p in world.pools
    ]  # fmt: skip
    klass = {
        "name": world.name,
        "max_context_tokens": 32768,
        "probes": ["chat"],
        "probe": {"interval": f"{world.probe_interval:g}s", "timeout": "5s", "jitter": "0.5s"},
        "slos": [_slo(world)],
    }
    windows = []
    for w in world.maintenance:
        scope = {"endpoints": [endpoint(world, p) for p in w.pools]} if w.pools else {"classes": [world.name]}
        windows.append({"name": f"{world.name}-{w.name}", "start": _at(w.start), "end": _at(w.end), **scope,
                        "reason": f"unaligned world {world.seed}"})  # fmt: skip
    return endpoints, klass, windows


def config(worlds: Sequence[World], folder: Path | None = None, spool: str = "spool") -> str:
    """The configuration of ``worlds`` (a SQLite store and spool ``spool`` under ``folder`` when given)."""
    doc: dict[str, Any] = {"version": "m3mon/v1", "endpoints": [], "request_classes": []}
    windows: list[dict[str, Any]] = []
    for world in worlds:
        endpoints, klass, mine = _parts(world)
        doc["endpoints"] += endpoints
        doc["request_classes"].append(klass)
        windows += mine
    if windows:
        doc["maintenance"] = windows
    if folder is not None:
        doc["storage"] = {"url": f"sqlite:///{folder / 'db' / 'm3mon.db'}", "buffer_dir": str(folder / spool)}
    return yaml.safe_dump(doc, sort_keys=False)
