"""One request inside the simulated engine: its inputs, scheduler state and timeline (ground truth)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from monitor.sim.answers import Plan


@dataclass(eq=False)
class SimRequest:
    """A request from arrival to finish. Times are ``time.monotonic()`` seconds."""

    request_id: str
    prompt_tokens: int
    prompt_hashes: list[bytes]
    plan: Plan
    limit: int  # completion tokens at which the engine stops with "length"
    arrival: float
    max_tokens: int | None = None
    ignore_eos: bool = False  # the client asked for a forced length: reaching ``limit`` is "length"
    params: dict[str, Any] = field(default_factory=dict)
    trace_headers: dict[str, str] = field(default_factory=dict)
    endpoint: str = "/v1/chat/completions"
    # timeline
    received: float | None = None  # the server parsed the request's first bytes (see monitor.sim.wire)
    queued: float | None = None
    scheduled: float | None = None
    first_scheduled: float | None = None
    first_token: float | None = None
    token_times: list[float] = field(default_factory=list)
    #: streamed responses: (time the frames were handed to the server for writing, completion
    #: tokens sent by then), one entry per write; the client-observable side of token_times
    writes: list[tuple[float, int]] = field(default_factory=list)
    finish: float | None = None
    finish_reason: str | None = None
    num_cached: int = 0
    prefill_kv_computed: int = 0
    preemptions: int = 0
    # scheduler state
    generated: int = 0
    computed: int = 0
    prefill_target: int = 0
    hit_hashes: list[bytes] = field(default_factory=list)
    private_blocks: int = 0
    events: asyncio.Queue[bool] = field(default_factory=asyncio.Queue)

    @property
    def prefilling(self) -> bool:
        return self.computed < self.prefill_target

    @property
    def blocks_held(self) -> int:
        return len(self.hit_hashes) + self.private_blocks

    def natural_finish(self) -> str:
        """``stop`` when the plan was fully generated, else ``length``; with ``ignore_eos``,
        reaching ``limit`` is always ``length`` (vLLM never stops on EOS then, so max_tokens ends
        it even where the padded answer happens to end on the same token)."""
        if self.ignore_eos and self.generated >= self.limit:
            return "length"
        return "stop" if self.generated >= self.plan.n_tokens else "length"

    def truth(self, wall_offset: float) -> dict[str, Any]:
        """The ground-truth record served by ``GET /sim/truth``."""

        def both(t: float | None) -> dict[str, float | None]:
            return {"mono": t, "wall": None if t is None else t + wall_offset}

        traceparent = self.trace_headers.get("traceparent", "")
        parts = traceparent.split("-")
        return {
            "id": self.request_id,
            "endpoint": self.endpoint,
            "trace_id": parts[1] if len(parts) == 4 else None,
            "received": both(self.received),
            "arrival": both(self.arrival),
            "queued": both(self.queued),
            "scheduled": both(self.first_scheduled),
            "last_scheduled": both(self.scheduled),
            "first_token": both(self.first_token),
            "token_times": {
                "mono": list(self.token_times),
                "wall": [t + wall_offset for t in self.token_times],
            },
            "sent_times": {
                "mono": [t for t, _ in self.writes],
                "wall": [t + wall_offset for t, _ in self.writes],
            },
            "sent_tokens": [n for _, n in self.writes],
            "finish": both(self.finish),
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.generated,
            "reasoning_tokens": min(self.generated, self.plan.n_reasoning),
            "cached_tokens": self.num_cached,
            "preemptions": self.preemptions,
            "max_tokens": self.max_tokens,
        }
