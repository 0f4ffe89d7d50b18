"""The demo's configuration: the example config, pointed at local simulators, with short intervals
and the real traffic of a few tenants on the interactive pool.

The derived file is written into the demo's output folder so a user can read it and reuse it
with ``m3mon run -c``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from monitor.sim.tenants import TenantMix

#: Probe interval per class in the demo (seconds); long-context classes probe less often.
DEMO_PROBE_INTERVAL = {"repo-analysis-128k": 15, "extended-context": 30}
DEFAULT_DEMO_PROBE_INTERVAL = 5
DEMO_SCRAPE_INTERVAL = 2
#: The demo tells an hour's story in minutes, far below the probe volume the burn alerts' default
#: minimum-events guard asks for (docs/slo-events.md: 70 events an hour at 99.9 %). Its SLOs take
#: this explicit guard instead; a real deployment keeps the derived default.
DEMO_MIN_EVENTS = 10
#: Long prompts are kept representative but bounded, so the demo fits in a few minutes.
DEMO_LONG_PROMPT_CAP = 24000

#: The demo's real traffic (docs/demo.md, "Tenants"): the simulator's skewed tenant mix, sent to
#: the interactive pool and counted for its chat class. One in six of the slow tenant's requests is
#: long enough (1000 tokens, about 6 s of decode) to miss the class's 5 s end-to-end limit, which
#: every short (16-token) answer meets: its goodput (about 83 %) misses its 95 % objective by a
#: slow burn, a budget the week's report shows overspent, while the other tenants meet theirs.
DEMO_MIX = TenantMix(slow_tokens=1000, slow_long_share=1 / 6)
TRAFFIC_POOL = "m3-interactive"
TRAFFIC_CLASS = "interactive-32k"
#: Requests of the mix per second at peak load: live (the simulator serves them), and in the
#: generated history (fewer: a week of them at the live rate would be most of the store).
LIVE_TRAFFIC_RATE = 1.0
HISTORY_TRAFFIC_RATE = 0.05
NAMED_TENANTS = [*DEMO_MIX.heavy, DEMO_MIX.slow]
TRAFFIC: dict[str, Any] = {
    "tenants": NAMED_TENANTS,
    "top_tenants": 3,
    "priority_bands": [{"name": "high", "up_to": -1}, {"name": "normal"}],
}
#: The class's limit the slow tenant misses, and its real-traffic goodput per named tenant and
#: ``other``. (No SLO per priority band: the slow tenant sends at every priority, so each band
#: would miss with it; the bands label the counter `m3mon_traffic_requests_total{priority}`.)
TRAFFIC_SLOS = [
    {"name": "e2e-p95", "sli": "e2e", "threshold": "5s", "objective": 95, "source": "probes"},
    {"name": "goodput", "sli": "goodput", "objective": 95, "source": "traffic",
     "tenants": [*NAMED_TENANTS, "other"]},
]  # fmt: skip


def demo_database(out: Path) -> Path:
    """The demo's SQLite file, in a folder of its own (the history's outage renames that folder)."""
    return out / "db" / "m3mon.db"


def demo_config(example: Path, out: Path, sim_urls: dict[str, str], exporter_port: int) -> dict[str, Any]:
    """The example config rewritten for the demo (a plain dict, validated when loaded)."""
    cfg: dict[str, Any] = yaml.safe_load(example.read_text(encoding="utf-8"))
    _real_traffic(cfg)
    for ep in cfg["endpoints"]:
        ep["base_url"] = sim_urls[ep["name"]]
        ep["scrape_interval"] = f"{DEMO_SCRAPE_INTERVAL}s"
        ep.pop("api_key_env", None)
    for cls in cfg["request_classes"]:
        probe = cls.setdefault("probe", {})
        probe["interval"] = f"{DEMO_PROBE_INTERVAL.get(cls['name'], DEFAULT_DEMO_PROBE_INTERVAL)}s"
        probe["jitter"] = "1s"
        probe["timeout"] = "60s"
        if "long_prompt_tokens" in probe:
            probe["long_prompt_tokens"] = min(probe["long_prompt_tokens"], DEMO_LONG_PROMPT_CAP)
        if "tool_delay" in probe:
            probe["tool_delay"] = "50ms"
        for slo in cls.get("slos", []):
            slo.setdefault("min_events", DEMO_MIN_EVENTS)
    cfg["storage"] = {"url": f"sqlite:///{demo_database(out)}", "buffer_dir": str(out / "spool")}
    cfg["exporter"] = {"listen": f"127.0.0.1:{exporter_port}"}
    cfg["alerting"]["monitor_receiver_url"] = f"http://127.0.0.1:{exporter_port}/alertmanager"
    cfg["report"] = {"recipients": [], "timezone": "UTC"}
    return cfg


def _real_traffic(cfg: dict[str, Any]) -> None:
    """Tenants and priority bands, the traffic pool's spans counted for its chat class (the pool
    serves three 32K classes: docs/slo-events.md, routing), and that class's traffic SLOs. A config
    (``m3mon demo --config``) without that pool serving that class gets none of it."""
    pool = next((e for e in cfg["endpoints"] if e["name"] == TRAFFIC_POOL), None)
    cls = next((c for c in cfg["request_classes"] if c["name"] == TRAFFIC_CLASS), None)
    if pool is None or cls is None or TRAFFIC_CLASS not in pool.get("classes", []):
        return
    cfg["traffic"] = copy.deepcopy(TRAFFIC)
    pool["span_class"] = TRAFFIC_CLASS
    cls["slos"] = [*cls.get("slos", []), *copy.deepcopy(TRAFFIC_SLOS)]


def write_demo_config(cfg: dict[str, Any], path: Path) -> None:
    header = "# m3mon demo configuration: examples/monitor.yaml pointed at local simulators.\n"
    path.write_text(header + yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
