"""The whole pipeline as the SRE runs it, on loopback: ``m3mon run`` + real Prometheus + Alertmanager.

:func:`running_stack` writes a small configuration, runs the real ``m3mon generate`` on it, and
starts (in this order, each waited for) the monitor (``m3mon run --upgrade --evaluation-step 2``),
Alertmanager with the generated routing and Prometheus with the generated scrape config and rules.
Only timing is rewritten for a short test: scrape and evaluation every 1s, Alertmanager
``group_wait``/``group_interval``/``repeat_interval`` 1s, and every rule's ``for:`` divided by
:data:`FOR_SCALE` (2m -> 1s, 10m -> 5s). Webhook receivers point at a :class:`Capture` server
(``/pager``, ``/chat``) and the monitor's own ``/alertmanager``. Everything started is stopped in
``finally``: SIGTERM, then SIGKILL after a deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from monitor.store.tables import Base
from tests.e2e.servers import Capture, free_port
from tests.support import localhttp
from tests.support.real import require_binary

T = TypeVar("T")

STEP = 2.0
FOR_SCALE = 120
#: ``SLOMetricAbsent`` keeps at least 30s: Prometheus' first scrapes of a target may take seconds
#: on a busy 2-core machine, and an absence shorter than that is Prometheus starting, not a finding.
ABSENT_FOR_MS = 30_000
MODEL = "MiniMaxAI/MiniMax-M3"
#: Simulator settings shared by every scenario: fast steps, short answers.
SIM = {"decode_itl": 0.003, "answer_tokens": (8, 16), "seed": 7, "jitter": 0.0}


def wait_until(check: Callable[[], T], timeout: float, what: str, every: float = 0.25) -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r:.500})")


def endpoint(name: str, url: str, classes: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "base_url": url,
        "model": MODEL,
        "classes": classes,
        "scrape_interval": "1s",
        **extra,
    }


def request_class(name: str, probes: list[str], slos: list[dict[str, Any]]) -> dict[str, Any]:
    probe = {"interval": "1s", "jitter": "0.1s", "timeout": "5s"}
    return {"name": name, "max_context_tokens": 32768, "probes": probes, "probe": probe, "slos": slos}


@dataclass
class Stack:
    """A running stack and the views an SRE would look at."""

    tmp: Path
    config: Path
    log: Path
    exporter: str
    db_url: str
    capture: Capture
    prometheus: str | None = None
    alertmanager: str | None = None
    monitor: subprocess.Popen[bytes] | None = None
    started: float = field(default_factory=time.time)

    # --- the monitor ------------------------------------------------------------------------

    def metrics(self) -> str:
        return localhttp.get(f"{self.exporter}/metrics", timeout=5).text

    def samples(self, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
        """Exporter samples called ``name`` whose labels include ``labels``."""
        out = []
        for family in text_string_to_metric_families(self.metrics()):
            for s in family.samples:
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                    out.append((dict(s.labels), float(s.value)))
        return out

    def total(self, name: str, **labels: str) -> float:
        return sum(v for _, v in self.samples(name, **labels))

    def stop_monitor(self) -> int:
        """SIGTERM the monitor and return its exit code (SIGKILL after 20 s)."""
        assert self.monitor is not None
        code = stop(self.monitor)
        self.monitor = None
        return code

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    # --- the store ----------------------------------------------------------------------------

    @contextmanager
    def db(self) -> Iterator[Session]:
        engine = create_engine(self.db_url)
        try:
            with Session(engine) as s:
                yield s
        finally:
            engine.dispose()

    def rows(self, table: type[Base], *where: Any) -> list[Any]:
        with self.db() as s:
            return list(s.scalars(select(table).where(*where)).all())

    def count(self, table: type[Base], *where: Any) -> int:
        with self.db() as s:
            return int(s.scalar(select(func.count()).select_from(table).where(*where)) or 0)

    # --- Prometheus and Alertmanager --------------------------------------------------------------

    def prom_alerts(self, name: str, state: str = "firing") -> list[dict[str, Any]]:
        body = localhttp.get(f"{self.prometheus}/api/v1/alerts", timeout=5).json()
        return [a for a in body["data"]["alerts"] if a["labels"]["alertname"] == name and a["state"] == state]

    def all_prom_alerts(self) -> list[dict[str, Any]]:
        return list(localhttp.get(f"{self.prometheus}/api/v1/alerts", timeout=5).json()["data"]["alerts"])

    def wait_quiet(self, class_: str) -> None:
        """Wait until the class's probe results are in Prometheus and start-up absences cleared.

        Until the first probe result is scraped, ``SLOMetricAbsent`` is rightly pending (it needs
        its ``for`` before firing); once every rule group has seen the data nothing may be pending.
        """
        wait_until(lambda: self.query(f'm3mon_probe_total{{class="{class_}"}}'), 15, "probe results scraped")
        wait_until(lambda: self.all_prom_alerts() == [], 10, "start-up absences to clear")

    def am_alerts(self, name: str) -> list[dict[str, Any]]:
        body = localhttp.get(
            f"{self.alertmanager}/api/v2/alerts", params={"filter": f'alertname="{name}"'}, timeout=5
        )
        return [a for a in body.json() if a["status"]["state"] == "active"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        body = localhttp.get(f"{self.prometheus}/api/v1/query", params={"query": expr}, timeout=5).json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])


def stop(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    """SIGTERM, wait up to ``timeout`` s, then SIGKILL; the exit code (negative when signalled)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
        return -signal.SIGKILL


def m3mon(*args: str) -> list[str]:
    return [sys.executable, "-m", "monitor", *args]


def _write_config(tmp: Path, endpoints: list[dict[str, Any]], classes: list[dict[str, Any]],
                  db_url: str, port: int, capture: Capture, extra: dict[str, Any]) -> Path:  # fmt: skip
    doc: dict[str, Any] = {
        "version": "m3mon/v1",
        "endpoints": endpoints,
        "request_classes": classes,
        "storage": {"url": db_url, "buffer_dir": str(tmp / "spool")},
        "exporter": {"listen": f"127.0.0.1:{port}"},
        "alerting": {
            "page": {
                "receiver": "pager",
                "labels": {"severity": "page"},
                "webhook_url": f"{capture.base_url}/pager",
            },
            "ticket": {
                "receiver": "chat",
                "labels": {"severity": "ticket"},
                "webhook_url": f"{capture.base_url}/chat",
            },
            "monitor_receiver_url": f"http://127.0.0.1:{port}/alertmanager",
        },
    }
    doc.update(extra)
    path = tmp / "monitor.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _shorten_for(text: str) -> str:
    """A rule file with every ``for:`` divided by FOR_SCALE (at least 1s), and every group evaluated
    at the stack's 1 s (the SLO groups pin 1m; their maintenance step records, absent here since the
    e2e configs declare no maintenance, are the only rules that depend on it)."""
    from monitor.conventions import window_seconds

    doc = yaml.safe_load(text)
    for group in doc["groups"]:
        group.pop("interval", None)
        for rule in group["rules"]:
            if "for" in rule:
                floor = ABSENT_FOR_MS if rule.get("alert") == "SLOMetricAbsent" else 1000
                ms = max(floor, window_seconds(rule["for"]) * 1000 // FOR_SCALE)
                rule["for"] = f"{ms}ms"
    return str(yaml.safe_dump(doc, sort_keys=False))


def _generate(tmp: Path, config: Path, am_port: int) -> tuple[Path, Path]:
    """Run ``m3mon generate``; return the (prometheus.yml, alertmanager.yml) with test timing."""
    out = tmp / "generated"
    subprocess.run(m3mon("generate", "-c", str(config), "-o", str(out)), check=True, timeout=60,
                   capture_output=True)  # fmt: skip
    rules = tmp / "rules"
    rules.mkdir()
    for path in (out / "alerts").glob("*.rules.yml"):
        (rules / path.name).write_text(_shorten_for(path.read_text()))
    prom = yaml.safe_load((out / "deploy" / "prometheus.yml").read_text())
    prom["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    prom["rule_files"] = [str(rules / "*.rules.yml")]
    prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = [f"127.0.0.1:{am_port}"]
    for job in prom["scrape_configs"]:
        job["scrape_interval"] = "1s"
        job["scrape_timeout"] = "1s"
    am = yaml.safe_load((out / "alerts" / "alertmanager.yml").read_text())
    for route in [am["route"], *am["route"]["routes"]]:
        route.update(group_wait="1s", group_interval="1s", repeat_interval="1s")
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(prom))
    (tmp / "alertmanager.yml").write_text(yaml.safe_dump(am))
    return tmp / "prometheus.yml", tmp / "alertmanager.yml"


def _spawn(
    stack: ExitStack, cmd: list[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    stack.callback(stop, proc)
    return proc


def _ready(url: str) -> bool:
    return localhttp.get(url, timeout=1).status_code == 200


@contextmanager
def running_stack(
    tmp: Path,
    endpoints: list[dict[str, Any]],
    classes: list[dict[str, Any]],
    *,
    db_url: str | None = None,
    alerting: bool = True,
    env: dict[str, str] | None = None,
    port: int | None = None,
    extra: dict[str, Any] | None = None,
) -> Iterator[Stack]:
    """Start the stack (see module docstring); ``alerting=False`` skips Prometheus and Alertmanager;
    ``port``: the monitor's (e.g. a simulator started first exports its spans there);
    ``extra``: more top-level configuration sections (e.g. ``traffic``)."""
    prometheus = require_binary("prometheus", "/usr/bin/prometheus") if alerting else ""
    am_bin = require_binary("prometheus-alertmanager", "/usr/bin/prometheus-alertmanager") if alerting else ""
    port, am_port, prom_port = port or free_port(), free_port(), free_port()
    db_url = db_url or f"sqlite:///{tmp / 'm3mon.db'}"
    with ExitStack() as stack:
        capture = stack.enter_context(Capture())
        config = _write_config(tmp, endpoints, classes, db_url, port, capture, extra or {})
        prom_yml, am_yml = _generate(tmp, config, am_port)
        s = Stack(tmp, config, tmp / "monitor.log", f"http://127.0.0.1:{port}", db_url, capture)
        run = m3mon("run", "-c", str(config), "--upgrade", "--evaluation-step", str(STEP), "--no-report")
        s.monitor = _spawn(stack, run, s.log, {**os.environ, **(env or {})})
        wait_until(lambda: _ready(f"{s.exporter}/healthz"), 30, "the monitor's /healthz")
        # Prometheus starts once probes have run, so SLOMetricAbsent never sees a monitor still warming up.
        wait_until(lambda: s.samples("m3mon_probe_total"), 20, "the first probe results")
        if alerting:
            s.alertmanager = f"http://127.0.0.1:{am_port}"
            _spawn(stack, [am_bin, f"--config.file={am_yml}", f"--storage.path={tmp / 'am'}",
                           f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                   tmp / "alertmanager.log")  # fmt: skip
            s.prometheus = f"http://127.0.0.1:{prom_port}"
            _spawn(stack, [prometheus, f"--config.file={prom_yml}", f"--storage.tsdb.path={tmp / 'prom'}",
                           f"--web.listen-address=127.0.0.1:{prom_port}", "--rules.alert.resend-delay=1s"],
                   tmp / "prometheus.log")  # fmt: skip
            wait_until(lambda: _ready(f"{s.alertmanager}/-/ready"), 30, "Alertmanager ready")
            wait_until(lambda: _ready(f"{s.prometheus}/-/ready"), 30, "Prometheus ready")
            wait_until(lambda: s.query('up{job="m3mon"} == 1'), 20, "Prometheus scraping the monitor")
        yield s
