"""``m3mon run`` starts while its PostgreSQL is down (issue 26, finding 6: it refused to, though
the spool exists for exactly that): it serves ``/metrics`` and ``/-/healthy``, ``/-/ready`` is a
503 naming the store, scrapes and probes are spooled, and once the server is back the writes of
the outage are in the database and the monitor becomes ready. A real server on a cluster of its
own, stopped and started with ``pg_ctl``; the monitor is a real process."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from monitor.sim.harness import running_simulator
from monitor.store import Store
from monitor.store.engine import display_url
from monitor.store.tables import ProbeResultRow, ScrapeReadingRow
from tests.service.test_run import STEP, _config, _free_port, _m3mon, _start, _stop
from tests.support import localhttp
from tests.support.postgres import own_cluster

pytestmark = pytest.mark.timeout(240)
WAIT = 60.0  # bound of each wait: the monitor starts in ~2 s, PostgreSQL in ~1 s


def _until(what: str, check: Callable[[], Any]) -> Any:
    """Poll ``check()`` until it returns something truthy, for at most :data:`WAIT` seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            if got := check():
                return got
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"{what}: not within {WAIT:g} s")


def test_run_starts_with_its_database_down_and_writes_once_it_is_back(tmp_path: Path) -> None:
    with own_cluster() as pg, running_simulator(decode_itl=0.003, answer_tokens=(8, 16), seed=7) as sim:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        cfg = _config(tmp_path, sim.base_url, port)
        cfg.write_text(re.sub(r'url: "sqlite:///[^"]*"', f'url: "{pg.url}"', cfg.read_text()))
        subprocess.run(_m3mon("db", "upgrade", "-c", str(cfg)), check=True, timeout=60)
        pg.stop()
        started = time.time()
        proc = _start(cfg, tmp_path / "run.log")
        try:
            _until("healthy", lambda: localhttp.get(f"{base}/-/healthy", timeout=2).is_success)
            _until("a good scrape on /metrics",
                   lambda: 'm3mon_scrape_success{endpoint="pool"} 1.0' in localhttp.get(f"{base}/metrics", timeout=2).text)  # fmt: skip

            def spooled() -> dict[str, Any] | None:  # the 503's body once a few writes wait
                r = localhttp.get(f"{base}/-/ready", timeout=2)
                found = re.search(r"\((\d+) writes spooled", r.text)
                return r.json() if r.status_code == 503 and found and int(found.group(1)) >= 5 else None

            away = _until("five writes spooled", spooled)
            assert any(
                reason.startswith(f"the store is away: {display_url(pg.url)} (") for reason in away["reasons"]
            ), away
            time.sleep(2 * STEP)  # probes and scrapes go on while it is away
            down_until = time.time()
            pg.start()
            _until(
                "ready once the database is back",
                lambda: localhttp.get(f"{base}/-/ready", timeout=2).is_success,
            )
        finally:
            code = _stop(proc)
        log = (tmp_path / "run.log").read_text()
        assert code == 0, log
        assert "the store is away at start" in log and "Traceback" not in log
        store = Store(pg.url)
        try:
            with store.session() as s:
                probes = s.scalar(select(func.count()).select_from(ProbeResultRow).where(
                    ProbeResultRow.started_at >= started, ProbeResultRow.started_at < down_until))  # fmt: skip
                readings = s.scalar(select(func.count()).select_from(ScrapeReadingRow).where(
                    ScrapeReadingRow.time >= started, ScrapeReadingRow.time < down_until))  # fmt: skip
        finally:
            store.close()
        assert probes is not None and probes >= 2, probes
        assert readings is not None and readings >= 2, readings
