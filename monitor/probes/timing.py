"""Client-side latency figures derived from a :class:`~monitor.probes.transcript.Transcript`.

Definitions (all from the moment the request body was sent, on the monotonic clock):

* TTFT: first chunk carrying a token of any kind (reasoning or answer); the role-only first
  chunk does not count. ``ttft_answer``: first answer chunk (content or tool call).
* ITL: for each pair of consecutive token chunks, the gap is split evenly over the tokens of the
  later chunk: a gap covering ``k`` tokens yields ``k`` samples of ``gap / k``. ``k`` comes from
  the running usage the server sends per chunk (``continuous_usage_stats``); without it ``k`` is
  the stream's mean, ``completion_tokens / token chunks`` (rounded for the sample count).
* Chunk gaps: every gap between consecutive token chunks, undivided, with the later chunk's token
  count (:class:`~monitor.probes.result.Gap`); the longest one is the ``stall`` SLI's value.
* TPOT: ``(e2e - ttft) / (completion_tokens - 1)`` with ``completion_tokens`` from ``usage``.
* e2e: request sent until the stream ended.
* Retries (:mod:`monitor.probes.retry`): TTFT and e2e run from the **first** attempt's send (what
  the user waited); ``retry_seconds`` is the time before the final attempt was sent (failed
  attempts and backoff), ``retries`` why each earlier attempt was retried.
* Server view (``metrics`` in the final usage chunk, vLLM ``--enable-per-request-metrics``):
  queue, prefill (scheduled → first token) and decode time; ``network`` = client TTFT −
  retry time − (queue + prefill).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from monitor.probes.result import Gap, Timings
from monitor.probes.transcript import Transcript


def itl_samples(transcript: Transcript) -> tuple[float, ...]:
    """Per-token inter-token latency samples (see module docstring)."""
    samples: list[float] = []
    chunks = transcript.chunks
    mean_k = _mean_tokens_per_chunk(transcript)
    for prev, cur in itertools.pairwise(chunks):
        gap = max(cur.at - prev.at, 0.0)
        if cur.tokens is not None and cur.tokens > 0:
            samples.extend([gap / cur.tokens] * cur.tokens)
        else:
            samples.extend([gap / mean_k] * max(1, round(mean_k)))
    return tuple(samples)


def chunk_gaps(transcript: Transcript, sent: float) -> tuple[Gap, ...]:
    """Every gap between consecutive token chunks, undivided, with the later chunk's tokens.

    ``k`` is the chunk's running-usage token count, else the stream's mean tokens per chunk
    rounded (at least 1), as for :func:`itl_samples`.
    """
    chunks = transcript.chunks
    mean_k = max(1, round(_mean_tokens_per_chunk(transcript)))
    out: list[Gap] = []
    before = chunks[0].tokens if chunks and chunks[0].tokens else (mean_k if chunks else 0)
    for prev, cur in itertools.pairwise(chunks):
        k = cur.tokens if cur.tokens is not None and cur.tokens > 0 else mean_k
        out.append(Gap(max(prev.at - sent, 0.0), max(cur.at - prev.at, 0.0), k, before))
        before += k
    return tuple(out)


def _mean_tokens_per_chunk(transcript: Transcript) -> float:
    """Tokens per token chunk from the final usage, when chunks carry no running usage (else 1)."""
    total = transcript.usage_int("completion_tokens")
    n = len(transcript.chunks)
    return total / n if total is not None and n and total >= n else 1.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _since(t0: float, t: float | None) -> float | None:
    return None if t is None else max(t - t0, 0.0)


def _ms(metrics: dict[str, Any] | None, key: str) -> float | None:
    value = (metrics or {}).get(key)
    return float(value) / 1000.0 if isinstance(value, int | float) and not isinstance(value, bool) else None


def timings_for(
    transcript: Transcript,
    sent: float,
    end: float,
    connect: float | None = None,
    headers: float | None = None,
    first_sent: float | None = None,
    retries: tuple[str, ...] = (),
) -> Timings:
    """Timings of one streamed request sent at ``sent`` whose stream ended at ``end`` (the final
    attempt of a request first sent at ``first_sent``, when it was retried)."""
    origin = sent if first_sent is None else min(first_sent, sent)
    retry = sent - origin
    ttft = _since(origin, transcript.first())
    e2e = max(end - origin, 0.0)
    samples = itl_samples(transcript)
    out = transcript.usage_int("completion_tokens")
    # the stream's end and its first chunk are stamped by two clocks (the transport's and the
    # kernel's): a single-chunk answer can end a few nanoseconds "before" its first token
    tpot = max(0.0, e2e - ttft) / (out - 1) if ttft is not None and out is not None and out > 1 else None
    queue = _ms(transcript.metrics, "queue_time_ms")
    prefill = _ms(transcript.metrics, "time_to_first_token_ms")
    server_ttft = queue + prefill if queue is not None and prefill is not None else None
    network = ttft - retry - server_ttft if ttft is not None and server_ttft is not None else None
    return Timings(
        connect=connect,
        headers=headers,
        ttft=ttft,
        ttft_answer=_since(origin, transcript.first("answer")),
        first_reasoning=_since(origin, transcript.first("reasoning")),
        itl_mean=sum(samples) / len(samples) if samples else None,
        itl_p50=percentile(samples, 50),
        itl_p99=percentile(samples, 99),
        itl_samples=samples,
        chunk_gaps=chunk_gaps(transcript, sent),
        tpot=tpot,
        e2e=e2e,
        server_queue=queue,
        server_prefill=prefill,
        server_decode=_ms(transcript.metrics, "generation_time_ms"),
        server_ttft=server_ttft,
        network=network,
        retry_seconds=retry,
        retries=retries,
    )
