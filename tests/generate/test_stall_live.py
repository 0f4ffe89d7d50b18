"""Live: a real Prometheus with the generated ``VLLMEngineStalled`` pages a frozen simulator in time.

The simulator serves three long streams; Prometheus (the generated prometheus.yml, evaluation every
15 s) scrapes it every 2 s and loads the rule ``m3mon generate`` writes for that endpoint. While
the engine moves, the alert stays quiet for a whole window; then the ``engine_freeze`` fault stops
the engine behind a 200 ``/health`` and the alert must fire within two scrape intervals plus 30 s
of the freeze (the issue's bound, not a number the rule chose), measured with the test's clock.
"""

from __future__ import annotations

import dataclasses
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from monitor import conventions as cv
from monitor.generate.prometheus_config import prometheus_config
from monitor.generate.rules import Group, rule_file
from monitor.generate.stall_rules import stall_alerts, window_seconds
from monitor.model import load_model
from monitor.sim.harness import running_simulator
from tests.generate.conftest import REPO
from tests.support import localhttp
from tests.support.prometheus import free_port, query, running_prometheus, wait_for

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(180)]

SCRAPE = 2.0  # seconds; the window is 2 x 2 + 10 = 14 s, the bound 2 x 2 + 30 = 34 s
BOUND = 2 * SCRAPE + 30
FIRING = f'ALERTS{{alertname="{cv.ALERT_ENGINE_STALLED}",alertstate="firing"}}'


def _stream(base_url: str, stop: threading.Event) -> None:
    body = {"model": cv.M3_MODEL_ID, "stream": True, "max_tokens": 20000, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Tell me a very long story about the sea"}]}  # fmt: skip
    try:
        with httpx.stream("POST", f"{base_url}/v1/chat/completions", json=body, timeout=120) as r:
            for _ in r.iter_lines():
                if stop.is_set():
                    return
    except httpx.HTTPError:
        return  # the simulator stopped under it


def test_frozen_engine_pages_within_two_scrapes_plus_30s() -> None:
    stop = threading.Event()
    with running_simulator(decode_itl=0.05, jitter=0.0) as sim, tempfile.TemporaryDirectory() as tmp:
        base = load_model(REPO / "examples" / "monitor.yaml")
        ep = dataclasses.replace(base.endpoints[0], base_url=sim.base_url, scrape_interval=SCRAPE)
        model = dataclasses.replace(base, endpoints=(ep,), exporter_listen=f"127.0.0.1:{free_port()}")
        rules = Path(tmp) / "stall.rules.yml"
        rules.write_text(
            rule_file([Group("stall", alerts=tuple(stall_alerts(model)))], model.alerting, "test")
        )
        cfg = prometheus_config(model, [str(rules)], alertmanager=f"127.0.0.1:{free_port()}")
        assert cfg["global"]["evaluation_interval"] == "15s"
        streams = [threading.Thread(target=_stream, args=(sim.base_url, stop), daemon=True) for _ in range(3)]
        try:
            with running_prometheus(cfg, Path(tmp)) as url:
                for s in streams:
                    s.start()
                moving = f"sum(increase({cv.VLLM_GENERATION_TOKENS}[{window_seconds(SCRAPE)}s])) > 0"
                wait_for(lambda: query(url, moving), 40, "tokens counted by Prometheus")
                time.sleep(window_seconds(SCRAPE) + 15)  # a whole window and an evaluation, moving
                assert query(url, f'ALERTS{{alertname="{cv.ALERT_ENGINE_STALLED}"}}') == []
                assert query(url, f"sum({cv.VLLM_RUNNING})")[0]["value"][1] == "3"
                sim.set_faults(engine_freeze=True)
                frozen = time.monotonic()
                wait_for(
                    lambda: query(url, FIRING), BOUND + 10, f"{cv.ALERT_ENGINE_STALLED} firing", every=0.25
                )
                took = time.monotonic() - frozen
                assert localhttp.get(f"{sim.base_url}/health", timeout=5).status_code == 200
                assert took <= BOUND, f"fired {took:.1f} s after the freeze, bound {BOUND} s"
                print(f"{cv.ALERT_ENGINE_STALLED} fired {took:.1f} s after the freeze (bound {BOUND:g} s)")
        finally:
            stop.set()
            sim.clear_faults()
            for s in streams:
                s.join(10)
