"""The loopback fleet: 20 simulated endpoints, 2 shards x 2 replicas of ``m3mon run`` on one real
PostgreSQL database, and one real Prometheus scraping the replicas with the generated fleet rules.

Everything binds 127.0.0.1 on free ports; every process is stopped (SIGKILL for what a test left
running is fine: the database is thrown away). Short slots keep it inside its time budget.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from monitor.sim.harness import running_simulator
from monitor.store.migrate import upgrade
from tests.support import localhttp
from tests.support.postgres import fresh_database
from tests.support.prometheus import free_port

ENDPOINTS = 20
SHARDS = 2
REPLICAS = ("a", "b")
STEP = 2.0  # evaluation step, seconds
PROBE_EVERY = 4.0  # probe interval (slot length), seconds
CLASS = "chat-32k"


def prometheus_shard(name: str, shards: int) -> int:
    """Prometheus' hashmod as its documentation and source define it (md5, low 8 bytes, mod n)."""
    digest = hashlib.md5(name.encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[8:16], "big") % shards


@dataclass
class Replica:
    shard: int
    name: str
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def gauge(self, metric: str) -> float | None:
        for line in localhttp.get(f"{self.url}/metrics", timeout=10).text.splitlines():
            if line.startswith(metric + " "):
                return float(line.split()[1])
        return None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@dataclass
class Fleet:
    url: str
    config: Path
    endpoints: list[str]
    replicas: list[Replica] = field(default_factory=list)


def _config(tmp: Path, sims: list[str]) -> Path:
    eps = "".join(
        f"  - {{name: ep{i:02d}, base_url: {url}, model: MiniMaxAI/MiniMax-M3, classes: [{CLASS}],"
        f" scrape_interval: 8s}}\n"
        for i, url in enumerate(sims)
    )
    path = tmp / "monitor.yaml"
    path.write_text(
        f"""version: m3mon/v1
endpoints:
{eps}request_classes:
  - name: {CLASS}
    max_context_tokens: 32768
    probes: [chat]
    probe: {{interval: {PROBE_EVERY:g}s, jitter: 0.5s, timeout: 3s}}
    slos:
      - {{name: availability, sli: availability, objective: 99}}
storage: {{buffer_dir: spool}}
fleet: {{shards: {SHARDS}}}
"""
    )
    return path


def _m3mon(*args: str) -> list[str]:
    return [sys.executable, "-m", "monitor", *args]


@contextmanager
def running_fleet(base_url: str, tmp: Path) -> Iterator[Fleet]:
    with ExitStack() as stack:
        sims = [stack.enter_context(running_simulator(decode_itl=0.002, answer_tokens=(4, 8), seed=i))
                for i in range(ENDPOINTS)]  # fmt: skip
        url = stack.enter_context(fresh_database(base_url))
        cfg = _config(tmp, [s.base_url for s in sims])
        env = {**os.environ, "M3MON_STORAGE_URL": url}
        upgrade(url)
        fleet = Fleet(url, cfg, [f"ep{i:02d}" for i in range(ENDPOINTS)])
        try:
            for k in range(SHARDS):
                for r in REPLICAS:
                    fleet.replicas.append(_replica(cfg, tmp, k, r, env))
            yield fleet
        finally:
            for rep in fleet.replicas:
                rep.stop(signal.SIGKILL)


def _replica(cfg: Path, tmp: Path, shard: int, name: str, env: dict[str, str]) -> Replica:
    port = free_port()
    home = tmp / f"replica-{shard}-{name}"
    home.mkdir()
    args = _m3mon("run", "-c", str(cfg), "--shard", f"{shard}/{SHARDS}", "--replica", f"{shard}-{name}",
                  "--listen", f"127.0.0.1:{port}", "--evaluation-step", f"{STEP:g}", "--no-report")  # fmt: skip
    with (home / "run.log").open("ab") as log:
        proc = subprocess.Popen(args, cwd=home, stdout=log, stderr=subprocess.STDOUT, env=env)
    return Replica(shard, f"{shard}-{name}", port, proc)
