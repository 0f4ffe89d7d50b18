"""Fetching an endpoint's ``/metrics`` page (and, best effort, ``/version`` and ``/v1/models``).

One call is one bounded HTTP GET: a total deadline (not just per read, so a server that drips
bytes cannot hold a scrape), a size cap enforced on the decoded body while it streams (a gzip
bomb stops at the cap too), gzip accepted, and ``Authorization: Bearer`` from the endpoint's
``api_key_env``. Every failure is a :class:`~monitor.errors.ScrapeError` with a reason from
:data:`monitor.conventions.SCRAPE_ERROR_REASONS`. Calls are async: one slow endpoint never
delays another's scrape.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from monitor.errors import ScrapeError
from monitor.model import Endpoint
from monitor.web.body import BodyTooLarge, read_capped

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_ACCEPT = {"Accept": "text/plain;version=0.0.4;q=1.0, */*;q=0.1", "Accept-Encoding": "gzip"}


def _headers(endpoint: Endpoint | None) -> dict[str, str]:
    return {**_ACCEPT, **(endpoint.headers() if endpoint is not None else {})}


async def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The decoded body through the shared capped reader (a declared length counts only when the
    body is not compressed: the cap applies to what the page decodes to)."""
    declared = response.headers.get("content-length") if "content-encoding" not in response.headers else None
    try:
        return await read_capped(response.aiter_bytes(), max_bytes, declared)
    except BodyTooLarge as exc:
        raise ScrapeError("too_large", str(exc)) from None


async def _get(client: httpx.AsyncClient, url: str, headers: dict[str, str], max_bytes: int) -> bytes:
    try:
        async with client.stream("GET", url, headers=headers) as response:
            if response.status_code != 200:
                raise ScrapeError("http_status", f"GET {url} -> HTTP {response.status_code}")
            return await _read_capped(response, max_bytes)
    except httpx.TimeoutException as exc:
        raise ScrapeError("timeout", f"GET {url}: {type(exc).__name__}") from None
    except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise ScrapeError("connect_error", f"GET {url}: {exc}") from None
    except httpx.DecodingError as exc:
        raise ScrapeError("garbled", f"GET {url}: bad content encoding: {exc}") from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ScrapeError("truncated", f"GET {url}: connection broke off: {exc}") from None
    except httpx.HTTPError as exc:
        raise ScrapeError("connect_error", f"GET {url}: {type(exc).__name__}: {exc}") from None


async def fetch_text(
    client: httpx.AsyncClient,
    url: str,
    *,
    endpoint: Endpoint | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """The body of ``url`` as text, within ``timeout`` seconds in total and ``max_bytes`` decoded."""
    try:
        async with asyncio.timeout(timeout):
            body = await _get(client, url, _headers(endpoint), max_bytes)
    except TimeoutError:
        raise ScrapeError("timeout", f"GET {url}: no complete answer within {timeout:g}s") from None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeError("garbled", f"GET {url}: not UTF-8 at byte {exc.start}") from None


async def fetch_metrics(
    endpoint: Endpoint,
    client: httpx.AsyncClient,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """The endpoint's ``/metrics`` page as text (not yet parsed)."""
    return await fetch_text(
        client, endpoint.metrics_url, endpoint=endpoint, timeout=timeout, max_bytes=max_bytes
    )


async def fetch_json(
    endpoint: Endpoint, client: httpx.AsyncClient, path: str, *, timeout: float = DEFAULT_TIMEOUT
) -> Any:
    """A small JSON document from the endpoint (``/version``, ``/v1/models``); None when unavailable."""
    url = endpoint.base_url.rstrip("/") + path
    try:
        text = await fetch_text(client, url, endpoint=endpoint, timeout=timeout, max_bytes=1024 * 1024)
        return json.loads(text)
    except (ScrapeError, ValueError):
        return None
