"""The bottleneck scenario matrix (docs/bottleneck.md "Scenarios"): one :class:`~monitor.sim.worlds.
World` per cause, controls that must read ``none``, and the mixed and low-traffic cases.

The pool: 64 slots, capacity about 5 requests/s at a full batch; healthy traffic 3 requests/s.
Each fault starts at 20 min and holds to the hour's end; objectives TTFT 2.5 s, e2e 40 s (the
agent class: e2e 10 s; the long-document class: TTFT 2.5 s for prompts of 80k tokens).
"""

from __future__ import annotations

from typing import Any

from monitor.bottleneck.inputs import Objectives
from monitor.sim.worlds import Load, World

BASE = Load(rate=3.0)
SATURATED = Load(rate=7.0, slowdown=2.0)
STALL = Load(rate=3.0, admit_per_second=1.0)
KV_TIGHT = Load(rate=3.0, kv_tokens=60_000.0)
#: decode bound by memory bandwidth (long KV caches, MoE weights): steps twice as slow, the memory
#: interface at 95 %, the SMs at half
MEMORY_BOUND = Load(rate=7.0, slowdown=2.0, memory_bound=True)

TWO = Load(rate=6.0)
SGLANG: dict[str, Any] = {"server": "sglang", "probe_view": False}
SGLANG_04: dict[str, Any] = {"server": "sglang-0.4", "probe_view": False}
FEW_PROBES: dict[str, Any] = {"spans": 0.05, "probe_every": 300.0}

WORLDS: tuple[World, ...] = (
    World("healthy", ("none",), BASE),
    World("healthy-busy", ("none",), Load(rate=3.8)),
    World("healthy-proxy-outliers", ("none",), Load(rate=3.0, outliers=0.08)),
    World("healthy-default-dcgm", ("none",), BASE, counters="default"),
    World("gpu-saturated-default-dcgm", ("gpu_bound",), BASE, SATURATED, counters="default"),
    World("gpu-saturated-profiling", ("gpu_bound",), BASE, SATURATED),
    World("gpu-saturated-amd", ("gpu_bound",), BASE, SATURATED, counters="amd"),
    World("gpu-saturated-flat-queue", ("gpu_bound",), BASE, Load(clients=94, slowdown=2.0)),
    World("gpu-saturated-dips", ("gpu_bound",), BASE, SATURATED, dips=True),
    World("one-gpu-of-eight-pinned", ("gpu_bound",), BASE, Load(rate=4.0, slowdown=2.0), hot_gpu=True),
    World("memory-bound-profiling", ("gpu_bound",), BASE, MEMORY_BOUND),
    World("memory-bound-default-dcgm", ("gpu_bound",), BASE, MEMORY_BOUND, counters="default"),
    World("memory-bound-mem-copy-util", ("gpu_bound",), BASE, MEMORY_BOUND, counters="nvml"),
    World("memory-bound-amd-umc", ("gpu_bound",), BASE, MEMORY_BOUND, counters="amd"),
    World("scheduler-stall-idle-gpus", ("scheduler_bound",), BASE, STALL),
    World("scheduler-stall-default-dcgm", ("scheduler_bound",), BASE, STALL, counters="default"),
    World("scheduler-stall-no-gpu-exporter", ("queue_bound",), BASE, STALL, counters="none"),
    World("kv-pressure", ("cache_bound",), BASE, KV_TIGHT),
    World("prefix-drop-traffic-mix", ("none",), BASE, Load(rate=3.0, prefix_hit=0.05, prompt=3000.0)),
    World("prefix-drop-cache-pressure", ("cache_bound",), BASE,
          Load(rate=3.0, prefix_hit=0.1, kv_tokens=60_000.0)),
    World("slow-proxy", ("proxy_bound",), BASE, Load(rate=3.0, network=0.8)),
    World("slow-tokenization", ("proxy_bound",), BASE, Load(rate=3.0, tokenize=0.7)),
    World("mixed-prompts-slow-proxy", ("proxy_bound",), Load(rate=3.0, long_share=0.1, kv_tokens=4e6),
          Load(rate=3.0, long_share=0.1, kv_tokens=4e6, network=0.8)),
    World("slow-tools", ("application_bound",), Load(rate=3.0, output=100.0),
          Load(rate=3.0, output=100.0, tool_seconds=1.0), tools=True, objectives=Objectives(2.5, 10.0)),
    World("load-shedding-429", ("load_shedding",), BASE, Load(rate=3.0, shed=0.3)),
    World("shedding-retried-by-gateway", ("load_shedding",), BASE,
          Load(rate=3.0, shed=0.3, gateway_retry=True), also=("load_shedding", "retry_storm")),
    World("retry-storm-5xx", ("retry_storm",), BASE, Load(rate=3.0, errors=0.3, gateway_retry=True)),
    World("two-causes-proxy-and-gpu", ("gpu_bound", "proxy_bound"), BASE,
          Load(clients=94, slowdown=2.0, network=0.8), also=("gpu_bound", "proxy_bound")),
    World("long-prompts", ("prefill_bound",), Load(rate=0.5, prompt=20_000.0, kv_tokens=4e6),
          Load(rate=0.5, prompt=80_000.0, prefix_hit=0.3, kv_tokens=4e6)),
    World("long-outputs", ("decode_bound",), Load(rate=0.5), Load(rate=0.5, output=1500.0)),
    World("scheduler-stall-then-recovers", ("scheduler_bound",), BASE, STALL, until=1800.0),
    World("slow-proxy-then-fixed", ("proxy_bound",), BASE, Load(rate=3.0, network=0.8), until=1800.0),
    World("very-low-traffic", ("insufficient_evidence",), Load(rate=0.02), probe_every=60.0),
    # load shapes, counter sets and the monitor's own faults the rules were not written against
    World("diurnal-ramp", ("none",), Load(rate=1.0), ramp_to=3.8),
    # bursts to 90 % of capacity: a queue at times (capacity), none between; never the scheduler
    World("bursty-arrivals", ("queue_bound", "gpu_bound", "none"), BASE, BASE, burst=(120.0, 1.5)),
    World("bursty-overload", ("gpu_bound", "queue_bound"), BASE, BASE, burst=(120.0, 1.8)),
    # the same bursts read through dcgm-exporter's default set, a GPU exporter scraped every
    # minute (no GPU sample between most of a burst's scrapes), and no GPU exporter at all
    World("bursty-default-dcgm", ("queue_bound", "gpu_bound", "none"), BASE, BASE, burst=(120.0, 1.5),
          counters="default"),
    World("bursty-gpu-every-minute", ("queue_bound", "gpu_bound", "none"), BASE, BASE,
          burst=(120.0, 1.5), gpu_every=60.0),
    World("bursty-no-gpu-exporter", ("queue_bound", "none"), BASE, BASE, burst=(120.0, 1.5),
          counters="none"),
    World("bursty-overload-no-gpu-exporter", ("queue_bound",), BASE, BASE, burst=(120.0, 1.8),
          counters="none"),
    World("healthy-util-only", ("none",), BASE, counters="util"),
    World("healthy-power-only", ("none",), BASE, counters="power"),
    World("gpu-saturated-util-only", ("gpu_bound",), BASE, SATURATED, counters="util"),
    World("memory-bound-power-only", ("queue_bound",), BASE, MEMORY_BOUND, counters="power"),
    World("memory-bound-sm-only", ("queue_bound",), BASE, MEMORY_BOUND, counters="sm"),
    World("gpu-exporter-down-then-saturated", ("queue_bound",), BASE, SATURATED, gpu_down=(1170.0, 3600.0)),
    World("stall-probes-all-time-out", ("scheduler_bound",), BASE, STALL, probe_timeout=10.0),
    # SGLang pools (its page as the scrape reads it; probes without a server view): 0.5 with
    # --enable-metrics, and the 0.4 surface (TTFT and e2e histograms and gauges only)
    World("sglang-healthy", ("none",), BASE, **SGLANG),
    World("sglang-gpu-saturated", ("gpu_bound",), BASE, SATURATED, **SGLANG),
    World("sglang-scheduler-stall", ("scheduler_bound",), BASE, STALL, **SGLANG),
    World("sglang-kv-pressure", ("cache_bound",), BASE, KV_TIGHT, **SGLANG),
    World("sglang-shedding-429", ("load_shedding",), BASE, Load(rate=3.0, shed=0.3), **SGLANG),
    World("sglang-long-prompts", ("prefill_bound",), Load(rate=0.5, prompt=20_000.0, kv_tokens=4e6),
          Load(rate=0.5, prompt=80_000.0, prefix_hit=0.3, kv_tokens=4e6), **SGLANG),
    # no decode histogram and no probe view: the long outputs cannot be told from the model's own
    World("sglang-long-outputs", ("decode_bound", "none"), Load(rate=0.5), Load(rate=0.5, output=1500.0),
          **SGLANG),
    World("sglang-0.4-healthy", ("none",), BASE, **SGLANG_04),
    World("sglang-0.4-gpu-saturated", ("gpu_bound",), BASE, SATURATED, **SGLANG_04),
    World("sglang-0.4-scheduler-stall", ("scheduler_bound",), BASE, STALL, **SGLANG_04),
    # real traffic's spans (5 % of requests) with few probes (one every 5 minutes) or none answered
    World("spans-few-probes-healthy", ("none",), BASE, **FEW_PROBES),
    World("spans-few-probes-gpu-saturated", ("gpu_bound",), BASE, SATURATED, **FEW_PROBES),
    World("spans-few-probes-stall", ("scheduler_bound",), BASE, STALL, **FEW_PROBES),
    World("spans-few-probes-slow-tokenization", ("proxy_bound",), BASE, Load(rate=3.0, tokenize=0.7),
          **FEW_PROBES),
    World("spans-probes-time-out-kv-pressure", ("cache_bound",), BASE, KV_TIGHT, spans=0.05,
          probe_timeout=5.0),
    World("spans-probes-time-out-long-prompts", ("prefill_bound",),
          Load(rate=0.5, prompt=20_000.0, kv_tokens=4e6),
          Load(rate=0.5, prompt=80_000.0, prefix_hit=0.3, kv_tokens=4e6), spans=0.2, probe_timeout=3.0),
    # two endpoints behind the class (3 requests/s each), the fault on one of them: the merged
    # histograms and the hottest GPU of both name it
    World("two-endpoints-healthy", ("none",), TWO, endpoints=2),
    World("one-endpoint-of-two-saturated", ("gpu_bound",), TWO, Load(rate=6.0, slowdown=2.0),
          endpoints=2, faulty=1),
    World("one-endpoint-of-two-saturated-default-dcgm", ("gpu_bound",), TWO,
          Load(rate=6.0, slowdown=2.0), endpoints=2, faulty=1, counters="default"),
    World("one-endpoint-of-two-stalled", ("scheduler_bound",), TWO, Load(rate=6.0, admit_per_second=1.0),
          endpoints=2, faulty=1),
    World("one-endpoint-of-two-kv-pressure", ("cache_bound",), TWO, Load(rate=6.0, kv_tokens=60_000.0),
          endpoints=2, faulty=1),
    # a KV gauge that reads 95 % at all times (a prefix cache's blocks counted as used): no cache
    # verdict without pressure, and saturation with a full batch is still the GPUs'
    World("healthy-kv-reads-full", ("none",), Load(rate=3.0, kv_reported=0.95)),
    World("gpu-saturated-kv-reads-full", ("gpu_bound", "queue_bound"), Load(rate=3.0, kv_reported=0.95),
          Load(rate=7.0, slowdown=2.0, kv_reported=0.95)),
    # a stalled scheduler seen through GPU_UTIL alone (any kernel: 100 % with a tiny batch)
    # a stall read through a GPU exporter scraped once a minute: room before the queue is not room
    # while requests wait (queue-bound until a sample shows it)
    World("scheduler-stall-gpu-every-minute", ("scheduler_bound",), BASE, STALL, gpu_every=60.0),
    World("scheduler-stall-util-only", ("scheduler_bound", "queue_bound"), BASE, STALL, counters="util"),
    # KV usage peaking at 99 % (median 65 %), no preemption: no cache verdict
    World("healthy-kv-peaks-full", ("none",), Load(rate=3.0, kv_tokens=130_000.0)),
    # KV at a median of 96 %, 4 preemptions an hour, requests wait for blocks: the cache (or "not
    # sure"), never the scheduler
    World("kv-nearly-full-few-preemptions", ("cache_bound", "queue_bound"), BASE,
          Load(rate=3.0, kv_tokens=90_000.0)),
)  # fmt: skip
