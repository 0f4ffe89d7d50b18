"""Cache evidence: when the KV cache, not the GPUs or the scheduler, holds requests back, and a
prefix-hit drop said as what it is when it is not cache pressure (docs/bottleneck.md)."""

from __future__ import annotations

from monitor.bottleneck.evidence import Evidence

KV_FULL = 0.80
KV_PREEMPTING = 0.70
PREEMPTIONS = 3.0
EVICTION_THRASH = 0.5
PREFIX_DROP, PREFIX_BASELINE = 0.5, 0.2
MIX_CHANGE = 0.3


def cache_evidence(e: Evidence) -> str | None:
    """Why the KV cache is the cause (None: no cache evidence; docs/bottleneck.md)."""
    p = e.pool
    if p.kv_usage is None or p.kv_usage < KV_PREEMPTING:
        return None
    # vLLM preempts when it runs out of blocks, and a preemption frees them: sustained
    # preemptions over a gauge that reads "near full" at its scrapes
    if p.preemptions is not None and p.preemptions >= PREEMPTIONS and p.preempting_intervals >= 2:
        return f"KV {p.kv_usage:.0%} used, {p.preemptions:g} preemptions"
    if p.kv_usage < KV_FULL:
        return None
    if p.eviction_before_reuse is not None and p.eviction_before_reuse >= EVICTION_THRASH:
        return (
            f"KV {p.kv_usage:.0%} used, {p.eviction_before_reuse:.0%} of evicted blocks evicted before reuse"
        )
    if p.batch_full is False:
        held = f"the batch runs {p.running_now:.0f} of its peak {p.running_peak:.0f}"
        return f"KV {p.kv_usage:.0%} used: {held}, the cache has no room for more"
    if _prefix_fell(e):
        return f"KV {p.kv_usage:.0%} used, prefix hits {p.prefix_hit_before:.0%} -> {p.prefix_hit:.0%}"
    return None


def _prefix_fell(e: Evidence) -> bool:
    now, before = e.pool.prefix_hit, e.pool.prefix_hit_before
    return (
        now is not None and before is not None and before >= PREFIX_BASELINE and now <= before * PREFIX_DROP
    )


def cache_note(e: Evidence) -> str | None:
    """A prefix-hit drop that is not cache pressure, said as what it is."""
    p = e.pool
    if not _prefix_fell(e) or cache_evidence(e) is not None:
        return None
    mix = ""
    if (
        p.prompt_tokens
        and p.prompt_tokens_before
        and abs(p.prompt_tokens / p.prompt_tokens_before - 1) >= MIX_CHANGE
    ):
        was, now = p.prompt_tokens_before, p.prompt_tokens
        mix = f"; prompt tokens per request {was:.0f} -> {now:.0f}: the traffic changed"
    kv = f"KV {p.kv_usage:.0%} used" if p.kv_usage is not None else "no KV reading"
    return f"prefix hits {p.prefix_hit_before:.0%} -> {p.prefix_hit:.0%} with {kv}, not cache pressure{mix}"
