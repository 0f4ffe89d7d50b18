"""The bottleneck verdict against a real vLLM 0.32 server under overload, with no optional vLLM
flag (no ``--enable-per-request-metrics``; spans exported as a deployment would): its own server
with ``--max-num-seqs 2`` and 16 clients streaming 300-token answers back to back, so requests
queue; ``m3mon run`` probing every 3 s against a 1 s TTFT objective.

Done when (docs/bottleneck.md): the exporter names a queue-owned verdict within 2 minutes of the
overload's start (``queue_bound``: there is no GPU to read on a CPU server), ``m3mon slo status``
names the same verdict at the same time, and no stage is below zero in any share the exporter
publishes. The issue measured the old exporter at ``unknown`` for 20 minutes here while ``slo
status`` said ``proxy_bound``.
"""

from __future__ import annotations

import os
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
from tests.real_vllm.stack import MAX_MODEL_LEN, SERVED, Stack, VllmServer
from tests.real_vllm.verdict_support import judge_under, monitor_running

#: Two minutes of a saturated vLLM take the whole of a 2-core CI machine: beside it, other soaks
#: missed their own timeouts (tests/generate/test_dashboards_no_nan's Prometheus fixture, 180 s).
#: It runs after the other tiers: .ci/run sets M3MON_VERDICT_OVERLOAD=1 for its own
#: `make test-real-vllm` step, whose tests run one at a time (this module last).
OVERLOAD = os.environ.get("M3MON_VERDICT_OVERLOAD", "") not in ("", "0")
pytestmark = [
    pytest.mark.real,
    pytest.mark.slow,
    pytest.mark.timeout(TIER_TIMEOUT),
    pytest.mark.skipif(not OVERLOAD, reason="set M3MON_VERDICT_OVERLOAD=1: saturates the machine"),
]

CLIENTS = 16
QUEUE_OWNED = {"queue_bound", "scheduler_bound", "gpu_bound", "cache_bound"}


def _config(tmp: Path, base_url: str, port: int) -> Path:
    doc: dict[str, Any] = {
        "version": "m3mon/v1",
        "endpoints": [{"name": "tiny", "base_url": base_url, "backend": "vllm", "model": SERVED,
                       "classes": ["chat-2k"], "scrape_interval": "2s"}],
        "request_classes": [{"name": "chat-2k", "max_context_tokens": MAX_MODEL_LEN, "probes": ["chat"],
                             "probe": {"interval": "3s", "timeout": "60s", "jitter": "0.1s"},
                             "slos": [{"name": "ttft", "sli": "ttft", "threshold": "1s", "objective": 95}]}],
        "storage": {"url": f"sqlite:///{tmp / 'm3mon.db'}", "buffer_dir": str(tmp / "spool")},
        "exporter": {"listen": f"127.0.0.1:{port}"},
    }  # fmt: skip
    path = tmp / "monitor.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@contextmanager
def _overload(base_url: str) -> Iterator[None]:
    """CLIENTS threads streaming 300-token answers back to back until the block ends."""
    done = threading.Event()
    body = {"model": SERVED, "max_tokens": 300, "ignore_eos": True, "stream": True,
            "messages": [{"role": "user", "content": "Tell a long story about the sea."}]}  # fmt: skip

    def client() -> None:
        with httpx.Client(timeout=60) as c:
            while not done.is_set():
                try:
                    with c.stream("POST", f"{base_url}/v1/chat/completions", json=body) as r:
                        for _ in r.iter_bytes():
                            if done.is_set():
                                break
                except httpx.HTTPError:
                    time.sleep(0.2)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        done.set()
        for t in threads:
            t.join(70)


def test_overload_reads_queue_owned_and_slo_status_agrees(stack: Stack, tmp_path: Path) -> None:
    port = free_port()
    server = VllmServer(stack, free_port(), f"http://127.0.0.1:{port}/v1/traces", tmp_path,
                        extra=("--max-num-seqs", "2"))  # fmt: skip
    try:
        server.start()
        config = _config(tmp_path, server.base_url, port)
        with monitor_running(config, port, tmp_path / "monitor.log") as exporter:
            judge_under(_overload(server.base_url), exporter, config,
                        "overload: --max-num-seqs 2, 16 streaming clients", "queue-owned",
                        lambda v: v in QUEUE_OWNED)  # fmt: skip
    finally:
        server.stop()
