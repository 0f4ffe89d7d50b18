"""One fleet replica under measurement, for bench/fleet.py part 1.

:func:`run_replica` starts ``m3mon run --shard 0/1`` on PostgreSQL against simulated endpoints
with the example's probe mix, waits out the warm-up, then measures over the window: the process's
CPU (``/proc``), the CPU by kind of work (the monitor's own ``m3mon_job_cpu_seconds_total{kind}``)
and the rows written to PostgreSQL; optionally py-spy records it meanwhile. The replica is stopped
whatever happens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from bench.footprint import cpu_seconds, free_port, wait_http

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = {"s": 1, "m": 60, "h": 3600}
JOB_CPU = "m3mon_job_cpu_seconds_total"


@dataclass
class Measured:
    """A replica's window, scaled to real intervals: CPU share of one core, rows/s, CPU by kind."""

    cpu: float
    rows: float
    kinds: dict[str, float] = field(default_factory=dict)

    @property
    def unattributed(self) -> float:
        return self.cpu - sum(self.kinds.values())


def seconds(value: object) -> float:
    text_ = str(value)
    return float(text_[:-1]) * DURATIONS[text_[-1]] if text_[-1] in DURATIONS else float(text_)


def fleet_config(tmp: Path, urls: list[str], port: int, speed: float, period: float) -> Path:
    """Endpoint i is a copy of example endpoint i mod 3. Intervals longer than ``period`` (the real
    time the window stands for) are cut to it, so the window sees every class; then all are divided
    by ``speed``."""
    cfg = yaml.safe_load((ROOT / "examples" / "monitor.yaml").read_text())
    example = cfg["endpoints"]

    def scaled(value: object, default: str) -> str:
        return f"{min(seconds(value or default), period) / speed:g}s"

    eps = []
    for i, url in enumerate(urls):
        ep = dict(example[i % len(example)], name=f"{example[i % len(example)]['name']}-{i}", base_url=url)
        ep.pop("api_key_env", None)
        ep["scrape_interval"] = scaled(ep.get("scrape_interval"), "15s")
        eps.append(ep)
    served = {c for ep in eps for c in ep["classes"]}
    cfg["endpoints"] = eps
    cfg["request_classes"] = [c for c in cfg["request_classes"] if c["name"] in served]
    for c in cfg["request_classes"]:
        probe = c.setdefault("probe", {})
        probe["interval"] = scaled(probe.get("interval"), "60s")
        probe["jitter"] = scaled(probe.get("jitter"), "5s")
    cfg["storage"] = {"buffer_dir": str(tmp / "spool")}
    cfg["exporter"] = {"listen": f"127.0.0.1:{port}"}
    cfg.pop("report", None)
    path = tmp / f"fleet-{len(urls)}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def writes(url: str) -> float:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        row = conn.execute(text("SELECT tup_inserted + tup_updated FROM pg_stat_database "
                                "WHERE datname = current_database()")).one()  # fmt: skip
    engine.dispose()
    return float(row[0])


def job_cpu(port: int) -> dict[str, float]:
    """``m3mon_job_cpu_seconds_total`` by kind, from the replica's /metrics."""
    out: dict[str, float] = {}
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text.splitlines():
        if line.startswith(JOB_CPU + "{"):
            labels, value = line.rsplit(" ", 1)
            out[labels.split('kind="', 1)[1].split('"', 1)[0]] = float(value)
    return out


def pyspy(pyspy_bin: str, pid: int, window: float, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording ``pid`` for ``window`` seconds as collapsed stacks (``-f raw``)."""
    args = [pyspy_bin, "record", "-p", str(pid), "-d", str(int(window)), "-r", "50", "-f", "raw",
            "-o", str(out), "--nonblocking"]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_replica(tmp: Path, url: str, urls: list[str], *, speed: float, warmup: float, window: float,
                profile: tuple[str, Path] | None = None) -> Measured:  # fmt: skip
    """Measure one replica over ``window`` seconds after ``warmup``, scaled back by ``speed``."""
    port = free_port()
    cfg = fleet_config(tmp, urls, port, speed, window * speed)
    env = {**os.environ, "M3MON_STORAGE_URL": url}
    args = [sys.executable, "-m", "monitor", "run", "-c", str(cfg), "--shard", "0/1", "--replica", "bench",
            "--no-report"]  # fmt: skip
    with (tmp / f"replica-{len(urls)}.log").open("ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    spy: subprocess.Popen[bytes] | None = None
    try:
        wait_http(f"http://127.0.0.1:{port}/-/healthy")
        time.sleep(warmup)
        cpu0, rows0, kinds0, t0 = cpu_seconds(proc.pid), writes(url), job_cpu(port), time.monotonic()
        if profile is not None:
            spy = pyspy(profile[0], proc.pid, window, profile[1])
        time.sleep(window)
        cpu1, rows1, kinds1, t1 = cpu_seconds(proc.pid), writes(url), job_cpu(port), time.monotonic()
        if spy is not None:
            spy.wait(60)
    finally:
        if spy is not None and spy.poll() is None:
            spy.kill()
            spy.wait(10)
        proc.terminate()
        proc.wait(30)
    scale = (t1 - t0) * speed
    kinds = {k: (v - kinds0.get(k, 0.0)) / scale for k, v in kinds1.items()}
    return Measured((cpu1 - cpu0) / scale, (rows1 - rows0) / scale, kinds)


def hot_spots(raw: Path, top: int = 15) -> list[tuple[str, float, float]]:
    """(function, self share, inclusive share) of py-spy's collapsed stacks, by self share."""
    own: dict[str, int] = {}
    within: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count, frames = int(count_text), stack.split(";")
        total += count
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            within[frame] = within.get(frame, 0) + count
    ranked = sorted(own, key=own.__getitem__, reverse=True)[:top]
    return [(f, own[f] / max(total, 1), within[f] / max(total, 1)) for f in ranked]
