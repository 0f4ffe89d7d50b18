"""Reading one endpoint for ``m3mon init``: ``/metrics`` (required), ``/v1/models`` and ``/version``.

Each GET is the collector's bounded fetch (:func:`monitor.scrape.fetch.fetch_text`). A page that
cannot be read is an :class:`InitError` naming the URL; ``/v1/models`` refusing without a key is
one too (it holds the served model and its context length); ``/version`` is best effort.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import httpx

from monitor.errors import M3MonError, ScrapeError, UsageError
from monitor.scrape.fetch import fetch_text
from monitor.starter.detect import Detected, detect

_SUFFIXES = ("/metrics", "/v1/models", "/v1", "/")


class InitError(M3MonError):
    """An endpoint could not be read (exit status 1)."""


def base_url(url: str) -> str:
    """The server's root: ``http://h:8000/metrics`` and ``http://h:8000/v1`` -> ``http://h:8000``."""
    if not url.startswith(("http://", "https://")) or not url.split("://", 1)[1].strip("/"):
        raise UsageError(f"--from {url!r}: expected an http:// or https:// URL of a vLLM or SGLang server")
    out = url.strip()
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if out.endswith(suffix) and out.count("/") > 2:
                out, changed = out[: -len(suffix)], True
    return out


async def _json(client: httpx.AsyncClient, url: str, timeout: float) -> Any:
    try:
        return json.loads(await fetch_text(client, url, timeout=timeout, max_bytes=1024 * 1024))
    except ValueError:
        return None


async def _models(client: httpx.AsyncClient, base: str, timeout: float) -> Any:
    url = f"{base}/v1/models"
    try:
        return await _json(client, url, timeout)
    except ScrapeError as exc:
        if "HTTP 401" in str(exc) or "HTTP 403" in str(exc):
            raise InitError(f"{url} refused without a key ({exc.detail}); pass --api-key-env VAR") from None
        return None


async def _version(client: httpx.AsyncClient, base: str, timeout: float) -> Any:
    try:
        return await _json(client, f"{base}/version", timeout)
    except ScrapeError:
        return None


async def read_endpoint(client: httpx.AsyncClient, base: str, timeout: float) -> Detected:
    try:
        text = await fetch_text(client, f"{base}/metrics", timeout=timeout)
    except ScrapeError as exc:
        raise InitError(f"{base}: cannot read /metrics: {exc}") from None
    answers: tuple[Any, Any] = await asyncio.gather(
        _models(client, base, timeout), _version(client, base, timeout), return_exceptions=True
    )
    models, version = answers
    if isinstance(models, BaseException):
        raise models
    try:
        return detect(base, text, models, None if isinstance(version, BaseException) else version)
    except ScrapeError as exc:
        raise InitError(f"{base}/metrics: not a vLLM or SGLang page: {exc}") from None


async def read_all(urls: Sequence[str], timeout: float, api_key: str | None = None) -> list[Detected]:
    """Every endpoint, read concurrently, in the order given; the first failure once all are done."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
        done = await asyncio.gather(
            *(read_endpoint(client, u, timeout) for u in urls), return_exceptions=True
        )
    for result in done:
        if isinstance(result, BaseException):
            raise result
    return [d for d in done if isinstance(d, Detected)]
