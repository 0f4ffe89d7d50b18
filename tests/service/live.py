"""A real ``m3mon run`` process for the service tests, with a web config, TLS material and bounded waits.

:func:`running_monitor` writes a small configuration (one endpoint on a closed port, so scrapes
and probes fail fast and quietly), optionally a web config, starts ``m3mon run --upgrade`` on a
free loopback port, waits (bounded) until ``/-/ready`` answers 200 and always stops the process:
SIGTERM, then SIGKILL after a deadline. The store is SQLite in the test's folder unless the caller passes
``storage_url`` (the PostgreSQL modules take a fresh database from :func:`fresh_database`).
:func:`make_tls` creates a CA, a server certificate for
127.0.0.1 and a client certificate with the ``openssl`` CLI.
"""

from __future__ import annotations

import base64
import os
import signal
import sqlite3
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from monitor.web.auth import hash_password
from tests.e2e.servers import free_port
from tests.support.postgres import fresh_database
from tests.support.real import require_binary

USER, PASSWORD = "m3mon", "s3cret pass/word=+"
STEP = 2.0


@dataclass(frozen=True)
class TLS:
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path
    other_cert: Path  # signed by no CA the monitor trusts
    other_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    openssl = require_binary("openssl", "/usr/bin/openssl")
    subprocess.run([openssl, *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _leaf(tmp: Path, name: str, ca: str, ext: str) -> None:
    (tmp / f"{name}.ext").write_text(ext)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=tmp)  # fmt: skip
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=tmp)  # fmt: skip


def make_tls(tmp: Path) -> TLS:
    """A CA, a server certificate for 127.0.0.1 / localhost, a client certificate, and a stranger's."""
    tmp.mkdir(parents=True, exist_ok=True)
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN=m3mon test {ca}",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
                 cwd=tmp)  # fmt: skip
    _leaf(tmp, "server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _leaf(tmp, "client", "ca", "extendedKeyUsage=clientAuth\n")
    _leaf(tmp, "other", "other-ca", "extendedKeyUsage=clientAuth\n")
    p = tmp
    return TLS(p / "ca.pem", p / "server.crt", p / "server.key", p / "client.crt", p / "client.key",
               p / "other.crt", p / "other.key")  # fmt: skip


def basic(user: str = USER, password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def write_web_config(
    path: Path, tls: TLS | None, users: dict[str, str] | None = None, **tls_extra: str
) -> Path:
    """A web config in the exporter-toolkit format (bcrypt cost 4: fast tests, same format)."""
    doc: dict[str, Any] = {}
    if tls is not None:
        doc["tls_server_config"] = {"cert_file": str(tls.cert), "key_file": str(tls.key), **tls_extra}
    users = {USER: PASSWORD} if users is None else users
    if users:
        doc["basic_auth_users"] = {u: hash_password(p, rounds=4) for u, p in users.items()}
    path.write_text(yaml.safe_dump(doc))
    return path


def config_doc(
    tmp: Path, port: int, scheme: str = "http", storage_url: str | None = None, **exporter: Any
) -> dict[str, Any]:
    url = storage_url or f"sqlite:///{tmp / 'm3mon.db'}"
    return {
        "version": "m3mon/v1",
        "endpoints": [{"name": "pool", "base_url": "http://127.0.0.1:9", "model": "MiniMaxAI/MiniMax-M3",
                       "classes": ["chat-32k"], "scrape_interval": "60s"}],
        "request_classes": [{"name": "chat-32k", "max_context_tokens": 32768, "probes": ["chat"],
                             "probe": {"interval": "1h", "jitter": "0.1s", "timeout": "5s"},
                             "slos": [{"name": "availability", "sli": "availability", "objective": 99}]}],
        "storage": {"url": url, "buffer_dir": str(tmp / "spool")},
        "exporter": {"listen": f"127.0.0.1:{port}", **exporter},
        "alerting": {"monitor_receiver_url": f"{scheme}://127.0.0.1:{port}/alertmanager"},
    }  # fmt: skip


@dataclass
class Monitor:
    tmp: Path
    config: Path
    base: str
    proc: subprocess.Popen[bytes]
    verify: str | bool = False
    headers: dict[str, str] = field(default_factory=dict)
    storage_url: str = ""
    _engine: Engine | None = None

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` in the monitor's store (SQLite or PostgreSQL), read independently."""
        if self._engine is None:
            self._engine = create_engine(self.storage_url, poolclass=NullPool)
        with self._engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql))]

    def client(self, **kw: Any) -> httpx.Client:
        verify = (
            ssl.create_default_context(cafile=self.verify) if isinstance(self.verify, str) else self.verify
        )
        opts: dict[str, Any] = {
            "base_url": self.base,
            "verify": verify,
            "timeout": 10.0,
            "headers": self.headers,
        }
        return httpx.Client(**{**opts, **kw})

    def count(self, table: str) -> int:
        return int(self.rows(f"SELECT count(*) FROM {table}")[0][0])

    def log(self) -> str:
        return (self.tmp / "run.log").read_text(errors="replace")

    def samples(self, name: str, **labels: str) -> list[float]:
        """The values of every exposed sample of ``name`` whose labels include ``labels``."""
        from prometheus_client.parser import text_string_to_metric_families

        with self.client() as c:
            text = c.get("/metrics").text
        return [s.value for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == name and labels.items() <= s.labels.items()]  # fmt: skip

    def metric(self, name: str, **labels: str) -> float:
        """The sum of :meth:`samples` (0 when none is exposed)."""
        return sum(self.samples(name, **labels))


def wait_until(check: Any, timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (httpx.HTTPError, OSError, sqlite3.Error, SQLAlchemyError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r:.300})")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
        return -signal.SIGKILL


@contextmanager
def running_monitor(tmp: Path, doc: dict[str, Any], *args: str, verify: str | bool = False,
                    headers: dict[str, str] | None = None, scheme: str = "http") -> Iterator[Monitor]:  # fmt: skip
    """Run ``m3mon run`` on ``doc`` until the block ends; stopping it cleanly (exit 0) is asserted."""
    config = tmp / "monitor.yaml"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    cmd = [sys.executable, "-m", "monitor", "--log-level", "INFO", "run", "-c", str(config), "--upgrade",
           "--evaluation-step", str(STEP), "--no-report", *args]  # fmt: skip
    with (tmp / "run.log").open("ab") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "NO_PROXY": "*"}
        )
    listen = doc["exporter"]["listen"]
    m = Monitor(tmp, config, f"{scheme}://{listen}", proc, verify, headers or {}, doc["storage"]["url"])
    try:
        wait_until(lambda: _ready(m), 30, "the monitor's /-/ready")
        yield m
    finally:
        code = stop(proc)
        if m._engine is not None:
            m._engine.dispose()
    assert code == 0, f"m3mon run exited {code}:\n{m.log()[-3000:]}"


def _ready(m: Monitor) -> bool:
    if m.proc.poll() is not None:
        raise AssertionError(f"m3mon run exited {m.proc.returncode}:\n{m.log()[-3000:]}")
    with m.client(timeout=2.0) as c:
        return c.get("/-/ready").status_code == 200


__all__ = [
    "PASSWORD",
    "TLS",
    "USER",
    "Monitor",
    "basic",
    "config_doc",
    "free_port",
    "fresh_database",
    "make_tls",
    "running_monitor",
]
