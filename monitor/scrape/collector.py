"""The collector's top-level calls: fetch + parse + read + reduce for one endpoint."""

from __future__ import annotations

import time

import httpx

from monitor.model import Endpoint
from monitor.scrape import fetch
from monitor.scrape.fingerprint import Fingerprint, build
from monitor.scrape.interval import signals, signals_by_model
from monitor.scrape.page import ParserName, parse
from monitor.scrape.reading import Reading, read_page
from monitor.scrape.signals import Signals


def read_text(
    text: str, at: float | None = None, *, partial: bool = False, parser: ParserName = "fast"
) -> Reading:
    """A :class:`Reading` of page ``text`` taken at wall-clock ``at`` (now by default)."""
    return read_page(parse(text, parser=parser, partial=partial), time.time() if at is None else at)


async def read(
    endpoint: Endpoint,
    client: httpx.AsyncClient,
    *,
    timeout: float = fetch.DEFAULT_TIMEOUT,
    max_bytes: int = fetch.DEFAULT_MAX_BYTES,
) -> Reading:
    """Fetch and read the endpoint's page now (ScrapeError on any problem)."""
    text = await fetch.fetch_metrics(endpoint, client, timeout=timeout, max_bytes=max_bytes)
    return read_text(text)


async def collect(
    endpoint: Endpoint,
    client: httpx.AsyncClient,
    previous: Reading | None,
    *,
    timeout: float = fetch.DEFAULT_TIMEOUT,
    max_bytes: int = fetch.DEFAULT_MAX_BYTES,
) -> tuple[Reading, Signals]:
    """Scrape once: the new reading and the signals since ``previous`` (cumulative when None).

    The signals are for ``endpoint.model`` (or the page's only model); keep the returned
    reading and pass it as ``previous`` next time.
    """
    reading = await read(endpoint, client, timeout=timeout, max_bytes=max_bytes)
    return reading, signals(endpoint.name, reading, previous, model=endpoint.model)


async def collect_models(
    endpoint: Endpoint,
    client: httpx.AsyncClient,
    previous: Reading | None,
    *,
    timeout: float = fetch.DEFAULT_TIMEOUT,
    max_bytes: int = fetch.DEFAULT_MAX_BYTES,
) -> tuple[Reading, dict[str, Signals]]:
    """Like :func:`collect`, with one :class:`Signals` per ``model_name`` on the page."""
    reading = await read(endpoint, client, timeout=timeout, max_bytes=max_bytes)
    return reading, signals_by_model(endpoint.name, reading, previous)


async def fingerprint(
    endpoint: Endpoint, client: httpx.AsyncClient, reading: Reading, *, timeout: float = fetch.DEFAULT_TIMEOUT
) -> Fingerprint:
    """The deployment fingerprint (``/version`` and ``/v1/models`` are best effort)."""
    version = await fetch.fetch_json(endpoint, client, "/version", timeout=timeout)
    models = await fetch.fetch_json(endpoint, client, "/v1/models", timeout=timeout)
    return build(reading, version, models, endpoint.model)
