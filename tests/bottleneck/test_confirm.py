"""Confirmation probe rounds: a server that starts refusing work gets its classes probed a few
times at once, so whether what it refuses comes back (a gateway's retries) is seen within a minute
or two, not after however many hourly or minutely rounds the first refused probe takes.

The oracles: the counters' definitions on real pages (tests/fixtures/metrics: vLLM 0.33's
``admission_rejections_total``, SGLang 0.5's exact ``429`` answers, vLLM 0.13's grouped ``5xx``,
which is failure, not refusal), a real APScheduler's job list, and the issue's bound (the right
verdict, shedding *and* the retry storm, within 2 minutes of the onset) on eight seeds of the
simulated pool whose gateway retries what the server refuses.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from monitor.model import Endpoint
from monitor.probes.confirm import ROUNDS, Confirmations
from monitor.scrape.interval import signals
from monitor.scrape.page import parse
from monitor.scrape.reading import read_page
from monitor.service import confirm_rounds
from monitor.sim.verdict_matrix import judge
from monitor.sim.world_scenarios import WORLDS

PAGES = Path(__file__).resolve().parents[1] / "fixtures/metrics"
V033 = (PAGES / "vllm-0.33-3models-2engines.metrics.txt").read_text()
M3_REJECTED = (
    'vllm:admission_rejections_total{model_name="MiniMaxAI/MiniMax-M3",reason="max_num_queued_reqs"} 0.0'
)
SGLANG = (PAGES / "sglang-0.5.23.metrics.txt").read_text()
SG_CHAT = 'sglang:http_responses_total{endpoint="/v1/chat/completions",method="POST",status_code="200"} 207.0'
V013 = (PAGES / "vllm-0.13.0.metrics.txt").read_text()
CHAT = 'http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"} 200.0'


def _refused(older: str, newer: str, model: str | None = None) -> bool:
    a, b = read_page(parse(older), 1000.0), read_page(parse(newer), 1015.0)
    return confirm_rounds.refused(signals("pool", b, a, model=model))


def test_refusals_are_read_from_admission_rejections_and_429_not_from_failures() -> None:
    assert M3_REJECTED in V033 and SG_CHAT in SGLANG and CHAT in V013
    m3 = "MiniMaxAI/MiniMax-M3"
    assert _refused(V033, V033.replace(M3_REJECTED, M3_REJECTED.replace("} 0.0", "} 4.0")), m3)
    assert not _refused(V033, V033, m3)
    refusing = SG_CHAT + "\n" + SG_CHAT.replace('"200"', '"429"').replace("207.0", "12.0")
    assert _refused(SGLANG.replace(SG_CHAT, SG_CHAT + "\n" + SG_CHAT.replace('"200"', '"429"').replace(
        "207.0", "0.0")), SGLANG.replace(SG_CHAT, refusing))  # fmt: skip
    failing = CHAT + "\n" + CHAT.replace('"2xx"', '"5xx"').replace("200.0", "30.0")
    assert not _refused(V013.replace(CHAT, CHAT + "\n" + CHAT.replace('"2xx"', '"5xx"').replace(
        "200.0", "0.0")), V013.replace(CHAT, failing))  # fmt: skip


def test_each_class_gets_its_rounds_once_per_cooldown() -> None:
    scheduler = AsyncIOScheduler()  # not started: its job list is what the service would run
    ep = Endpoint(
        name="ep",
        base_url="http://127.0.0.1:1",
        backend="vllm",
        model="m",
        classes=("chat", "rag"),
        scrape_interval=15.0,
    )
    confirmations = Confirmations()

    async def probe(cls: str) -> None:
        raise AssertionError("not run")

    def wrap(task: str, fn: object) -> object:
        return fn

    added = confirm_rounds.schedule(scheduler, wrap, probe, confirmations, ep, 1_000_000.0)
    again = confirm_rounds.schedule(scheduler, wrap, probe, confirmations, ep, 1_000_000.0 + 60)
    jobs = scheduler.get_jobs()
    later = confirm_rounds.schedule(scheduler, wrap, probe, confirmations, ep, 1_000_000.0 + 900)
    assert len(added) == 2 * ROUNDS and again == [] and len(later) == 2 * ROUNDS
    assert len(jobs) == 2 * ROUNDS and {j.name for j in jobs} == {"probe:chat:confirm", "probe:rag:confirm"}
    runs = sorted(j.trigger.run_date.timestamp() for j in jobs if tuple(j.args) == ("chat",))
    assert len(runs) == ROUNDS and runs[0] > 1_000_000.0
    assert all(b - a == runs[1] - runs[0] > 0 for a, b in itertools.pairwise(runs))


def test_a_gateway_retrying_refusals_is_named_within_two_minutes_on_eight_seeds() -> None:
    """Shedding and the retry storm both named within 120 s of the onset on seeds 1-8 (the
    refused probe that shows the retries came 30-375 s after the onset without confirmation)."""
    world = next(w for w in WORLDS if w.name == "shedding-retried-by-gateway")
    took = {}
    for seed in range(1, 9):
        r = judge(replace(world, seed=seed, duration=world.onset + 150))
        took[seed] = r.time_to_verdict
    assert all(t is not None and t <= 120 for t in took.values()), took
