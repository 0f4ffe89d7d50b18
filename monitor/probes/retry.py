"""The probes' client retry policy: the OpenAI Python SDK's default rule, configurable per class.

Pinned from openai-python 2.54.0 (``src/openai/_base_client.py``: ``_should_retry``,
``_calculate_retry_timeout``, ``_parse_retry_after_header``, the retry loop of ``request``;
``src/openai/_constants.py``: ``DEFAULT_MAX_RETRIES = 2``, ``INITIAL_RETRY_DELAY = 0.5``,
``MAX_RETRY_DELAY = 8.0``, ``MAX_RETRY_AFTER_DELAY = 120``):

* retried: an attempt that got no response (connection error, or a timeout before the response
  headers), and the statuses 408, 409, 429 and ≥ 500; a ``x-should-retry: true|false`` header
  overrides the status rule; a ``Retry-After`` beyond ``max_retry_after`` means no retry;
* the wait before retry *n* (0-based): a server-directed ``retry-after-ms`` (milliseconds) or
  ``retry-after`` (seconds, or an HTTP date) when it is in ``(0, max_retry_after]``, else
  ``min(initial_delay · 2ⁿ, max_delay) · (1 − 0.25 · U)``, ``U`` uniform in ``[0, 1)``;
* at most ``max_retries`` retries (the SDK's default 2; the monitor's default 0: no retry).

A stream that broke after its headers is not retried (the SDK hands a stream to the caller once
its headers arrive). The class's ``timeout`` bounds the whole request, retries included: a wait
that would end past it is not taken, and the last attempt's failure is the verdict.

The sleep and the random draw are parameters, so tests can run the policy without waiting on the
wall clock.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Final

import httpx

from monitor import conventions as cv
from monitor.model import RetryPolicy
from monitor.probes.exchange import Exchange, stream_chat
from monitor.probes.target import Target

#: Why an attempt was retried: the ``reason`` label of ``m3mon_probe_retries_total`` (bounded).
REASONS: Final = cv.RETRY_REASONS
REASON_CONNECTION: Final = "connection"  # no response: connect error or broken before headers
REASON_TIMEOUT: Final = "timeout"  # no response headers within the timeout
assert {REASON_CONNECTION, REASON_TIMEOUT} <= set(REASONS)

Sleep = Callable[[float], Awaitable[None]]


def retry_after(headers: dict[str, str], now: Callable[[], float] = time.time) -> float | None:
    """Seconds a response asks the client to wait: ``retry-after-ms``, else ``retry-after`` as
    seconds or as an HTTP date (from ``now``); None when neither parses."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    try:
        return float(email.utils.mktime_tz(parsed) - now())
    except (OverflowError, OSError, ValueError):
        return None


def reason(ex: Exchange, policy: RetryPolicy) -> str | None:
    """Why the SDK's rule would retry this attempt (one of :data:`REASONS`), None when it would not."""
    if ex.failure is None:
        return None
    if ex.status is None:
        if ex.failure == "timeout":
            return REASON_TIMEOUT
        return REASON_CONNECTION if ex.failure in ("connect_error", "stream_broken") else None
    if ex.status < 400:
        return None  # answered: a broken or wrong stream is not retried
    wait = retry_after(ex.retry_headers)
    if wait is not None and math.isfinite(wait) and wait > policy.max_retry_after:
        return None
    forced = ex.retry_headers.get("x-should-retry")
    code = ex.status
    label = "http_5xx" if code >= 500 else f"http_{code}" if code in (408, 409, 429) else "http_4xx"
    if forced in ("true", "false"):
        return label if forced == "true" else None
    return label if label != "http_4xx" else None


def backoff(policy: RetryPolicy, retries_taken: int, headers: dict[str, str], draw: float) -> float:
    """The wait before retry ``retries_taken`` (0-based); ``draw`` is the uniform jitter draw."""
    wait = retry_after(headers)
    if wait is not None and math.isfinite(wait) and 0 < wait <= policy.max_retry_after:
        return wait
    delay = min(policy.initial_delay * 2.0 ** min(retries_taken, 1000), policy.max_delay)
    return max(delay * (1 - 0.25 * draw), 0.0)


async def send_chat(
    client: httpx.AsyncClient,
    target: Target,
    body: dict[str, Any],
    timeout: float,
    *,
    sleep: Sleep = asyncio.sleep,
    draw: Callable[[], float] = random.random,
) -> Exchange:
    """:func:`~monitor.probes.exchange.stream_chat` under the class's retry policy: the final
    attempt, stamped with the first attempt's send time and the reasons of the retried ones."""
    policy = target.request_class.probe.retry
    ex = await stream_chat(client, target, body, timeout)
    if not policy.enabled:
        return ex
    first, reasons = ex.sent, list[str]()
    while len(reasons) < policy.max_retries:
        why = reason(ex, policy)
        if why is None:
            break
        wait = backoff(policy, len(reasons), ex.retry_headers, draw())
        if time.monotonic() + wait >= first + timeout:
            break  # no time left for another attempt within the request's budget
        await sleep(wait)
        reasons.append(why)
        ex = await stream_chat(client, target, body, max(timeout - (time.monotonic() - first), 0.001))
    return replace(ex, first_sent=first, retries=tuple(reasons)) if reasons else ex
