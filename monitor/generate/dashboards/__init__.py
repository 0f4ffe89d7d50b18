"""Grafana dashboards built with grafanalib: SLO overview, fleet, SLOs, latency, caches, spec decode,
probes, engine; tenants when the configuration declares SLOs per tenant or priority band."""

from __future__ import annotations

from typing import Any

from monitor import conventions as cv
from monitor.generate.dashboards import engine, engine_extras, fleet, overview, probes, tenants
from monitor.model import Model


def all_dashboards(model: Model, source: str = "") -> dict[str, dict[str, Any]]:
    """``{uid: dashboard JSON}`` for every dashboard."""
    banner = cv.DO_NOT_EDIT.format(source=source or model.source)
    builders = (
        overview.build,
        fleet.build_fleet,
        fleet.build_slo,
        engine_extras.build_latency,
        engine_extras.build_cache,
        engine_extras.build_spec,
        probes.build,
        engine.build,
        *((tenants.build,) if tenants.has_tenants(model) else ()),
    )
    out = {}
    for build in builders:
        d = build(model, banner)
        out[d["uid"]] = d
    return out
