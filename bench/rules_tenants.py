"""Benchmark: SLO rules at tenant scale — a group per tenant SLO, or one group per SLO over a tenant label.

``M3MON_BENCH_SLOS`` SLOs (default 50: the example config's five classes, its SLOs replicated
within them) for each of ``M3MON_BENCH_TENANTS`` tenants (default 100: 5,000 tenant SLOs). Every
raw series carries a ``tenant`` label: Prometheus scrapes bench/weight_source.py's monitor and
vLLM pages once per tenant, the tenant a target label. Four rule files in one Prometheus:

* ``ours-per-tenant``: the generated SLO and time-to-exhaustion groups of each SLO once per
  tenant, every selector narrowed to ``tenant="<t>"`` and every record labelled with it (what
  declaring each tenant's SLOs as SLOs of their own generates: a group per tenant SLO);
* ``ours-by-tenant``: the generated groups once per SLO, every aggregation and vector match
  carried over ``tenant`` (``sum by (tenant)``, ``by (…, tenant)``, ``on (…, tenant)``): the same
  records, one series per tenant each, from one group per SLO;
* ``sloth-per-tenant``: Sloth's form (bench/sloth_form.py) per tenant SLO, the baseline;
* ``sloth-by-tenant``: Sloth's form per SLO with its SLI queries summed ``by (tenant)``;

each under renamed records and alerts, so nothing collides. After the warm-up, over the rounds
it prints per tenant SLO the recording rules, the series written and the rule-group evaluation
seconds (Prometheus' own gauges, summed per rule file, median over rounds), each as a ratio to
``sloth-per-tenant``; then checks that both of our forms recorded the same error ratios (every
window's ``m3mon:slo_error_ratio`` of every tenant SLO, at one instant).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rules_weight import (  # noqa: E402  # noqa: E402
    INTERVAL,
    ROUNDS,
    WARMUP,
    measure,
    ours,
    prometheus_config,
    start_prometheus,
    stop,
    synthetic_config,
)
from bench.sloth_form import sloth_groups  # noqa: E402
from bench.weight_source import Source  # noqa: E402
from monitor.model import Model  # noqa: E402

SLOS = int(os.environ.get("M3MON_BENCH_SLOS", "50"))
TENANTS = int(os.environ.get("M3MON_BENCH_TENANTS", "100"))
FORMS = ("ours-per-tenant", "ours-by-tenant", "sloth-per-tenant", "sloth-by-tenant")
SELECTOR = re.compile(r"\{([^{}]*)\}")
GROUPING = re.compile(r"\b(by|on) \(([^()]*)\)")
BARE = re.compile(r"\b(sum)\(")  # Sloth's max(…) without (sloth_window) keeps the tenant already


def tenant_ids() -> list[str]:
    return [f"t{i:04d}" for i in range(TENANTS)]


def _narrow(expr: str, tenant: str) -> str:
    """Every selector of ``expr`` narrowed to one tenant."""
    return SELECTOR.sub(
        lambda m: "{" + ",".join(p for p in (m.group(1), f'tenant="{tenant}"') if p) + "}", expr
    )


def _carry(expr: str) -> str:
    """Every aggregation and vector match of ``expr`` carried over the tenant label."""
    expr = GROUPING.sub(lambda m: f"{m.group(1)} ({', '.join(p for p in (m.group(2), 'tenant') if p)})", expr)
    return BARE.sub(lambda m: f"{m.group(1)} by (tenant) (", expr)


def per_tenant(groups: list[dict[str, Any]], tenants: list[str]) -> list[dict[str, Any]]:
    out = []
    for t in tenants:
        for g in groups:
            rules = [
                {**r, "expr": _narrow(r["expr"], t), "labels": {**r.get("labels", {}), "tenant": t}}
                for r in g["rules"]
            ]
            out.append({**g, "name": f"{g['name']}-{t}", "rules": rules})
    return out


def by_tenant(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**g, "rules": [{**r, "expr": _carry(r["expr"])} for r in g["rules"]]} for g in groups]


def rule_files(model: Model, tmp: Path) -> dict[str, Path]:
    mine = yaml.safe_load(ours(model, "ours"))["groups"]
    sloth = sloth_groups(model, f"{INTERVAL}s")
    docs = {
        "ours-per-tenant": per_tenant(mine, tenant_ids()),
        "ours-by-tenant": by_tenant(mine),
        "sloth-per-tenant": per_tenant(sloth, tenant_ids()),
        "sloth-by-tenant": by_tenant(sloth),
    }
    files = {}
    for name, groups in docs.items():
        files[name] = tmp / f"{name}.rules.yml"
        renamed = [{**g, "rules": [_renamed(r, name) for r in g["rules"]]} for g in groups]
        files[name].write_text(json.dumps({"groups": renamed}))  # YAML to Prometheus; dumped in C
    return files


def _renamed(rule: dict[str, Any], form: str) -> dict[str, Any]:
    """A rule under the form's own record and alert names (``m3mon:`` and Sloth's ``slo:``)."""
    prefix = re.sub(r"[^a-z]", "", form)

    def rename(s: str) -> str:
        return re.sub(r"(?<![\w:])(m3mon:|slo:)", lambda m: f"{prefix}{m.group(1)}", s)

    out = {**rule, "expr": rename(rule["expr"])}
    if "record" in rule:
        out["record"] = rename(rule["record"])
    else:
        out["alert"] = prefix + rule["alert"]
        out.pop("annotations", None)  # templates query records by their names; never evaluated here
    return out


def record_counts(files: dict[str, Path]) -> dict[str, int]:
    return {
        name: sum(1 for g in json.loads(f.read_text())["groups"] for r in g["rules"] if "record" in r)
        for name, f in files.items()
    }


def tenant_config(source: Source, files: list[Path]) -> dict[str, Any]:
    """Prometheus' configuration: every target once per tenant, the tenant a target label."""
    config = prometheus_config(source, files)
    for job in config["scrape_configs"]:
        job["static_configs"] = [
            {**sc, "labels": {**sc.get("labels", {}), "tenant": t}}
            for sc in job["static_configs"]
            for t in tenant_ids()
        ]
    return config


def ratios(url: str, name: str) -> dict[tuple[str, ...], float]:
    prefix = re.sub(r"[^a-z]", "", name)
    got = httpx.get(
        f"{url}/api/v1/query",
        params={"query": f'{{__name__=~"{prefix}m3mon:slo_error_ratio:.*"}}'},
        timeout=60,
    ).json()["data"]["result"]
    return {
        (
            r["metric"]["__name__"].split(":", 1)[1],
            r["metric"]["class"],
            r["metric"]["slo"],
            r["metric"]["tenant"],
        ): float(r["value"][1])
        for r in got
    }


def agreement(url: str) -> str:
    """Whether both of our forms recorded the same error ratios (both read at one instant; the
    groups evaluate at different offsets, so a ratio may move between them: counted apart)."""
    a, b = ratios(url, "ours-per-tenant"), ratios(url, "ours-by-tenant")
    both = [k for k in a if k in b]
    same = sum(1 for k in both if abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(a[k])))
    worst = max((abs(a[k] - b[k]) / max(abs(a[k]), 1e-12) for k in both), default=0.0)
    return (
        f"error-ratio records: {len(a):,} per-tenant, {len(b):,} by-tenant, {len(set(a) ^ set(b)):,} in "
        f"one form only; {same:,} equal, largest relative difference {worst:.2%} (the forms' groups "
        "evaluate at different offsets within an interval)"
    )


def report(n: int, rules: dict[str, int], rounds: dict[str, list[dict[str, float]]], minutes: float) -> None:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[name]) / n

    base = {
        "rules": rules["sloth-per-tenant"] / n,
        "samples": med("sloth-per-tenant", "samples"),
        "seconds": med("sloth-per-tenant", "seconds"),
    }
    print(
        f"{SLOS} SLOs x {TENANTS} tenants = {n:,} tenant SLOs, {ROUNDS} rounds of {INTERVAL}s after "
        f"{minutes:.1f} min of history (one Prometheus; per tenant SLO, ratios to sloth-per-tenant)"
    )
    for name in FORMS:
        r, samples, secs = rules[name] / n, med(name, "samples"), med(name, "seconds")
        print(
            f"{name:17s} {r:8.3f} recording rules ({r / base['rules']:.3f}x)  {samples:6.1f} series "
            f"written ({samples / base['samples']:.2f}x)  {secs * 1e3:7.3f} ms evaluation "
            f"({secs / base['seconds']:.2f}x)  missed iterations {rounds[name][-1]['missed']:.0f}"
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3mon-tenants-") as tmp_name:
        tmp = Path(tmp_name)
        model = synthetic_config(SLOS, tmp)
        files = rule_files(model, tmp)
        source = Source(model)
        threading.Thread(target=source.serve, daemon=True).start()
        proc, url = start_prometheus(tenant_config(source, list(files.values())), tmp)
        try:
            started = time.monotonic()
            time.sleep(WARMUP)
            rounds = measure(url)
            minutes = (time.monotonic() - started) / 60
            report(len(model.slos) * TENANTS, record_counts(files), rounds, minutes)
            print(agreement(url))
            print(f"series in the head: {per_file_head(url):,}")
        finally:
            stop(proc)
            source.shutdown()


def per_file_head(url: str) -> int:
    """Series in Prometheus' head block (its own /metrics)."""
    line = next(
        x
        for x in httpx.get(f"{url}/metrics", timeout=30).text.splitlines()
        if x.startswith("prometheus_tsdb_head_series ")
    )
    return int(float(line.split()[1]))


if __name__ == "__main__":
    main()
