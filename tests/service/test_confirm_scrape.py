"""The scrape job tells the service when an endpoint refuses requests for load, read from the real
simulator's page: a queue of size 0 refuses every chat (vLLM's ``max_num_queued_reqs``: 429 and
``vllm:admission_rejections_total`` + 1), and the interval after it is a refusal; an interval
with answered requests only is not (the simulator's own counters are the oracle)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import yaml

from monitor.exporter import Exporter
from monitor.model import Endpoint, load_model
from monitor.service.jobs import Jobs
from monitor.sim.harness import running_simulator
from monitor.store import Store
from monitor.store.migrate import upgrade
from tests.service.live import config_doc
from tests.support import localhttp

pytestmark = pytest.mark.timeout(120)
FAST = {"decode_itl": 0.002, "prefill_overhead": 0.001, "jitter": 0.0}
CHAT = {"model": "MiniMaxAI/MiniMax-M3", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(("max_queue", "refused"), [(0, True), (1024, False)])
def test_a_scrape_that_shows_refusals_calls_on_refused(tmp_path: Path, max_queue: int, refused: bool) -> None:
    with running_simulator(max_queue=max_queue, **FAST) as sim:
        doc = config_doc(tmp_path, 9464)
        doc["endpoints"][0]["base_url"] = sim.base_url
        (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
        model = load_model(tmp_path / "m.yaml")
        upgrade(model.storage.url)
        jobs = Jobs(model, Store(model.storage.url), Exporter(model))
        called: list[str] = []

        def on_refused(endpoint: Endpoint) -> None:
            called.append(endpoint.name)

        jobs.on_refused = on_refused
        endpoint = model.endpoints[0]

        async def run() -> None:
            await jobs.scrape(endpoint)
            async with httpx.AsyncClient(timeout=10) as c:
                answer = await c.post(f"{sim.base_url}/v1/chat/completions", json=CHAT)
            assert answer.status_code == (429 if refused else 200), answer.text
            await jobs.scrape(endpoint)
            await jobs.close()

        asyncio.run(run())
        page = localhttp.get(f"{sim.base_url}/metrics").text
    rejected = [ln for ln in page.splitlines() if ln.startswith("vllm:admission_rejections_total{")]
    assert any(ln.endswith(" 1.0") for ln in rejected) == refused, rejected
    assert called == (["pool"] if refused else [])
