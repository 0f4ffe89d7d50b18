"""Server-side latency thresholds against the bucket edges a pool actually serves.

A server-sourced latency SLO counts its good events from the bucket of the pool's histogram whose
``le`` equals the threshold. A pool whose histogram has no such edge (``--custom-histogram-buckets``,
another vLLM version) gives that SLO no events. :func:`check_page` reads a saved or fetched
``/metrics`` page the way the collector does (:func:`monitor.scrape.page.parse`,
:func:`monitor.scrape.reading.read_page`, the name table of :mod:`monitor.scrape.names` with every
vLLM and SGLang name generation) and says, for every server-sourced latency SLO of the classes the
endpoint serves, whether its threshold is an edge of the histogram the collector would read.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from monitor.model import SLO, Endpoint, Model
from monitor.scrape.interval import pick_model
from monitor.scrape.names import (
    DEFAULT_ENGINE,
    ENGINE_LABELS,
    MODEL_LABEL,
    RANK_LABELS,
    SAMPLE_INDEX,
    SOURCES,
    Source,
)
from monitor.scrape.page import Page, parse
from monitor.scrape.reading import Reading, read_page
from monitor.scrape.signals import Histogram
from monitor.slo.slices import SERVER_HISTOGRAMS, SOURCE_SERVER

EdgeStatus = Literal["edge", "not_edge", "missing"]
Edges = tuple[float, ...]


@dataclass(frozen=True)
class EdgeCheck:
    """One server-sourced latency SLO against one histogram family of one endpoint's page."""

    endpoint: str
    slo: SLO
    status: EdgeStatus
    histogram: str = ""  # the exposed family read (empty when missing)
    edges: tuple[float, ...] = ()  # its finite bucket edges
    looked_for: tuple[str, ...] = ()  # families the collector reads for the SLI (when missing)

    @property
    def threshold(self) -> float:
        return self.slo.threshold if self.slo.threshold is not None else math.nan

    def nearest(self) -> tuple[float | None, float | None]:
        """The finite edges just below and just above the threshold (None when there is none)."""
        i = bisect.bisect_left(self.edges, self.threshold)
        below = self.edges[i - 1] if i > 0 else None
        above = self.edges[i] if i < len(self.edges) else None
        return below, above


@dataclass(frozen=True)
class PageCheck:
    """What one endpoint's page says about its server-sourced latency SLOs."""

    endpoint: str
    backend: str
    generation: str
    model: str | None  # the model checked; None = every model on the page
    checks: tuple[EdgeCheck, ...]
    notes: tuple[str, ...] = field(default=())


def server_latency_slos(model: Model, endpoint: Endpoint) -> list[SLO]:
    """Server-sourced latency SLOs of the classes ``endpoint`` serves, in configuration order."""
    out = []
    for cls in endpoint.classes:
        rc = model.request_class(cls)
        out += [s for s in rc.slos if s.source == SOURCE_SERVER and s.sli in SERVER_HISTOGRAMS]
    return out


def families(canonical: str, backend: str) -> tuple[str, ...]:
    """Exposed histogram families feeding ``canonical`` for ``backend``, newest generation first."""
    rows = [s for s in SOURCES if s.field == canonical and s.kind == "histogram"]
    return tuple(s.metric for s in sorted(rows, key=lambda s: s.rank) if s.metric.startswith(f"{backend}:"))


def _samples_of(canonical: str) -> dict[str, list[Source]]:
    """Exposed sample name -> the histogram sources of ``canonical`` it belongs to (not ``_created``)."""
    out: dict[str, list[Source]] = {}
    for name, hits in SAMPLE_INDEX.items():
        for src, part in hits:
            if src.field == canonical and src.kind == "histogram" and part != "created":
                out.setdefault(name, []).append(src)
    return out


def _read_from(page: Page, canonical: str, models: set[str]) -> dict[tuple[str, str], Source]:
    """(model, engine) -> the family the collector reads ``canonical`` from: the newest present."""
    wanted = _samples_of(canonical)
    best: dict[tuple[str, str], Source] = {}
    for s in page.samples:
        labels = s.labels
        if labels.get(MODEL_LABEL, "") not in models or any(labels.get(r, "0") != "0" for r in RANK_LABELS):
            continue
        for src in wanted.get(s.name, ()):
            if all(labels.get(k) == v for k, v in src.where):
                engine = next((labels[k] for k in ENGINE_LABELS if k in labels), DEFAULT_ENGINE)
                key = (labels.get(MODEL_LABEL, ""), engine)
                if key not in best or src.rank < best[key].rank:
                    best[key] = src
    return best


def _served(page: Page, reading: Reading, canonical: str, models: set[str]) -> dict[str, set[Edges]]:
    """Exposed family -> the distinct bucket layouts the collector reads from it."""
    out: dict[str, set[Edges]] = {}
    for (model_name, engine), src in sorted(_read_from(page, canonical, models).items()):
        er = reading.models.get(model_name, {}).get(engine)
        layouts = {h.edges for (fname, _), h in (er.histograms.items() if er else ()) if fname == canonical}
        if layouts:  # a family with only ``_sum`` samples has no buckets to check: as good as missing
            out.setdefault(src.metric, set()).update(layouts)
    return out


def _checks(endpoint: str, slo: SLO, served: dict[str, set[Edges]], backend: str) -> Iterator[EdgeCheck]:
    if not served:
        yield EdgeCheck(endpoint, slo, "missing", looked_for=families(SERVER_HISTOGRAMS[slo.sli], backend))
        return
    for family, layouts in sorted(served.items()):
        for edges in sorted(layouts):
            finite = tuple(e for e in edges if math.isfinite(e))
            status: EdgeStatus = "edge" if is_edge(edges, slo.threshold) else "not_edge"
            yield EdgeCheck(endpoint, slo, status, family, finite)


def is_edge(edges: Edges, threshold: float | None) -> bool:
    """Whether the collector counts ``threshold`` exactly: ``Histogram.good_events`` says so."""
    if threshold is None:
        return False
    return Histogram(edges, tuple(0.0 for _ in edges), 0.0, 0.0).good_events(threshold)[2]


def check_page(model: Model, endpoint: Endpoint, text: str) -> PageCheck:
    """Check ``endpoint``'s server latency thresholds against page ``text``; ScrapeError if unreadable."""
    page = parse(text)
    reading = read_page(page, 0.0)
    chosen = pick_model(reading, endpoint.model)
    models = {chosen} if chosen is not None else set(reading.models)
    checks: list[EdgeCheck] = []
    for slo in server_latency_slos(model, endpoint):
        served = _served(page, reading, SERVER_HISTOGRAMS[slo.sli], models)
        checks += _checks(endpoint.name, slo, served, reading.backend)
    notes = list(_notes(endpoint, reading, chosen))
    return PageCheck(endpoint.name, reading.backend, reading.generation, chosen, tuple(checks), tuple(notes))


def _notes(endpoint: Endpoint, reading: Reading, chosen: str | None) -> Iterator[str]:
    if reading.backend != endpoint.backend:
        yield f"configured backend is {endpoint.backend}, the page is {reading.generation}"
    if chosen is None:
        yield f"model {endpoint.model!r} is not on the page; checked every model: {', '.join(reading.models)}"
    elif chosen != endpoint.model:
        yield f"model {endpoint.model!r} is not on the page; checked its only model {chosen!r}"
