"""One real vLLM server and one ``m3mon run`` for the whole tier (package-scoped: stopped after it) (see tests/real_vllm/stack.py).

The server starts first, exporting its spans to the monitor's port; the monitor starts once the
server is healthy, so its first probe round (1 s after start, then only every hour) finds a
running server. Everything started is stopped in ``finally``: the monitor with SIGTERM, vLLM by
killing its process group.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from monitor.model import Model, load_model
from monitor.store.tables import Base, DeploymentRow, ProbeResultRow
from tests.e2e.servers import free_port
from tests.e2e.stack import m3mon, stop, wait_until
from tests.real_vllm.stack import (
    MAX_MODEL_LEN,
    SERVED,
    SETUP_TIMEOUT,
    START_TIMEOUT,
    Stack,
    VllmServer,
    require_stack,
)
from tests.support import localhttp

ENDPOINT = "tiny"
CLASS = "chat-2k"
#: The service's probe round: kinds whose results the tier joins with the server's spans.
KINDS = ["chat", "tool_call", "long_prompt"]
LONG_PROMPT_TOKENS = 1500
#: The round's three kinds, each bounded by the probe timeout (60 s), on a loaded 2-core machine.
ROUND_TIMEOUT = 240
#: Per-test timeout in the tier: setup_stack.sh's bound plus a (slow, loaded-machine) server start.
TIER_TIMEOUT = SETUP_TIMEOUT + 2 * START_TIMEOUT


@dataclass
class Real:
    """The running server and monitor, and how to reach them."""

    server: VllmServer
    config: Path
    model: Model
    exporter: str
    db_url: str
    monitor: subprocess.Popen[bytes]
    workdir: Path
    round_missing: str | None = None  # set once the service's probe round was waited for in vain

    def monitor_log(self) -> str:
        return (self.workdir / "monitor.log").read_text(errors="replace")

    def rows(self, table: type[Base], *where: Any) -> list[Any]:
        engine = create_engine(self.db_url)
        try:
            with Session(engine) as s:
                return list(s.scalars(select(table).where(*where)).all())
        finally:
            engine.dispose()

    def deployment(self) -> DeploymentRow:
        rows = wait_until(lambda: self.rows(DeploymentRow), 20, "the deployment fingerprint in the store")
        latest: DeploymentRow = max(rows, key=lambda r: r.last_seen)
        return latest


def wait_for_probe_round(real: Real) -> list[ProbeResultRow]:
    """The service's first (and, at a 1h interval, only) probe round, once all its kinds are stored.

    If it never comes, the first test to wait fails with the kinds stored and the monitor log's
    tail; the tests after it fail at once with the same finding instead of waiting again."""
    if real.round_missing is not None:
        raise AssertionError(real.round_missing)

    def done() -> list[ProbeResultRow]:
        rows = real.rows(ProbeResultRow)
        return rows if {r.kind for r in rows} >= set(KINDS) else []

    try:
        return wait_until(done, ROUND_TIMEOUT, "the service's probe round in the store", every=1.0)
    except AssertionError as exc:
        kinds = sorted({r.kind for r in real.rows(ProbeResultRow)})
        tail = "\n".join(real.monitor_log().splitlines()[-40:])
        real.round_missing = f"{exc}; kinds stored: {kinds}; monitor log tail:\n{tail}"
        raise AssertionError(real.round_missing) from None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The restart test restarts the shared server: it runs after every other test of the tier
    (only this tier's items move, among their own places)."""
    places = [i for i, item in enumerate(items) if "tests/real_vllm/" in item.nodeid]
    for i in places:  # the first test pays for the install (cold) and the server start; the restart
        items[i].add_marker(pytest.mark.timeout(TIER_TIMEOUT))  # for a second start
    ours = sorted((items[i] for i in places), key=lambda item: "test_restart" in item.nodeid)
    for i, item in zip(places, ours, strict=True):
        items[i] = item


def write_config(tmp: Path, base_url: str, port: int, db_url: str) -> Path:
    probe = {"interval": "1h", "timeout": "60s", "jitter": "0.1s", "long_prompt_tokens": LONG_PROMPT_TOKENS}
    slos = [{"name": "availability", "sli": "availability", "objective": 99.0}]
    doc: dict[str, Any] = {
        "version": "m3mon/v1",
        "endpoints": [
            {
                "name": ENDPOINT,
                "base_url": base_url,
                "backend": "vllm",
                "model": SERVED,
                "classes": [CLASS],
                "scrape_interval": "1s",
            }
        ],
        "request_classes": [
            {
                "name": CLASS,
                "max_context_tokens": MAX_MODEL_LEN,
                "probes": KINDS,
                "probe": probe,
                "slos": slos,
            }
        ],
        "storage": {"url": db_url, "buffer_dir": str(tmp / "spool")},
        "exporter": {"listen": f"127.0.0.1:{port}"},
    }
    path = tmp / "monitor.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="package")
def stack() -> Stack:
    return require_stack()


@pytest.fixture(scope="package")
def real(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Real]:
    tmp = tmp_path_factory.mktemp("real-vllm")
    port = free_port()
    server = VllmServer(stack, free_port(), f"http://127.0.0.1:{port}/v1/traces", tmp)
    monitor: subprocess.Popen[bytes] | None = None
    try:
        server.start()
        db_url = f"sqlite:///{tmp / 'm3mon.db'}"
        config = write_config(tmp, server.base_url, port, db_url)
        with (tmp / "monitor.log").open("ab") as out:
            monitor = subprocess.Popen(m3mon("run", "-c", str(config), "--upgrade", "--no-report"),
                                       stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))  # fmt: skip
        exporter = f"http://127.0.0.1:{port}"
        wait_until(
            lambda: localhttp.get(f"{exporter}/healthz", timeout=1).status_code == 200, 30, "m3mon /healthz"
        )
        yield Real(server, config, load_model(config), exporter, db_url, monitor, tmp)
    finally:
        if monitor is not None:
            stop(monitor)
        server.stop()
