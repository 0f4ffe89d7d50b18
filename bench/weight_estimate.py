"""Samples a rule file's range selectors read per evaluation once the history is long (an estimate).

bench/rules_weight.py measures a young Prometheus, whose windows hold minutes of samples. Here each
range selector ``name{…}[W]`` of a rule reads W / interval samples of every series it matches,
the interval being the rule evaluation interval for a record (a name with a colon) and the scrape
interval for a raw series, at production intervals (:data:`EVALUATION`, :data:`SCRAPE`); the
series are counted in the running Prometheus. Instant selectors (a sample or two each) are left
out. Counted over the SLOs of the first replica (``-k0``: each of the example's 18 SLOs once) and
divided by their number.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

#: Production intervals: the SLO groups' (and Sloth's usual) evaluation interval, and the scrape.
EVALUATION = 60.0
SCRAPE = 15.0
RANGE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\[(\d+)([smhd])\]")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _series(url: str, selector: str, cache: dict[str, int]) -> int:
    if selector not in cache:
        r = httpx.get(f"{url}/api/v1/query", params={"query": f"count({selector})"}, timeout=30).json()
        result = r["data"]["result"] if r.get("status") == "success" else []
        cache[selector] = int(float(result[0]["value"][1])) if result else 0
    return cache[selector]


def _first_replica(group: dict[str, Any]) -> bool:
    return str(group["name"]).endswith("-k0")


def samples_per_slo(url: str, doc: dict[str, Any], slos: int) -> float:
    """Samples the range selectors of the rules of the ``slos`` SLOs named ``-k0`` read per
    evaluation, per SLO."""
    cache: dict[str, int] = {}
    total = 0.0
    for group in filter(_first_replica, doc["groups"]):
        for rule in group["rules"]:
            for name, sel, n, unit in RANGE.findall(str(rule["expr"])):
                interval = EVALUATION if ":" in name else SCRAPE
                total += int(n) * UNITS[unit] / interval * _series(url, name + sel, cache)
    return total / slos
