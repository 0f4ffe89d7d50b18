"""The bottleneck verdict: every cause the evidence supports, ordered by what it costs the tail.

The M3 guide asks which stage owns P95/P99 and whether it is the GPUs, the scheduler, the cache,
the proxy or the application. :func:`decide` reads one :class:`~monitor.bottleneck.evidence.
Evidence` and names each cause that holds (:func:`monitor.bottleneck.causes.causes`), ordered by
its seconds in the tail; the first is the verdict, the others are named beside it. With no cause
and too few requests in every source it says ``insufficient_evidence`` and what is missing, never
a guess. :data:`RULES` is the table docs/bottleneck.md prints (a test holds them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.bottleneck.causes import Cause, cache_note, causes
from monitor.bottleneck.evidence import Evidence


@dataclass(frozen=True)
class Rule:
    """One verdict: its name (the exporter's label value), what it means, the evidence it needs,
    what to do (the guide's remedies) and which measurement confirms the remedy worked."""

    verdict: str
    title: str
    when: str
    remedy: str
    confirm: str


RULES: tuple[Rule, ...] = (
    Rule("insufficient_evidence", "insufficient evidence",
         "no cause holds and no source has 20 requests in its window: probes with a server view "
         "(15 min), real-traffic spans or the server's histograms (5 min)",
         "wait for more probe rounds or traffic; configure OTLP spans or per-request metrics; the "
         "verdict lists what it lacked",
         "—"),
    Rule("load_shedding", "load shedding",
         "the server refused at least 1 % of requests at its queue limits "
         "(vllm:admission_rejections_total), or answered 429/503 to at least 5 % (and 10) of its "
         "requests (SGLang's http_responses_total), or at least 5 % of probe runs (and 2) met a 429 "
         "or 503",
         "the pool is at its admission limit: add warm capacity (replicas) or move traffic away; "
         "raise max_num_queued_reqs only if the objective can absorb the longer queue",
         "admission rejections and 429/503 answers at 0 with the queue P95 inside the objective"),
    Rule("retry_storm", "retry storm",
         "retries (the probes' own or a gateway's) take at least the floor in enough tail requests, "
         "or at least 10 % of probe runs were retried, or the server answered 5xx to at least 5 % "
         "(and 10) of its requests (http_requests_total)",
         "find what answers 429/5xx (rate limits, an overloaded replica, a gateway); add warm capacity "
         "before clients retry into it; cap client retries with backoff and jitter",
         "retried runs below 10 % and no retry time in the P95+ band"),
    Rule("application_bound", "application-bound",
         "a class with tool loops: its application time (the e2e no measured stage explains: its "
         "tools and client) or the server's turnaround after tool results takes at least the e2e "
         "floor in enough requests, one of them recent",
         "the agent's own tools and client are slow: profile the tool calls; the model is not the "
         "bottleneck",
         "tool turnaround per round in the probes' timings"),
    Rule("proxy_bound", "frontend-bound (proxy, network, API server)",
         "the frontend stage (client TTFT − server queue − prefill: proxy, network, the API server's "
         "preprocessing and the first token's return trip) takes at least the TTFT floor in enough "
         "requests, one of them recent",
         "check the gateway and network path; the API server's CPU (chat template, tokenizer, image "
         "preprocessing): more API-server processes, images resized before they are sent",
         "the frontend stage of the P95+ band below the floor; vLLM's span arrival → queued time"),
    Rule("cache_bound", "cache-bound",
         "queue time takes at least the TTFT floor (or the queue grows) and the KV cache is the limit: "
         "sustained preemptions (>= 3, in two scrape intervals or more) with KV usage at a median of "
         "70 % or more, or KV usage at 80 % or more with a batch held below 80 % of its peak, evicted "
         "blocks evicted before reuse (>= 50 %) or a prefix-hit collapse",
         "enable prefix caching for shared prefixes; lower max-model-len or max-num-seqs so the KV "
         "pool holds the working set; separate pools for long-context classes; more KV capacity",
         "preemptions at 0 and KV usage below 80 % at the same traffic"),
    Rule("gpu_bound", "GPU-bound",
         "queue time takes at least the TTFT floor (or the queue grows), or prefill or decode is at "
         "risk of its objective, and the hottest GPU was saturated: busy at a third of its samples "
         "or more, or within 10 points of its threshold (SM, tensor, DRAM activity, power or "
         "throttling; by utilisation, graphics-engine activity or memory-copy utilisation only with "
         "the batch at 80 % of its peak or more), now or in the scrape intervals in which requests "
         "waited (load in bursts)",
         "the GPUs have no headroom: add warm capacity (replicas), chunked prefill to keep decode "
         "moving, a smaller max-model-len; memory-bandwidth bound (DRAM busy, SMs not: long "
         "contexts, MoE decode): an FP8 KV cache or quantized weights, more tensor parallelism, "
         "fewer concurrent long contexts; one GPU hotter than its group: check it (clocks, XID, "
         "thermals). Raising max-num-seqs will not help",
         "queue P95 and waiting fall after the capacity change; hottest GPU below its threshold"),
    Rule("scheduler_bound", "scheduler-bound",
         "queue time takes at least the TTFT floor (or the queue grows) while every GPU read had "
         "room (and still has at its latest sample), or while the GPUs read busy only by "
         "utilisation or graphics-engine activity and the batch runs below 80 % of its peak",
         "requests wait while the GPUs have room or the batch has free slots: check for a stalled "
         "scheduler or a long prefill blocking the batch (chunked prefill); with the batch full and "
         "the GPUs' SMs idle, raise max-num-seqs / max-num-batched-tokens",
         "SM activity rises and queue P95 falls at the same traffic"),
    Rule("queue_bound", "queue-bound (GPUs not read or changing)",
         "queue time takes at least the TTFT floor (or the queue grows) and no GPU exporter is read, "
         "or the GPUs' latest reading disagrees with their window (becoming busy, or the KV cache "
         "filling): neither saturation nor room can be claimed yet",
         "configure gpu_exporter (dcgm-exporter or AMD's device metrics exporter) for the "
         "endpoints to tell saturation from the scheduler; meanwhile treat it as capacity",
         "a GPU reading over the next window names GPU- or scheduler-bound"),
    Rule("prefill_bound", "prefill-bound",
         "prefill alone takes at least half the TTFT objective while the TTFT P95 is at least 80 % of "
         "it, on GPUs that are not saturated (else it is GPU-bound)",
         "long prompts own the first token: chunked prefill (tune max-num-batched-tokens) so they do "
         "not block decode; a separate pool for long-context traffic; prefix caching for shared "
         "prefixes",
         "server prefill P95 against prompt tokens per request; the interactive TTFT P95 in its own "
         "pool"),
    Rule("decode_bound", "decode-bound",
         "decode alone takes at least half the e2e objective while the e2e P95 is at least 80 % of "
         "it, on GPUs that are not saturated (else it is GPU-bound)",
         "long outputs own the end-to-end time: cap max_tokens or reasoning effort for the class; "
         "speculative decoding (EAGLE3) only after a stable baseline, checked by a replay",
         "TPOT and output tokens of the P95+ band; a replay with and without speculative decoding"),
    Rule("none", "no bottleneck",
         "no cause holds and a source had enough requests: the tail is the model's own prefill and "
         "decode at the load it has",
         "nothing to fix in serving; a tail that still misses its objective needs a faster model or "
         "a shorter context for the class",
         "—"),
)  # fmt: skip
VERDICTS: tuple[str, ...] = tuple(r.verdict for r in RULES)
TITLES = {r.verdict: r.title for r in RULES}


@dataclass(frozen=True)
class Verdict:
    """What a class's instant says: the verdict (its largest cause), every cause, why, and the
    evidence it read."""

    request_class: str
    verdict: str
    stage: str | None  # the stage of the verdict's cause (None: no cause)
    reason: str
    evidence: Evidence
    causes: tuple[Cause, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.source for c in self.causes))

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "stage": self.stage,
            "reason": self.reason,
            "causes": [c.to_json() for c in self.causes],
            "sources": list(self.sources),
            "missing": list(self.missing),
            **self.evidence.to_json(),
        }


def decide(e: Evidence) -> Verdict:
    """The verdict of ``e``: its causes by seconds in the tail (module docstring)."""
    found = causes(e)
    missing = e.missing()
    if found:
        first = found[0]
        named = "; ".join(f"{TITLES[c.verdict]} ({c.why})" for c in found)
        return Verdict(e.request_class, first.verdict, first.stage, f"{named} | {e.summary()}", e, found)
    verdict = "insufficient_evidence" if missing else "none"
    why = "; ".join(missing) if missing else e.summary()
    note = cache_note(e)
    if note is not None:
        why = f"{why}; {note}"
    return Verdict(e.request_class, verdict, None, f"{TITLES[verdict]}: {why}", e, (), missing)
