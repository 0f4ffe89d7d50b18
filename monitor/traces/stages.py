"""The latency stages of one request from the spans of its trace: retries, proxy, tokenization,
queue, prefill, decode (docs/traces.md, "Stages of a trace").

vLLM's ``llm_request`` span starts at the API server's ``arrival_time`` (the request's body read,
before the chat template, the tokenizer and image preprocessing ran) and carries
``time_to_first_token`` from that instant, but ``time_in_queue`` from the engine's QUEUED event
and ``time_in_model_prefill`` from SCHEDULED (vLLM 0.33 ``output_processor.py``,
``do_tracing``). vLLM has no attribute for the preprocessing itself (``vllm/tracing/utils.py``
``SpanAttributes`` lists none), so:

* **tokenization** = ``ttft − queue − prefill``: arrival to QUEUED — the API server's
  preprocessing plus the hand-over to the engine core (and, as vLLM stamps TTFT in the frontend,
  the first token's trip back to it);

A trace may hold several attempts of one request (a gateway that retried): spans whose
``error.type`` is set (or whose status is ERROR) are **failed attempts**. For the request answered
by ``answer`` (a span with a server view, not failed):

* **retry** = the final attempt's start − the first failed attempt's start, where the final
  attempt starts with the earliest span that begins after the last failed attempt ended (the
  gateway's successful attempt span, or ``answer`` itself); 0 without failed attempts;
* the request's **e2e** is the outermost span around it (one that starts no later than the first
  attempt and ends no earlier than ``answer``: a gateway's own span), else first attempt →
  ``answer``'s end;
* **network** (proxy) = e2e − retry − ``answer``'s duration: the gateway's time around the answer;
* **other** = ``answer``'s duration − tokenization − queue − prefill − decode: vLLM's time after
  the last token (detokenizing, the last frame, recording the span).

The stages sum to the e2e by construction (floating-point rounding aside).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.traces.span import ServerSpan

#: The stages of a trace, in the order the request meets them (``monitor.conventions.STAGES`` and
#: ``other``, what vLLM does after the last token).
TRACE_STAGES = ("retry", "network", "tokenization", "queue", "prefill", "decode", "other")


@dataclass(frozen=True)
class TraceStages:
    """One request's stages (seconds, :data:`TRACE_STAGES` order; None: the span had no such part)."""

    answer: ServerSpan
    e2e: float
    attempts: int  # failed attempts before the answer, plus the answer's
    stages: tuple[tuple[str, float | None], ...]

    def stage(self, name: str) -> float | None:
        return dict(self.stages).get(name)


def tokenization(span: ServerSpan) -> float | None:
    """Arrival → QUEUED of a vLLM span: ``ttft − queue − prefill`` (None without all three)."""
    if span.ttft is None or span.queue is None or span.prefill is None:
        return None
    return span.ttft - span.queue - span.prefill


def answering(spans: Sequence[ServerSpan]) -> ServerSpan | None:
    """The earliest span with a server view that is not a failed attempt (the request's answer)."""
    candidates = [s for s in spans if s.has_server_view and s.error_type is None]
    return min(candidates, key=lambda s: (s.start, s.span_id), default=None)


def retry_window(spans: Sequence[ServerSpan], answer: ServerSpan) -> tuple[float, float, int]:
    """(first attempt's start, final attempt's start, failed attempts) of the request ``answer`` answered."""
    failed = [s for s in spans if s.error_type is not None and s.start <= answer.start and s is not answer]
    if not failed:
        return answer.start, answer.start, 0
    first = min(s.start for s in failed)
    last_end = max(s.end for s in failed)
    final = min((s.start for s in spans if last_end <= s.start <= answer.start), default=answer.start)
    return first, final, len(failed)


def trace_stages(spans: Sequence[ServerSpan]) -> TraceStages | None:
    """The stages of the request answered in ``spans`` (one trace); None without an answer."""
    answer = answering(spans)
    if answer is None:
        return None
    first, final, failed = retry_window(spans, answer)
    around = [s for s in spans if s.start <= first and s.end >= answer.end and s is not answer]
    outer = min(around, key=lambda s: (s.start, -s.end), default=None)
    start, end = (outer.start, outer.end) if outer is not None else (first, answer.end)
    e2e = end - start
    duration = answer.end - answer.start
    server = {"tokenization": tokenization(answer), "queue": answer.queue, "prefill": answer.prefill,
              "decode": answer.decode}  # fmt: skip
    other = duration - sum(v for v in server.values() if v is not None)
    parts = {"retry": final - first, "network": e2e - (final - first) - duration, **server, "other": other}
    return TraceStages(answer, e2e, failed + 1, tuple((name, parts[name]) for name in TRACE_STAGES))
