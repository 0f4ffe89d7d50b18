"""The live run's processes, webhook capture and alert poller (``field/live_run.py``).

Every process is a real binary or ``python -m monitor`` on 127.0.0.1 and a free port, waited for
until it answers, logged to ``work/<name>.log`` and stopped (SIGTERM, SIGKILL after 20 s) when the
:class:`Processes` block ends.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

#: Seconds between two reads of the engines' alert APIs.
POLL_EVERY = 2.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(until: float) -> None:
    time.sleep(max(0.0, until - time.time()))


def _ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{log.stem} exited with {proc.returncode}: {log.read_text()[-1500:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{log.stem} did not answer {url} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@dataclass
class Sim:
    """One ``m3mon sim`` process on a fixed port (so a killed pool comes back at the same address)."""

    name: str
    port: int
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def faults(self, **update: Any) -> None:
        httpx.post(f"{self.url}/sim/faults", json=update, timeout=5).raise_for_status()

    def clear(self) -> None:
        httpx.delete(f"{self.url}/sim/faults", timeout=5).raise_for_status()


@dataclass
class Processes:
    tmp: Path
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    sims: dict[str, Sim] = field(default_factory=dict)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(list(self.running.values())):
            _stop(proc)

    def spawn(self, name: str, args: list[str], ready: str) -> subprocess.Popen[bytes]:
        log = self.tmp / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        self.running[name] = proc
        _ready(ready, proc, log)
        return proc

    def kill(self, name: str) -> None:
        _stop(self.running.pop(name))

    def check(self, args: list[str]) -> None:
        done = subprocess.run(args, timeout=120, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[2:4])} exited with {done.returncode}: {done.stderr.strip()}")

    # --- the pools ---------------------------------------------------------------------------

    def simulators(self, endpoints: list[dict[str, Any]]) -> dict[str, Sim]:
        for seed, ep in enumerate(endpoints):
            size = str(ep.get("deployment", {}).get("max_model_len", 131072))
            args = ["--max-model-len", size, "--seed", str(seed), "--model", ep["model"]]
            self.sims[ep["name"]] = sim = Sim(ep["name"], free_port(), args)
            self.start_sim(sim.name)
        return self.sims

    def start_sim(self, name: str) -> None:
        sim = self.sims[name]
        cmd = [sys.executable, "-m", "monitor", "sim", "--port", str(sim.port), *sim.args]
        sim.proc = self.spawn(f"sim-{name}", cmd, f"{sim.url}/health")

    def kill_sim(self, name: str) -> None:
        self.kill(f"sim-{name}")

    # --- the monitor and the engines -----------------------------------------------------------

    def monitor(self, config: Path, port: int) -> None:
        cmd = [sys.executable, "-m", "monitor", "run", "-c", str(config), "--upgrade", "--no-report"]
        self.spawn("monitor", cmd, f"http://127.0.0.1:{port}/-/ready")

    def restart_monitor(self, config: Path, port: int, away: float) -> None:
        self.kill("monitor")
        time.sleep(away)
        self.monitor(config, port)

    def alertmanager(self, config: Path, port: int) -> None:
        self.spawn(
            "alertmanager",
            [
                "prometheus-alertmanager",
                f"--config.file={config}",
                f"--storage.path={self.tmp / 'am'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
            ],
            f"http://127.0.0.1:{port}/-/ready",
        )

    def prometheus(self, config: Path, port: int) -> None:
        self.spawn(
            "prometheus",
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={self.tmp / 'prom'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            f"http://127.0.0.1:{port}/-/ready",
        )

    def victoria(self, scrape: Path, port: int) -> None:
        self.spawn(
            "victoria-metrics",
            [
                "victoria-metrics",
                f"-storageDataPath={self.tmp / 'vm'}",
                f"-httpListenAddr=127.0.0.1:{port}",
                f"-promscrape.config={scrape}",
                "-retentionPeriod=1d",
                # as docs/fleet.md deploys it: the default 30 s hides the newest samples from
                # vmalert's queries, which put its pages 2-3 minutes behind Prometheus' (live run)
                "-search.latencyOffset=1s",
            ],
            f"http://127.0.0.1:{port}/health",
        )

    def vmalert(self, rules: Path, vm: int, port: int, capture: Capture) -> None:
        vm_url = f"http://127.0.0.1:{vm}"
        self.spawn(
            "vmalert",
            [
                "vmalert",
                f"-rule={rules}/*.rules.yml",
                f"-datasource.url={vm_url}",
                f"-remoteWrite.url={vm_url}",
                f"-notifier.url={capture.base_url}/vmalert",
                "-evaluationInterval=15s",
                f"-httpListenAddr=127.0.0.1:{port}",
            ],
            f"http://127.0.0.1:{port}/health",
        )


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner: Capture = self.server.owner  # type: ignore[attr-defined]
        with owner.lock:
            owner.posts.append({"at": time.time(), "path": self.path, "body": json.loads(body or b"null")})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class Capture:
    """Alertmanager's webhooks (and vmalert's notifier posts, under ``/vmalert``), with arrival times."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __enter__(self) -> Capture:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def deliveries(self) -> list[dict[str, Any]]:
        """Alertmanager's webhook posts (the receivers'), oldest first."""
        with self.lock:
            return [p for p in self.posts if not p["path"].startswith("/vmalert")]


class Poller:
    """Reads ``/api/v1/alerts`` of each engine every :data:`POLL_EVERY` s: per engine and alert (its
    labels), the episodes (one per ``activeAt`` the engine reports) as first seen pending, first
    seen firing, last seen."""

    def __init__(self, engines: dict[str, int]) -> None:
        self.engines = engines
        self.seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Poller:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)

    def _loop(self) -> None:
        while not self.stop.wait(POLL_EVERY):
            for engine, port in self.engines.items():
                try:
                    body = httpx.get(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=5).json()
                except (httpx.HTTPError, ValueError):
                    continue
                self._note(engine, body["data"]["alerts"] or [], time.time())

    def _note(self, engine: str, alerts: list[dict[str, Any]], now: float) -> None:
        for a in alerts:
            labels = {k: v for k, v in a["labels"].items() if k != "alertstate"}
            key = (engine, json.dumps(labels, sort_keys=True))
            runs = self.seen.setdefault(key, [])
            # an episode is the engine's own: same activeAt, however long a poll took
            active = a.get("activeAt")
            if (
                not runs
                or runs[-1].get("active_at") != active
                or (active is None and now - runs[-1]["last"] > 3 * POLL_EVERY)
            ):
                runs.append(
                    {
                        "pending": now,
                        "firing": None,
                        "last": now,
                        "value": a.get("value"),
                        "active_at": active,
                    }
                )
            run = runs[-1]
            run["last"] = now
            if a["state"] == "firing" and run["firing"] is None:
                run["firing"] = now
                run["annotations"] = a.get("annotations", {})

    def timeline(self) -> list[dict[str, Any]]:
        return [
            {"engine": engine, "alertname": json.loads(key)["alertname"], "labels": json.loads(key), **run}
            for (engine, key), runs in self.seen.items()
            for run in runs
        ]
