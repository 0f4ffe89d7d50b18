"""Pieces every prober shares: turning an exchange and a verdict into a :class:`ProbeResult`.

:func:`single_request` is the whole life of the one-request kinds (chat, tool call, image):
open the probe span, send the body, judge the exchange with the kind's check, build the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import httpx
from opentelemetry.trace import Span, Status, StatusCode

from monitor.probes.exchange import Exchange, chat_body
from monitor.probes.judge import Verdict
from monitor.probes.result import ProbeResult, Timings, Usage
from monitor.probes.retry import send_chat
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.tracing import probe_span, trace_id_of

Check = Callable[[Exchange], Verdict]


def usage_of(ex: Exchange | None) -> Usage:
    if ex is None:
        return Usage()
    t = ex.transcript
    return Usage(
        prompt_tokens=t.usage_int("prompt_tokens"),
        completion_tokens=t.usage_int("completion_tokens"),
        reasoning_tokens=t.usage_int("completion_tokens_details", "reasoning_tokens"),
        cached_tokens=t.usage_int("prompt_tokens_details", "cached_tokens"),
    )


def make_result(
    target: Target,
    spec: ProbeSpec,
    started_at: float,
    verdict: Verdict,
    ex: Exchange | None,
    span: Span,
    *,
    timings: Timings | None = None,
    extra: dict[str, float] | None = None,
    log: tuple[str, ...] = (),
    also: Sequence[Exchange] = (),
) -> ProbeResult:
    """The result of one probe run; also marks the span with the verdict and headline timings.

    ``also``: the run's other requests, whose retries count with the headline request's (their
    time is not in the headline's TTFT or e2e, so not in ``retry_seconds``).
    """
    timings = timings if timings is not None else (ex.timings() if ex is not None else Timings())
    more = tuple(r for other in also if other is not ex for r in other.retries)
    if more:
        timings = replace(timings, retries=timings.retries + more)
    result = ProbeResult(
        endpoint=target.endpoint.name,
        request_class=target.request_class.name,
        kind=spec.kind,
        started_at=started_at,
        reason=verdict.reason,
        timings=timings,
        usage=usage_of(ex),
        model=ex.transcript.model if ex is not None else None,
        finish_reason=ex.transcript.finish_reason if ex is not None else None,
        status_code=ex.status if ex is not None else None,
        trace_id=trace_id_of(span),
        detail=verdict.detail[:200],
        extra=dict(extra or {}),
        log=log,
    )
    _annotate(span, result)
    return result


def _annotate(span: Span, result: ProbeResult) -> None:
    span.set_attribute("m3mon.probe.result", "success" if result.ok else "failure")
    if result.reason is not None:
        span.set_attribute("m3mon.probe.reason", result.reason)
        span.set_status(Status(StatusCode.ERROR, result.reason))
    if result.timings.ttft is not None:
        span.set_attribute("gen_ai.response.time_to_first_chunk", result.timings.ttft)
    if result.model is not None:
        span.set_attribute("gen_ai.response.model", result.model)
    if result.finish_reason is not None:
        span.set_attribute("gen_ai.response.finish_reasons", [result.finish_reason])
    for key, value in (("input_tokens", result.usage.prompt_tokens),
                       ("output_tokens", result.usage.completion_tokens)):  # fmt: skip
        if value is not None:
            span.set_attribute(f"gen_ai.usage.{key}", value)


async def single_request(
    target: Target,
    spec: ProbeSpec,
    client: httpx.AsyncClient,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    check: Check,
    extra: dict[str, float] | None = None,
) -> ProbeResult:
    """Send one streamed chat request in a probe span and judge it with ``check``."""
    started_at = time.time()
    with probe_span(spec.kind, target.endpoint.name, target.request_class.name, target.model) as span:
        ex = await send_chat(client, target, chat_body(target, messages, **params), spec.plan.timeout)
        return make_result(target, spec, started_at, check(ex), ex, span, extra=extra)
