"""Benchmark: the monitor's own footprint (RSS and CPU share) running the example config.

Starts one simulator (``m3mon sim``) and ``m3mon run`` with ``examples/monitor.yaml`` pointed at
it (all three pools on the one simulator, SQLite in a temp dir), samples both processes from
``/proc`` once a second for ``M3MON_BENCH_SECONDS`` (default 180), then prints:

* the monitor's peak and mean RSS (goal <= 150 MB) and its CPU share of one core (goal <= 2 %);
* ratios against baselines measured in the same run: RSS against a bare interpreter that only
  imports the service (what the code costs before doing anything), CPU against the simulator
  that serves the traffic the monitor generates.

Every process it starts is stopped at the end, whatever happens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


def write_config(tmp: Path, sim_url: str, port: int) -> Path:
    cfg = yaml.safe_load((ROOT / "examples" / "monitor.yaml").read_text())
    for ep in cfg["endpoints"]:
        ep["base_url"] = sim_url
        ep.pop("api_key_env", None)
    cfg["storage"] = {"url": f"sqlite:///{tmp / 'm3mon.db'}", "buffer_dir": str(tmp / "spool")}
    cfg["exporter"] = {"listen": f"127.0.0.1:{port}"}
    path = tmp / "monitor.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def baseline_rss() -> int:
    code = (
        "import monitor.service.service, sys, time; "
        "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        return rss_bytes(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def sample(
    procs: dict[str, subprocess.Popen[bytes]], seconds: float
) -> dict[str, list[tuple[float, int, float]]]:
    series: dict[str, list[tuple[float, int, float]]] = {name: [] for name in procs}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, proc in procs.items():
            if proc.poll() is not None:
                raise SystemExit(f"{name} exited early with {proc.returncode}")
            series[name].append((time.monotonic(), rss_bytes(proc.pid), cpu_seconds(proc.pid)))
        time.sleep(1.0)
    return series


def cpu_share(points: list[tuple[float, int, float]]) -> float:
    (t0, _, c0), (t1, _, c1) = points[0], points[-1]
    return (c1 - c0) / (t1 - t0)


def main() -> None:
    seconds = float(os.environ.get("M3MON_BENCH_SECONDS", "180"))
    m3mon = [sys.executable, "-m", "monitor"]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        sim_port, mon_port = free_port(), free_port()
        try:
            procs["simulator"] = subprocess.Popen([*m3mon, "sim", "--port", str(sim_port), "--max-model-len",
                                                   "524288"], stdout=subprocess.DEVNULL)  # fmt: skip
            wait_http(f"http://127.0.0.1:{sim_port}/health")
            cfg = write_config(tmp, f"http://127.0.0.1:{sim_port}", mon_port)
            subprocess.run([*m3mon, "db", "upgrade", "-c", str(cfg)], check=True, stdout=subprocess.DEVNULL)
            procs["monitor"] = subprocess.Popen([*m3mon, "run", "-c", str(cfg), "--no-report"])
            wait_http(f"http://127.0.0.1:{mon_port}/healthz")
            warmup = min(20.0, seconds / 6)
            time.sleep(warmup)
            series = sample(procs, seconds - warmup)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs.values():
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    base = baseline_rss()
    mon, sim = series["monitor"], series["simulator"]
    peak = max(r for _, r, _ in mon)
    mean = sum(r for _, r, _ in mon) / len(mon)
    share, sim_share = cpu_share(mon), cpu_share(sim)
    print(f"footprint of m3mon run (example config, one simulator, {seconds:.0f} s, {len(mon)} samples)")
    print(f"  RSS peak {peak / 2**20:7.1f} MB  mean {mean / 2**20:7.1f} MB  goal <= 150 MB: "
          f"{'met' if peak <= 150 * 2**20 else 'MISSED'}")  # fmt: skip
    print(f"  baseline: bare interpreter importing the service {base / 2**20:.1f} MB "
          f"-> ratio {peak / base:.2f}x")  # fmt: skip
    print(
        f"  CPU share of one core {share * 100:6.2f} %  goal <= 2 %: {'met' if share <= 0.02 else 'MISSED'}"
    )
    ratio = share / max(sim_share, 1e-9)
    print(f"  baseline: simulator serving the probes {sim_share * 100:.2f} % -> ratio {ratio:.2f}x")
    print(f"  load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
