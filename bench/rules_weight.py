"""Benchmark: how heavy the generated SLO rules are next to Sloth's, in one real Prometheus.

Builds a model of ``M3MON_BENCH_SLOS`` SLOs (default 1,000: the example config's 18 SLOs
replicated within their classes, ``<name>-k<i>``), writes for it

* ``ours``: the generated SLO and time-to-exhaustion groups (``monitor.generate``);
* ``ours-no-maintenance``: the same without the maintenance exclusion (no sampled-at and
  in-maintenance records, step records without the overlap test);
* ``ours-no-guard``: the same without the minimum-events guard term in the burn alerts;
* ``sloth``: Sloth's documented form for the same SLOs (``bench/sloth_form.py``), the baseline;

(the variants under renamed records and alerts, so nothing collides), and loads all four into one
Prometheus that scrapes a metric source in this process: the monitor's real exporter
(``ProbeMetrics``, one probe result per target each scrape, a tenth failing) and a vLLM page per
endpoint with counters that rise every second. Every group is evaluated every
``M3MON_BENCH_INTERVAL`` (default 20s); after a warm-up, over ``M3MON_BENCH_ROUNDS`` rounds
(default 6) it reads Prometheus' own ``prometheus_rule_group_last_duration_seconds`` and
``prometheus_rule_group_last_evaluation_samples`` (samples written per evaluation: records and
alert series), summed per rule file, and prints per SLO the recording rules, the series written
and the evaluation seconds (median over rounds), each as a ratio to Sloth's.

``M3MON_BENCH_WARMUP`` (seconds, default four intervals) sets the history before the first round.
The history is minutes, not days: window sums (ours over step records, Sloth's ``rate()`` over
raw samples and its period's ``sum_over_time``) read more samples as history grows, so the
seconds are those of a young Prometheus. Prometheus and the source are stopped at the end,
whatever happens.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sloth_form import sloth_groups  # noqa: E402
from bench.weight_estimate import EVALUATION, SCRAPE, samples_per_slo  # noqa: E402
from bench.weight_source import Source, free_port  # noqa: E402
from monitor.generate import rules as monitor_rules  # noqa: E402
from monitor.generate import sli  # noqa: E402
from monitor.generate.exhaustion import exhaustion_groups  # noqa: E402
from monitor.generate.slo_rules import slo_groups  # noqa: E402
from monitor.model import Model, load_model  # noqa: E402

SLOS = int(os.environ.get("M3MON_BENCH_SLOS", "1000"))
ROUNDS = int(os.environ.get("M3MON_BENCH_ROUNDS", "6"))
INTERVAL = int(os.environ.get("M3MON_BENCH_INTERVAL", "20"))
VARIANTS = os.environ.get("M3MON_BENCH_VARIANTS", "1") != "0"
#: Seconds of history before the first measured round (default: four evaluations).
WARMUP = int(os.environ.get("M3MON_BENCH_WARMUP", str(4 * INTERVAL)))
#: Seconds to wait for Prometheus to load the rules and become ready.
READY = int(os.environ.get("M3MON_BENCH_READY", "120"))
GUARD_TERM = r"\n  and\n    sum_over_time\([^\n]*\) >= [^\n]*\n"


def synthetic_config(n: int, tmp: Path) -> Model:
    """The example config with its SLOs replicated within their classes up to ``n`` SLOs."""
    doc = yaml.safe_load((ROOT / "examples" / "monitor.yaml").read_text())
    classes = doc["request_classes"]
    originals = {c["name"]: c["slos"] for c in classes}
    for c in classes:
        c["slos"] = []
    made, k = 0, 0
    while made < n:
        for c in classes:
            for slo in originals[c["name"]]:
                if made < n:
                    c["slos"].append({**slo, "name": f"{slo['name']}-k{k}"})
                    made += 1
        k += 1
    classes[:] = [c for c in classes if c["slos"]]
    path = tmp / "monitor.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_model(path)


def _no_maintenance(model: Model, group: dict[str, Any]) -> dict[str, Any]:
    """A rendered SLO group without the maintenance exclusion (steps are the plain rise)."""
    slo = next(s for s in model.slos if f"m3mon-slo-{s.request_class}-{s.name}" == group["name"])
    rules = []
    for r in group["rules"]:
        if r.get("record", "").endswith(":timestamp"):
            continue
        if r.get("record", "").endswith(":step"):
            kind = "bad" if "_bad:" in r["record"] else "valid"
            c = sli.cumulative(model, slo)
            now = c.bad if kind == "bad" else c.valid
            before = sli.previous(f"m3mon:slo_events_{kind}:cumulative", slo)
            r = {**r, "expr": f"sum(\n  {sli.rise(now, before)}\n)"}
        rules.append(r)
    return {**group, "rules": rules}


def ours(model: Model, variant: str) -> str:
    """The rule file of ``variant``, records and alerts renamed for the variants."""
    groups = [g.render(model.alerting) for g in [*slo_groups(model), *exhaustion_groups(model)]]
    groups = [{**g, "interval": f"{INTERVAL}s"} for g in groups]
    if variant == "ours-no-maintenance":
        groups = [_no_maintenance(model, g) if g["name"].startswith("m3mon-slo-") else g for g in groups]
    text = monitor_rules.dump_yaml({"groups": groups}, f"bench {variant}")
    if variant == "ours-no-guard":
        text = yaml.safe_dump(_without_guard(yaml.safe_load(text)), sort_keys=False, width=1000)
    if variant != "ours":
        prefix = re.sub(r"[^a-z]", "", variant)
        text = text.replace("m3mon:", f"{prefix}:").replace("alert: SLO", f"alert: {prefix}SLO")
    return text


def _without_guard(doc: dict[str, Any]) -> dict[str, Any]:
    for g in doc["groups"]:
        for r in g["rules"]:
            if r.get("alert", "").startswith("SLOErrorBudgetBurn"):
                r["expr"] = re.sub(GUARD_TERM, "\n", r["expr"])
    return doc


def prometheus_config(source: Source, files: list[Path]) -> dict[str, Any]:
    address = source.address
    vllm = [{"targets": [address], "labels": {"endpoint": ep, "__metrics_path__": f"/vllm/{ep}"}}
            for ep in source.endpoints]  # fmt: skip
    return {
        "global": {"scrape_interval": "10s", "evaluation_interval": f"{INTERVAL}s"},
        "scrape_configs": [
            {
                "job_name": "m3mon",
                "metrics_path": "/monitor",
                "static_configs": [{"targets": [source.address]}],
            },
            {"job_name": "vllm", "static_configs": vllm},
        ],
        "rule_files": [str(f) for f in files],
    }


def start_prometheus(config: dict[str, Any], tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = ["prometheus", f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}"]  # fmt: skip
    with (tmp / "prometheus.log").open("ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit((tmp / "prometheus.log").read_text()[-2000:])
        try:
            if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop(proc)
    raise SystemExit("Prometheus did not become ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def per_file(url: str) -> dict[str, dict[str, float]]:
    """Per rule file: the sums over its groups of Prometheus' rule-group gauges."""
    wanted = {"prometheus_rule_group_last_duration_seconds": "seconds",
              "prometheus_rule_group_last_evaluation_samples": "samples",
              "prometheus_rule_group_iterations_missed_total": "missed"}  # fmt: skip
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=30).text):
        for s in family.samples:
            if s.name in wanted:
                name = Path(s.labels["rule_group"].split(";")[0]).name.split(".")[0]
                row = out.setdefault(name, {"seconds": 0.0, "samples": 0.0, "missed": 0.0})
                row[wanted[s.name]] += s.value
    return out


def record_counts(files: dict[str, Path]) -> dict[str, int]:
    out = {}
    for name, path in files.items():
        doc = yaml.safe_load(path.read_text())
        out[name] = sum(1 for g in doc["groups"] for r in g["rules"] if "record" in r)
    return out


def measure(url: str) -> dict[str, list[dict[str, float]]]:
    rounds: dict[str, list[dict[str, float]]] = {}
    for _ in range(ROUNDS):
        time.sleep(INTERVAL)
        for name, row in per_file(url).items():
            rounds.setdefault(name, []).append(row)
    return rounds


def report(
    n: int,
    rules: dict[str, int],
    rounds: dict[str, list[dict[str, float]]],
    minutes: float,
    later: dict[str, float],
) -> None:
    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[name]) / n

    secs0, samples0, rules0 = med("sloth", "seconds"), med("sloth", "samples"), rules["sloth"] / n
    print(f"{n:,} SLOs, {ROUNDS} rounds of {INTERVAL}s after {minutes:.1f} min of history (one Prometheus)")
    for name in rules:
        per_slo, secs, samples = rules[name] / n, med(name, "seconds"), med(name, "samples")
        print(
            f"{name:20s} {per_slo:5.1f} recording rules/SLO ({per_slo / rules0:.2f}x Sloth)  "
            f"{samples:6.1f} series written/SLO ({samples / samples0:.2f}x)  "
            f"{secs * 1e3:7.3f} ms evaluation/SLO ({secs / secs0:.2f}x)  "
            f"missed iterations {rounds[name][-1]['missed']:.0f}"
        )
    for name, samples in later.items():
        ratio = samples / later["sloth"]
        print(
            f"{name:20s} {samples:12,.0f} samples read/evaluation/SLO with a long history "
            f"(estimate, {EVALUATION:.0f}s evaluation, {SCRAPE:.0f}s scrape; {ratio:.2f}x Sloth)"
        )
    costs = (("ours-no-maintenance", "maintenance exclusion"), ("ours-no-guard", "minimum-events guard"))
    for name, what in (c for c in costs if c[0] in rules):
        extra = med("ours", "seconds") - med(name, "seconds")
        print(
            f"{what} costs {rules['ours'] / n - rules[name] / n:.1f} rules/SLO, "
            f"{med('ours', 'samples') - med(name, 'samples'):.1f} series/SLO, "
            f"{extra * 1e3:.3f} ms/SLO ({extra / secs0:.2f}x Sloth's evaluation)"
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3mon-weight-") as tmp_name:
        tmp = Path(tmp_name)
        model = synthetic_config(SLOS, tmp)
        names = ["ours", "ours-no-maintenance", "ours-no-guard"] if VARIANTS else ["ours"]
        files = {name: tmp / f"{name}.rules.yml" for name in [*names, "sloth"]}
        for name in names:
            files[name].write_text(ours(model, name))
        sloth = {"groups": sloth_groups(model, f"{INTERVAL}s")}
        files["sloth"].write_text(yaml.safe_dump(sloth, sort_keys=False))
        source = Source(model)
        threading.Thread(target=source.serve, daemon=True).start()
        proc, url = start_prometheus(prometheus_config(source, list(files.values())), tmp)
        try:
            started = time.monotonic()
            time.sleep(WARMUP)  # evaluations with rates and step rises to read; longer = an older Prometheus
            rounds = measure(url)
            minutes = (time.monotonic() - started) / 60
            first = sum(1 for s in model.slos if s.name.endswith("-k0"))
            later = {k: samples_per_slo(url, yaml.safe_load(f.read_text()), first) for k, f in files.items()}
            report(len(model.slos), record_counts(files), rounds, minutes, later)
        finally:
            stop(proc)
            source.shutdown()


if __name__ == "__main__":
    main()
