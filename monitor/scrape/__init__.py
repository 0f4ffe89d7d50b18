"""The collector: scrape vLLM and SGLang ``/metrics`` pages into per-interval :class:`Signals`.

Top-level API (all raise :class:`monitor.errors.ScrapeError` with a reason from
:data:`monitor.conventions.SCRAPE_ERROR_REASONS`; nothing from a bad page is used)::

    reading, sig = await collect(endpoint, client, previous)   # previous: last Reading or None
    reading, per_model = await collect_models(endpoint, client, previous)  # dict model -> Signals
    fp = await fingerprint(endpoint, client, reading)           # Fingerprint (version, block size...)
    reading = read_text(page_text, at=unix_time)                # offline: parse + validate + read
    sig = signals(endpoint_name, newer, older, model=...)       # reduce (older=None: cumulative)

``client`` is an ``httpx.AsyncClient`` the caller owns (one per process is fine; scrapes of
different endpoints run concurrently). ``Signals`` (:mod:`monitor.scrape.signals`) is the
contract with the SLO evaluation; ``ScrapeMetrics`` (:mod:`monitor.scrape.metrics`) exports
scrape health. Modules: ``names`` (the name-generation table), ``page`` (parse + validate),
``reading`` (canonical fields per model/engine), ``interval`` (deltas, resets, sums), ``fetch``,
``fingerprint``, ``metrics``, ``collector``.

Pages with several ``model_name`` values: :func:`collect` reports the endpoint's configured
model (or the page's only model; otherwise the sum over all models, with a note), and
:func:`collect_models` returns one ``Signals`` per model.
"""

from monitor.scrape.collector import collect, collect_models, fingerprint, read, read_text
from monitor.scrape.fingerprint import Fingerprint
from monitor.scrape.interval import signals, signals_by_model
from monitor.scrape.reading import Reading
from monitor.scrape.signals import EngineSignals, Histogram, Signals

__all__ = [
    "EngineSignals",
    "Fingerprint",
    "Histogram",
    "Reading",
    "Signals",
    "collect",
    "collect_models",
    "fingerprint",
    "read",
    "read_text",
    "signals",
    "signals_by_model",
]
