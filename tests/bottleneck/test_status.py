"""``m3mon slo status`` names each class's bottleneck from the store (the real CLI, a real SQLite
store written through the store's own path): over a week, the report's verdict; over the default
15 minutes, only the probes that completed in them."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from monitor.probes.result import ProbeResult, Timings
from monitor.store.ops import probe_op
from tests.report.stores import stored

REPO = Path(__file__).resolve().parents[2]
T = datetime(2026, 11, 23, 1, tzinfo=UTC).timestamp()  # in 2026-W48


def _config(folder: Path) -> str:
    return f"""\
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
request_classes:
  - {{name: chat, max_context_tokens: 32768, probes: [chat], slos: [{{name: a, sli: availability, objective: 99}}]}}
storage: {{url: "sqlite:///{folder / "report.db"}"}}
"""


def _probe(k: int) -> ProbeResult:
    queue = 2.55 if k in (18, 19) else 0.05  # two slow requests queue: the TTFT tail is 85 % queue
    ttft = 0.05 + queue + 0.4
    t = Timings(
        ttft=ttft, e2e=ttft + 1.5, server_queue=queue, server_prefill=0.4, server_decode=1.5, network=0.05
    )
    return ProbeResult("ep", "chat", "chat", T + 60 * k, None, t, finished_at=T + 60 * k + ttft + 1.5)


def _status(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "monitor", "slo", "status", "-c", str(config), *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=True)


def test_status_names_the_bottleneck(tmp_path: Path) -> None:
    stored(tmp_path, _config(tmp_path), lambda model: [probe_op(model, _probe(k)) for k in range(20)])
    config = tmp_path / "monitor.yaml"
    week = json.loads(_status(config, "--week", "2026-W48", "--json").stdout)
    (chat,) = week["bottleneck"]
    assert (chat["class"], chat["verdict"], chat["stage"], chat["runs"]) == (
        "chat",
        "queue_bound",
        "queue",
        20,
    )
    text = _status(config, "--week", "2026-W48").stdout
    assert "  chat: queue-bound (GPU not read): P95+ TTFT 85% queue, e2e 57% queue" in text
    # at the last probe's end: the 15 minutes before hold 15 probes, fewer than the tail needs
    last = json.loads(_status(config, "--at", str(T + 60 * 19 + 10), "--json").stdout)
    (chat,) = last["bottleneck"]
    assert (chat["verdict"], chat["runs"]) == ("unknown", 15)
