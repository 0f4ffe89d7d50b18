"""The bottleneck verdict against a real vLLM 0.32 server whose first token is owned by prefill,
with no optional vLLM flag (no ``--enable-per-request-metrics``; spans exported as a deployment
would): long prompts -> ``prefill_bound``.

The server serves :mod:`tests.real_vllm.build_prefill_model`'s model (the tier's tokenizer, a wider
network: about a second to prefill 1,700 tokens on this CPU, where the tiny model's 85 ms are no
more than the API server's own time around them). Before ``m3mon run`` starts, a few long prompts
measure the server's mean prefill time on this machine at this moment, and the class's TTFT
objective is set to it: prefill is then large against the objective (at least half of it) and
the TTFT P95 is at risk of it (at least 80 %), which is what ``prefill_bound`` asks
(docs/bottleneck.md). One client then sends long prompts back to back (one at a time: none waits
in the queue behind another), and the class's probes run once, at the monitor's start, so the
verdict reads the server's histograms and real traffic's spans.

Done when: the exporter names ``prefill_bound`` within 2 minutes of the load's start, ``m3mon slo
status`` names the same verdict at the same time, and no stage is below zero in any share the
exporter publishes.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.servers import free_port
from tests.real_vllm.conftest import TIER_TIMEOUT
from tests.real_vllm.stack import HERE, MAX_MODEL_LEN, SERVED, Stack, VllmServer
from tests.real_vllm.test_verdict import OVERLOAD
from tests.real_vllm.verdict_support import judge_under, monitor_running
from tests.support import localhttp

pytestmark = [
    pytest.mark.real,
    pytest.mark.slow,
    pytest.mark.timeout(TIER_TIMEOUT),
    pytest.mark.skipif(not OVERLOAD, reason="set M3MON_VERDICT_OVERLOAD=1: takes the machine's CPU"),
]

#: Words of the prompts: a random draw of them tokenizes to about 7 tokens a word with the tier's
#: tokenizer, so 250 words are about 1,700 tokens, under the 2,048-token context with the answer.
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "river",
    "stone",
    "cloud",
    "forest",
    "quiet",
    "amber",
    "signal",
    "harbor",
    "lantern",
    "meadow",
]
PROMPT_WORDS = 250
CALIBRATION = 6
BUILD_TIMEOUT = 300.0
PREFILL = re.compile(r"^vllm:request_prefill_time_seconds_(sum|count)\{[^}]*\} (\S+)$", re.M)


def _prompt(rng: random.Random) -> str:
    """A long prompt no earlier one shares a prefix with (the prefix cache holds none of it)."""
    return " ".join(f"{rng.choice(WORDS)}{rng.randint(0, 999)}" for _ in range(PROMPT_WORDS))


def _ask(client: httpx.Client, base_url: str, rng: random.Random) -> None:
    body = {"model": SERVED, "max_tokens": 4, "messages": [{"role": "user", "content": _prompt(rng)}]}
    client.post(f"{base_url}/v1/chat/completions", json=body).raise_for_status()


def _prefill_totals(base_url: str) -> tuple[float, float]:
    found = dict(PREFILL.findall(localhttp.get(f"{base_url}/metrics", timeout=10).text))
    return float(found.get("sum", 0.0)), float(found.get("count", 0.0))


def _mean_prefill(base_url: str) -> float:
    """The server's own mean prefill time of long prompts, now, on this machine (after one warm-up)."""
    rng = random.Random(7)
    with httpx.Client(timeout=60) as c:
        _ask(c, base_url, rng)
        s0, n0 = _prefill_totals(base_url)
        for _ in range(CALIBRATION):
            _ask(c, base_url, rng)
    s1, n1 = _prefill_totals(base_url)
    assert n1 - n0 == CALIBRATION, (n0, n1)
    return (s1 - s0) / (n1 - n0)


@contextmanager
def _long_prompts(base_url: str) -> Iterator[None]:
    """One client sending long prompts back to back until the block ends."""
    done = threading.Event()

    def client() -> None:
        rng = random.Random(11)
        with httpx.Client(timeout=60) as c:
            while not done.is_set():
                try:
                    _ask(c, base_url, rng)
                except httpx.HTTPError:
                    time.sleep(0.2)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(70)


def _config(tmp: Path, base_url: str, port: int, objective_ms: int) -> Path:
    doc: dict[str, Any] = {
        "version": "m3mon/v1",
        "endpoints": [{"name": "wide", "base_url": base_url, "backend": "vllm", "model": SERVED,
                       "span_service_name": "vllm-tiny", "classes": ["long-docs"], "scrape_interval": "2s"}],
        "request_classes": [{"name": "long-docs", "max_context_tokens": MAX_MODEL_LEN, "probes": ["chat"],
                             "probe": {"interval": "1h", "timeout": "60s", "jitter": "0.1s"},
                             "slos": [{"name": "ttft", "sli": "ttft", "threshold": f"{objective_ms}ms",
                                       "objective": 95}]}],
        "storage": {"url": f"sqlite:///{tmp / 'm3mon.db'}", "buffer_dir": str(tmp / "spool")},
        "exporter": {"listen": f"127.0.0.1:{port}"},
    }  # fmt: skip
    path = tmp / "monitor.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _wide_model(stack: Stack, tmp: Path) -> Stack:
    out = tmp / "wide-qwen2"
    cmd = [str(stack.python), str(HERE / "build_prefill_model.py"), str(out), str(stack.model)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp)})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return Stack(stack.python, out)


def test_long_prompts_read_prefill_bound_and_slo_status_agrees(stack: Stack, tmp_path: Path) -> None:
    port = free_port()
    server = VllmServer(
        _wide_model(stack, tmp_path), free_port(), f"http://127.0.0.1:{port}/v1/traces", tmp_path
    )
    try:
        server.start()
        prefill = _mean_prefill(server.base_url)
        objective_ms = max(100, math.ceil(prefill * 100) * 10)  # the mean prefill, up to 10 ms
        config = _config(tmp_path, server.base_url, port, objective_ms)
        case = f"long prompts: 1,700 tokens, mean prefill {prefill:.2f} s, TTFT objective {objective_ms} ms"
        with monitor_running(config, port, tmp_path / "monitor.log") as exporter:
            judge_under(_long_prompts(server.base_url), exporter, config, case, "prefill_bound",
                        lambda v: v == "prefill_bound")  # fmt: skip
    finally:
        server.stop()
