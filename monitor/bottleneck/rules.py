"""The bottleneck verdict: one class, one window, the first rule of :data:`RULES` its evidence meets.

The M3 guide asks which stage owns P95/P99 and whether it is the GPUs, the scheduler, the cache,
the proxy or the application. A verdict reads the window's tail attribution (the stage with
the largest share of the requests at or above P95 of TTFT and of e2e, and whether it *owns* that
tail with at least :data:`~monitor.bottleneck.evidence.OWNS` of it, :mod:`monitor.bottleneck.tail`)
together with what the pool's servers and GPUs said over the same window
(:class:`~monitor.bottleneck.evidence.Evidence`). The rules are data, checked in order; the
first that holds names the verdict, and ``docs/bottleneck.md`` prints the same table (a test
holds them equal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from monitor.bottleneck.evidence import Evidence

#: GPU-bound: the GPUs are busy when the mean SM activity of the class's GPUs (dcgm-exporter's
#: ``DCGM_FI_PROF_SM_ACTIVE``, AMD's ``gpu_prof_sm_active``) or their mean tensor-pipe activity
#: (``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``, AMD's ``gpu_prof_tensor_active_percent``; where the
#: exporter provides it) is at or above these. Saturated engines sit above 0.9 SM activity.
SM_SATURATED = 0.85
TENSOR_SATURATED = 0.85
#: ... and saturated when, besides, the queue grew over the window: the mean requests waiting of
#: the later half of its scrape intervals at least this many above the earlier half's
#: (:func:`monitor.bottleneck.evidence.queue_growth`): work arrives faster than the GPUs finish it.
QUEUE_GROWING = 1.0
#: Retry storm: this share of the window's probe runs needed more than one attempt.
RETRY_STORM = 0.10
#: Cache thrash: this share of evicted KV blocks had been idle no longer than the typical reuse gap
#: (they were evicted just before they would have been reused).
EVICTION_THRASH = 0.5
#: The engine's stages (GPU-, scheduler- or cache-bound when one of them leads a tail).
ENGINE_STAGES = frozenset({"queue", "prefill", "decode"})
#: The stages in front of the engine: a proxy or gateway, the network, the API server's preprocessing.
FRONT_STAGES = frozenset({"network", "tokenization"})


@dataclass(frozen=True)
class Rule:
    """One verdict: its name (the exporter's label value), what it means, when it holds, what to do."""

    verdict: str
    title: str
    when: str  # the condition in words (docs/bottleneck.md's table)
    holds: Callable[[Evidence], bool]
    remedy: str  # the guide's remedies, for the runbook and the report


@dataclass(frozen=True)
class Verdict:
    """What a class's window says: the verdict, the tail stage behind it, and why in one line."""

    request_class: str
    verdict: str
    stage: str | None  # the dominant stage of the tail the verdict read (None: no attribution)
    reason: str
    evidence: Evidence

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "stage": self.stage,
            "reason": self.reason,
            **self.evidence.to_json(),
        }


def _cache_signal(e: Evidence) -> bool:
    preempted = e.preemptions is not None and e.preemptions > 0
    thrash = e.eviction_before_reuse is not None and e.eviction_before_reuse >= EVICTION_THRASH
    return preempted or thrash or e.prefix_collapsed


def _engine(e: Evidence) -> bool:
    return e.ttft_stage in ENGINE_STAGES or e.e2e_stage in ENGINE_STAGES


def _busy(e: Evidence) -> bool:
    sm = e.sm_active is not None and e.sm_active >= SM_SATURATED
    return sm or (e.tensor_active is not None and e.tensor_active >= TENSOR_SATURATED)


def _gpu_read(e: Evidence) -> bool:
    return e.sm_active is not None or e.tensor_active is not None


def _growing(e: Evidence) -> bool:
    return e.queue_growth is not None and e.queue_growth >= QUEUE_GROWING


def _saturated(e: Evidence) -> bool:
    """SM or tensor activity high while the queue grows (issue 25's GPU saturation)."""
    return _busy(e) and _growing(e)


def _not_saturated(e: Evidence) -> bool:
    """A reading says the GPUs had room: activity below both thresholds, or busy with a queue that
    did not grow (None when it cannot be told: no GPU reading, or busy and no queue reading)."""
    if not _gpu_read(e):
        return False
    return not _busy(e) or (e.queue_growth is not None and not _growing(e))


_BUSY = (
    f"the GPUs are busy (mean SM activity at least {SM_SATURATED:.0%} or mean tensor activity at "
    f"least {TENSOR_SATURATED:.0%})"
)
_GROWING = (
    f"the queue grew over the window (mean requests waiting in the later half of its scrape "
    f"intervals at least {QUEUE_GROWING:g} above the earlier half's)"
)


RULES: tuple[Rule, ...] = (
    Rule("unknown", "not enough evidence",
         "fewer probe requests with a server view than the tail attribution needs (TTFT and e2e)",
         lambda e: e.ttft_stage is None and e.e2e_stage is None,
         "enable per-request metrics or OTLP spans on the server; wait for more probe rounds"),
    Rule("retry_storm", "retry storm",
         f"retries own the TTFT or e2e tail, or at least {RETRY_STORM:.0%} of probe runs were retried",
         lambda e: "retry" in (e.ttft_owner, e.e2e_owner) or e.retried_share >= RETRY_STORM,
         "find what answers 429/5xx (rate limits, an overloaded replica, a gateway); add warm capacity "
         "before clients retry into it; cap client retries with backoff"),
    Rule("proxy_bound", "proxy/network-bound",
         "network or tokenization (the API server's preprocessing) owns the TTFT tail",
         lambda e: e.ttft_owner in FRONT_STAGES,
         "check the gateway and network path; for tokenization, the API server's CPU (chat template, "
         "image preprocessing): more API-server processes, images resized before they are sent"),
    Rule("application_bound", "application-bound",
         "tool turnaround owns the e2e tail (or, for a class with tool loops, time no server stage "
         "explains)",
         lambda e: e.e2e_owner == "tool_turnaround" or (e.tools and e.e2e_owner == "other"),
         "the agent's own tools and client are slow: profile the tool calls; the model is not the "
         "bottleneck"),
    Rule("cache_bound", "cache-bound",
         "an engine stage (queue, prefill, decode) has the largest share of a tail and the pool "
         "preempted requests, evicted KV blocks before "
         f"reuse (>= {EVICTION_THRASH:.0%}) or its prefix-cache hit rate fell to a quarter of the "
         "window before's",
         lambda e: _engine(e) and _cache_signal(e),
         "enable prefix caching; lower max-model-len or max-num-seqs so the KV pool holds the working set; "
         "separate pools for long-context classes; more KV capacity (GPUs)"),
    Rule("gpu_bound", "GPU-bound",
         f"an engine stage has the largest share of a tail, {_BUSY} and {_GROWING}",
         lambda e: _engine(e) and _saturated(e),
         "the GPUs have no headroom: more warm capacity (replicas), chunked prefill to keep decode "
         "moving, a smaller max-model-len; scaling the scheduler will not help"),
    Rule("scheduler_bound", "scheduler/queue-bound",
         "queue time owns the TTFT tail and a GPU reading says the GPUs are not saturated: not busy, "
         "or busy while the queue did not grow",
         lambda e: e.ttft_owner == "queue" and _not_saturated(e),
         "requests wait while the GPUs have headroom: raise max-num-seqs / max-num-batched-tokens, "
         "enable chunked prefill, check for a stalled scheduler or a long prefill blocking the batch"),
    Rule("queue_bound", "queue-bound (GPU not read)",
         "queue time owns the TTFT tail and no GPU reading covers the class's endpoints (or the GPUs "
         "are busy and no queue reading covers the window)",
         lambda e: e.ttft_owner == "queue",
         "configure gpu_exporter for the endpoints to tell GPU saturation from the scheduler"),
    Rule("none", "no bottleneck",
         "none of the above: the tail is the model's own prefill and decode at normal load",
         lambda e: True,
         "nothing to fix in serving; a tail that still misses its objective needs a faster model or a "
         "shorter context for the class"),
)  # fmt: skip
VERDICTS: tuple[str, ...] = tuple(r.verdict for r in RULES)


#: The tail whose leading stage a verdict names: the TTFT tail for the stages in front of the first
#: token, the e2e tail for the application; otherwise the TTFT tail's, else the e2e tail's.
_NAMES_E2E = frozenset({"application_bound"})


def decide(e: Evidence) -> Verdict:
    """The first rule of :data:`RULES` that ``e`` meets, with the tail stage it names."""
    rule = next(r for r in RULES if r.holds(e))
    if rule.verdict == "retry_storm" and "retry" in (e.ttft_owner, e.e2e_owner):
        stage: str | None = "retry"
    elif rule.verdict in _NAMES_E2E:
        stage = e.e2e_stage
    else:
        stage = e.ttft_stage or e.e2e_stage
    return Verdict(e.request_class, rule.verdict, stage, f"{rule.title}: {e.summary()}", e)
