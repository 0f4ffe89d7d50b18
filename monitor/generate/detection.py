"""Detection-time targets of the operational alerts: in which situation each must fire, how fast.

Every operational alert we ship (``conventions.OPERATIONAL_ALERT_NAMES``) has at least one
:class:`Target`: a concrete fault scenario and the time, from the moment the fault shows in the
series Prometheus ingests, within which the alert must be *firing* (past its ``for:``). A
:class:`Blip` is the opposite promise: a one-off event that must never fire the alert.

The rules in :mod:`monitor.generate.operational_rules` are tuned to keep these promises, and
``tests/generate/test_detection_operational.py`` (the store's alerts:
``tests/generate/test_detection_store.py``, the monitor's own: ``tests/generate/test_detection_self.py``)
replays every scenario, written by hand as input
series at the example configuration's rates, through the generated rules with the real
``promtool test rules``. docs/generate.md ("Detection-time targets") shows the same table.

Times are measured in Prometheus' own terms, from the start of the fault in the ingested series
(the first sample showing it is at most one step later), with rules evaluated at every sample:
15 s, the generated prometheus.yml's scrape and evaluation interval, or 1 min for the scenarios
that need a day or a week of history. In production add the delay before a fault reaches a
sample: up to one scrape interval, and for probe failures the probe's own duration (a
``timeout`` is known only after the class's ``probe.timeout``).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor import conventions as cv


@dataclass(frozen=True)
class Target:
    """``alert`` fires within ``within`` seconds of the start of ``scenario``."""

    key: str  # names the scenario in the test that replays it
    alert: str
    scenario: str
    within: int  # seconds


@dataclass(frozen=True)
class Blip:
    """``scenario`` (a one-off event) never fires ``alert``."""

    key: str
    alert: str
    scenario: str


TARGETS: tuple[Target, ...] = (
    Target("endpoint-down", cv.ALERT_ENDPOINT_DOWN,
           "the endpoint stops answering Prometheus' scrapes (up = 0)", 3 * 60),
    Target("engine-stalled", cv.ALERT_ENGINE_STALLED,
           "the engine stops counting tokens with 3 requests running and the queue growing, /metrics and "
           "/health up, scraped every 15 s (measured from the stall itself, at any scrape phase)", 60),
    Target("engine-stalled-30s", cv.ALERT_ENGINE_STALLED,
           "as engine-stalled on an endpoint scraped every 30 s", 90),
    Target("monitor-down", cv.ALERT_MONITOR_DOWN,
           "the monitor's exporter stops answering Prometheus' scrapes", 6 * 60),
    Target("probes-failing", cv.ALERT_PROBES_FAILING,
           "m3-interactive probed at the example's rates (11 probes/min), every other probe of each kind "
           "fails (50 %), /health ok", 5 * 60),
    Target("probes-failing-sparse", cv.ALERT_PROBES_FAILING,
           "m3-repo probed at the example's rate (2 probes every 5 min), every probe fails, /health ok",
           15 * 60),
    Target("probes-failing-restart", cv.ALERT_PROBES_FAILING,
           "as probes-failing, and the monitor restarts 2 min in (away 30 s, counters from 0)", 5 * 60),
    Target("probes-failing-after-maintenance", cv.ALERT_PROBES_FAILING,
           "as probes-failing, from 4 min after a 10-min maintenance of the endpoint ended", 5 * 60),
    Target("scrape-failing", cv.ALERT_SCRAPE_FAILING,
           "every scrape the monitor makes of the endpoint's /metrics fails", 6 * 60),
    Target("kv-full", cv.ALERT_KV_CACHE_NEARLY_FULL,
           "KV-cache usage goes from 60 % to 95 % and stays there", 11 * 60),
    Target("queue-growing", cv.ALERT_QUEUE_GROWING,
           "the waiting queue grows by one request every 15 s from empty", 15 * 60),
    Target("preemptions", cv.ALERT_PREEMPTIONS,
           "the engine preempts a request every 30 s", 16 * 60),
    Target("prefix-collapse", cv.ALERT_PREFIX_HIT_RATE_COLLAPSED,
           "prefix-cache hit rate drops from 80 % (as all day yesterday) to 20 % at the same traffic",
           60 * 60),
    Target("spec-drop", cv.ALERT_SPEC_ACCEPTANCE_DROPPED,
           "draft-token acceptance drops from 70 % (as all day yesterday) to 35 %", 45 * 60),
    Target("routing-leak", cv.ALERT_ROUTING_LEAK,
           "60 000-token prompts start reaching the 32K pool (max-model-len raised), one a minute", 2 * 60),
    Target("block-size", cv.ALERT_BLOCK_SIZE_NOT_128,
           "the endpoint comes back with --block-size 16", 6 * 60),
    Target("ttft-regression", cv.ALERT_TTFT_P99_REGRESSION,
           "every request's TTFT goes from 0.3 s (as a week ago) to 3 s at the same traffic", 17 * 60),
    Target("prober-errors", cv.ALERT_PROBER_ERRORS,
           "one prober crashes once (one monitor_error)", 2 * 60),
    Target("store-dead-letter", cv.ALERT_STORE_DEAD_LETTERS,
           "one store write fails on its own and is set aside in the dead-letter file", 2 * 60),
    Target("store-spool-growing", cv.ALERT_STORE_SPOOL_GROWING,
           "the database goes away while the monitor keeps writing (12 writes a minute, all spooled)",
           11 * 60),
    Target("evaluation-stale", cv.ALERT_EVALUATION_STALE,
           "the monitor's SLO evaluation stops completing (every evaluate run fails)", 6 * 60),
    Target("probes-not-running", cv.ALERT_PROBES_NOT_RUNNING,
           "interactive-32k probe rounds (every 30 s) stop completing", 11 * 60),
    Target("receiver-rejecting", cv.ALERT_RECEIVER_REJECTING,
           "Alertmanager's webhook to the monitor is refused once a minute (a rotated password)", 3 * 60),
    Target("loop-held", cv.ALERT_EVENT_LOOP_BLOCKED,
           "the monitor's event loop is held for 40 s once (a call that does not yield)", 60),
    Target("loop-starved", cv.ALERT_EVENT_LOOP_BLOCKED,
           "the monitor is starved of CPU: every 0.5 s tick runs 0.3 s late", 2 * 60),
    Target("family-gone", cv.ALERT_METRIC_FAMILY_GONE,
           "a vLLM upgrade drops vllm:kv_cache_usage_perc, which an alert and dashboards read", 30),
    Target("tail-bottleneck", cv.ALERT_TAIL_BOTTLENECK,
           "the verdict turns scheduler_bound while the class's TTFT SLO burns 3x on the 1h window", 16 * 60),
)  # fmt: skip

BLIPS: tuple[Blip, ...] = (
    Blip("endpoint-one-scrape", cv.ALERT_ENDPOINT_DOWN, "one failed scrape of the endpoint"),
    Blip("monitor-one-scrape", cv.ALERT_MONITOR_DOWN, "one failed scrape of the monitor"),
    Blip("stall-idle", cv.ALERT_ENGINE_STALLED,
         "an idle engine: nothing running or waiting, no token counted"),
    Blip("stall-slow", cv.ALERT_ENGINE_STALLED,
         "a slow engine: 3 requests running, 2 generation tokens per 15-s scrape interval"),
    Blip("stall-paused-scrape", cv.ALERT_ENGINE_STALLED,
         "no sample of the endpoint at all for 5 min (Prometheus paused) with requests running"),
    Blip("stall-failed-scrape", cv.ALERT_ENGINE_STALLED,
         "every scrape of the endpoint fails for 5 min (up 0, no other sample) with requests running"),
    Blip("stall-counters-gone", cv.ALERT_ENGINE_STALLED,
         "the token counters vanish from the page (stale) while requests show running"),
    Blip("stall-restart", cv.ALERT_ENGINE_STALLED,
         "the engine restarts, once between two scrapes and once with a failed scrape: counters from 0"),
    Blip("stall-long-prefill", cv.ALERT_ENGINE_STALLED,
         "one 2-min prefill alone (no token counted until its first, KV-cache usage rising per chunk)"),
    Blip("stall-first-request", cv.ALERT_ENGINE_STALLED,
         "a request reaches an idle engine; its first token comes 20 s later"),
    Blip("stall-health-down", cv.ALERT_ENGINE_STALLED,
         "the engine stands still while the monitor reports /health down (an outage, not a stall)"),
    Blip("probes-one-failure", cv.ALERT_PROBES_FAILING, "one failed probe on m3-interactive"),
    Blip("probes-one-round", cv.ALERT_PROBES_FAILING,
         "every m3-interactive probe finishing within one 30 s round fails (6 probes)"),
    Blip("probes-sparse-one-round", cv.ALERT_PROBES_FAILING, "one whole m3-repo round (2 probes) fails"),
    Blip("probes-after-outage", cv.ALERT_PROBES_FAILING,
         "m3-interactive (refusing connections) and m3-repo (a gateway's 503s) down for 6 min, /health "
         "down from 15 s in, then back"),
    Blip("probes-maintenance-restart", cv.ALERT_PROBES_FAILING,
         "every m3-interactive probe fails inside a 20-min maintenance; the monitor restarts a minute "
         "after it ends (checked from its end)"),
    Blip("probes-monitor-errors", cv.ALERT_PROBES_FAILING,
         "every m3-interactive probe ends in monitor_error for 20 min (a monitor bug, not the service)"),
    Blip("scrape-one-failure", cv.ALERT_SCRAPE_FAILING, "one failed monitor scrape of the endpoint"),
    Blip("kv-one-sample", cv.ALERT_KV_CACHE_NEARLY_FULL, "KV-cache usage at 95 % in one scrape"),
    Blip("queue-one-sample", cv.ALERT_QUEUE_GROWING, "50 requests waiting in one scrape"),
    Blip("preemption-one", cv.ALERT_PREEMPTIONS, "a single preemption"),
    Blip("prefix-10m", cv.ALERT_PREFIX_HIT_RATE_COLLAPSED, "10 min of cache-busting traffic (0 % hits)"),
    Blip("spec-5m", cv.ALERT_SPEC_ACCEPTANCE_DROPPED, "5 min with no draft token accepted"),
    Blip("ttft-3m", cv.ALERT_TTFT_P99_REGRESSION, "a 3-minute burst in which every request takes 3 s"),
    Blip("store-monitor-restart", cv.ALERT_STORE_DEAD_LETTERS,
         "the monitor restarts, its dead-letter counters start again from 0"),
    Blip("store-db-restart", cv.ALERT_STORE_SPOOL_GROWING,
         "the database is away for 5 min (a restart), then the spool is replayed"),
    Blip("evaluation-restart", cv.ALERT_EVALUATION_STALE,
         "the monitor restarts; its first evaluation (a backfill) completes 4 min later"),
    Blip("probes-restart", cv.ALERT_PROBES_NOT_RUNNING,
         "the monitor restarts; its first repo-analysis-128k round (timeout 300 s) completes 5 min later"),
    Blip("receiver-two", cv.ALERT_RECEIVER_REJECTING,
         "two refused requests a minute apart (a stray client)"),
    Blip("loop-pauses", cv.ALERT_EVENT_LOOP_BLOCKED,
         "a busy monitor: every tick 10 ms late and a 3 s pause every 5 min (collector, swap)"),
    Blip("loop-restart", cv.ALERT_EVENT_LOOP_BLOCKED,
         "the monitor restarts after a 10 s hold: its lag histogram starts again from 0"),
    Blip("family-never-served", cv.ALERT_METRIC_FAMILY_GONE,
         "a family the dashboards read is flag-gated and was never served"),
    Blip("family-monitor-restart", cv.ALERT_METRIC_FAMILY_GONE,
         "the monitor restarts: every family's series gone for 2 min, then served again"),
    Blip("tail-no-burn", cv.ALERT_TAIL_BOTTLENECK,
         "gpu_bound for an hour while every latency SLO of the class burns below 1x"),
    Blip("tail-10m", cv.ALERT_TAIL_BOTTLENECK, "scheduler_bound for 10 min, the TTFT SLO burning 3x"),
    Blip("tail-none", cv.ALERT_TAIL_BOTTLENECK, "the TTFT SLO burns 3x for an hour with the verdict none"),
)  # fmt: skip


def targets_for(alert: str) -> tuple[Target, ...]:
    """The detection-time targets of ``alert`` (every operational alert has at least one)."""
    return tuple(t for t in TARGETS if t.alert == alert)
