"""``m3mon run`` at its default log level, watching an endpoint that is down and then comes back.

It says where it listens (exporter, OTLP receiver, Alertmanager receiver, config, store with the
password masked) and why it stopped; the endpoint's connection error is logged once, its repeats
are counted (``m3mon_log_warnings_suppressed_total``, the same number as the exporter's own count
of failed scrapes, less the one logged) and one line says when it stopped coming.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from monitor.sim.harness import running_simulator
from tests.service.live import Monitor, config_doc, free_port, stop, wait_until

pytestmark = pytest.mark.timeout(90)

SECRET = "pw-never-shown-9137"
SCRAPE_FAILED = {"logger": "monitor.service.jobs", "kind": "scrape_failed"}


def _doc(tmp: Path, port: int, endpoint_port: int) -> dict[str, object]:
    # a PostgreSQL store on a closed port: the service starts anyway (writes are spooled), and the
    # start line must name it without its password
    doc = config_doc(tmp, port, storage_url=f"postgresql+psycopg://m3mon:{SECRET}@127.0.0.1:{free_port()}/m3")
    doc["endpoints"][0].update(base_url=f"http://127.0.0.1:{endpoint_port}", scrape_interval="1s")  # type: ignore[index]
    return doc


def test_run_says_where_it_listens_logs_a_down_endpoint_once_and_counts_the_repeats(tmp_path: Path) -> None:
    port, down = free_port(), free_port()
    config = tmp_path / "monitor.yaml"
    config.write_text(yaml.safe_dump(_doc(tmp_path, port, down), sort_keys=False))
    cmd = [sys.executable, "-m", "monitor", "run", "-c", str(config), "--evaluation-step", "2", "--no-report"]
    with (tmp_path / "run.log").open("ab") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "NO_PROXY": "*"}
        )
    m = Monitor(tmp_path, config, f"http://127.0.0.1:{port}", proc)
    try:
        wait_until(lambda: m.metric("m3mon_log_warnings_suppressed_total", **SCRAPE_FAILED) >= 2, 30,
                   "two scrape failures held back")  # fmt: skip
        with running_simulator(port=down):  # the endpoint comes back
            wait_until(
                lambda: "stopped repeating: scrape pool failed" in m.log(), 30, "the line saying it stopped"
            )
            failed = m.metric("m3mon_scrape_errors_total", endpoint="pool")
            warned = m.metric("m3mon_log_warnings_total", **SCRAPE_FAILED)
            held = m.metric("m3mon_log_warnings_suppressed_total", **SCRAPE_FAILED)
    finally:
        code = stop(proc)
    log = m.log()
    assert code == 0, log[-3000:]
    assert failed >= 3 and warned == failed and held == failed - 1, (failed, warned, held)
    assert len(re.findall(r"WARNING monitor\.service\.jobs: scrape pool failed", log)) == 1, log
    assert f"{int(held)} repeats since last logged" in log
    (start,) = [ln for ln in log.splitlines() if "m3mon running:" in ln]
    for part in (f"exporter on http://127.0.0.1:{port}/metrics", f"OTLP trace receiver on http://127.0.0.1:{port}/v1/traces",
                 f"Alertmanager receiver on http://127.0.0.1:{port}/alertmanager",
                 f"runbooks on http://127.0.0.1:{port}/runbooks/",
                 f"config {config}", "store postgresql+psycopg://m3mon:***@127.0.0.1:"):  # fmt: skip
        assert part in start, start
    assert SECRET not in log
    assert re.search(r"m3mon stopped \(SIGTERM\) after \d+ s", log), log[-2000:]
    assert log.rstrip().splitlines()[-1].endswith(re.search(r"m3mon stopped.*", log)[0])  # type: ignore[index]
